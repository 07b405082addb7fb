"""Opening a partition log from its directory: Kafka's LogLoader.

The segment files found (a log cleaner's swap that a crash cut short is finished or undone
first: kwire.log.cleaner_swap; stray ``.deleted`` / ``.tmp`` files and indexes without a log
are removed), recovery of an unclean shutdown (every batch from the
recovery point on CRC-checked, a torn or corrupt tail truncated, indexes rebuilt), and the
leader epoch cache loaded from its checkpoint and made to agree with the log.
"""
from __future__ import annotations

import bisect
import os
import re

from kwire.log.cleaner_swap import complete_swaps
from kwire.log.config import LogConfig
from kwire.log.dir_failure import LogDirFailureChannel
from kwire.log.errors import KafkaStorageError
from kwire.log.leader_epoch import LeaderEpochCache, batch_epochs
from kwire.log.producer_log import load_producer_state
from kwire.log.segment import LogSegment, segment_name

_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)$")
_STRAY_SUFFIXES = (".deleted", ".cleaned", ".swap", ".tmp")
_CLEANER_SUFFIXES = (".cleaned", ".swap")


def load_log(cls, dir: str, config: LogConfig, *, recovery_point: int | None, log_start_offset: int | None,
             clean: bool, now_ms: int, topic: str | None, partition: int | None,
             failure_channel: LogDirFailureChannel | None):
    """A ``cls`` (PartitionLog) over the files in ``dir``; see PartitionLog.open."""
    os.makedirs(dir, exist_ok=True)
    if any(n.endswith(_CLEANER_SUFFIXES) for n in os.listdir(dir)):
        complete_swaps(dir, config)
    logs: dict[int, int] = {}
    index_files: set[str] = set()
    producer_files = False   # producer-state snapshots or aborted-transaction indexes
    for entry in os.scandir(dir):
        name = entry.name
        if name.endswith(_STRAY_SUFFIXES):
            try:
                os.unlink(entry.path)
            except OSError:
                pass
            continue
        m = _SEGMENT_FILE.match(name)
        if not m:
            continue
        kind = m.group(2)
        if kind == "log":
            logs[int(m.group(1))] = entry.stat().st_size
        elif kind == "snapshot":
            producer_files = True
        else:
            index_files.add(name)
            if kind == "txnindex":
                producer_files = True
    # indexes without a log are leftovers
    for name in index_files:
        if int(name[:20]) not in logs:
            try:
                os.unlink(os.path.join(dir, name))
            except OSError:
                pass
    segments = []
    for base in sorted(logs):
        stem = segment_name(base)
        present = f"{stem}.index" in index_files and f"{stem}.timeindex" in index_files
        segments.append(LogSegment.existing(dir, base, config, size=logs[base], now_ms=now_ms,
                                            indexes_present=present))
    lso = log_start_offset if log_start_offset is not None else 0
    if not segments:
        start = max(lso, recovery_point or 0)
        # an empty log at 0 needs no file until its first write (a start elsewhere is
        # kept in the name of the segment file)
        segments.append(LogSegment.create(dir, start, config, now_ms, lazy=start == 0))
        recovery_point = start
        clean = True
    if clean and recovery_point is not None:
        # trust the files; only the active segment's tail is looked at
        segments[-1].ensure_loaded()
        rp = min(recovery_point, segments[-1].next_offset)
        log = cls(dir, config, segments, log_start_offset=0, recovery_point=rp,
                  now_ms=now_ms, topic=topic, partition=partition, failure_channel=failure_channel)
    else:
        rp = recovery_point or 0
        recover_segments(segments, rp)
        log = cls(dir, config, segments, log_start_offset=0,
                  recovery_point=min(rp, segments[-1].next_offset),
                  now_ms=now_ms, topic=topic, partition=partition, failure_channel=failure_channel)
        log.flush()  # the recovered tail is now durable: a second crash rescans nothing
    log.log_start_offset = min(max(lso, segments[0].base_offset), log.log_end_offset)
    load_leader_epoch_cache(log, None if clean and recovery_point is not None else (recovery_point or 0))
    if producer_files:
        # producers wrote here: their state now (ongoing transactions make the last stable
        # offset), from the latest snapshot and the batches after it; the aborted-transaction
        # indexes of those batches are rebuilt on the way (kwire.log.producer_log)
        load_producer_state(log)
    return log


def load_leader_epoch_cache(log, recovered_from: int | None = None) -> None:
    """The leader epoch cache from its checkpoint file, cut to the log (a file written
    before a truncation or a log-start move that a crash left stale holds extra
    entries). After a recovery from ``recovered_from`` (an unclean shutdown) the epochs
    of the batches from there on are assigned again from their headers, as Kafka's
    LogSegment.recover does (the file covers only the records below the recovery
    point); when the file is missing or unreadable, from every batch."""
    cache, ok = LeaderEpochCache.load(log.dir, log.topic_partition)
    log.leader_epoch_cache = cache
    rescan_from = None if ok and recovered_from is None else (recovered_from or 0) if ok else 0
    if rescan_from is not None:
        cache.truncate_from_end(rescan_from)
        bases = log._bases
        first = max(0, bisect.bisect_right(bases, rescan_from) - 1)
        for seg in log.segments[first:]:
            for base_offset, epoch in batch_epochs(seg):
                if base_offset >= rescan_from and epoch >= 0 and epoch != cache.latest_epoch:
                    cache.assign(epoch, base_offset, write=False)
    cache.truncate_from_end(log.log_end_offset)
    cache.truncate_from_start(log.log_start_offset)
    if cache.dirty and (not ok or rescan_from is not None):
        if log.log_end_offset > log.log_start_offset or ok:
            cache.write()  # an empty new log needs no file (missing = empty)
    cache.dirty = False  # stale entries of a readable file are cut again at every open


def recover_segments(segments: list[LogSegment], recovery_point: int) -> None:
    """Check every batch at or after ``recovery_point``; truncate at the first bad one and
    drop every later segment."""
    i = max(0, bisect.bisect_right([s.base_offset for s in segments], recovery_point) - 1)
    prev_next = None
    if i > 0:
        segments[i - 1].ensure_loaded()
        prev_next = segments[i - 1].next_offset
    first = True
    while i < len(segments):
        seg = segments[i]
        if prev_next is not None and seg.base_offset < prev_next:
            truncated = True  # overlapping segment: cannot be trusted
            cut = i
        else:
            truncated = seg.rebuild_indexes(
                validate=True,
                from_offset=recovery_point if first else None,
                min_base_offset=prev_next,
            )
            cut = i + 1
        first = False
        if truncated:
            for later in segments[cut:]:
                later.delete()
            del segments[cut:]
            break
        prev_next = seg.next_offset
        i += 1
    if not segments:
        raise KafkaStorageError("recovery removed every segment")  # cannot happen: cut >= 1
