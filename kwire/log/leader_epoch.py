"""The leader epoch cache of one partition (Kafka's LeaderEpochFileCache) and its
``leader-epoch-checkpoint`` file (Kafka's LeaderEpochCheckpointFile)::

    0                      <- version
    2                      <- number of entries
    0 0                    <- epoch start offset (ascending in both)
    3 1500

Each entry says: the first record written in ``epoch`` has offset ``start offset``. A leader
answers OffsetForLeaderEpoch from it (``end_offset_for``) and a follower uses the answer to
find where its log diverged from the leader's.

No I/O but ``write``, ``read_checkpoint`` and ``batch_epochs`` (the rebuild's header scan);
the log decides on which thread they run. Changes mark the cache ``dirty``; the partition
log makes the file durable (``make_durable``) before it advances its recovery point (a
flush, in a worker thread), at a truncation and at close, so the file always covers the
records below the recovery point; the records above it are scanned again by recovery after a crash, which
re-assigns their epochs (as Kafka's LogSegment.recover does). A stale file holds extra
entries only, which loading cuts (``truncate_from_end(log end offset)``,
``truncate_from_start(log start offset)``).

A leader change writes the file soon after, in a worker thread and without fsync
(kwire.log.manager.write_epoch_checkpoints; Kafka's makeLeader writes and fsyncs it at once
in LeaderEpochFileCache.assign): the file is then ``unsynced`` and the next flush or the
close only fsyncs it, still before the recovery point passes the entry. That keeps the
creation of thousands of files out of a clean shutdown (issue 32: creating this file was
most of what closing 5,000 new partitions cost).

Thread safety: the owner thread changes the entries; ``write`` may run in a worker thread.
Every change installs new lists as one ``_state`` pair, so a writer's snapshot is consistent.
"""
from __future__ import annotations

import bisect
import logging
import os
import struct
import threading

from kwire.atomic import fsync_dir, write_atomic
from kwire.fds import open_fd, read_file

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "leader-epoch-checkpoint"
VERSION = 0
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_BATCH_PREFIX = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch


class LeaderEpochCheckpointError(ValueError):
    """The checkpoint file is malformed."""


def read_checkpoint(path: str) -> list[tuple[int, int]] | None:
    """Entries in the file at ``path``; None when missing. Raises LeaderEpochCheckpointError
    when the file is malformed (a torn or foreign file: the caller rebuilds)."""
    try:
        raw = read_file(path)
    except FileNotFoundError:
        return None
    try:
        lines = raw.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise LeaderEpochCheckpointError(f"{path}: not text") from exc
    if lines and lines[-1] == "":
        lines.pop()
    try:
        if len(lines) < 2 or int(lines[0]) != VERSION:
            raise LeaderEpochCheckpointError(f"{path}: unknown version or missing count")
        count = int(lines[1])
        if count != len(lines) - 2:
            raise LeaderEpochCheckpointError(f"{path}: expected {count} entries, found {len(lines) - 2}")
        entries = []
        for line in lines[2:]:
            parts = line.split()
            if len(parts) != 2:
                raise LeaderEpochCheckpointError(f"{path}: bad entry {line!r}")
            epoch, offset = int(parts[0]), int(parts[1])
            if epoch < 0 or offset < 0:
                raise LeaderEpochCheckpointError(f"{path}: negative entry {line!r}")
            if entries and (epoch <= entries[-1][0] or offset < entries[-1][1]):
                raise LeaderEpochCheckpointError(f"{path}: entries out of order at {line!r}")
            entries.append((epoch, offset))
        return entries
    except ValueError as exc:
        if isinstance(exc, LeaderEpochCheckpointError):
            raise
        raise LeaderEpochCheckpointError(f"{path}: {exc}") from exc


def format_checkpoint(entries) -> bytes:
    lines = [str(VERSION), str(len(entries))]
    lines += [f"{e} {o}" for e, o in entries]
    return ("\n".join(lines) + "\n").encode()


class LeaderEpochCache:
    """Ascending (epoch, start offset) entries of one partition; ``path`` is its checkpoint
    file (None: memory only). ``latest_epoch`` is a plain attribute (-1 when empty) so the
    append path compares one int."""

    __slots__ = ("path", "_epochs", "_offsets", "_state", "latest_epoch", "dirty", "unsynced",
                 "_write_lock", "topic_partition")

    def __init__(self, path: str | None, entries=(), topic_partition: str = ""):
        self.path = path
        self.topic_partition = topic_partition
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        self._state = (self._epochs, self._offsets)
        self.latest_epoch = UNDEFINED_EPOCH
        self.dirty = False
        self.unsynced = False   # written (renamed into place) without an fsync
        self._write_lock = threading.Lock()
        for epoch, offset in entries:
            self.assign(epoch, offset, write=False)
        self.dirty = False

    # --- loading ---------------------------------------------------------------------------
    @classmethod
    def load(cls, dir: str, topic_partition: str = "") -> tuple["LeaderEpochCache", bool]:
        """The cache from ``dir``'s checkpoint file; the flag is False when the file was
        missing or unreadable (then the cache is empty and the log must rebuild it)."""
        path = os.path.join(dir, CHECKPOINT_FILE)
        try:
            entries = read_checkpoint(path)
        except (LeaderEpochCheckpointError, OSError) as exc:
            log.warning("leader epoch checkpoint of %s unreadable, rebuilding it from the log: %s",
                        topic_partition or dir, exc)
            return cls(path, topic_partition=topic_partition), False
        if entries is None:
            return cls(path, topic_partition=topic_partition), False
        return cls(path, entries, topic_partition=topic_partition), True

    # --- reading ---------------------------------------------------------------------------
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._offsets))

    def __len__(self) -> int:
        return len(self._epochs)

    def __bool__(self) -> bool:
        return True

    def latest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[-1], self._offsets[-1]) if self._epochs else None

    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._offsets[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in (None below the first entry)."""
        i = bisect.bisect_right(self._offsets, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's endOffsetFor: the largest
        epoch <= the requested one, and the start offset of the first epoch above it (the
        log end offset when the latest epoch is asked for). UNDEFINED (-1, -1) for epoch -1
        or an epoch above every known one; an epoch below the first: (requested, start of
        the first), since the records before it are gone."""
        epochs, offsets = self._state
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epochs and epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        hi = bisect.bisect_right(epochs, requested_epoch)  # first epoch > requested
        if hi == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if hi == 0:
            return requested_epoch, offsets[0]
        return epochs[hi - 1], offsets[hi]

    # --- changing ----------------------------------------------------------------------------
    def _install(self, epochs: list[int], offsets: list[int]) -> None:
        self._epochs, self._offsets = epochs, offsets
        self._state = (epochs, offsets)
        self.latest_epoch = epochs[-1] if epochs else UNDEFINED_EPOCH
        self.dirty = True

    def assign(self, epoch: int, start_offset: int, *, write: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset``. Only a new epoch (or the latest
        one starting earlier) changes the cache; entries it contradicts (an epoch >= it, or
        a start offset >= its) are removed, as Kafka's assign does. With ``write`` the file
        is written (fsynced) at once when the cache changed; the append path passes False
        (the log writes it before its recovery point passes the entry). Returns True when
        the cache changed."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset}) for {self.topic_partition}")
        if self._epochs and self._epochs[-1] == epoch and self._offsets[-1] <= start_offset:
            return False
        epochs, offsets = self._epochs[:], self._offsets[:]
        removed = []
        while epochs and (epochs[-1] >= epoch or offsets[-1] >= start_offset):
            removed.append((epochs.pop(), offsets.pop()))
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            log.warning("new leader epoch entry (%d, %d) of %s removed conflicting entries %s",
                        epoch, start_offset, self.topic_partition, removed)
        epochs.append(epoch)
        offsets.append(start_offset)
        self._install(epochs, offsets)
        if write:
            self.write()
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Remove every entry whose start offset is >= ``end_offset`` (after the log was
        truncated to it). Marks the cache dirty; returns True when it changed."""
        epochs, offsets = self._epochs, self._offsets
        if end_offset < 0 or not offsets or offsets[-1] < end_offset:
            return False
        i = bisect.bisect_left(offsets, end_offset)
        self._install(epochs[:i], offsets[:i])
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Drop the entries wholly below ``start_offset`` (the new log start offset), keeping
        the one that covers it, moved to start there. Marks the cache dirty; returns True
        when it changed."""
        epochs, offsets = self._epochs, self._offsets
        if not offsets or offsets[0] > start_offset:
            return False
        i = bisect.bisect_right(offsets, start_offset) - 1  # the entry covering start_offset
        if i == 0 and offsets[0] == start_offset:
            return False
        self._install(epochs[i:], [start_offset] + offsets[i + 1:])
        return True

    def clear(self) -> None:
        self._install([], [])

    # --- the file ----------------------------------------------------------------------------
    def write(self, sync: bool = True, *, sync_dir: bool = True) -> None:
        """Write the checkpoint file (blocking). Any thread: the entries are read under the
        same lock as the write, so the last write holds the newest entries. Without ``sync``
        the file is left ``unsynced`` (``make_durable`` syncs it)."""
        if self.path is None:
            self.dirty = False
            return
        with self._write_lock:
            self.dirty = False
            epochs, offsets = self._state
            data = format_checkpoint(list(zip(epochs, offsets)))
            try:
                write_atomic(self.path, data, sync=sync, sync_dir=sync_dir)
            except BaseException:
                self.dirty = True
                raise
            self.unsynced = not sync

    def write_if_dirty(self, *, sync: bool = True, sync_dir: bool = True) -> bool:
        """Write the file when a truncation changed the cache since the last write, unless
        the partition directory is gone (a deleted log). Returns True if it wrote."""
        if not self.dirty:
            return False
        if self.path is not None and not os.path.isdir(os.path.dirname(self.path)):
            return False
        self.write(sync, sync_dir=sync_dir)
        return True

    def make_durable(self, *, sync_dir: bool = True) -> bool:
        """The file as durable as the cache: written and fsynced when dirty, else fsynced when
        a write without ``sync`` left it so. Returns True when it wrote or synced (with
        ``sync_dir=False`` the directory fsync for the rename is then the caller's)."""
        if self.write_if_dirty(sync_dir=sync_dir):
            return True
        if not self.unsynced or self.path is None or not os.path.isdir(os.path.dirname(self.path)):
            return False
        with self._write_lock:
            if not self.unsynced:
                return False
            fd = open_fd(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            if sync_dir:
                fsync_dir(os.path.dirname(self.path))
            self.unsynced = False
        return True

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.entries()!r})"



class TruncationState:
    """Where a follower truncates after asking the leader OffsetForLeaderEpoch (Kafka's
    OffsetTruncationState): ``offset``; ``completed`` False when it must ask again (with
    its new latest epoch) before fetching."""

    __slots__ = ("offset", "completed")

    def __init__(self, offset: int, completed: bool):
        self.offset = offset
        self.completed = completed

    def __eq__(self, other) -> bool:
        return isinstance(other, TruncationState) and (self.offset, self.completed) == (other.offset, other.completed)

    def __repr__(self) -> str:
        return f"TruncationState(offset={self.offset}, completed={self.completed})"


def follower_truncation(cache: "LeaderEpochCache", log_end_offset: int, high_watermark: int,
                        leader_epoch: int, leader_end_offset: int) -> TruncationState:
    """The follower's side of divergence repair (Kafka's AbstractFetcherThread
    getOffsetTruncationState). The follower asked for its latest epoch; the leader answered
    (``leader_epoch``, ``leader_end_offset``):

    - no answer (end offset -1): the leader knows no such epoch; truncate to the high
      watermark, which every replica agrees on;
    - the follower knows the leader's epoch: the logs agree up to the smaller of the two end
      offsets of that epoch;
    - it does not: cut to the end of the follower's largest epoch below the leader's and ask
      again (not completed);
    - the follower has no epoch at or below it: the leader's end offset.
    Never above the follower's log end offset."""
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return TruncationState(min(high_watermark, log_end_offset), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return TruncationState(min(leader_end_offset, log_end_offset), True)
    epoch, end = cache.end_offset_for(leader_epoch, log_end_offset)
    if end == UNDEFINED_EPOCH_OFFSET:
        return TruncationState(min(leader_end_offset, log_end_offset), True)
    if epoch != leader_epoch:
        return TruncationState(min(end, log_end_offset), False)
    return TruncationState(min(end, leader_end_offset, log_end_offset), True)

_EPOCH_SCAN_CHUNK = 1 << 20


def batch_epochs(seg):
    """(base offset, partition leader epoch) of each batch of a LogSegment, from the
    headers alone (rebuilding a missing leader epoch checkpoint); stops at a torn tail."""
    if seg.size == 0:
        return
    seg.ensure_loaded()
    end = seg.size
    f = seg.file  # held for the whole scan (see regions.py)
    fd = f.fileno()
    pos = 0
    buf = b""
    buf_pos = 0
    while pos + 16 <= end:
        off = pos - buf_pos
        if off + 16 > len(buf):
            buf = os.pread(fd, min(_EPOCH_SCAN_CHUNK, end - pos), pos)
            buf_pos, off = pos, 0
            if len(buf) < 16:
                return
        base, length, epoch = _BATCH_PREFIX.unpack_from(buf, off)
        if length <= 0:
            return
        yield base, epoch
        pos += 12 + length
