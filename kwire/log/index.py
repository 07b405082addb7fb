"""Sparse indexes of one segment, in Kafka's on-disk formats (big-endian):

- ``.index``: 8-byte entries (relative offset int32, file position int32): the batch whose
  last offset is ``base + relative offset`` starts at ``position``.
- ``.timeindex``: 12-byte entries (timestamp int64, relative offset int32): the largest
  timestamp seen up to that point in the segment, and the (last) offset of the batch holding it.

Indexes are held in memory as arrays, loaded lazily, and written to their files in bulk
(on flush and close): they can always be rebuilt from the .log, and recovery truncates
them to the recovery point, so entries still in memory at a crash are never needed. No
index file is held open (lookups are a bisect of the in-memory arrays); a file is opened
only to be written, and an index without entries needs no file at all (a new segment
creates none).

``write_plan`` splits a write into the disk part (a function over a copy of the new
entries, safe in a worker thread) and the bookkeeping, which happens when it runs; it
notices a truncation that happened meanwhile (``_generation``) and then leaves the file to
be rewritten by the next write.
"""
from __future__ import annotations

import array
import bisect
import operator
import os
import struct
import sys
from itertools import islice

from kwire.fds import open_fd, read_file
from kwire.log.errors import CorruptIndex

_BIG = sys.byteorder == "big"
_TIME_ENTRY = struct.Struct(">qi")
_REL_MAX = (1 << 31) - 1


def _strictly_increasing(seq) -> bool:
    return all(map(operator.lt, seq, islice(seq, 1, None)))


def _non_decreasing(seq) -> bool:
    return all(map(operator.le, seq, islice(seq, 1, None)))


def _write_tail(path: str, data: bytes, keep_bytes: int, on_disk_bytes: int, sync: bool) -> None:
    if not data and keep_bytes == 0:
        # nothing to keep: an empty index needs no file; empty an existing one
        try:
            os.truncate(path, 0)
        except FileNotFoundError:
            return
        if sync:
            fd = open_fd(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return
    fd = open_fd(path, os.O_WRONLY | os.O_CREAT)
    try:
        if on_disk_bytes != keep_bytes:
            os.ftruncate(fd, keep_bytes)
        view = memoryview(data)
        pos = keep_bytes
        while view:
            n = os.pwrite(fd, view, pos)
            view = view[n:]
            pos += n
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _job(ix, data: bytes, keep_bytes: int, on_disk_bytes: int, sync: bool, n: int):
    """The disk part of an index write, then its bookkeeping (unless entries were removed
    meanwhile: then the next write rewrites the file)."""
    generation = ix._generation

    def run() -> None:
        _write_tail(ix.path, data, keep_bytes, on_disk_bytes, sync)
        if ix._generation == generation:
            ix._on_disk = n
            ix._synced = sync
        else:
            ix._on_disk = -2

    return run


class OffsetIndex:
    ENTRY_SIZE = 8

    __slots__ = ("path", "base_offset", "max_entries", "_rel", "_pos", "_on_disk", "_synced", "_generation")

    def __init__(self, path: str, base_offset: int, max_index_bytes: int):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY_SIZE)
        self._rel: array.array | None = None  # relative offsets, when loaded
        self._pos: array.array | None = None
        self._on_disk = -1  # entries in the file (-1: unknown, not loaded; -2: rewrite it)
        self._synced = False
        self._generation = 0  # bumped when entries are removed

    # --- state ------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self._rel is not None

    def __len__(self) -> int:
        return len(self._rel) if self._rel is not None else 0

    @property
    def is_full(self) -> bool:
        return len(self._rel) >= self.max_entries

    def reset(self, fresh: bool = False) -> None:
        """Empty index (new segment: ``fresh``, no file yet; or a rebuild: the file is
        rewritten on the next write)."""
        self._rel = array.array("i")
        self._pos = array.array("i")
        self._on_disk = 0 if fresh else -2
        self._synced = fresh
        self._generation += 1

    def load(self, segment_size: int) -> None:
        """Read and sanity-check the file. Raises CorruptIndex or FileNotFoundError."""
        data = read_file(self.path)
        if len(data) % self.ENTRY_SIZE:
            raise CorruptIndex(f"{self.path}: size {len(data)} is not a multiple of 8")
        both = array.array("i")
        both.frombytes(data)
        if not _BIG:
            both.byteswap()
        rel = both[0::2]
        pos = both[1::2]
        if rel:
            if rel[0] < 0 or pos[0] < 0:
                raise CorruptIndex(f"{self.path}: negative first entry")
            if pos[-1] >= segment_size and segment_size >= 0:
                raise CorruptIndex(f"{self.path}: position {pos[-1]} beyond the segment")
            if not _strictly_increasing(rel) or not _strictly_increasing(pos):
                raise CorruptIndex(f"{self.path}: entries are not increasing")
        self._rel, self._pos = rel, pos
        self._on_disk = len(rel)
        self._synced = True

    # --- updates ----------------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        self._rel.append(offset - self.base_offset)
        self._pos.append(position)

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= offset."""
        n = bisect.bisect_left(self._rel, offset - self.base_offset)
        self._cut(n)

    def _cut(self, n: int) -> None:
        if n < len(self._rel):
            del self._rel[n:]
            del self._pos[n:]
            self._generation += 1
            if self._on_disk > n:
                self._on_disk = -2

    def truncate_to_position(self, position: int) -> None:
        """Drop entries at positions >= position."""
        self._cut(bisect.bisect_left(self._pos, position))

    def write(self, sync: bool = False) -> None:
        """Bring the file up to date with memory (and fsync it if asked)."""
        job = self.write_plan(sync)
        if job is not None:
            job()

    def write_plan(self, sync: bool = False):
        """None when the file is up to date; else a function that writes it (see module doc)."""
        if self._rel is None:
            return None
        n = len(self._rel)
        if self._on_disk == n and (self._synced or not sync):
            return None
        keep = self._on_disk if 0 <= self._on_disk <= n else 0
        on_disk_bytes = self._on_disk * self.ENTRY_SIZE if self._on_disk >= 0 else -1
        both = array.array("i", bytes(8 * (n - keep)))
        both[0::2] = self._rel[keep:n]
        both[1::2] = self._pos[keep:n]
        if not _BIG:
            both.byteswap()
        return _job(self, both.tobytes(), keep * self.ENTRY_SIZE, on_disk_bytes, sync, n)

    # --- lookups ----------------------------------------------------------------------
    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry with offset <= ``offset``, else (base, 0)."""
        i = bisect.bisect_right(self._rel, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._rel[i], self._pos[i]

    def floor_position(self, position: int) -> int:
        """The largest indexed batch position <= ``position`` (0 if none)."""
        i = bisect.bisect_right(self._pos, position) - 1
        return self._pos[i] if i >= 0 else 0

    def last_entry(self) -> tuple[int, int]:
        if not self._rel:
            return self.base_offset, 0
        return self.base_offset + self._rel[-1], self._pos[-1]


class TimeIndex:
    ENTRY_SIZE = 12

    __slots__ = ("path", "base_offset", "max_entries", "_ts", "_rel", "_on_disk", "_synced", "_generation")

    def __init__(self, path: str, base_offset: int, max_index_bytes: int):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY_SIZE)
        self._ts: array.array | None = None
        self._rel: array.array | None = None
        self._on_disk = -1
        self._synced = False
        self._generation = 0

    @property
    def loaded(self) -> bool:
        return self._ts is not None

    def __len__(self) -> int:
        return len(self._ts) if self._ts is not None else 0

    @property
    def is_full(self) -> bool:
        return len(self._ts) >= self.max_entries

    def reset(self, fresh: bool = False) -> None:
        self._ts = array.array("q")
        self._rel = array.array("i")
        self._on_disk = 0 if fresh else -2
        self._synced = fresh
        self._generation += 1

    def load(self, next_rel_offset_bound: int | None = None) -> None:
        data = read_file(self.path)
        if len(data) % self.ENTRY_SIZE:
            raise CorruptIndex(f"{self.path}: size {len(data)} is not a multiple of 12")
        ts = array.array("q")
        rel = array.array("i")
        for t, r in _TIME_ENTRY.iter_unpack(data):
            ts.append(t)
            rel.append(r)
        if ts:
            if rel[0] < 0:
                raise CorruptIndex(f"{self.path}: negative relative offset")
            if not _strictly_increasing(ts) or not _non_decreasing(rel):
                raise CorruptIndex(f"{self.path}: entries are not increasing")
            if next_rel_offset_bound is not None and rel[-1] >= next_rel_offset_bound:
                raise CorruptIndex(f"{self.path}: offset beyond the segment")
        self._ts, self._rel = ts, rel
        self._on_disk = len(ts)
        self._synced = True

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if timestamp is larger than the last entry's (Kafka)."""
        ts = self._ts
        if ts and timestamp <= ts[-1]:
            return
        if not skip_full_check and len(ts) >= self.max_entries:
            return
        ts.append(timestamp)
        self._rel.append(offset - self.base_offset)

    def truncate_to_offset(self, offset: int) -> None:
        n = bisect.bisect_left(self._rel, offset - self.base_offset)
        if n < len(self._ts):
            del self._ts[n:]
            del self._rel[n:]
            self._generation += 1
            if self._on_disk > n:
                self._on_disk = -2

    def write(self, sync: bool = False) -> None:
        job = self.write_plan(sync)
        if job is not None:
            job()

    def write_plan(self, sync: bool = False):
        if self._ts is None:
            return None
        n = len(self._ts)
        if self._on_disk == n and (self._synced or not sync):
            return None
        keep = self._on_disk if 0 <= self._on_disk <= n else 0
        on_disk_bytes = self._on_disk * self.ENTRY_SIZE if self._on_disk >= 0 else -1
        pack = _TIME_ENTRY.pack
        data = b"".join(map(pack, self._ts[keep:n], self._rel[keep:n]))
        return _job(self, data, keep * self.ENTRY_SIZE, on_disk_bytes, sync, n)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= ``timestamp``, else
        (-1, base offset)."""
        i = bisect.bisect_right(self._ts, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._ts[i], self.base_offset + self._rel[i]

    def last_entry(self) -> tuple[int, int]:
        if not self._ts:
            return -1, self.base_offset
        return self._ts[-1], self.base_offset + self._rel[-1]
