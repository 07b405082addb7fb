"""The log cleaner's core (Kafka's Cleaner, OffsetMap, CleanedTransactionMetadata): compaction
of one partition log, keeping the latest record of every key.

A pass has three steps so that the log's owner (the event loop) never waits on the disk:
it only plans; the worker reads, writes and swaps.

* ``plan_clean`` (owner's thread): a snapshot of what the pass needs: the segments below the
  first uncleanable offset (never the active one), the log's aborted transactions, the last
  batch of each active producer, the log's truncation count.
* ``CleanJob.run`` (any thread; reads the old segment files, writes new ones): build the
  offset map (key -> last offset) over the dirty section [first dirty, first uncleanable),
  then recopy the segments from the start of the log up to the map's end, group by group
  (consecutive segments that fit in one segment), into ``.cleaned`` segments, flushed.
* ``CleanJob.commit`` (any thread, each group under the log's lock): each group still in
  the log as it was read is swapped for its cleaned segment (kwire.log.cleaner_swap); at the
  first group that is not (retention, a truncation or a deletion came in between) the rest
  of the pass is dropped.

Kafka's rules, batch by batch (Cleaner.cleanInto and MemoryRecords.filterTo):

* a record is kept if it is past the map's last offset, or is the latest of its key and
  either has a value or is a tombstone whose batch's delete horizon has not passed. A batch
  that keeps a tombstone and has no delete horizon yet gets one: now + delete.retention.ms
  (KIP-534: the horizon is the batch's base timestamp, attribute bit 6), so a tombstone
  stays for at least delete.retention.ms after the pass that first found it cleanable;
* records of aborted transactions are dropped; an abort marker stays while a batch of its
  transaction was seen in this pass (its entry goes to the new .txnindex), a commit marker
  while a batch of its transaction was; a marker that may go gets a delete horizon and goes
  once it has passed; an empty control batch (already cleaned) goes;
* the batch holding an active producer's last data offset (or, when its last entry is a
  marker, that marker) is kept even if empty (header only: producer id, epoch and sequence
  survive, so idempotence and fencing hold after a reload), and so is the batch that ends
  the pass's range;
* a batch whose records all stay is copied byte for byte; otherwise it is rebuilt with
  its original codec, producer fields, base offset and last offset delta: offsets never
  change, a compacted log has gaps.

The per-record work (the map's keys, the keep rule and the kept records' bytes) runs in C
when the extension is built (kwire.log.cleaner_fast; this module's Python walk is the
reference it is tested against).

Keys are compared as bytes (not hashed as Kafka's SkimpyOffsetMap does, so no collision can
lose a record); ``log.cleaner.dedupe.buffer.size`` bounds the entries as Kafka's map does
(24 bytes a slot, ``log.cleaner.io.buffer.load.factor`` full): a dirty section with more keys
is cleaned in several passes.
"""
from __future__ import annotations

import heapq
import os
import time
from dataclasses import dataclass, field

from kwire.codec.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CONTROL_MASK,
    HEADER,
    LOG_OVERHEAD,
    NONE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    _UINT32,
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CRC_OFFSET,
    CURRENT_MAGIC,
    LOG_APPEND_TIME,
    MIN_BATCH_LENGTH,
    RecordBatch,
    build_batch,
    crc32c,
    parse_control_record,
)
from kwire.log import cleaner_fast
from kwire.log.cleaner_swap import discard_cleaned, new_cleaned_segment, swap_in
from kwire.log.regions import SegmentFile, unlink_all
from kwire.log.segment import REL_OFFSET_MAX, LogSegment
from kwire.log.txn_index import AbortedTxn

_READ_CHUNK = 1 << 20
_SLOT_BYTES = 24   # Kafka's SkimpyOffsetMap: a 16-byte MD5 plus an 8-byte offset per slot


class CleaningAborted(Exception):
    """The pass was stopped (shutdown, the log went away): nothing was swapped in."""


# --- the offset map -----------------------------------------------------------------------
class OffsetMap:
    """key -> offset of its latest record in the dirty section, at most ``max_entries``.
    With the C extension (``fast``, the default when it is built) the map is a
    kwire.log.cleaner_fast.CMap and the walks run in C; without, a dict (the reference)."""

    __slots__ = ("_map", "_c", "max_entries", "latest_offset")

    def __init__(self, max_entries: int, *, fast: bool | None = None):
        use_c = cleaner_fast.ENABLED if fast is None else (fast and cleaner_fast.ENABLED)
        self._c = cleaner_fast.CMap() if use_c else None
        self._map: dict[bytes, int] = {}
        self.max_entries = max(1, max_entries)
        self.latest_offset = -1

    @classmethod
    def for_buffer(cls, dedupe_buffer_size: int, load_factor: float = 0.9, threads: int = 1, *,
                   fast: bool | None = None) -> "OffsetMap":
        """Sized as Kafka sizes its map: the buffer shared by the cleaner threads."""
        return cls(int(dedupe_buffer_size / max(1, threads) / _SLOT_BYTES * load_factor), fast=fast)

    def clear(self) -> None:
        if self._c is not None:
            self._c.clear()
        self._map.clear()
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        if self._c is not None:
            self._c.put(key, offset)
        else:
            self._map[key] = offset

    def get(self, key: bytes) -> int:
        if self._c is not None:
            return self._c.get(key)
        return self._map.get(key, -1)

    @property
    def full(self) -> bool:
        return len(self) >= self.max_entries

    def __len__(self) -> int:
        return len(self._c) if self._c is not None else len(self._map)

    @property
    def utilization(self) -> float:
        return len(self) / self.max_entries


# --- transactions ---------------------------------------------------------------------------
class CleanedTransactionMetadata:
    """Which transactional batches and markers a pass may drop (Kafka's class of this name)."""

    def __init__(self, cleaned_index=None):
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, list] = {}   # producer id -> [AbortedTxn, last seen batch offset]
        self._aborted: list = []                      # heap by first offset
        self.cleaned_index = cleaned_index

    def add_aborted(self, txns) -> None:
        for t in txns:
            heapq.heappush(self._aborted, (t.first_offset, t.last_offset, t))

    def _consume_up_to(self, offset: int) -> None:
        heap = self._aborted
        while heap and heap[0][0] <= offset:
            t = heapq.heappop(heap)[2]
            self.ongoing_aborted.setdefault(t.producer_id, [t, None])

    def on_control_batch(self, b: RecordBatch) -> bool:
        """True when the marker may be discarded."""
        self._consume_up_to(b.last_offset)
        recs = list(b.records()) if b.record_count > 0 else []
        if not recs:
            return True   # an empty control batch, cleaned already
        try:
            ctype, _ = parse_control_record(recs[0])
        except Exception:   # noqa: BLE001 - an unknown control record stays
            return False
        pid = b.producer_id
        if ctype == CONTROL_ABORT:
            meta = self.ongoing_aborted.pop(pid, None)
            if meta is not None and meta[1] is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta[0])
                return False
            return True
        if ctype == CONTROL_COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, b: RecordBatch) -> bool:
        """True when the data batch belongs to an aborted transaction."""
        self._consume_up_to(b.last_offset)
        if b.attributes & TRANSACTIONAL_MASK:
            meta = self.ongoing_aborted.get(b.producer_id)
            if meta is not None:
                meta[1] = b.last_offset
                return True
            self.ongoing_committed.add(b.producer_id)
        return False


# --- statistics and throttling ----------------------------------------------------------------
@dataclass
class CleanerStats:
    bytes_read: int = 0
    bytes_written: int = 0
    messages_read: int = 0
    messages_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    invalid_messages: int = 0
    buffer_utilization: float = 0.0
    start_s: float = field(default_factory=time.monotonic)
    map_done_s: float = 0.0
    end_s: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return max((self.end_s or time.monotonic()) - self.start_s, 1e-9)


class Throttler:
    """log.cleaner.io.max.bytes.per.second over bytes read and written (sleeps the worker)."""

    def __init__(self, bytes_per_second: float, *, sleep=time.sleep, monotonic=time.monotonic):
        self.rate = bytes_per_second
        self._sleep = sleep
        self._now = monotonic
        self._start = monotonic()
        self._bytes = 0

    def maybe_throttle(self, n: int) -> None:
        if self.rate <= 0 or self.rate == float("inf") or self.rate >= 1.7e308:
            return
        self._bytes += n
        elapsed = self._now() - self._start
        if elapsed > 1.0:   # a fresh window each second, as Kafka's Throttler checks periodically
            self._start, self._bytes = self._now(), n
            elapsed = 0.0
        wanted = self._bytes / self.rate
        if wanted > elapsed:
            self._sleep(wanted - elapsed)


# --- reading segments ----------------------------------------------------------------------
def _yield_gil() -> None:
    """Give up the GIL between batches: a thread that only computes keeps it for up to
    sys.getswitchinterval() (5 ms) while the event loop waits, which would show in every
    produce's latency; a sleep(0) per batch hands it over at once (bench/compaction_bench.py)."""
    time.sleep(0)


def _iter_segment_batches(path: str, size: int, check_done=None, yield_gil: bool = True, fast_run=None):
    """(RecordBatch, size) for each whole batch of the segment file (read sequentially).
    ``yield_gil``: give up the GIL after each batch (the Python walk; the C walk releases
    it while it works, which hands it to a waiting thread just as well). ``fast_run(buf,
    pos, end)``: takes a run of batches from ``pos`` itself (the C map build) and returns
    (the position of the first batch it left, True to stop reading)."""
    f = SegmentFile(path)
    try:
        pos = 0
        while pos < size:
            if check_done is not None:
                check_done()
            buf = f.pread(min(_READ_CHUNK, size - pos), pos)
            off = 0
            n = len(buf)
            while n - off >= BATCH_HEADER_SIZE:
                if fast_run is not None:
                    off, stop = fast_run(buf, off, n)
                    if stop:
                        return
                    if n - off < BATCH_HEADER_SIZE:
                        break
                length = int.from_bytes(buf[off + 8:off + 12], "big", signed=True)
                bsize = LOG_OVERHEAD + length
                if length < MIN_BATCH_LENGTH:
                    raise CleaningAborted(f"{path}: impossible batch length {length} at {pos + off}")
                if off + bsize > n:
                    break
                yield RecordBatch(buf, off), bsize
                off += bsize
                if yield_gil:
                    _yield_gil()   # lets the event loop's thread in at once (see _yield_gil)
            if off == 0:
                if n < size - pos and n >= BATCH_HEADER_SIZE:   # one batch bigger than a chunk
                    length = int.from_bytes(buf[8:12], "big", signed=True)
                    big = f.pread(LOG_OVERHEAD + length, pos)
                    if len(big) == LOG_OVERHEAD + length:
                        yield RecordBatch(big, 0), len(big)
                        pos += len(big)
                        continue
                return   # a torn tail: nothing more to read
            pos += off
    finally:
        f.close()


# --- the plan and the job -------------------------------------------------------------------
@dataclass
class LastRecord:
    last_data_offset: int | None   # None: the producer's last entry is a marker
    producer_epoch: int


def last_records_of_active_producers(plog) -> dict[int, LastRecord]:
    """Kafka's UnifiedLog.lastRecordsOfActiveProducers, from kwire's producer state (owner's
    thread)."""
    ps = plog.producer_state
    if ps is None:
        return {}
    out = {}
    for pid, entry in list(ps.producers.items()):
        last = entry.last_offset
        out[pid] = LastRecord(last if last >= 0 else None, entry.epoch)
    return out


@dataclass
class CleanJob:
    plog: object
    first_dirty: int
    first_uncleanable: int
    segments: list            # the log's segments below first_uncleanable, at plan time
    sizes: list
    aborted: list             # AbortedTxn of those segments, in marker order
    producers: dict
    generation: int
    now_ms: int
    config: object
    omap: OffsetMap
    throttler: Throttler | None = None
    check_done: object = None
    stats: CleanerStats = field(default_factory=CleanerStats)
    end_offset: int = -1
    cleaned: list = field(default_factory=list)   # (old segments, cleaned segment)
    swapped: int = 0
    groups: int = 0                                # groups cleaned by run()
    _txn: CleanedTransactionMetadata = field(default_factory=CleanedTransactionMetadata)

    # --- the worker's part ----------------------------------------------------------------
    def run(self) -> None:
        """Build the offset map, then write the cleaned segments (any thread)."""
        try:
            self._build_offset_map()
            self.stats.map_done_s = time.monotonic()
            self.end_offset = self.omap.latest_offset + 1
            self.stats.buffer_utilization = self.omap.utilization
            for group in group_segments_by_size(
                    [(s, z) for s, z in zip(self.segments, self.sizes) if s.base_offset < self.end_offset],
                    self.config.segment_bytes, self.config.segment_index_bytes,
                    self.config.index_interval_bytes, self.first_uncleanable):
                self._clean_group(group)
            self.groups = len(self.cleaned)
        except BaseException:
            self.discard()
            raise
        self.stats.end_s = time.monotonic()

    def _check(self) -> None:
        if self.check_done is not None:
            self.check_done()

    def _build_offset_map(self) -> None:
        omap, start, end = self.omap, self.first_dirty, self.first_uncleanable
        omap.clear()
        txn = CleanedTransactionMetadata()
        txn.add_aborted(t for t in self.aborted if t.last_offset >= start and t.first_offset < end)
        stats = self.stats
        done = [False]
        cmap = omap._c

        def fast_run(buf, pos, n):
            """Plain data batches in C, the GIL released (kwire.log.cleaner_fast)."""
            while True:
                status, pos, latest, records, nbytes = cleaner_fast.put_batches(cmap, buf, pos, n, start, end,
                                                                               omap.max_entries)
                if nbytes:
                    stats.map_bytes_read += nbytes
                    stats.map_messages_read += records
                    if latest > omap.latest_offset:
                        omap.latest_offset = latest
                    if self.throttler is not None:
                        self.throttler.maybe_throttle(nbytes)
                if status == cleaner_fast.NEEDS_ROOM:
                    cleaner_fast.reserve_for_batch(cmap, buf, pos)
                    continue
                if status in (cleaner_fast.FULL, cleaner_fast.PAST_END):
                    done[0] = True
                    return pos, True
                return pos, False   # the chunk's end, or a batch for the Python walk

        for i, seg in enumerate(self.segments):
            nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else end
            if nxt <= start:
                continue
            for b, size in _iter_segment_batches(seg.log_path, self.sizes[i], self._check, cmap is None,
                                                 fast_run if cmap is not None else None):
                if b.last_offset < start:
                    continue
                if b.base_offset >= end:
                    return
                stats.map_bytes_read += size
                if self.throttler is not None:
                    self.throttler.maybe_throttle(size)
                if b.attributes & CONTROL_MASK:
                    txn.on_control_batch(b)
                elif not txn.on_batch(b):
                    fast = None if omap._c is None else cleaner_fast.put_batch(omap._c, b, start, end,
                                                                               omap.max_entries)
                    if fast is not None:
                        stats.map_messages_read += b.record_count
                        if not fast:
                            return   # full: the pass ends before this batch
                    else:
                        for r in b.records():
                            stats.map_messages_read += 1
                            if r.key is not None and start <= r.offset < end:
                                if omap.full and omap.get(r.key) < 0:
                                    return   # full: the pass ends before this batch
                                omap.put(r.key, r.offset)
                if b.last_offset < end:
                    omap.latest_offset = max(omap.latest_offset, b.last_offset)
            if done[0]:
                return

    def _clean_group(self, group: list) -> None:
        segs = [s for s, _ in group]
        dest = new_cleaned_segment(self.plog.dir, segs[0].base_offset, self.config, self.now_ms)
        self.cleaned.append((segs, dest))
        txn = self._txn
        txn.cleaned_index = dest.txn_index
        mtime = None
        for seg, size in group:
            # the aborted transactions overlapping this segment (Kafka collects them per
            # segment, so one spanning several is known before its first batch is read)
            i = self.segments.index(seg)
            upper = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else self.first_uncleanable
            txn.add_aborted(t for t in self.aborted if t.last_offset >= seg.base_offset and t.first_offset < upper)
            self._clean_into(seg, size, dest, txn)
            try:
                mtime = os.stat(seg.log_path).st_mtime
            except FileNotFoundError:
                pass
        dest.on_become_inactive()
        dest.flush()
        if mtime is not None:
            os.utime(dest.log_path, (mtime, mtime))   # the last old segment's, as Kafka does

    def _clean_into(self, seg: LogSegment, size: int, dest: LogSegment, txn) -> None:
        pieces, metas, nbytes = [], [], 0
        stats = self.stats
        cmap = self.omap._c
        fast_run = None
        if cmap is not None:
            special = cleaner_fast.special_offsets(self.producers)

            def fast_run(buf, pos, n):
                """Plain data batches in C, the GIL released (kwire.log.cleaner_fast)."""
                nonlocal nbytes, pieces, metas
                pos, data, got, read, kept, keyless, nread = cleaner_fast.retain_batches(
                    cmap, buf, pos, n, self.omap.latest_offset, self.now_ms, self.first_uncleanable, special)
                stats.bytes_read += nread
                stats.messages_read += read
                stats.messages_written += kept
                stats.invalid_messages += keyless
                if self.throttler is not None and nread:
                    self.throttler.maybe_throttle(nread)
                if data:
                    pieces.append(data)
                    metas.extend(got)
                    nbytes += len(data)
                    if nbytes >= _READ_CHUNK:
                        self._write(dest, pieces, nbytes, metas)
                        pieces, metas, nbytes = [], [], 0
                return pos, False

        for b, bsize in _iter_segment_batches(seg.log_path, size, self._check, cmap is None, fast_run):
            stats.bytes_read += bsize
            if self.throttler is not None:
                self.throttler.maybe_throttle(bsize)
            out = self._filter_batch(b, bsize, txn)
            if out is None:
                continue
            data, kept, last_offset, max_ts = out
            stats.messages_written += kept
            pieces.append(data)
            metas.append((len(data), last_offset, max_ts))
            nbytes += len(data)
            if nbytes >= _READ_CHUNK:
                self._write(dest, pieces, nbytes, metas)
                pieces, metas, nbytes = [], [], 0
        if pieces:
            self._write(dest, pieces, nbytes, metas)

    def _write(self, dest, pieces, nbytes, metas) -> None:
        dest.append(pieces, nbytes, metas)
        self.stats.bytes_written += nbytes
        if self.throttler is not None:
            self.throttler.maybe_throttle(nbytes)

    def _filter_batch(self, b: RecordBatch, bsize: int, txn):
        """The batch as it stays: (bytes, records kept, last offset, max timestamp), or None."""
        now = self.now_ms
        is_control = bool(b.attributes & CONTROL_MASK)
        if is_control:
            can_discard = txn.on_control_batch(b)
            discard_records = can_discard and b.has_delete_horizon and b.base_timestamp <= now
        else:
            can_discard = txn.on_batch(b)
            discard_records = can_discard
        last = self.producers.get(b.producer_id) if b.producer_id >= 0 else None
        if last is not None:
            if last.last_data_offset is not None:
                is_last_of_producer = b.last_offset == last.last_data_offset
            else:
                is_last_of_producer = is_control and b.producer_epoch == last.producer_epoch
        else:
            is_last_of_producer = False
        if is_last_of_producer or b.next_offset == self.first_uncleanable:
            retain_empty = True
        elif discard_records:
            self.stats.messages_read += b.record_count
            return None
        else:
            retain_empty = False
        marker_for_empty_txn = can_discard and is_control
        omap = self.omap
        latest = omap.latest_offset
        if not is_control and not discard_records and omap._c is not None:
            fast = cleaner_fast.retain(omap._c, b, bsize, latest, now)   # the same rule, in C
            if fast is not None:
                data, kept, read, keyless = fast
                self.stats.messages_read += read
                self.stats.invalid_messages += keyless
                if kept:
                    return data, kept, b.last_offset, HEADER.unpack_from(data, 0)[8]
                if retain_empty:
                    return empty_batch(b), 0, b.last_offset, b.max_timestamp
                return None
        retained = []
        tombstones = False
        whole = True
        n = 0
        for r in b.records():
            n += 1
            if discard_records:
                keep = False
            elif is_control or r.offset > latest:
                keep = True
            elif r.key is None:
                self.stats.invalid_messages += 1
                keep = False
            else:
                keep = r.offset >= omap.get(r.key) and (
                    r.value is not None or not b.has_delete_horizon or now < b.base_timestamp)
            if keep:
                retained.append(r)
                if r.value is None:
                    tombstones = True
            else:
                whole = False
        self.stats.messages_read += n
        if retained:
            need_horizon = (tombstones or marker_for_empty_txn) and not b.has_delete_horizon
            if whole and not need_horizon:
                return bytes(b.buf[b.pos:b.pos + bsize]), len(retained), b.last_offset, b.max_timestamp
            horizon = now + self.config.delete_retention_ms if need_horizon else (
                b.base_timestamp if b.has_delete_horizon else None)
            data = rebuild_batch(b, retained, horizon)
            return data, len(retained), b.last_offset, HEADER.unpack_from(data, 0)[8]
        if retain_empty:
            return empty_batch(b), 0, b.last_offset, b.max_timestamp
        return None

    # --- the swap ------------------------------------------------------------------------
    def commit(self) -> int:
        """Swap in the cleaned groups, in order, while each is still in the log as read
        (any thread: each group's check and swap hold the log's lock, so the event loop's
        appends and reads see the log before or after a swap, never in between). Returns
        the number swapped; the rest are removed. The directory fsync is the caller's."""
        plog = self.plog
        deleted: list[str] = []
        try:
            for i, (old, new) in enumerate(self.cleaned):
                # the flush lock first (a flush of this log in another thread finishes, and
                # one planned earlier skips the segments marked removed), then the log's
                with plog._flush_lock, plog.lock:
                    ok = (not plog.closed and not plog.offline and plog._truncations == self.generation
                          and _still_in_log(plog, old))
                    if ok:
                        new.config = plog.config
                        swap_in(plog, old, new, deleted)
                        self.swapped += 1
                if not ok:
                    for _, rest in self.cleaned[i:]:
                        discard_cleaned(rest)
                    break
        except OSError as exc:   # the log may be half swapped in memory: its dir goes offline
            raise plog.storage_failure("cleaner swap", exc) from exc
        finally:
            self.cleaned = []
            unlink_all(deleted)   # outside the lock: unlinking a big file takes a while
        return self.swapped

    def discard(self) -> None:
        for _, seg in self.cleaned:
            try:
                discard_cleaned(seg)
            except OSError:
                pass
        self.cleaned = []


def _still_in_log(plog, old: list) -> bool:
    segs = plog.segments
    try:
        i = segs.index(old[0])
    except ValueError:
        return False
    return segs[i:i + len(old)] == old and i + len(old) < len(segs)


def group_segments_by_size(segments: list, max_size: int, max_index_size: int, index_interval: int,
                           first_uncleanable: int) -> list[list]:
    """Consecutive (segment, size) pairs grouped so that each group fits one segment: total
    size <= segment.bytes, an estimate of its index entries within segment.index.bytes, and
    offsets within 2^31 of the group's base (Kafka's groupSegmentsBySize)."""
    groups = []
    i = 0
    max_entries = max(1, max_index_size // 8)
    per_entry = max(1, index_interval)
    while i < len(segments):
        group = [segments[i]]
        size = segments[i][1]
        i += 1
        while i < len(segments):
            seg, sz = segments[i]
            nxt_upper = segments[i + 1][0].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            if (size + sz > max_size or (size + sz) // per_entry > max_entries
                    or (sz > 0 and nxt_upper - group[0][0].base_offset > REL_OFFSET_MAX)):
                break
            group.append(segments[i])
            size += sz
            i += 1
        groups.append(group)
    return groups


# --- rebuilding batches ---------------------------------------------------------------------
def rebuild_batch(b: RecordBatch, records: list, delete_horizon_ms: int | None) -> bytes:
    """The batch with only ``records``: same codec, producer fields, flags, base offset and
    last offset delta (Kafka's buildRetainedRecordsInto, preserving the last offset)."""
    attrs = b.attributes
    log_append = bool(attrs & TIMESTAMP_TYPE_MASK)
    return build_batch(
        records, base_offset=b.base_offset, compression=attrs & 0x07,
        timestamp_type=LOG_APPEND_TIME if log_append else 0,
        producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
        is_transactional=bool(attrs & TRANSACTIONAL_MASK), is_control=bool(attrs & CONTROL_MASK),
        partition_leader_epoch=b.partition_leader_epoch, last_offset_delta=b.last_offset_delta,
        max_timestamp=b.max_timestamp if log_append else None, delete_horizon_ms=delete_horizon_ms)


def empty_batch(b: RecordBatch) -> bytes:
    """A batch header without records that keeps the batch's offsets and producer fields
    (Kafka's DefaultRecordBatch.writeEmptyHeader)."""
    attrs = (b.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)) | NONE
    out = bytearray(HEADER.pack(
        b.base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD, b.partition_leader_epoch, CURRENT_MAGIC, 0, attrs,
        b.last_offset_delta, b.max_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch,
        b.base_sequence, 0))
    _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def plan_clean(plog, first_dirty: int, first_uncleanable: int, now_ms: int, omap: OffsetMap, *,
               throttler: Throttler | None = None, check_done=None) -> CleanJob | None:
    """What a pass over ``plog`` needs, taken on the owner's thread; None when no segment
    lies below ``first_uncleanable``."""
    segs = []
    active = plog.segments[-1]
    for seg in plog.segments:
        if seg is active or seg.base_offset >= first_uncleanable:
            break
        segs.append(seg)
    if not segs:
        return None
    aborted = []
    for seg in plog.segments:   # markers may lie past the range (Kafka's collectAbortedTransactions)
        aborted.extend(t for t in seg.txn_index.entries if t.first_offset < first_uncleanable)
    return CleanJob(plog=plog, first_dirty=first_dirty, first_uncleanable=first_uncleanable, segments=segs,
                    sizes=[s.size for s in segs], aborted=aborted,
                    producers=last_records_of_active_producers(plog), generation=plog._truncations,
                    now_ms=now_ms, config=plog.config, omap=omap, throttler=throttler, check_done=check_done)
