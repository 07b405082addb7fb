"""PartitionLog: the segmented, append-only log of one partition.

Synchronous; the Trio edge calls it from one task at a time. One other thread changes the
segment list: the log cleaner swaps cleaned segments in from a worker thread
(kwire.log.cleaner_swap) while holding ``lock`` (Kafka's UnifiedLog lock), so every method
that changes the segment list or opens segment files holds it too (an RLock: uncontended,
a fraction of a microsecond; contended, the length of one swap's renames). Every
append is validated and normalised first (kwire.log.validator, Kafka's LogValidator), then
reaches the OS (one pwritev) before returning, so killing the process never loses an
acknowledged batch; fsync happens only as the flush policy says (log.flush.per.append: the
Produce handler fdatasyncs in a worker thread). An OSError in any operation takes the log
dir offline (kwire.log.dir_failure): KafkaStorageError from then on, until a restart.
Except running out of file descriptors (EMFILE/ENFILE, kwire.fds): not a disk failure, the
operation fails with the retriable TooManyOpenFiles and the dir stays online.
"""
from __future__ import annotations

import bisect
import functools
import os
import shutil
import struct
import threading
import time
from dataclasses import dataclass, field

from kwire.codec.records import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CRC_OFFSET,
    HEADER,
    RecordBatch,
    crc32c,
)
from kwire.atomic import fsync_dir
from kwire.errors import CorruptRecordBatch, ErrorCode, KafkaError
from kwire.fds import out_of_descriptors
from kwire.log import producer_log, producer_state
from kwire.log.append_result import AppendResult
from kwire.log.producer_log import NOT_VERIFIED
from kwire.log.config import LogConfig
from kwire.log.dir_failure import LogDirFailureChannel
from kwire.log.errors import KafkaStorageError, OffsetOutOfRange, TooManyOpenFiles
from kwire.log.leader_epoch import CHECKPOINT_FILE as LEADER_EPOCH_CHECKPOINT, LeaderEpochCache
from kwire.log.validator import COORDINATOR, REPLICATION, validate_records
from kwire.log.regions import FileRegion, region_or_bytes
from kwire.log.segment import REL_OFFSET_MAX, LogSegment
from kwire.log.txn_index import collect_aborted

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")


def _storage_op(what: str):
    """An OSError inside a log operation takes the log dir offline (KafkaStorageError)."""
    def wrap(fn):
        @functools.wraps(fn)
        def op(self, *args, **kwargs):
            try:
                return fn(self, *args, **kwargs)
            except OSError as exc:
                raise self.storage_failure(what, exc) from exc
            except KafkaStorageError as exc:
                if isinstance(exc.__cause__, OSError):
                    err = self.storage_failure(what, exc.__cause__)
                    if isinstance(err, TooManyOpenFiles):
                        raise err from exc
                raise
        return op
    return wrap


def _locked(fn):
    """Run the method holding the log's lock (see the module doc)."""
    @functools.wraps(fn)
    def op(self, *args, **kwargs):
        with self.lock:
            return fn(self, *args, **kwargs)
    return op


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class FetchData:
    """Whole record batches as file byte ranges; ``size`` = sum of region lengths."""

    regions: list = field(default_factory=list)
    size: int = 0

    def __bytes__(self) -> bytes:
        return b"".join(bytes(r) for r in self.regions)

    def __len__(self) -> int:
        return self.size


_EMPTY_REGIONS: list = []


class PartitionLog:
    """Open with ``PartitionLog.open(dir, config, ...)``. Offsets: ``log_start_offset``
    (earliest), ``log_end_offset`` (latest), ``high_watermark`` (set by the server: records
    below it are visible to consumers; retention never deletes at or above it),
    ``recovery_point`` (everything below is on disk)."""

    def __init__(self, dir: str, config: LogConfig, segments: list[LogSegment], *,
                 log_start_offset: int, recovery_point: int, now_ms: int,
                 topic: str | None = None, partition: int | None = None,
                 failure_channel: LogDirFailureChannel | None = None,
                 leader_epoch_cache: LeaderEpochCache | None = None):
        self.dir = dir
        self.log_dir = os.path.dirname(os.path.abspath(dir))  # Kafka's log dir (the data dir)
        self.failure_channel = failure_channel or LogDirFailureChannel()
        self.config = config
        self.topic = topic
        self.partition = partition
        # Kafka's TopicPartition.toString, for error messages
        self.topic_partition = f"{topic}-{partition}" if topic is not None and partition is not None \
            else os.path.basename(dir)
        self.segments = segments
        self._bases = [s.base_offset for s in segments]
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self._high_watermark = self.log_end_offset   # only update_high_watermark sets it
        # written by a flush (any thread) only; flush.ms counts from it
        self.last_flush_ms = now_ms
        # written by an append only: the time ``flush_wanted`` judges flush.ms at
        self._last_append_ms = now_ms
        self.closed = False
        # held by a flush (any thread) and by the cleaner's swap, which marks the segments
        # it replaces ``removed`` so that a flush planned earlier skips them; always taken
        # before ``lock``, never while holding it
        self._flush_lock = threading.RLock()
        # held by every change of the segment list and every read of segment files; the
        # cleaner's swap (a worker thread) takes it too
        self.lock = threading.RLock()
        self._truncations = 0
        # kwire.log.producer_state: built on first idempotent or transactional append, or at
        # open when the directory holds producer snapshots (kwire.log.producer_log)
        self.producer_state = None
        # epoch -> start offset (OffsetForLeaderEpoch); a new log's starts empty
        self.leader_epoch_cache = leader_epoch_cache if leader_epoch_cache is not None else \
            LeaderEpochCache(os.path.join(dir, LEADER_EPOCH_CHECKPOINT), topic_partition=self.topic_partition)

    # --- opening ------------------------------------------------------------------------
    @classmethod
    def open(cls, dir: str, config: LogConfig | None = None, *, recovery_point: int | None = None,
             log_start_offset: int | None = None, clean: bool = False, now_ms: int | None = None,
             topic: str | None = None, partition: int | None = None,
             failure_channel: LogDirFailureChannel | None = None) -> "PartitionLog":
        """Open (or create) the log in ``dir`` (kwire.log.log_loader: Kafka's LogLoader).
        ``clean=True`` with a ``recovery_point`` (from the checkpoint written at a clean
        shutdown) trusts the files and scans nothing but the active segment's last index
        interval. Otherwise batches from the recovery point (0 if unknown) on are
        CRC-checked, a torn tail is truncated and indexes are rebuilt."""
        from kwire.log.log_loader import load_log  # noqa: PLC0415 - the loader builds this class

        return load_log(cls, dir, config or LogConfig(), recovery_point=recovery_point,
                        log_start_offset=log_start_offset, clean=clean,
                        now_ms=_now_ms() if now_ms is None else now_ms, topic=topic, partition=partition,
                        failure_channel=failure_channel)

    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch in the log (-1 when no batch carries one)."""
        return self.leader_epoch_cache.latest_epoch

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int | None = None) -> bool:
        """Record that ``leader_epoch`` starts at ``start_offset`` (default: the log end
        offset), as Kafka's Partition.makeLeader does when this replica becomes leader, so
        the new epoch has its entry before its first write (and the checkpoint write, with
        its fsync, happens at the leader change rather than on a Produce). Blocking (the
        file): a caller on the event loop runs it in a worker thread while no append runs.
        Returns True when the cache changed."""
        self._check_open()
        if leader_epoch < 0:
            return False
        offset = self.log_end_offset if start_offset is None else start_offset
        try:
            return self.leader_epoch_cache.assign(leader_epoch, offset)
        except OSError as exc:
            raise self.storage_failure("leader epoch checkpoint", exc) from exc

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """(epoch, end offset) of ``leader_epoch`` (Kafka's UnifiedLog.endOffsetForEpoch):
        the largest epoch <= it this log knows and where that epoch ends; None when
        undefined (no such epoch)."""
        epoch, offset = self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)
        return None if offset < 0 else (epoch, offset)

    # --- storage failures ---------------------------------------------------------------
    @property
    def offline(self) -> bool:
        """True once an I/O error took this log's dir offline (KAFKA_STORAGE_ERROR)."""
        return self.failure_channel.is_offline(self.log_dir)

    def storage_failure(self, what: str, exc: BaseException) -> KafkaError:
        """Report an I/O error: the log dir goes offline (logged once). Returns the error to
        raise. Out of file descriptors is no disk failure: TooManyOpenFiles, dir online."""
        if out_of_descriptors(exc):
            self.failure_channel.maybe_add_offline_log_dir(self.log_dir, f"{what} on {self.dir}", exc)
            return TooManyOpenFiles(f"{what} on {self.topic_partition}: out of file descriptors ({exc})")
        self.failure_channel.maybe_add_offline_log_dir(self.log_dir, f"{what} on {self.dir}", exc)
        return self.failure_channel.error_for(self.log_dir, f"{what} on {self.topic_partition}")


    # --- offsets ------------------------------------------------------------------------
    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def high_watermark(self) -> int:
        """Records below it are replicated to the ISR (visible to consumers). Read-only: it
        changes through :meth:`update_high_watermark` alone."""
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> int:
        """The one setter of the high watermark, Kafka's UnifiedLog.updateHighWatermark:
        ``offset`` is clamped so that log start <= HW <= LEO always holds (a leader's ISR
        minimum, a follower's copy of the leader's, a checkpoint read at start-up or a log
        moved between dirs may each name an offset outside the local log). Returns the value
        set; whether it may move backwards is the caller's rule (a leader never does)."""
        hw = self.log_end_offset if offset > self.log_end_offset else offset
        if hw < self.log_start_offset:
            hw = self.log_start_offset
        self._high_watermark = hw
        return hw

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        """The LSO (Kafka's UnifiedLog.lastStableOffset): the first offset of a transaction
        still open (or whose marker is not below the high watermark yet), capped at the high
        watermark; the high watermark when there is none. What read_committed reads up to."""
        ps = self.producer_state
        if ps is None:
            return self.high_watermark
        return ps.last_stable_offset(self.high_watermark)

    @_storage_op("read")
    @_locked
    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list:
        """The aborted transactions (kwire.log.txn_index.AbortedTxn) a read_committed read
        from ``fetch_offset`` up to ``upper_bound`` must tell the consumer about."""
        return collect_aborted(self.segments, self._bases, fetch_offset, upper_bound)

    @property
    def unflushed_messages(self) -> int:
        """Offsets appended but not yet below the recovery point (Kafka's
        UnifiedLog.unflushedMessages: logEndOffset - recoveryPoint). Derived, never counted:
        a flush in a worker thread moves the recovery point to what it synced, so an append
        that lands during that flush stays unflushed (a counter the flush reset to 0 lost it)."""
        return max(0, self.log_end_offset - self.recovery_point)

    def flush_due(self, now_ms: int) -> bool:
        """flush.messages or flush.ms reached with something unflushed: a flush is due now."""
        unflushed = self.unflushed_messages
        return unflushed > 0 and (unflushed >= self.config.flush_messages
                                  or now_ms - self.last_flush_ms >= self.config.flush_ms)

    @property
    def flush_wanted(self) -> bool:
        """``flush_due`` as of the last append (the produce handler runs the flush, in a
        worker thread, before its answer)."""
        return self.flush_due(self._last_append_ms)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def __len__(self) -> int:
        return self.log_end_offset - self.log_start_offset

    # --- append -------------------------------------------------------------------------
    @_locked
    def append(self, batch_bytes, *, now_ms: int, leader_epoch: int | None = None, origin: str = COORDINATOR,
               producer_id_expiration_ms: int = producer_state.DEFAULT_EXPIRATION_MS,
               verification_guard=NOT_VERIFIED, checked=None) -> AppendResult:
        """The one append path (Kafka's UnifiedLog.append): parse each batch header once,
        validate and normalise the batches (kwire.log.validator: records walked, max timestamp
        recomputed or set, timestamps and keys checked), check idempotent producers' epochs
        and sequences (kwire.log.producer_state: a retried batch is answered with its
        original offsets and not written again), assign offsets from the log end offset and
        write. ``origin`` (kwire.log.validator, Kafka's AppendOrigin): CLIENT for a Produce
        request (one batch, client-only checks), COORDINATOR (the default) for kwire's own
        writers and tests, which may append several batches at once. Raises MessageTooLarge,
        InvalidRecordError, RecordValidationError, CorruptRecordBatch (incl. CrcMismatch), the producer-state
        errors, and KafkaStorageError (the log dir is then offline). ``verification_guard``
        (KIP-890, transaction.partition.verification.enable): unless NOT_VERIFIED, a
        transactional data batch of a producer without a transaction open here needs this
        guard to be its current one (``producer_log.check_verified``), checked once the
        batches are validated (CRC first), as Kafka's UnifiedLog.append. ``checked``: what
        ``validate`` said of these very bytes with this config and ``now_ms`` (a large
        compressed batch is validated in a worker thread first, outside ``lock``); the
        validation is done again if the config changed since."""
        self._check_open()
        mv = memoryview(batch_bytes)
        if len(mv) == 0:
            return AppendResult(-1, -1, -1, self.log_start_offset)
        try:
            if checked is None or checked[0] is not self.config:
                checked = self.validate(mv, now_ms=now_ms, origin=origin)
            checked = checked[1]
            if verification_guard is not NOT_VERIFIED:
                producer_log.check_verified(self, checked.batches, verification_guard, producer_id_expiration_ms)
            replicated = origin == REPLICATION
            if replicated:   # recorded unchecked, so a new leader knows the retries (Kafka)
                ps, markers = producer_log.replicated_state(self, checked.batches, now_ms, producer_id_expiration_ms,
                                                            mv=mv)
            else:
                ps, dup, markers = producer_log.check_append(self, checked.batches, now_ms, producer_id_expiration_ms,
                                                             mv=mv, origin=origin)
                if dup is not None:
                    return dup
            seg_before = self.segments[-1]
            res = self._append_validated(mv, checked, now_ms, leader_epoch, origin == REPLICATION)
            if ps is not None:
                producer_log.record_append(self, ps, checked.batches, res, rolled=self.segments[-1] is not seg_before,
                                           replicated=replicated, markers=markers)
            return res
        except OSError as exc:
            raise self.storage_failure("append", exc) from exc
        except KafkaStorageError as exc:
            if isinstance(exc.__cause__, OSError):
                self.storage_failure("append", exc.__cause__)
            raise

    def validate(self, batch_bytes, *, now_ms: int, origin: str = COORDINATOR):
        """Validate ``batch_bytes`` for an append (kwire.log.validator: CRC, decompression, every
        record walked): no log state is read or changed, so any thread may run it, without
        ``lock``. Returns the ``checked`` that ``append`` takes."""
        config = self.config
        return config, validate_records(memoryview(batch_bytes), config, now_ms=now_ms, origin=origin,
                                        topic_partition=self.topic_partition)

    def roll_due(self, nbytes: int, max_timestamp: int, records: int, now_ms: int) -> bool:
        """Would an append of ``nbytes`` (``records`` offsets, largest timestamp
        ``max_timestamp``) roll the active segment now (Kafka's LogSegment.shouldRoll)? For a
        caller that runs such an append (new files, index trims, a producer snapshot) in a
        worker thread."""
        seg = self.segments[-1]
        if seg.size == 0:
            return False
        config = self.config
        rolling = seg.get_rolling_timestamp()
        waited = (max_timestamp - rolling) if rolling >= 0 else (now_ms - seg.created_ms)
        return (
            seg.size + nbytes > config.segment_bytes
            or waited > config.segment_ms
            or seg.index.is_full
            or seg.time_index.is_full
            or seg.next_offset + records - 1 - seg.base_offset > REL_OFFSET_MAX
        )

    def _append_validated(self, mv, checked, now_ms: int, leader_epoch: int | None,
                          keep_offsets: bool = False) -> AppendResult:
        """Offsets from the log end offset; headers the validator changed are rebuilt (new
        CRC), the others only get their baseOffset (and leader epoch: both outside the CRC).
        ``keep_offsets`` (a follower's append): the leader's offsets stay, each batch at or
        past the log end offset (a compacted leader's log has gaps), in increasing order."""
        config = self.config
        n = checked.size
        records = checked.record_count
        if keep_offsets:
            expect = self.log_end_offset
            for vb in checked.batches:
                base = vb.header[0]
                if base < expect:
                    raise KafkaError(
                        f"Unexpected offset in append to {self.topic_partition}. First offset {base} is less "
                        f"than the next offset {expect}.", ErrorCode.UNKNOWN_SERVER_ERROR)
                expect = base + vb.last_offset_delta + 1
            records = expect - self.log_end_offset   # the offsets spanned, for the roll check
        seg = self._maybe_roll(n, checked.max_timestamp, records, now_ms)
        next_offset = seg.next_offset
        base_offset = next_offset
        metas = []
        pieces = []
        pack64 = _INT64.pack
        cache = self.leader_epoch_cache
        if leader_epoch is None:   # a follower's (or kwire's own writer's): batches keep their epochs
            _assign_batch_epochs(cache, checked.batches, None if keep_offsets else next_offset)
        elif leader_epoch != cache.latest_epoch and leader_epoch >= 0:
            # every batch is stamped with the leader's epoch: a new entry only when the epoch
            # changes (in memory: the file follows at the next flush, off the event loop)
            cache.assign(leader_epoch, base_offset, write=False)
        if keep_offsets:
            base_offset = checked.batches[0].header[0]
        for vb in checked.batches:
            p, size, lod, max_ts = vb.pos, vb.size, vb.last_offset_delta, vb.max_timestamp
            if keep_offsets:
                next_offset = vb.header[0]
            if vb.rewrite:
                h = vb.header
                hdr = bytearray(HEADER.pack(
                    next_offset, h[1], h[2] if leader_epoch is None else leader_epoch, h[3], 0, vb.attributes,
                    lod, h[7], max_ts, h[9], h[10], h[11], h[12]))
                payload = mv[p + BATCH_HEADER_SIZE : p + size]
                _UINT32.pack_into(hdr, CRC_OFFSET, crc32c(payload, crc32c(memoryview(hdr)[ATTRIBUTES_OFFSET:])))
                pieces.append(hdr)
                pieces.append(payload)
            elif leader_epoch is None:
                pieces.append(pack64(next_offset))
                pieces.append(mv[p + 8 : p + size])
            else:
                pieces.append(pack64(next_offset) + mv[p + 8 : p + 12].tobytes() + _INT32.pack(leader_epoch))
                pieces.append(mv[p + 16 : p + size])
            next_offset += lod + 1
            metas.append((size, next_offset - 1, max_ts))
        seg.append(pieces, n, metas)
        # flush policy: the fsync is the caller's, off the event loop (log.flush.per.append:
        # the produce handler's fdatasync; flush.messages / flush.ms: ``flush_wanted``, which
        # the produce handler or the periodic flush pass runs in a worker thread)
        self._last_append_ms = now_ms
        return AppendResult(base_offset, next_offset - 1, now_ms if config.log_append_time else -1,
                            self.log_start_offset)

    def dup_active_segment_fd(self) -> int:
        """A duplicate descriptor of the segment file the last append wrote to, for
        log.flush.per.append's fdatasync in a worker thread: it stays valid even if the
        open-file cache closes the segment's own descriptor meanwhile. ``datasync`` closes it."""
        return os.dup(self.segments[-1].file.fileno())

    @staticmethod
    def datasync(fd: int) -> None:
        """fdatasync and close a descriptor from ``dup_active_segment_fd``; blocking: the Trio
        edge runs it in a worker thread. An OSError is the caller's to report with
        ``storage_failure``."""
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)

    def _maybe_roll(self, nbytes: int, max_ts_in_messages: int, records: int, now_ms: int) -> LogSegment:
        if self.roll_due(nbytes, max_ts_in_messages, records, now_ms):
            return self.roll(now_ms)
        return self.segments[-1]

    @_storage_op("roll")
    @_locked
    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (no-op if the active one is empty)."""
        self._check_open()
        seg = self.segments[-1]
        if seg.size == 0:
            return seg
        now_ms = _now_ms() if now_ms is None else now_ms
        seg.on_become_inactive()
        new = LogSegment.create(self.dir, seg.next_offset, self.config, now_ms)
        self.segments.append(new)
        self._bases.append(new.base_offset)
        return new

    # --- read ---------------------------------------------------------------------------
    @_storage_op("read")
    @_locked
    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one: bool = True) -> FetchData:
        """Whole batches starting with the one holding ``fetch_offset``, from one segment,
        up to ``max_bytes`` (the first batch even if larger, when ``min_one``: KIP-74), and
        only batches entirely below ``max_offset`` (the high watermark for consumers).
        Raises OffsetOutOfRange outside [log start offset, log end offset]."""
        if self.failure_channel.offline_dirs:
            self._check_online()
        leo = self.segments[-1].next_offset
        if fetch_offset < self.log_start_offset or fetch_offset > leo:
            raise OffsetOutOfRange(
                f"offset {fetch_offset} is outside [{self.log_start_offset}, {leo}] of {self.dir}")
        limit = leo if max_offset is None or max_offset > leo else max_offset
        if fetch_offset >= limit:
            return FetchData(_EMPTY_REGIONS, 0)
        segments = self.segments
        i = bisect.bisect_right(self._bases, fetch_offset) - 1
        if i < 0:
            i = 0
        while i < len(segments):
            seg = segments[i]
            h = seg.translate(fetch_offset)
            if h is None:
                i += 1
                continue
            if h.last_offset >= limit:
                return FetchData(_EMPTY_REGIONS, 0)
            start = h.position
            if limit < seg.next_offset:
                hb = seg.translate(limit, start)
                max_pos = hb.position if hb is not None else seg.size
            else:
                max_pos = seg.size
            want_end = start + max_bytes
            if want_end >= max_pos:
                end = max_pos
            elif start + h.size > want_end:
                if not min_one:
                    return FetchData(_EMPTY_REGIONS, 0)
                end = start + h.size
            else:
                end = seg.batch_end_at_or_below(want_end, start + h.size)
            return FetchData([region_or_bytes(seg.file, start, end - start)], end - start)
        return FetchData(_EMPTY_REGIONS, 0)

    @_storage_op("read")
    @_locked
    def read_range(self, start: int, end: int) -> FetchData:
        """Every whole batch from the one holding ``start`` (at least the log start offset)
        up to ``end`` (at most the log end offset), as one file region per segment, taken
        at once under ``lock``: a consistent view of the segment list (a cleaner's swap
        lands before or after it, never between two segments' regions), and each region
        keeps its file open, so a segment swapped out afterwards still reads (as a fetch's
        region does). For a coordinator's load, which reads the bytes in a worker thread
        (kwire.share.coordinator). Always regions, never bytes read here: one per segment,
        held only for the load."""
        if self.failure_channel.offline_dirs:
            self._check_online()
        leo = self.segments[-1].next_offset
        offset = max(start, self.log_start_offset)
        limit = min(end, leo)
        out = FetchData([], 0)
        for seg in self.segments[max(0, bisect.bisect_right(self._bases, offset) - 1):]:
            if offset >= limit or seg.base_offset >= limit:
                break
            h = seg.translate(offset)
            if h is None:
                continue
            if h.last_offset >= limit:
                break
            if limit < seg.next_offset:
                hb = seg.translate(limit, h.position)
                stop = hb.position if hb is not None else seg.size
            else:
                stop = seg.size
            if stop > h.position:
                out.regions.append(FileRegion(seg.file, h.position, stop - h.position))
                out.size += stop - h.position
            offset = seg.next_offset
        return out

    # --- timestamps ---------------------------------------------------------------------
    @_storage_op("read")
    @_locked
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= ``timestamp``
        (ListOffsets by time), or None when there is none."""
        self._check_online()
        for seg in self.segments:
            seg.ensure_loaded()
            if seg.max_timestamp < timestamp:
                continue
            _, ts_offset = seg.time_index.lookup(timestamp)
            start_offset = max(ts_offset, self.log_start_offset)
            _, pos = seg.index.lookup(start_offset)
            for h in seg.scan_headers(pos, seg.size):
                if h.max_timestamp >= timestamp and h.last_offset >= self.log_start_offset:
                    return self._record_at_or_after(seg, h, timestamp)
        return None

    @_storage_op("read")
    @_locked
    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        self._check_online()
        best = None
        for seg in self.segments:
            seg.ensure_loaded()
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        h = best.translate(best.offset_of_max_timestamp)
        if h is None:
            return best.offset_of_max_timestamp, best.max_timestamp
        return self._record_at_or_after(best, h, best.max_timestamp)

    def _record_at_or_after(self, seg: LogSegment, h, timestamp: int) -> tuple[int, int]:
        """Within batch ``h``: the first record at or after the log start offset whose
        timestamp is >= ``timestamp`` (batch granularity when records cannot be read)."""
        lso = self.log_start_offset
        try:
            data = seg.file.pread(h.size, h.position)
            b = RecordBatch(data, 0)
            if b.timestamp_type == 1:  # LogAppendTime: every record has maxTimestamp
                return max(h.base_offset, lso), b.max_timestamp
            for rec in b.records():
                if rec.offset >= lso and rec.timestamp >= timestamp:
                    return rec.offset, rec.timestamp
        except CorruptRecordBatch:
            pass
        return max(h.base_offset, lso), h.max_timestamp

    # --- retention, deletion, truncation ------------------------------------------------
    @_storage_op("retention")
    @_locked
    def delete_old_segments(self, now_ms: int) -> int:
        """One retention pass. Time and size retention (retention.ms, retention.bytes) apply
        only when cleanup.policy includes delete, as in Kafka (compacted topics keep every
        segment until compaction); segments below the log start offset always go. Returns
        the number of segments deleted."""
        self._check_open()
        config = self.config
        deleted = 0
        if not config.delete:
            return self._delete_segments(
                lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, now_ms)
        if config.retention_ms >= 0:
            limit = config.retention_ms
            deleted += self._delete_segments(lambda seg, nxt: now_ms - seg.largest_timestamp() > limit, now_ms)
        if config.retention_bytes >= 0:
            diff = [self.size_in_bytes - config.retention_bytes]

            def too_big(seg, nxt):
                if diff[0] - seg.size >= 0:
                    diff[0] -= seg.size
                    return True
                return False

            deleted += self._delete_segments(too_big, now_ms)
        deleted += self._delete_segments(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, now_ms)
        return deleted

    def _delete_segments(self, predicate, now_ms: int) -> int:
        segs = self.segments
        deletable = 0
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else seg.next_offset
            if nxt is None and seg.size == 0:
                break
            if self.high_watermark < upper or not predicate(seg, nxt):
                break
            deletable += 1
        if not deletable:
            return 0
        if deletable == len(segs):
            self.roll(now_ms)
        doomed = self.segments[:deletable]
        del self.segments[:deletable]
        del self._bases[:deletable]
        for seg in doomed:
            seg.delete()
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        # the file is rewritten later (next new epoch, truncation or close): entries below
        # the log start offset that a crash leaves in it are cut again at the next open
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        return deletable

    @_storage_op("delete records")
    @_locked
    def delete_records(self, offset: int, *, now_ms: int | None = None) -> int:
        """DeleteRecords: raise the log start offset to ``offset`` (-1: the high watermark)
        and delete whole segments below it. Returns the new log start offset. Refused
        (POLICY_VIOLATION) unless cleanup.policy includes delete, as in Kafka."""
        self._check_open()
        if not self.config.delete:
            raise KafkaError(f"Records of partition {self.topic_partition} can not be deleted due to the "
                             f"configured policy", ErrorCode.POLICY_VIOLATION)
        if offset == -1:
            offset = self.high_watermark
        if offset < 0 or offset > self.high_watermark:
            raise OffsetOutOfRange(
                f"cannot delete records up to {offset}: high watermark is {self.high_watermark}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.leader_epoch_cache.truncate_from_start(offset)
            self._delete_segments(
                lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset,
                _now_ms() if now_ms is None else now_ms)
        return self.log_start_offset

    @_storage_op("truncate")
    @_locked
    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding offsets >= ``offset`` (a follower's truncation).
        Below the log start offset the log is emptied and restarts at ``offset``. Returns
        the new log end offset."""
        self._check_open()
        if offset >= self.log_end_offset:
            return self.log_end_offset
        self._truncations += 1
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return self.log_end_offset
        keep = bisect.bisect_right(self._bases, offset)  # segments with base <= offset
        if keep == 0:
            keep = 1
        for seg in self.segments[keep:]:
            seg.delete()
        del self.segments[keep:]
        del self._bases[keep:]
        self.segments[-1].truncate_to(offset)
        leo = self.log_end_offset
        producer_log.on_truncate(self)
        # a batch straddling the log start offset went whole: the log is empty at its end
        self.log_start_offset = min(self.log_start_offset, leo)
        self.recovery_point = min(self.recovery_point, leo)
        self.update_high_watermark(self._high_watermark)   # clamped to the new log end
        # written now, like the truncation itself: appends in an older epoch that follow
        # would otherwise leave a stale later entry in the file
        self.leader_epoch_cache.truncate_from_end(leo)
        self.leader_epoch_cache.write_if_dirty()
        return leo

    @_locked
    def truncate_fully_and_start_at(self, offset: int, now_ms: int | None = None) -> None:
        """Delete every segment and restart the log, empty, at ``offset``."""
        self._check_open()
        self._truncations += 1
        for seg in self.segments:
            seg.delete()
        new = LogSegment.create(self.dir, offset, self.config, _now_ms() if now_ms is None else now_ms)
        self.segments[:] = [new]
        self._bases[:] = [offset]
        self.log_start_offset = offset
        self.recovery_point = offset
        self.update_high_watermark(offset)
        producer_log.on_truncate(self, full=True)
        self.leader_epoch_cache.clear()
        self.leader_epoch_cache.write_if_dirty()

    # --- durability ---------------------------------------------------------------------
    @_storage_op("flush")
    def flush(self, up_to: int | None = None, *, now_ms: int | None = None, sync_dir: bool = True) -> bool:
        """fsync segments (and indexes) holding offsets below ``up_to`` (default: all) and
        advance the recovery point. Safe to call from a worker thread while the owner
        thread appends; a concurrent truncation keeps the recovery point where it was.
        A segment flushed for the first time (its file may be new) and a rewritten epoch
        checkpoint need the directory fsynced too (Kafka's LocalLog.flush); with
        ``sync_dir=False`` that is the caller's, and the return value says it is due."""
        with self._flush_lock:
            target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            generation = self._truncations
            rp = self.recovery_point
            dir_due = False
            if target > rp:
                segs = list(self.segments)
                bases = [s.base_offset for s in segs]
                first = max(0, bisect.bisect_right(bases, rp) - 1)
                for seg in segs[first:]:
                    if seg.base_offset >= target:
                        break
                    if not seg.removed:   # replaced by a cleaned segment meanwhile: nothing to sync
                        seg.flush()
                        dir_due = dir_due or seg.base_offset >= rp
            # the epochs of every record below the new recovery point are in the file
            dir_due = self.leader_epoch_cache.make_durable(sync_dir=False) or dir_due
            if dir_due and sync_dir and os.path.isdir(self.dir):
                fsync_dir(self.dir)
                dir_due = False
            if target > rp:
                if generation == self._truncations and self.recovery_point == rp:
                    self.recovery_point = target
            self.last_flush_ms = _now_ms() if now_ms is None else now_ms
            return dir_due

    def close(self) -> None:
        """Flush everything and close the files (FileRegions already handed out stay valid)."""
        with self._flush_lock, self.lock:   # in this order, as the cleaner's swap takes them
            self._close()

    def _close(self) -> None:
        if self.closed:
            return
        if self.offline:  # write nothing more to a failed disk: the next open recovers
            self.closed = True
            return
        # at most one directory fsync, after everything that may need it (a new segment, the
        # epoch checkpoint, the producer snapshot), and none when nothing changed since the
        # last flush: a shutdown of thousands of partitions is fsyncs (kwire.log.manager._close_logs)
        dir_due = self.flush(sync_dir=False)
        dir_due = producer_log.on_close(self, sync_dir=False) or dir_due
        dir_due = self.leader_epoch_cache.make_durable(sync_dir=False) or dir_due
        if dir_due and os.path.isdir(self.dir):
            fsync_dir(self.dir)
        for seg in self.segments:
            seg.close()
        self.closed = True

    @_locked
    def delete(self) -> None:
        """Delete the whole partition directory."""
        for seg in self.segments:
            seg.delete()
        self.closed = True
        shutil.rmtree(self.dir, ignore_errors=True)

    def _check_open(self) -> None:
        if self.closed:
            raise KafkaStorageError(f"log {self.dir} is closed")
        self._check_online()

    def _check_online(self) -> None:
        if self.failure_channel.is_offline(self.log_dir):
            raise self.failure_channel.error_for(self.log_dir, self.topic_partition)

    def __repr__(self) -> str:
        return (f"PartitionLog({self.dir!r}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"hw={self.high_watermark}, segments={len(self.segments)})")


def _assign_batch_epochs(cache: LeaderEpochCache, batches, next_offset: int | None) -> None:
    """Entries for the epochs that batches appended from ``next_offset`` (None: at their own
    base offsets, a follower's append) carry (Kafka's UnifiedLog.append:
    maybeAssignEpochStartOffset per batch)."""
    for vb in batches:
        start = vb.header[0] if next_offset is None else next_offset
        e = vb.header[2]
        if e != cache.latest_epoch and e >= 0:
            cache.assign(e, start, write=False)
        if next_offset is not None:
            next_offset += vb.last_offset_delta + 1
