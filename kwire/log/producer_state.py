"""Per-partition producer state for idempotent producers (Kafka's ProducerStateManager).

For every producer id that wrote to a partition: its current producer epoch and the sequence
ranges and offsets of its last 5 batches (a producer has at most 5 requests in flight per
partition, max.in.flight.requests.per.connection <= 5). The produce path asks
``ProducerStateManager.check`` before writing and calls ``update`` after:

* same epoch, same (first, last) sequence as a cached batch: a retry of a batch that was
  already written. Kafka answers it with the original offsets and no error (what
  DUPLICATE_SEQUENCE_NUMBER became in modern Kafka) and writes nothing.
* producer epoch below the current one: INVALID_PRODUCER_EPOCH (Kafka 2.7+ answers this,
  not PRODUCER_FENCED, on Produce).
* a new, higher epoch must start at sequence 0; the same epoch must continue at last + 1
  (0 after Int32.MAX): otherwise OUT_OF_ORDER_SEQUENCE_NUMBER.
* a producer id this partition has no state for is accepted at any sequence, as Kafka 2.5+
  does (KIP-360: state is kept until producer.id.expiration.ms, retention does not drop it;
  Kafka no longer answers UNKNOWN_PRODUCER_ID on Produce).

A follower's append (origin REPLICATION, ``replicated_state``) checks nothing (the leader
did) but records each batch's producer id, epoch, sequences and the leader's offsets, as
Kafka's ProducerAppendInfo does for replicated batches: once the follower becomes leader, a
retry of any of the last 5 batches is answered with its original offsets.

Durability: the state is rebuilt from the log's batch headers (producer id, epoch, base
sequence, offset delta) starting at the latest ``<20-digit offset>.snapshot`` file in the
partition directory; snapshots are written when a segment rolls and at a clean close, so a
restart scans at most the active segment. The snapshot layout is kwire's own (Kafka's v1
file keeps only the last batch per producer; ours keeps all 5, so retries in flight across a
broker restart are still recognised), declared with ``construct`` (SNAPSHOT_FILE below):

    version int16 (=100) | crc32c uint32 (of everything after it) | count int32 |
    count x { producer_id int64 | epoch int16 | last_timestamp int64 | n int8 |
              n x { first_seq int32 | last_seq int32 | first_offset int64 | last_offset int64 |
                    timestamp int64 } }

A snapshot written on a roll is renamed into place without an fsync (as Kafka's
takeSnapshot(asyncFlush)); the next flush of the log fsyncs it off the event loop
(``unsynced_snapshots`` / ``sync_files``). A lost or torn snapshot only costs a longer
rebuild from the log (the CRC rejects a torn one). A clean close writes it durably.

Pure apart from the snapshot files and reading batch headers of the log when rebuilding.
"""
from __future__ import annotations

import os
import re
import struct
from collections import deque

import construct as C
from crc32c import crc32c

from kwire.atomic import fsync_dir, write_atomic
from kwire.codec.records import BATCH_HEADER_SIZE, HEADER, LOG_OVERHEAD, MIN_BATCH_LENGTH, RecordBatch
from kwire.errors import ErrorCode, KafkaError

BATCHES_TO_RETAIN = 5
INT32_MAX = 0x7FFFFFFF
NO_PRODUCER_ID = -1
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 100
SNAPSHOTS_TO_KEEP = 2
DEFAULT_EXPIRATION_CHECK_MS = 600_000  # producer.id.expiration.check.interval.ms
DEFAULT_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms

_SNAPSHOT_FILE = re.compile(r"^(\d{20})\.snapshot$")

# --- the snapshot file (cold path: written on roll and close, read once at open) ----------
SNAPSHOT_BATCH = C.Struct(
    "first_seq" / C.Int32sb,
    "last_seq" / C.Int32sb,
    "first_offset" / C.Int64sb,
    "last_offset" / C.Int64sb,
    "timestamp" / C.Int64sb,
)
SNAPSHOT_ENTRY = C.Struct(
    "producer_id" / C.Int64sb,
    "epoch" / C.Int16sb,
    "last_timestamp" / C.Int64sb,
    "batches" / C.PrefixedArray(C.Int8sb, SNAPSHOT_BATCH),
)
SNAPSHOT_BODY = C.Struct("producers" / C.PrefixedArray(C.Int32sb, SNAPSHOT_ENTRY), C.Terminated)
SNAPSHOT_FILE = C.Struct(
    "version" / C.Int16sb,
    "crc" / C.Int32ub,       # CRC-32C of body
    "body" / C.GreedyBytes,
)
_BODY = SNAPSHOT_BODY.compile()
_FILE = SNAPSHOT_FILE.compile()
_SCAN_CHUNK = 64 * 1024
_unpack_header = HEADER.unpack_from


class OutOfOrderSequence(KafkaError):
    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpoch(KafkaError):
    code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidSequence(KafkaError):
    """An idempotent batch (producer id set) without a base sequence (Kafka's LogValidator)."""

    code = ErrorCode.INVALID_RECORD


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    return (base_sequence + last_offset_delta) & INT32_MAX


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


class BatchMetadata:
    __slots__ = ("first_seq", "last_seq", "first_offset", "last_offset", "timestamp")

    def __init__(self, first_seq: int, last_seq: int, first_offset: int, last_offset: int, timestamp: int):
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.timestamp = timestamp

    def _tuple(self):
        return (self.first_seq, self.last_seq, self.first_offset, self.last_offset, self.timestamp)

    def __eq__(self, other):
        return isinstance(other, BatchMetadata) and self._tuple() == other._tuple()

    def __repr__(self) -> str:
        return "BatchMetadata(seq %d-%d, offsets %d-%d, ts %d)" % self._tuple()


class ProducerStateEntry:
    __slots__ = ("producer_id", "epoch", "batches", "last_timestamp")

    def __init__(self, producer_id: int, epoch: int, batches=(), last_timestamp: int = -1):
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=BATCHES_TO_RETAIN)
        self.last_timestamp = last_timestamp

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def add(self, epoch: int, meta: BatchMetadata) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()
        self.batches.append(meta)
        self.last_timestamp = meta.timestamp

    def __repr__(self) -> str:
        return f"ProducerStateEntry(pid={self.producer_id}, epoch={self.epoch}, batches={list(self.batches)})"


class ProducerStateManager:
    """The producer state of one partition. ``map_end_offset``: the log offset up to which
    batches have been applied (the next offset to read when catching up with the log)."""

    def __init__(self, dir: str | None, *, expiration_ms: int = 86_400_000,
                 expiration_check_ms: int = DEFAULT_EXPIRATION_CHECK_MS):
        self.dir = dir
        self.expiration_ms = expiration_ms
        self.expiration_check_ms = expiration_check_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0
        self.last_expiry_check_ms: int | None = None
        self.last_snapshot_offset = -1
        self.unsynced: list[str] = []   # snapshot files renamed into place, not fsynced yet

    # --- validation (client appends) ----------------------------------------------------
    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
              pending: dict | None = None) -> BatchMetadata | None:
        """Validate one client batch against the state (and ``pending``: pid -> (epoch, last
        sequence) of earlier batches of the same request). Returns the cached batch when
        this is a duplicate; raises InvalidProducerEpoch / OutOfOrderSequence."""
        if first_seq < 0:
            raise InvalidSequence(f"invalid sequence number {first_seq} in record batch with producer id {producer_id}")
        entry = self.producers.get(producer_id)
        p = pending.get(producer_id) if pending else None
        if p is not None:
            cur_epoch, cur_last = p
        elif entry is not None:
            cur_epoch, cur_last = entry.epoch, entry.last_seq
            dup = entry.find_duplicate(epoch, first_seq, last_seq)
            if dup is not None and epoch >= cur_epoch:
                return dup
        else:
            return None  # a producer new to this partition: any sequence (Kafka 2.5+)
        if epoch < cur_epoch:
            raise InvalidProducerEpoch(
                f"epoch {epoch} of producer {producer_id} is older than the current epoch {cur_epoch}")
        if epoch != cur_epoch:
            if first_seq != 0:
                raise OutOfOrderSequence(
                    f"invalid sequence number {first_seq} for new epoch {epoch} of producer {producer_id} "
                    f"(current epoch {cur_epoch}): a new epoch starts at 0")
        elif cur_last >= 0 and not in_sequence(cur_last, first_seq):
            raise OutOfOrderSequence(
                f"out of order sequence number for producer {producer_id} epoch {epoch}: "
                f"{first_seq} (incoming seq. number), {cur_last} (current end sequence number)")
        return None

    # --- updates ------------------------------------------------------------------------
    def update(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int) -> None:
        """Record a batch that is now in the log (client append or log replay)."""
        meta = BatchMetadata(first_seq, last_seq, first_offset, last_offset, timestamp)
        entry = self.producers.get(producer_id)
        if entry is None:
            self.producers[producer_id] = ProducerStateEntry(producer_id, epoch, (meta,), timestamp)
        else:
            entry.add(epoch, meta)
        if last_offset + 1 > self.map_end_offset:
            self.map_end_offset = last_offset + 1

    def apply_header(self, h: RecordBatch | tuple) -> None:
        """Replay one batch header from the log (no validation, as Kafka loads its log)."""
        (base, _len, _ple, _magic, _crc, attrs, lod, _bts, max_ts, pid, epoch, base_seq, _n) = h
        if pid >= 0 and not attrs & 0x20 and base_seq >= 0:  # not a control batch
            self.update(pid, epoch, base_seq, last_sequence(base_seq, lod), base, base + lod, max_ts)
        if base + lod + 1 > self.map_end_offset:
            self.map_end_offset = base + lod + 1

    def remove_expired(self, now_ms: int) -> int:
        """Forget producers whose last batch is older than producer.id.expiration.ms."""
        limit = self.expiration_ms
        doomed = [pid for pid, e in self.producers.items() if now_ms - e.last_timestamp >= limit]
        for pid in doomed:
            del self.producers[pid]
        return len(doomed)

    def maybe_remove_expired(self, now_ms: int) -> int:
        last = self.last_expiry_check_ms
        if last is None:
            self.last_expiry_check_ms = now_ms
            return 0
        if now_ms - last < self.expiration_check_ms:
            return 0
        self.last_expiry_check_ms = now_ms
        return self.remove_expired(now_ms)

    def truncate(self) -> None:
        self.producers.clear()
        self.map_end_offset = 0

    # --- snapshots ----------------------------------------------------------------------
    def encode_snapshot(self) -> bytes:
        body = _BODY.build({"producers": [
            {"producer_id": e.producer_id, "epoch": e.epoch, "last_timestamp": e.last_timestamp,
             "batches": [{"first_seq": b.first_seq, "last_seq": b.last_seq, "first_offset": b.first_offset,
                          "last_offset": b.last_offset, "timestamp": b.timestamp} for b in e.batches]}
            for e in self.producers.values()]})
        return _FILE.build({"version": SNAPSHOT_VERSION, "crc": crc32c(body), "body": body})

    @staticmethod
    def decode_snapshot(data: bytes) -> dict[int, ProducerStateEntry]:
        """Raises ValueError when the snapshot is not one of ours or is corrupt."""
        try:
            f = _FILE.parse(data)
        except (C.ConstructError, struct.error):  # compiled parsers raise struct.error
            raise ValueError("snapshot too short") from None
        if f.version != SNAPSHOT_VERSION:
            raise ValueError(f"unknown snapshot version {f.version}")
        if crc32c(f.body) != f.crc:
            raise ValueError("snapshot CRC mismatch")
        try:
            body = _BODY.parse(f.body)
        except C.TerminatedError:
            raise ValueError("trailing bytes in snapshot") from None
        except (C.ConstructError, struct.error) as exc:
            raise ValueError(f"truncated snapshot: {exc}") from None
        out: dict[int, ProducerStateEntry] = {}
        for e in body.producers:
            batches = [BatchMetadata(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
                       for b in e.batches]
            out[e.producer_id] = ProducerStateEntry(e.producer_id, e.epoch, batches, e.last_timestamp)
        return out

    def snapshot_offsets(self) -> list[int]:
        if self.dir is None or not os.path.isdir(self.dir):
            return []
        out = []
        for name in os.listdir(self.dir):
            m = _SNAPSHOT_FILE.match(name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def take_snapshot(self, offset: int | None = None, *, sync: bool = False) -> str | None:
        """Write ``<offset>.snapshot`` (default: ``map_end_offset``) atomically and keep the
        newest SNAPSHOTS_TO_KEEP. Without ``sync`` the file and directory fsync is left to
        the log's next flush (``unsynced``). Returns the path (None without a directory)."""
        if self.dir is None:
            return None
        offset = self.map_end_offset if offset is None else offset
        if offset == self.last_snapshot_offset:
            if sync and self.unsynced:
                sync_files(self.unsynced, self.dir)
                self.unsynced = []
            return None
        path = os.path.join(self.dir, snapshot_name(offset))
        write_atomic(path, self.encode_snapshot(), sync=sync)
        self.last_snapshot_offset = offset
        if sync:
            sync_files(self.unsynced, self.dir)
            self.unsynced = []
        else:
            self.unsynced.append(path)
        for old in self.snapshot_offsets()[:-SNAPSHOTS_TO_KEEP]:
            _unlink(os.path.join(self.dir, snapshot_name(old)))
        return path

    def load_latest_snapshot(self, log_end_offset: int) -> int:
        """Load the newest readable snapshot at or below ``log_end_offset``; snapshots beyond
        it (the log lost its tail) and unreadable ones are deleted. Returns the offset the
        state now reflects (0 without a snapshot)."""
        self.truncate()
        for off in reversed(self.snapshot_offsets()):
            path = os.path.join(self.dir, snapshot_name(off))
            if off > log_end_offset:
                _unlink(path)
                continue
            try:
                with open(path, "rb") as f:
                    self.producers = self.decode_snapshot(f.read())
            except (OSError, ValueError):
                _unlink(path)
                continue
            self.map_end_offset = off
            self.last_snapshot_offset = off
            return off
        return 0

    def __repr__(self) -> str:
        return f"ProducerStateManager({self.dir!r}, {len(self.producers)} producers, end={self.map_end_offset})"


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def unsynced_snapshots(plog) -> list[str]:
    """Take the log's snapshot files that still need an fsync (for its next flush)."""
    ps = getattr(plog, "producer_state", None)
    if ps is None or not ps.unsynced:
        return []
    out, ps.unsynced = ps.unsynced, []
    return out


def sync_files(paths, directory: str) -> None:
    """fsync ``paths`` (those still there: an older snapshot may be gone) and ``directory``:
    disk work only, any thread."""
    if not paths:
        return
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fsync_dir(directory)


# --- the log side: rebuild from batch headers, and the produce path -----------------------
def iter_log_headers(plog, from_offset: int):
    """Yield the 61-byte header tuple of every batch of ``plog`` whose last offset is at or
    after ``from_offset`` (reads headers only: one pread per 64 KiB of small batches)."""
    for seg in list(plog.segments):
        seg.ensure_loaded()
        if seg.next_offset <= from_offset:
            continue
        h = seg.translate(max(from_offset, seg.base_offset))
        if h is None:
            continue
        pos = h.position
        end = seg.size
        f = seg.file  # held while its fd is used (kwire/log/regions.py)
        fd = f.fileno()
        buf = b""
        buf_pos = pos
        while pos + BATCH_HEADER_SIZE <= end:
            off = pos - buf_pos
            if off + BATCH_HEADER_SIZE > len(buf):
                buf = os.pread(fd, min(_SCAN_CHUNK, end - pos), pos)
                buf_pos = pos
                off = 0
                if len(buf) < BATCH_HEADER_SIZE:
                    break
            t = _unpack_header(buf, off)
            if t[1] < MIN_BATCH_LENGTH:
                break
            if t[0] + t[6] >= from_offset:
                yield t
            pos += LOG_OVERHEAD + t[1]


def producer_state_of(plog, *, expiration_ms: int = 86_400_000) -> ProducerStateManager:
    """The log's producer state, built on first use: the latest snapshot, then the batch
    headers after it (a state dropped by a truncation is rebuilt the same way)."""
    ps = getattr(plog, "producer_state", None)
    if ps is not None:
        return ps
    ps = ProducerStateManager(plog.dir, expiration_ms=expiration_ms)
    leo = plog.log_end_offset
    start = ps.load_latest_snapshot(leo)
    for t in iter_log_headers(plog, start):
        ps.apply_header(t)
    ps.map_end_offset = leo
    plog.producer_state = ps
    return ps


def check_append(plog, batches, now_ms: int, expiration_ms: int = DEFAULT_EXPIRATION_MS):
    """The producer-state step of PartitionLog.append, after validation (Kafka's
    analyzeAndValidateProducerState): ``batches`` are kwire.log.validator ValidatedBatch.
    Returns (state or None when no batch carries a producer id, duplicate AppendResult or
    None). A duplicate of one of the producer's last 5 batches is answered with its original
    offsets and not written; a bad epoch or sequence raises (InvalidProducerEpoch /
    OutOfOrderSequence) and nothing is written."""
    idem = False
    for vb in batches:
        h = vb.header
        if h[9] >= 0 and not h[5] & 0x20:  # producer id set, not a control batch
            idem = True
            break
    if not idem:
        return None, None
    ps = producer_state_of(plog, expiration_ms=expiration_ms)
    ps.maybe_remove_expired(now_ms)
    pending: dict[int, tuple[int, int]] = {}
    for vb in batches:
        h = vb.header
        pid = h[9]
        if pid < 0 or h[5] & 0x20:
            continue
        epoch, base_seq, lod = h[10], h[11], h[6]
        last_seq = last_sequence(base_seq, lod) if base_seq >= 0 else -1
        dup = ps.check(pid, epoch, base_seq, last_seq, pending)
        if dup is not None:
            from kwire.log.partition_log import AppendResult  # noqa: PLC0415 - no import cycle at load
            append_time = dup.timestamp if plog.config.log_append_time else -1
            return ps, AppendResult(dup.first_offset, dup.last_offset, append_time, plog.log_start_offset)
        pending[pid] = (epoch, last_seq)
    return ps, None


def replicated_state(plog, batches, now_ms: int,
                     expiration_ms: int = DEFAULT_EXPIRATION_MS) -> ProducerStateManager | None:
    """The producer-state step of a follower's append (origin REPLICATION): nothing is
    checked (the leader did), as Kafka's ProducerAppendInfo does for replicated batches; the
    state (None when no batch carries a producer id) is brought up to the log end offset so
    that ``record_append`` can record the batches after the write."""
    for vb in batches:
        h = vb.header
        if h[9] >= 0 and not h[5] & 0x20:
            ps = producer_state_of(plog, expiration_ms=expiration_ms)
            ps.maybe_remove_expired(now_ms)
            return ps
    return None


def record_append(plog, ps: ProducerStateManager, batches, res, *, rolled: bool,
                  replicated: bool = False) -> None:
    """After the write: record every idempotent batch at the offsets it got (assigned
    contiguously from ``res.base_offset``; a follower's batches keep the leader's, in their
    headers, gaps of a compacted leader log included) with its validated max timestamp; a
    segment roll takes a snapshot."""
    offset = res.base_offset
    for vb in batches:
        h = vb.header
        lod = h[6]
        if replicated:
            offset = h[0]
        if h[9] >= 0 and not h[5] & 0x20:
            base_seq = h[11]
            ps.update(h[9], h[10], base_seq, last_sequence(base_seq, lod), offset, offset + lod,
                      vb.max_timestamp)
        offset += lod + 1
    ps.map_end_offset = plog.log_end_offset
    if rolled:
        ps.take_snapshot(plog.log_end_offset)


def append_idempotent(plog, records, *, now_ms: int, leader_epoch: int | None = None,
                      expiration_ms: int = DEFAULT_EXPIRATION_MS):
    """``plog.append`` (which validates, checks producer state and writes: one append path)
    with ``producer.id.expiration.ms``."""
    return plog.append(records, now_ms=now_ms, leader_epoch=leader_epoch,
                       producer_id_expiration_ms=expiration_ms)


# --- hooks for PartitionLog (truncation, close) ---------------------------------------------
def on_truncate(plog, *, full: bool = False) -> None:
    """The log lost batches: drop the in-memory state (rebuilt on next use) and every snapshot
    beyond the new log end offset (all of them after a full truncation)."""
    plog.producer_state = None
    ps = ProducerStateManager(plog.dir)
    leo = plog.log_end_offset
    for off in ps.snapshot_offsets():
        if full or off > leo:
            _unlink(os.path.join(plog.dir, snapshot_name(off)))


def on_close(plog) -> None:
    """A clean close: snapshot the state at the log end offset, so the next open reads no log."""
    ps = getattr(plog, "producer_state", None)
    if ps is not None and os.path.isdir(plog.dir):
        ps.take_snapshot(plog.log_end_offset, sync=True)
