"""The log side of producer state (kwire.log.producer_state): building it from a partition's
log, and the append path's hooks (Kafka's UnifiedLog.analyzeAndValidateProducerState,
ProducerStateManager.update, LogLoader's producer-state rebuild).

* ``producer_state_of``: the log's state, built on first use (or at open when the directory
  holds snapshots or aborted-transaction indexes: kwire.log.log_loader) from the latest
  snapshot and the batches after it; the markers among them write their aborted
  transactions to the segments' .txnindex again (entries from the snapshot on are dropped
  first), so a crash after a marker and before the index was synced loses nothing.
* ``check_append`` / ``replicated_state`` before the write, ``record_append`` after: the
  producer-state checks of one append (one pass over batch headers; a control batch's one
  record is read for its marker) and what it records. A partition's first producer takes a
  snapshot at once, so a directory without snapshots has no producer state to rebuild.
* ``on_truncate`` / ``on_close``: a truncation rebuilds the state of what is left (the LSO
  must stay right on a follower that becomes leader); a clean close snapshots it.
"""
from __future__ import annotations

import bisect
import os

from kwire.codec import compression as _compression
from kwire.codec.primitives import read_varint, read_varlong
from kwire.codec.records import BATCH_HEADER_SIZE, COMPRESSION_MASK, HEADER, LOG_OVERHEAD, MIN_BATCH_LENGTH
from kwire.errors import CodecError, CorruptRecordBatch
from kwire.log.producer_state import (
    DEFAULT_EXPIRATION_MS,
    InvalidTxnState,
    ProducerStateManager,
    _unlink,
    last_sequence,
    snapshot_name,
)
from kwire.log.append_result import AppendResult
from kwire.log.validator import CLIENT

CONTROL = 0x20
TRANSACTIONAL = 0x10
CONTROL_ABORT, CONTROL_COMMIT = 0, 1
_SCAN_CHUNK = 64 * 1024
_unpack_header = HEADER.unpack_from


# --- control records ---------------------------------------------------------------------
def read_marker(buf, pos: int, size: int) -> tuple[bool, int] | None:
    """(commit, coordinator epoch) of the transaction marker in the control batch at ``pos``
    of ``buf`` (``size`` bytes); None for an empty control batch (compaction emptied it) or
    one of another control type. Raises CorruptRecordBatch when its record cannot be read."""
    h = _unpack_header(buf, pos)
    if h[12] <= 0:
        return None
    try:
        if h[5] & COMPRESSION_MASK:
            data = _compression.decompress(h[5] & COMPRESSION_MASK, memoryview(buf)[pos + BATCH_HEADER_SIZE:pos + size])
            p, end = 0, len(data)
        else:
            data, p, end = buf, pos + BATCH_HEADER_SIZE, pos + size
        _length, p = read_varint(data, p)
        _ts, p = read_varlong(data, p + 1)       # attributes int8, then the timestamp delta
        _od, p = read_varint(data, p)
        key_len, p = read_varint(data, p)
        if key_len < 4 or p + key_len > end:
            raise CorruptRecordBatch(f"control record key of {key_len} bytes")
        version = int.from_bytes(data[p:p + 2], "big", signed=True)
        ctype = int.from_bytes(data[p + 2:p + 4], "big", signed=True)
        p += key_len
        if version < 0:
            raise CorruptRecordBatch(f"control record key version {version}")
        if ctype not in (CONTROL_ABORT, CONTROL_COMMIT):
            return None
        value_len, p = read_varint(data, p)
        coordinator_epoch = -1
        if value_len >= 6 and p + value_len <= end:
            coordinator_epoch = int.from_bytes(data[p + 2:p + 6], "big", signed=True)
        return ctype == CONTROL_COMMIT, coordinator_epoch
    except (CodecError, IndexError) as exc:
        raise CorruptRecordBatch(f"unreadable control record: {exc}") from None


def _markers(mv, batches):
    """The markers of the control batches of one append, aligned with ``batches``; None when
    there is no control batch."""
    out = None
    for i, vb in enumerate(batches):
        if vb.header[5] & CONTROL and vb.header[9] >= 0:
            if out is None:
                out = [None] * len(batches)
            out[i] = read_marker(mv, vb.pos, vb.size)
    return out


# --- reading the log ---------------------------------------------------------------------
def iter_log_batches(plog, from_offset: int):
    """Yield (header tuple, segment, position) of every batch of ``plog`` whose last offset
    is at or after ``from_offset`` (reads headers only: one pread per 64 KiB of small
    batches)."""
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
                yield t, seg, pos
            pos += LOG_OVERHEAD + t[1]


def producer_state_of(plog, *, expiration_ms: int = DEFAULT_EXPIRATION_MS) -> ProducerStateManager:
    """The log's producer state, built on first use: the latest snapshot, then the batches
    after it (a state dropped by a truncation is rebuilt the same way), their aborted
    transactions written to the segments' indexes again."""
    ps = getattr(plog, "producer_state", None)
    if ps is not None:
        return ps
    lock = getattr(plog, "lock", None)
    if lock is None:
        return _build_producer_state(plog, expiration_ms)
    with lock:   # reads segment files: not during a cleaner's swap (kwire.log.cleaner_swap)
        ps = getattr(plog, "producer_state", None)
        return ps if ps is not None else _build_producer_state(plog, expiration_ms)


def _build_producer_state(plog, expiration_ms: int) -> ProducerStateManager:
    ps = ProducerStateManager(plog.dir, expiration_ms=expiration_ms)
    leo = plog.log_end_offset
    start = ps.load_latest_snapshot(leo)
    segments = plog.segments
    first = max(0, bisect.bisect_right(plog._bases, start) - 1)
    for seg in segments[first:]:
        seg.txn_index.truncate_to(start)
    for t, seg, pos in iter_log_batches(plog, start):
        pid = t[9]
        if pid < 0:
            continue
        base, lod, attrs = t[0], t[6], t[5]
        if attrs & CONTROL:
            data = seg.file.pread(LOG_OVERHEAD + t[1], pos)
            try:
                marker = read_marker(data, 0, len(data))
            except CorruptRecordBatch:
                marker = None   # kept in the log as the leader wrote it; nothing to apply
            if marker is not None:
                aborted = ps.update_marker(pid, t[10], base, t[8], marker[0], marker[1])
                if aborted is not None:
                    seg.txn_index.append(aborted)
        else:
            ps.update_batch(pid, t[10], t[11], base, base + lod, t[8], bool(attrs & TRANSACTIONAL))
    ps.map_end_offset = leo
    ps.first_unstable_offset(plog.high_watermark)   # forget what is below the high watermark
    plog.producer_state = ps
    return ps


load_producer_state = producer_state_of


# --- the append path ---------------------------------------------------------------------
#: PartitionLog.append's ``verification_guard`` when the append is not verified (None is a
#: guard value: "no verification was started", which a transactional batch fails)
NOT_VERIFIED = object()


def check_verified(plog, batches, guard, expiration_ms: int = DEFAULT_EXPIRATION_MS) -> None:
    """KIP-890 (Kafka's UnifiedLog.batchMissingRequiredVerification), on validated batches
    (kwire.log.validator ValidatedBatch: CRC checked, header parsed once): each transactional
    data batch's producer must have a transaction of the batch's epoch open here already, or
    ``guard`` must be its current verification guard (a marker written since voided it).
    Raises InvalidTxnState."""
    ps = None
    for vb in batches:
        h = vb.header
        if not h[5] & TRANSACTIONAL or h[5] & CONTROL or h[9] < 0:
            continue
        if ps is None:
            ps = producer_state_of(plog, expiration_ms=expiration_ms)
        if ps.has_ongoing_transaction(h[9], h[10]):
            continue
        if guard is None or ps.verification_guard(h[9]) is not guard:
            raise InvalidTxnState("Record was not part of an ongoing transaction")


def check_append(plog, batches, now_ms: int, expiration_ms: int = DEFAULT_EXPIRATION_MS, *,
                 mv=None, origin: str = CLIENT):
    """The producer-state step of PartitionLog.append, after validation (Kafka's
    analyzeAndValidateProducerState): ``batches`` are kwire.log.validator ValidatedBatch,
    ``mv`` the appended bytes. Returns (state or None when no batch carries a producer id,
    duplicate AppendResult or None, markers of the control batches or None). A duplicate of
    one of the producer's last 5 batches is answered with its original offsets and not
    written; a bad epoch, sequence, transaction state or coordinator epoch raises and
    nothing is written."""
    idem = False
    for vb in batches:
        if vb.header[9] >= 0:  # producer id set
            idem = True
            break
    if not idem:
        return None, None, None
    ps = producer_state_of(plog, expiration_ms=expiration_ms)
    ps.maybe_remove_expired(now_ms)
    markers = None
    client = origin == CLIENT
    pending: dict[int, tuple[int, int, bool]] = {}
    for i, vb in enumerate(batches):
        h = vb.header
        pid = h[9]
        if pid < 0:
            continue
        attrs = h[5]
        if attrs & CONTROL:
            marker = read_marker(mv, vb.pos, vb.size) if mv is not None else None
            if markers is None:
                markers = [None] * len(batches)
            markers[i] = marker
            if marker is not None:
                ps.check_marker(pid, h[10], marker[1])
                pending[pid] = (h[10], -1, False)
            continue
        epoch, base_seq, lod = h[10], h[11], h[6]
        last_seq = last_sequence(base_seq, lod) if base_seq >= 0 else -1
        transactional = bool(attrs & TRANSACTIONAL)
        dup = ps.check(pid, epoch, base_seq, last_seq, pending, transactional=transactional,
                       sequences=client or base_seq >= 0)
        if dup is not None:
            append_time = dup.timestamp if plog.config.log_append_time else -1
            return ps, AppendResult(dup.first_offset, dup.last_offset, append_time, plog.log_start_offset), None
        pending[pid] = (epoch, last_seq, transactional)
    return ps, None, markers


def replicated_state(plog, batches, now_ms: int, expiration_ms: int = DEFAULT_EXPIRATION_MS, *, mv=None):
    """The producer-state step of a follower's append (origin REPLICATION): nothing is
    checked (the leader did), as Kafka's ProducerAppendInfo does for replicated batches; the
    state (None when no batch carries a producer id) is brought up to the log end offset so
    that ``record_append`` can record the batches after the write. Returns (state, markers)."""
    for vb in batches:
        if vb.header[9] >= 0:
            ps = producer_state_of(plog, expiration_ms=expiration_ms)
            ps.maybe_remove_expired(now_ms)
            try:
                markers = _markers(mv, batches) if mv is not None else None
            except CorruptRecordBatch:
                markers = None
            return ps, markers
    return None, None


def record_append(plog, ps: ProducerStateManager, batches, res, *, rolled: bool,
                  replicated: bool = False, markers=None) -> None:
    """After the write: record every producer's batch at the offsets it got (assigned
    contiguously from ``res.base_offset``; a follower's batches keep the leader's, in their
    headers, gaps of a compacted leader log included) with its validated max timestamp;
    markers end transactions, an aborted one goes to the active segment's .txnindex. A
    segment roll, or the partition's first producer, takes a snapshot."""
    offset = res.base_offset
    seg = plog.segments[-1]   # one append lands in one segment: the active one
    for i, vb in enumerate(batches):
        h = vb.header
        lod = h[6]
        if replicated:
            offset = h[0]
        pid = h[9]
        if pid >= 0:
            attrs = h[5]
            if not attrs & CONTROL:
                ps.update_batch(pid, h[10], h[11], offset, offset + lod, vb.max_timestamp,
                                bool(attrs & TRANSACTIONAL))
            elif markers is not None and markers[i] is not None:
                commit, coordinator_epoch = markers[i]
                aborted = ps.update_marker(pid, h[10], offset, vb.max_timestamp, commit, coordinator_epoch)
                if aborted is not None:
                    seg.txn_index.append(aborted)
        offset += lod + 1
    ps.map_end_offset = plog.log_end_offset
    if markers is not None:
        ps.first_unstable_offset(plog.high_watermark)   # forget what is below the high watermark
    if rolled or ps.last_snapshot_offset < 0:
        ps.take_snapshot(plog.log_end_offset)


def append_idempotent(plog, records, *, now_ms: int, leader_epoch: int | None = None,
                      expiration_ms: int = DEFAULT_EXPIRATION_MS):
    """``plog.append`` (which validates, checks producer state and writes: one append path)
    with ``producer.id.expiration.ms``."""
    return plog.append(records, now_ms=now_ms, leader_epoch=leader_epoch,
                       producer_id_expiration_ms=expiration_ms)


# --- hooks for PartitionLog (truncation, close) ---------------------------------------------
def on_truncate(plog, *, full: bool = False) -> None:
    """The log lost batches: drop every snapshot beyond the new log end offset (all of them
    after a full truncation) and rebuild the state of what is left, now: its open
    transactions make the last stable offset."""
    had = plog.producer_state
    plog.producer_state = None
    ps = ProducerStateManager(plog.dir)
    leo = plog.log_end_offset
    left = False
    for off in ps.snapshot_offsets():
        if full or off > leo:
            _unlink(os.path.join(plog.dir, snapshot_name(off)))
        else:
            left = True
    if not full and (had is not None or left):
        producer_state_of(plog, expiration_ms=had.expiration_ms if had is not None else DEFAULT_EXPIRATION_MS)


def on_close(plog, *, sync_dir: bool = True) -> bool:
    """A clean close: snapshot the state at the log end offset, so the next open reads no log.
    A log that never had a producer has no state to snapshot (nothing to rebuild either).
    Returns True when the directory fsync is the caller's (``sync_dir=False``)."""
    ps = getattr(plog, "producer_state", None)
    if ps is not None and os.path.isdir(plog.dir):
        ps.take_snapshot(plog.log_end_offset, sync=True, sync_dir=sync_dir)
        return not sync_dir
    return False
