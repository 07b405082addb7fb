"""One log segment: ``<20-digit base offset>.log`` (record batches byte for byte as on the
wire, offsets assigned) plus its sparse ``.index`` and ``.timeindex`` (see index.py).

Synchronous file I/O with explicit positions (pread/pwritev), no Python object per record.
The .log file is opened on demand through the process-wide open-file LRU (regions.OPEN_FILES)
and may be closed between uses; index files are written lazily and only once they have
entries (a missing index of a non-empty segment is rebuilt by scanning the .log).
"""
from __future__ import annotations

import os

from kwire.codec.records import (
    BATCH_HEADER_SIZE,
    CURRENT_MAGIC,
    HEADER,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    RecordBatch,
)
from kwire.errors import CorruptRecordBatch
from kwire.fds import open_fd
from kwire.log.config import LogConfig
from kwire.log.errors import CorruptIndex, KafkaStorageError
from kwire.log.index import OffsetIndex, TimeIndex
from kwire.log.regions import OPEN_FILES, SegmentFile, delete_files, write_all
from kwire.log.txn_index import SUFFIX as TXN_INDEX_SUFFIX, TransactionIndex

REL_OFFSET_MAX = (1 << 31) - 1
_SCAN_CHUNK = 2048
_RECOVERY_CHUNK = 4 << 20
_unpack_header = HEADER.unpack_from
_touch = OPEN_FILES.touch


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


# append positions the active segment remembers (LogSegment._hints): a tailing consumer fetches
# at one of the last few appends; 32 cost ~3 KB per segment, kept on every segment ever
# written to (15 MB and more on a broker of 5,000 partitions), 4 cost ~450 B on the active one
_HINTS = 4


class BatchHeader:
    """What scanning a segment file yields per batch (header fields only)."""

    __slots__ = ("position", "size", "base_offset", "last_offset", "max_timestamp")

    def __init__(self, position, size, base_offset, last_offset, max_timestamp):
        self.position = position
        self.size = size
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.max_timestamp = max_timestamp

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


class LogSegment:
    __slots__ = (
        "dir",
        "base_offset",
        "config",
        "log_path",
        "index",
        "time_index",
        "txn_index",
        "size",
        "next_offset",
        "created_ms",
        "max_timestamp",
        "offset_of_max_timestamp",
        "bytes_since_last_index_entry",
        "rolling_timestamp",
        "_indexes_missing",
        "_file",
        "removed",
        "_hints",
    )

    def __init__(self, dir: str, base_offset: int, config: LogConfig, *, size: int, created_ms: int):
        self.dir = dir
        self.base_offset = base_offset
        self.config = config
        stem = os.path.join(dir, segment_name(base_offset))
        self.log_path = stem + ".log"
        self.index = OffsetIndex(stem + ".index", base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(stem + ".timeindex", base_offset, config.segment_index_bytes)
        self.txn_index = TransactionIndex(stem + TXN_INDEX_SUFFIX, base_offset)  # aborted transactions
        self.size = size
        self.next_offset: int | None = None if size else base_offset  # None: not scanned yet
        self.created_ms = created_ms
        self.max_timestamp: int | None = None if size else -1  # None: not loaded yet
        self.offset_of_max_timestamp = -1
        self.bytes_since_last_index_entry = 0
        self.rolling_timestamp: int | None = None if size else -1
        self._indexes_missing = False
        self._file: SegmentFile | None = None  # set and cleared by OPEN_FILES
        self.removed = False   # left its log (deleted, or replaced by a cleaned segment): flushes skip it
        # The file position where each of the last appends began, by the offset that came
        # just before it (the segment's next offset then): a consumer tailing the log fetches
        # exactly there, and ``translate`` starts at that batch instead of scanning from the
        # sparse index entry (up to index.interval.bytes of headers: ~14 batches of 100 B
        # records, two preads, per Fetch). Cleared when the file is cut (truncation, recovery)
        # and when the segment rolls.
        self._hints: dict[int, int] = {}

    # --- life cycle -------------------------------------------------------------------
    @classmethod
    def create(cls, dir: str, base_offset: int, config: LogConfig, now_ms: int, *,
               lazy: bool = False) -> "LogSegment":
        """A new, empty segment: creates the .log file (opened again on first use; with
        ``lazy``, created then: an empty segment needs no file, and a partition directory
        without one opens as an empty log); the index files are created when they get
        entries. Touches no shared state, so it may run in a worker thread."""
        seg = cls(dir, base_offset, config, size=0, created_ms=now_ms)
        if not lazy:
            os.close(open_fd(seg.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC))
        seg.index.reset(fresh=True)
        seg.time_index.reset(fresh=True)
        seg.txn_index.reset()
        return seg

    @classmethod
    def existing(cls, dir: str, base_offset: int, config: LogConfig, *, size: int, now_ms: int,
                 indexes_present: bool) -> "LogSegment":
        seg = cls(dir, base_offset, config, size=size, created_ms=now_ms)
        seg._indexes_missing = not indexes_present
        return seg

    @property
    def file(self) -> SegmentFile:
        """The open .log file (opened on demand through the open-file LRU). Hold the object,
        not its fd number, while you use it: an eviction closes a file nobody holds."""
        f = self._file
        if f is not None:
            _touch(self)
            return f
        # an empty segment may have no file yet (LogSegment.create(lazy=True))
        return OPEN_FILES.get(self, self.log_path, os.O_RDWR if self.size else os.O_RDWR | os.O_CREAT)

    def close(self) -> None:
        """Write the indexes and close this log's reference to the file (readers that hold
        FileRegions keep their own reference, so their reads still work)."""
        if self.index.loaded:
            self.index.write()
            self.time_index.write()
        OPEN_FILES.discard(self)

    def delete(self) -> None:
        """Unlink all files (or leave that to the caller of ``deferred_deletes``). Open
        regions keep reading the unlinked inode."""
        self.removed = True
        OPEN_FILES.discard(self)
        delete_files(self.paths())

    def paths(self) -> tuple[str, str, str, str]:
        return self.log_path, self.index.path, self.time_index.path, self.txn_index.path

    def flush(self) -> None:
        """fsync the log and its indexes."""
        self.sync_plan()()

    def sync_plan(self):
        """Split flush: returns a function that does the disk work (fdatasync of the .log,
        writes and fsyncs of the index files from a copy of their entries taken now) and
        touches no in-memory state, so it may run in a worker thread; the index bookkeeping
        is updated when it returns (call it once)."""
        f = self._file
        path = self.log_path
        need_log = f is not None or self.size > 0
        index_jobs = [ix.write_plan(sync=True) for ix in (self.index, self.time_index) if ix.loaded]
        index_jobs.append(self.txn_index.sync_plan())
        index_jobs = [j for j in index_jobs if j is not None]

        def run() -> None:
            if need_log:
                if f is not None:
                    os.fdatasync(f.fileno())
                else:  # not open now: a private descriptor, so the LRU is not touched
                    fd = open_fd(path, os.O_RDONLY)
                    try:
                        os.fdatasync(fd)
                    finally:
                        os.close(fd)
            for job in index_jobs:
                job()

        return run

    # --- indexes ------------------------------------------------------------------------
    def ensure_loaded(self) -> None:
        """Load the indexes (lazily, on first use); rebuild them if missing or corrupt."""
        if self.index.loaded and self.next_offset is not None and self.max_timestamp is not None:
            return
        if not self.index.loaded:
            try:
                if self._indexes_missing:
                    raise FileNotFoundError(self.index.path)
                self.index.load(self.size)
                self.time_index.load()
                if self.index.last_entry()[0] - self.base_offset > REL_OFFSET_MAX:
                    raise CorruptIndex("offset overflow")
                self._check_last_time_entry()
            except (CorruptIndex, FileNotFoundError, OSError):
                self.rebuild_indexes(validate=False)
                return
        self._scan_tail()

    def _check_last_time_entry(self) -> None:
        """The last time index entry must name a batch whose max timestamp it is (one pread):
        catches zeroed or stale time indexes that pass the structural checks."""
        ts, off = self.time_index.last_entry()
        if ts < 0 and len(self.time_index) == 0:
            return
        _, pos = self.index.lookup(off)
        for h in self.scan_headers(pos, self.size):
            if h.last_offset >= off:
                if h.last_offset == off and h.max_timestamp == ts:
                    return
                break
        raise CorruptIndex(f"{self.time_index.path}: last entry ({ts}, {off}) matches no batch")

    def _scan_tail(self) -> None:
        """Compute next offset and max timestamp from the last index entries plus the batch
        headers after the last offset index entry (at most ~index.interval.bytes)."""
        ts, ts_off = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = ts, ts_off if ts >= 0 else -1
        last_off, pos = self.index.last_entry()
        next_offset = self.base_offset
        end = pos
        for h in self.scan_headers(pos, self.size):
            next_offset = h.last_offset + 1
            end = h.position + h.size
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp = h.max_timestamp
                self.offset_of_max_timestamp = h.last_offset
        if end != self.size:
            # structural problem in the tail: validate and rebuild this segment's indexes
            self.rebuild_indexes(validate=True)
            return
        if pos == 0 and end == 0:
            next_offset = self.base_offset
        self.next_offset = next_offset
        self.bytes_since_last_index_entry = self.size - pos

    def rebuild_indexes(self, *, validate: bool, from_offset: int | None = None,
                        min_base_offset: int | None = None) -> bool:
        """Rebuild the indexes by scanning the log (CRC-checking batches when ``validate``).
        With ``from_offset`` (recovery point), the existing indexes are kept below it and only
        batches from there on are checked. A torn or invalid tail is truncated; returns True
        when bytes were truncated."""
        start = 0
        if from_offset is not None and from_offset > self.base_offset:
            try:
                if self._indexes_missing:
                    raise FileNotFoundError(self.index.path)
                if not self.index.loaded:
                    self.index.load(self.size)
                    self.time_index.load()
                self.index.truncate_to_offset(from_offset)
                self.time_index.truncate_to_offset(from_offset)
                start = self.index.last_entry()[1]
            except (CorruptIndex, FileNotFoundError, OSError):
                start = 0
        if start == 0:
            self.index.reset()
            self.time_index.reset()
        ts, ts_off = self.time_index.last_entry()
        max_ts, off_of_max = (ts, ts_off) if ts >= 0 else (-1, -1)
        expected = self.base_offset if min_base_offset is None else max(min_base_offset, self.base_offset)
        interval = self.config.index_interval_bytes
        since = 0
        index, time_index = self.index, self.time_index
        pos = start
        next_offset = self.base_offset
        first = True
        valid_end = start
        reader = self._iter_file_batches if validate else self._iter_header_batches
        for h in reader(start, self.size):
            if h is None or h.base_offset < expected or h.last_offset - self.base_offset > REL_OFFSET_MAX:
                break
            if h.max_timestamp > max_ts:
                max_ts, off_of_max = h.max_timestamp, h.last_offset
            if since > interval and not first:
                index.append(h.last_offset, h.position)
                time_index.maybe_append(max_ts, off_of_max)
                since = 0
            first = False
            since += h.size
            pos = h.position + h.size
            valid_end = pos
            next_offset = h.last_offset + 1
            expected = next_offset
        if start > 0 and valid_end == start:
            # the batch at the last trusted index entry is itself bad: rebuild from scratch
            self._indexes_missing = True
            return self.rebuild_indexes(validate=True, min_base_offset=min_base_offset)
        truncated = valid_end < self.size
        if truncated:
            self._hints.clear()
            self.file.truncate(valid_end)
            self.size = valid_end
            index.truncate_to_position(valid_end)
            time_index.truncate_to_offset(next_offset)
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, off_of_max
        self.next_offset = next_offset if self.size else self.base_offset
        self.bytes_since_last_index_entry = since
        self._indexes_missing = False
        self.rolling_timestamp = None if self.size else -1
        index.write()
        time_index.write()
        return truncated

    # --- scanning ----------------------------------------------------------------------
    def _parse(self, buf, off: int, file_pos: int) -> BatchHeader | None:
        (base, length, _epoch, magic, _crc, _attr, lod, _bts, max_ts, *_rest) = _unpack_header(buf, off)
        if length < MIN_BATCH_LENGTH or magic != CURRENT_MAGIC or lod < 0:
            return None
        return BatchHeader(file_pos, LOG_OVERHEAD + length, base, base + lod, max_ts)

    def scan_headers(self, position: int, end: int):
        """Yield BatchHeader for each batch in [position, end); stops at a batch that is
        structurally impossible or runs past ``end`` (no CRC check)."""
        f = self.file  # held for the whole scan (see regions.py)
        fd = f.fileno()
        buf = b""
        buf_pos = position
        while position < end:
            off = position - buf_pos
            if off < 0 or off + BATCH_HEADER_SIZE > len(buf):
                buf = os.pread(fd, min(_SCAN_CHUNK, max(end - position, 0)), position)
                buf_pos = position
                off = 0
                if len(buf) < BATCH_HEADER_SIZE:
                    return
            h = self._parse(buf, off, position)
            if h is None or position + h.size > end:
                return
            yield h
            position += h.size

    _iter_header_batches = scan_headers

    def _iter_file_batches(self, position: int, end: int):
        """Yield BatchHeader for each batch in [position, end) that is whole, structurally
        valid and passes its CRC check; yields None (then stops) at the first that is not."""
        f = self.file  # held for the whole scan (see regions.py)
        fd = f.fileno()
        while position < end:
            want = min(_RECOVERY_CHUNK, end - position)
            buf = os.pread(fd, want, position)
            off = 0
            n = len(buf)
            progressed = False
            while n - off >= BATCH_HEADER_SIZE:
                h = self._parse(buf, off, position + off)
                if h is None:
                    yield None
                    return
                if off + h.size > n:
                    if h.size > want and position + off + h.size <= end and off == 0:
                        buf = os.pread(fd, h.size, position)  # one batch bigger than a chunk
                        n = len(buf)
                        if n < h.size:
                            yield None
                            return
                        continue
                    break
                try:
                    b = RecordBatch(buf, off)
                    b.validate()
                    b.validate_crc()
                except CorruptRecordBatch:
                    yield None
                    return
                yield h
                off += h.size
                progressed = True
            if not progressed:
                if position + off < end:
                    yield None  # a torn header or batch at the end
                return
            position += off

    def translate(self, offset: int, start_position: int = 0) -> BatchHeader | None:
        """The first batch with last offset >= ``offset`` (searching from the sparse index
        entry at or below it), or None when the segment has none."""
        self.ensure_loaded()
        pos = self._hints.get(offset)
        if pos is None:   # every batch before the hint's position ends below ``offset``
            _, pos = self.index.lookup(offset)
        if pos < start_position:
            pos = start_position
        for h in self.scan_headers(pos, self.size):
            if h.last_offset >= offset:
                return h
        return None

    def batch_end_at_or_below(self, limit: int, start: int) -> int:
        """The end position of the last whole batch that ends at or before ``limit``,
        counting batches from ``start`` (returns ``start`` when even the first does not fit)."""
        self.ensure_loaded()
        pos = self.index.floor_position(limit)
        if pos > start:
            # an indexed batch start: whole batches, within the limit, no file read. This
            # may stop up to one index interval (plus a batch) short of the limit; fetch
            # max_bytes is an upper bound, and the rest comes with the next fetch.
            return pos
        pos = start
        for h in self.scan_headers(pos, self.size):
            if h.position + h.size > limit:
                break
            pos = h.position + h.size
        return pos

    # --- append -------------------------------------------------------------------------
    def append(self, pieces: list, nbytes: int, metas: list) -> None:
        """Write ``pieces`` (the batches, offsets assigned) at the end of the file in one
        pwritev and update the indexes. ``metas``: (size, last_offset, max_timestamp) per batch."""
        f = self.file
        start = self.size
        try:
            write_all(f, pieces, start)
        except OSError as e:
            try:
                f.truncate(start)
            except OSError:
                pass
            raise KafkaStorageError(f"append to {self.log_path} failed: {e}") from e
        if self.rolling_timestamp == -1 and start == 0:
            self.rolling_timestamp = metas[0][2]
        if self.next_offset is not None:
            hints = self._hints
            hints[self.next_offset] = start
            if len(hints) > _HINTS:
                del hints[next(iter(hints))]
        interval = self.config.index_interval_bytes
        since = self.bytes_since_last_index_entry
        max_ts = self.max_timestamp
        off_of_max = self.offset_of_max_timestamp
        pos = start
        for size, last_offset, batch_max_ts in metas:
            if batch_max_ts > max_ts:
                max_ts, off_of_max = batch_max_ts, last_offset
            if since > interval:
                self.index.append(last_offset, pos)
                self.time_index.maybe_append(max_ts, off_of_max)
                since = 0
            pos += size
            since += size
        self.bytes_since_last_index_entry = since
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, off_of_max
        self.size = pos
        self.next_offset = metas[-1][1] + 1

    def get_rolling_timestamp(self) -> int:
        """The first batch's max timestamp (Kafka's rollingBasedTimestamp), -1 if none."""
        if self.rolling_timestamp is None:
            self.rolling_timestamp = -1
            if self.size >= BATCH_HEADER_SIZE:
                h = self._parse(self.file.pread(BATCH_HEADER_SIZE, 0), 0, 0)
                if h is not None:
                    self.rolling_timestamp = h.max_timestamp
        return self.rolling_timestamp

    def on_become_inactive(self) -> None:
        """On roll: record the final max timestamp. The index files are written by the flush
        of the rolled segment (off the event loop, LogManager.plan_flush); a crash before
        that rebuilds them from the recovery point. The append hints go: reads of a
        rolled segment start from its index (the tail is in the new segment)."""
        self._hints = {}
        self.ensure_loaded()
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp, True)

    def largest_timestamp(self) -> int:
        """Largest record timestamp, or the file's mtime when no batch carries one (Kafka)."""
        self.ensure_loaded()
        if self.max_timestamp >= 0:
            return self.max_timestamp
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except FileNotFoundError:
            return -1

    def truncate_to(self, offset: int) -> int:
        """Remove batches whose last offset is >= ``offset``. Returns bytes removed."""
        self.ensure_loaded()
        h = self.translate(offset)
        if h is None:
            return 0
        removed = self.size - h.position
        self._hints.clear()
        self.file.truncate(h.position)
        self.size = h.position
        self.index.truncate_to_offset(h.base_offset)
        self.index.truncate_to_position(h.position)
        self.time_index.truncate_to_offset(h.base_offset)
        self.txn_index.truncate_to(h.base_offset)
        self._scan_tail()
        if self.size == 0:
            self.rolling_timestamp = -1
            self.next_offset = self.base_offset
        self.index.write()
        self.time_index.write()
        return removed

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, next={self.next_offset})"
