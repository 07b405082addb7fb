"""Swapping cleaned segments into a log, and finishing a swap a crash cut short (Kafka's
``.cleaned`` -> ``.swap`` -> rename protocol of UnifiedLog.replaceSegments and LogLoader).

The cleaner writes a group's replacement segment as ``<base>.log.cleaned`` (and
``.index.cleaned``, ``.timeindex.cleaned``, ``.txnindex.cleaned``), fsyncs it, then swaps it
in from its worker thread (``swap_in``, holding the log's flush lock and ``lock``, after
checking that the group is still what the cleaner read; appends, reads, retention and
truncations on the event loop hold ``lock``, so none sees half a swap, and flushes hold the
flush lock and skip the segments a swap marked ``removed``):

1. each ``.cleaned`` file is renamed ``.swap`` (the indexes first, the ``.log`` last);
2. the replaced segments' files are renamed ``.deleted`` (Kafka's asyncDeleteSegment: a
   fetch holding one of their files keeps reading it);
3. each ``.swap`` file is renamed to its final name (the ``.log`` first);
4. in memory, the new segment takes the replaced ones' place;
5. after the lock is released: the ``.deleted`` files are unlinked and the directory is
   fsynced (``sync_dir``).

At open (``complete_swaps``, before the segments are listed) whatever a crash left is
finished or undone, so the log always reads as either the old segments or the new one:
``.cleaned`` and ``.deleted`` files are deleted, and so is every ``.swap`` file at or above
the lowest ``.cleaned`` base offset (a step 1 cut short); a ``<base>.log.swap`` replaces
every segment whose base offset lies in [base, the swap's next offset) (at least the one at
``base``), then its files are renamed into place; index ``.swap`` files whose log was
renamed already (step 3 cut short) are renamed into place too.
"""
from __future__ import annotations

import os
import re

from kwire.atomic import fsync_dir
from kwire.fds import open_fd
from kwire.log.regions import OPEN_FILES, unlink_all
from kwire.log.segment import LogSegment, segment_name

CLEANED = ".cleaned"
SWAP = ".swap"
DELETED = ".deleted"
_KINDS = (".log", ".index", ".timeindex", ".txnindex")
_SWAP_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)\.swap$")
_CLEANED_FILE = re.compile(r"^(\d{20})\.[a-z]+\.cleaned$")


def new_cleaned_segment(dir: str, base_offset: int, config, now_ms: int) -> LogSegment:
    """An empty segment whose files carry the ``.cleaned`` suffix (the cleaner's output)."""
    seg = LogSegment(dir, base_offset, config, size=0, created_ms=now_ms)
    _set_paths(seg, CLEANED)
    for path in seg.paths():
        try:
            os.unlink(path)   # a leftover of an earlier, aborted pass
        except FileNotFoundError:
            pass
    os.close(open_fd(seg.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC))
    seg.index.reset(fresh=True)
    seg.time_index.reset(fresh=True)
    return seg


def _set_paths(seg: LogSegment, suffix: str) -> None:
    stem = os.path.join(seg.dir, segment_name(seg.base_offset))
    seg.log_path = stem + ".log" + suffix
    seg.index.path = stem + ".index" + suffix
    seg.time_index.path = stem + ".timeindex" + suffix
    seg.txn_index.path = stem + ".txnindex" + suffix


def _rename_steps(seg: LogSegment, old: str, new: str, kinds):
    stem = os.path.join(seg.dir, segment_name(seg.base_offset))
    for kind in kinds:
        src = stem + kind + old
        if os.path.exists(src):
            os.replace(src, stem + kind + new)
            yield


def discard_cleaned(seg: LogSegment) -> None:
    """Remove a cleaned segment that will not be swapped in (an aborted pass)."""
    OPEN_FILES.discard(seg)
    unlink_all(seg.paths())


def swap_in(plog, old: list[LogSegment], new: LogSegment, deleted: list | None = None) -> None:
    """Replace the consecutive segments ``old`` of ``plog`` with ``new`` (a flushed cleaned
    segment with the base offset of ``old[0]``): steps 1-4 above, or 1-5 without ``deleted``
    (the list the ``.deleted`` paths go to, for the caller to unlink once it has released
    the log's lock). The caller holds ``plog.lock`` and checked that ``old`` is still in the
    log. The directory fsync is the caller's (``sync_dir``)."""
    for _ in swap_steps(plog, old, new, deleted):
        pass


def swap_steps(plog, old: list[LogSegment], new: LogSegment, deleted: list | None = None):
    """``swap_in`` one file operation at a time (a generator: tests stop it anywhere to
    play a crash)."""
    OPEN_FILES.discard(new)   # reopened under its final name on next use
    yield from _rename_steps(new, CLEANED, SWAP, _KINDS[1:])
    yield from _rename_steps(new, CLEANED, SWAP, _KINDS[:1])
    _set_paths(new, SWAP)
    gone = []
    for seg in old:
        seg.removed = True   # a flush planned before the swap skips it (PartitionLog.flush)
        for path in seg.paths():
            if os.path.exists(path):
                os.replace(path, path + DELETED)
                gone.append(path + DELETED)
                yield
    yield from _rename_steps(new, SWAP, "", _KINDS)
    _set_paths(new, "")
    i = plog.segments.index(old[0])
    plog.segments[i:i + len(old)] = [new]
    plog._bases[i:i + len(old)] = [new.base_offset]
    for seg in old:
        OPEN_FILES.discard(seg)   # a reader holding its file keeps it (kwire.log.regions)
    if deleted is not None:
        deleted.extend(gone)
    else:
        for path in gone:
            unlink_all([path])
            yield


def sync_dir(dir: str) -> None:
    fsync_dir(dir)


def _swap_next_offset(dir: str, base: int, config) -> int:
    """The next offset of the swap segment at ``base`` (its last whole batch's; ``base``
    when it holds none)."""
    seg = LogSegment(dir, base, config, size=0, created_ms=0)
    _set_paths(seg, SWAP)
    try:
        seg.size = os.path.getsize(seg.log_path)
        nxt = base
        for h in seg.scan_headers(0, seg.size):
            nxt = h.next_offset
        return nxt
    finally:
        OPEN_FILES.discard(seg)


def complete_swaps(dir: str, config) -> int:
    """Finish or undo what a crash left of a swap in ``dir`` (see the module doc). Returns
    the number of swapped segments completed."""
    cleaned_bases: list[int] = []
    swaps: dict[int, set[str]] = {}
    for entry in os.scandir(dir):
        name = entry.name
        if name.endswith(CLEANED) or name.endswith(DELETED):
            m = _CLEANED_FILE.match(name)
            if m:
                cleaned_bases.append(int(m.group(1)))
            os.unlink(entry.path)
            continue
        m = _SWAP_FILE.match(name)
        if m:
            swaps.setdefault(int(m.group(1)), set()).add(m.group(2))
    if not swaps:
        return 0
    lowest_cleaned = min(cleaned_bases) if cleaned_bases else None
    logs = sorted(int(n[:20]) for n in os.listdir(dir)
                  if len(n) == 24 and n.endswith(".log") and n[:20].isdigit())
    done = 0
    for base, kinds in sorted(swaps.items()):
        stem = os.path.join(dir, segment_name(base))
        if lowest_cleaned is not None and base >= lowest_cleaned:
            for kind in kinds:   # a rename of step 1 cut short: the old segments stand
                os.unlink(stem + kind + SWAP)
            continue
        if ".log" in kinds:
            upper = max(_swap_next_offset(dir, base, config), base + 1)
            for old in logs:
                if base <= old < upper:
                    for kind in _KINDS:
                        try:
                            os.unlink(os.path.join(dir, segment_name(old)) + kind)
                        except FileNotFoundError:
                            pass
            os.replace(stem + ".log" + SWAP, stem + ".log")
            kinds = kinds - {".log"}
            done += 1
        elif not os.path.exists(stem + ".log"):
            for kind in kinds:   # no log to go with: stray
                os.unlink(stem + kind + SWAP)
            continue
        for kind in kinds:       # the new log is in place (step 3 cut short)
            os.replace(stem + kind + SWAP, stem + kind)
    fsync_dir(dir)
    return done
