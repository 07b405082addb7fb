"""Record batch validation before the append: Kafka's UnifiedLog.analyzeAndValidateRecords
and LogValidator for magic v2, no I/O.

``validate_records(buf, config, now_ms=..., origin=..., topic_partition=...)`` checks the
concatenated batches of one append and says how each must be stored; PartitionLog.append
then assigns offsets (and rewrites the headers that need it) as it writes.

Per batch, in Kafka's order:

* analyzeAndValidateRecords: length, magic 2 (kwire stores nothing older), a client batch
  starts at base offset 0, size <= max.message.bytes (MESSAGE_TOO_LARGE), CRC
  (CORRUPT_MESSAGE), a known compression codec.
* validateBatch: lastOffsetDelta + 1 == recordsCount > 0 (INVALID_RECORD; Kafka checks it
  for clients, kwire for its own writers too); from a client exactly one batch per
  partition, no control batches, a producer id needs a base sequence (INVALID_RECORD).
* every record is walked, compressed batches after decompressing them, as Kafka does:
  lengths, offset deltas (0, 1, 2, ...), key/value/header sizes must tile the batch exactly
  (INVALID_RECORD with Kafka's messages); a record without a key on a topic whose
  cleanup.policy includes compact; under CreateTime each timestamp (other than -1) within
  [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]
  (INVALID_TIMESTAMP); a client may not send LogAppendTime batches where Kafka refuses them.
* the max timestamp is recomputed from the records (CreateTime) or set to the append time
  with the timestamp-type bit (LogAppendTime); the header is rewritten, with a new CRC,
  only when it changes (older sarama writes -1 there).

A follower's append (origin REPLICATION) skips the record checks and keeps the leader's
header, as Kafka's followers do.

Where kwire differs: Kafka stores an uncompressed batch whose offset deltas are not 0, 1,
2, ... as it is and rebuilds (recompresses) a compressed one (old v1 clients); kwire refuses
both with INVALID_RECORD, as no v2 client writes them and they would break the log's offsets.

The record walk is the produce path's one per-record cost: a tight loop over the varint
fields, skipping values and headers by their lengths; no object per record. It runs in C
(kwire/log/_walk.c, an optional extension setup.py builds: ~100x faster) and falls back to
the pure-Python walk here, the reference, which also names every error. Record errors are
collected only when a check fails (a second pass over the batch then names every bad
record, as Kafka does).
"""
from __future__ import annotations

from kwire.codec import compression as _compression
from kwire.codec.primitives import read_varint, read_varlong
from kwire.codec.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CURRENT_MAGIC,
    HEADER,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    TIMESTAMP_TYPE_MASK,
    ZSTD,
    crc32c,
)
from kwire.errors import CodecError, CorruptRecordBatch, CrcMismatch, ErrorCode, KafkaError, UnsupportedCompression
from kwire.log.errors import InvalidRecordError, MessageTooLarge

CLIENT = "client"            # Kafka's AppendOrigin.CLIENT: a Produce request
COORDINATOR = "coordinator"  # AppendOrigin.COORDINATOR: group / transaction coordinators
REPLICATION = "replication"  # AppendOrigin.REPLICATION: a follower appending the leader's batches

NO_TIMESTAMP = -1
_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_unpack_header = HEADER.unpack_from

try:  # the optional C walk (setup.py builds it); same answers, ~100x faster
    from kwire.log._walk import walk_records as _walk_c
except ImportError:  # pragma: no cover - a build without a C compiler
    _walk_c = None


def _java_long(v: int) -> int:
    """``v`` wrapped to a signed 64-bit value, as Java's long arithmetic does."""
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


class RecordValidationError(KafkaError):
    """Records refused one by one (Kafka's RecordValidationException): INVALID_TIMESTAMP when
    any timestamp is out of bounds, INVALID_RECORD otherwise. ``record_errors`` lists
    ``(batch_index, message)`` for the Produce response's record_errors (v8+)."""

    code = ErrorCode.INVALID_RECORD

    def __init__(self, message: str, code: ErrorCode, record_errors: list[tuple[int, str]]):
        super().__init__(message, code)
        self.record_errors = record_errors


class ValidatedBatch:
    """One batch as it will be stored. ``header``: the 13 header fields as received;
    ``attributes`` / ``max_timestamp``: what the stored header says; ``rewrite``: True when
    those differ from the received header (the CRC is then recomputed)."""

    __slots__ = ("pos", "size", "header", "last_offset_delta", "record_count", "attributes",
                 "max_timestamp", "rewrite")

    def __init__(self, pos, size, header, attributes, max_timestamp):
        self.pos = pos
        self.size = size
        self.header = header
        self.last_offset_delta = header[6]
        self.record_count = header[12]
        self.attributes = attributes
        self.max_timestamp = max_timestamp
        self.rewrite = attributes != header[5] or max_timestamp != header[8]

    @property
    def producer_id(self) -> int:
        return self.header[9]

    @property
    def is_control(self) -> bool:
        return bool(self.header[5] & CONTROL_MASK)

    def __repr__(self) -> str:
        return (f"ValidatedBatch(pos={self.pos}, size={self.size}, records={self.record_count}, "
                f"max_timestamp={self.max_timestamp}, rewrite={self.rewrite})")


class ValidationResult:
    __slots__ = ("batches", "record_count", "max_timestamp", "size")

    def __init__(self, batches, record_count, max_timestamp, size):
        self.batches = batches
        self.record_count = record_count
        self.max_timestamp = max_timestamp
        self.size = size


def validate_records(buf, config, *, now_ms: int, origin: str = CLIENT,
                     topic_partition: str = "") -> ValidationResult:
    """Validate the concatenated batches in ``buf`` (a bytes-like object) for an append to a
    log with LogConfig ``config``. Raises CorruptRecordBatch (CRC, layout; CORRUPT_MESSAGE),
    UnsupportedCompression, MessageTooLarge, InvalidRecordError, RecordValidationError;
    nothing about the log changes."""
    mv = memoryview(buf)
    n = len(mv)
    max_size = config.max_message_bytes
    client = origin == CLIENT
    validate_records_ = origin != REPLICATION
    log_append_time = config.log_append_time
    compacted = config.compact
    before = config.message_timestamp_before_max_ms
    after = config.message_timestamp_after_max_ms
    bounded = before < _LONG_MAX or after < _LONG_MAX
    batches = []
    pos = 0
    records = 0
    max_all = NO_TIMESTAMP
    while pos < n:
        if n - pos < BATCH_HEADER_SIZE:
            raise CorruptRecordBatch(f"{n - pos} trailing bytes are not a record batch")
        h = _unpack_header(mv, pos)
        batch_length = h[1]
        size = LOG_OVERHEAD + batch_length
        if batch_length < MIN_BATCH_LENGTH or pos + size > n:
            raise CorruptRecordBatch(f"record batch at {pos} has an impossible length {batch_length}")
        if h[3] != CURRENT_MAGIC:
            raise InvalidRecordError(f"record batch magic {h[3]}; only magic 2 is accepted")
        if client and h[0] != 0:
            raise InvalidRecordError(
                f"The baseOffset of the record batch in the append to {topic_partition} should be 0, "
                f"but it is {h[0]}")
        if size > max_size and validate_records_:   # a follower keeps what its leader accepted
            raise MessageTooLarge(
                f"The record batch size in the append to {topic_partition} is {size} bytes which exceeds "
                f"the maximum configured value of {max_size}.")
        actual = crc32c(mv[pos + 21 : pos + size])
        if actual != h[4]:
            raise CrcMismatch(
                f"Record is corrupt (stored crc = {h[4]}, computed crc = {actual}) "
                f"in topic partition {topic_partition}.")
        attributes = h[5]
        codec = attributes & COMPRESSION_MASK
        if codec > ZSTD:
            raise UnsupportedCompression(f"unknown compression codec {codec}")
        count = h[12]
        lod = h[6]
        if client and batches:
            raise InvalidRecordError("Compressed outer record has more than one batch")
        if validate_records_:  # Kafka checks these for clients; kwire's own writers keep them too
            if lod < 0:
                raise InvalidRecordError(
                    f"Batch has an invalid offset range: [{h[0]}, {h[0] + lod}] in topic partition {topic_partition}")
            if count <= 0:
                raise InvalidRecordError(
                    f"Invalid reported count for record batch: {count} in topic partition {topic_partition}")
            if count != lod + 1:
                raise InvalidRecordError(
                    f"Inconsistent batch offset range [{h[0]}, {h[0] + lod}] and count of records {count} "
                    f"in topic partition {topic_partition}")
        elif lod < 0 or count < 0 or count > lod + 1:
            raise CorruptRecordBatch(f"record batch at {pos}: {count} records, last offset delta {lod}")
        if client:
            if attributes & CONTROL_MASK:
                raise InvalidRecordError(
                    f"Clients are not allowed to write control records in topic partition {topic_partition}")
            if h[9] >= 0 and h[11] < 0:
                raise InvalidRecordError(
                    f"Invalid sequence number {h[11]} in record batch with producerId {h[9]} "
                    f"in topic partition {topic_partition}")
        batch_lat = attributes & TIMESTAMP_TYPE_MASK
        if validate_records_:
            if codec:
                try:
                    data = _compression.decompress(codec, mv[pos + BATCH_HEADER_SIZE : pos + size])
                except CodecError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a codec library's own error
                    raise CorruptRecordBatch(f"Failed to decompress record stream: {exc}") from None
                start, end = 0, len(data)
            elif _walk_c is None and count * 256 > size:  # Python walk, small records: bytes index faster
                data = mv[pos + BATCH_HEADER_SIZE : pos + size].tobytes()
                start, end = 0, len(data)
            else:  # few large records: walking in place beats copying the batch
                data, start, end = mv, pos + BATCH_HEADER_SIZE, pos + size
            min_d, max_d, keyless = walk_records(data, start, end, count)
            base_ts = h[7]
            if batch_lat:  # every record reads as the header's max timestamp
                lo_ts = hi_ts = h[8]
            elif count:
                lo_ts, hi_ts = base_ts + min_d, base_ts + max_d
            else:
                lo_ts = hi_ts = NO_TIMESTAMP
            if (compacted and keyless >= 0) or batch_lat or (
                    bounded and not log_append_time and count
                    and (lo_ts < now_ms - before or hi_ts > now_ms + after)):
                _record_errors(data, start, end, count, h, now_ms, config, topic_partition, compacted)
            if log_append_time:
                new_attributes = attributes | TIMESTAMP_TYPE_MASK
                max_ts = now_ms
            else:
                new_attributes = attributes & ~TIMESTAMP_TYPE_MASK
                max_ts = hi_ts if hi_ts > NO_TIMESTAMP else NO_TIMESTAMP
        else:  # a follower stores the leader's batches as they are
            new_attributes, max_ts = attributes, h[8]
        batches.append(ValidatedBatch(pos, size, h, new_attributes, max_ts))
        records += count
        if max_ts > max_all:
            max_all = max_ts
        pos += size
    return ValidationResult(batches, records, max_all, n)


def walk_records(data, pos: int, end: int, count: int) -> tuple[int, int, int]:
    """The record walk: the C one (kwire/log/_walk.c, built when a compiler is there) for
    batches it is sure of, else the Python one, which names every error in Kafka's words."""
    if _walk_c is not None:
        got = _walk_c(data, pos, end, count)
        if got is not None:
            return got
    return walk_records_py(data, pos, end, count)


def walk_records_py(data, pos: int, end: int, count: int) -> tuple[int, int, int]:
    """Walk ``count`` records that must fill ``data[pos:end]`` exactly (Kafka's
    DefaultRecord.readFrom rules), offset deltas 0, 1, 2, .... Returns (smallest timestamp
    delta, largest timestamp delta, index of the first record without a key or -1). Raises
    InvalidRecordError with Kafka's messages.

    The hot loop of the produce path: every varint is decoded inline on its one- and
    two-byte paths (deltas < 8,192; record and value lengths also on three bytes, < 1 MiB),
    longer ones by kwire.codec.primitives; values and headers are skipped by their lengths."""
    min_d = _LONG_MAX
    max_d = _LONG_MIN  # a record that sets a new max_d skips min_d: only the first can be both
    keyless = -1
    start = pos
    i = 0
    try:
        for i in range(count):
            # length
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                p = pos + 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    length = (b >> 1) ^ -(b & 1)
                    p = pos + 2
                elif data[pos + 2] < 0x80:  # records up to 1 MiB
                    b = (b & 0x7F) | ((c & 0x7F) << 7) | (data[pos + 2] << 14)
                    length = (b >> 1) ^ -(b & 1)
                    p = pos + 3
                else:
                    length, p = read_varint(data, pos)
            record_end = p + length
            if length < 6 or record_end > end:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                    f"has only {end - p} remaining bytes.")
            # attributes (int8, ignored), then the timestamp delta (varlong)
            b = data[p + 1]
            if b < 0x80:
                d = (b >> 1) ^ -(b & 1)
                p += 2
            else:
                c = data[p + 2]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    d = (b >> 1) ^ -(b & 1)
                    p += 3
                else:
                    d, p = read_varlong(data, p + 1)
            if d > max_d:
                max_d = d
            elif d < min_d:
                min_d = d
            # offset delta (varint): must be the record's index
            b = data[p]
            if b < 0x80:
                od = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                c = data[p + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    od = (b >> 1) ^ -(b & 1)
                    p += 2
                else:
                    od, p = read_varint(data, p)
            if od != i:
                raise InvalidRecordError(f"Record {i} has offset delta {od}: expected {i}")
            # key
            b = data[p]
            if b < 0x80:
                kl = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                c = data[p + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    kl = (b >> 1) ^ -(b & 1)
                    p += 2
                else:
                    kl, p = read_varint(data, p)
            if kl >= 0:
                p += kl
            elif kl == -1:
                if keyless < 0:
                    keyless = i
            else:
                raise InvalidRecordError("Found invalid record structure")
            # value
            b = data[p]
            if b < 0x80:
                vl = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                c = data[p + 1]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    vl = (b >> 1) ^ -(b & 1)
                    p += 2
                elif data[p + 2] < 0x80:
                    b = (b & 0x7F) | ((c & 0x7F) << 7) | (data[p + 2] << 14)
                    vl = (b >> 1) ^ -(b & 1)
                    p += 3
                else:
                    vl, p = read_varint(data, p)
            if vl >= 0:
                p += vl
            elif vl != -1:
                raise InvalidRecordError("Found invalid record structure")
            # headers
            if data[p] == 0:
                p += 1
            else:
                p = _skip_headers(data, p, record_end)
            if p != record_end:
                raise InvalidRecordError(
                    f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                    f"read {length + p - record_end}")
            pos = p
    except IndexError:
        if pos >= end:
            raise InvalidRecordError("Incorrect declared batch size, premature EOF reached") from None
        raise InvalidRecordError("Found invalid record structure") from None
    except CodecError:  # a varint past its length or past the end
        raise InvalidRecordError("Found invalid record structure") from None
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    if count:
        _, p = read_varint(data, start)
        first_d, _ = read_varlong(data, p + 1)
        if first_d < min_d:
            min_d = first_d
    return min_d, max_d, keyless


def _skip_headers(data, p: int, record_end: int) -> int:
    hc, p = read_varint(data, p)
    if hc < 0 or hc > record_end - p:
        raise InvalidRecordError(f"Found invalid number of record headers {hc}")
    for _ in range(hc):
        kl, p = read_varint(data, p)
        if kl < 0 or p + kl > record_end:
            raise InvalidRecordError(f"Invalid negative header key size {kl}" if kl < 0
                                     else "Found invalid record structure")
        p += kl
        vl, p = read_varint(data, p)
        if vl >= 0:
            p += vl
        elif vl != -1:
            raise InvalidRecordError("Found invalid record structure")
        if p > record_end:
            raise InvalidRecordError("Found invalid record structure")
    return p


def _record_errors(data, pos: int, end: int, count: int, h, now_ms: int, config, topic_partition: str,
                   compacted: bool) -> None:
    """The slow path, taken only when a check failed: walk the batch again naming every bad
    record (Kafka's validateRecord), then raise RecordValidationError as Kafka's
    processRecordErrors does (nothing is raised if no record is bad)."""
    log_append_time = config.log_append_time
    before = config.message_timestamp_before_max_ms
    after = config.message_timestamp_after_max_ms
    base_offset, base_ts, max_ts_header = h[0], h[7], h[8]
    batch_lat = h[5] & TIMESTAMP_TYPE_MASK
    errors: list[tuple[int, str]] = []
    any_timestamp = False
    for i in range(count):
        length, pos = read_varint(data, pos)
        record_end = pos + length
        d, p = read_varlong(data, pos + 1)
        _, p = read_varint(data, p)
        kl, p = read_varint(data, p)
        pos = record_end
        if compacted and kl < 0:
            errors.append((i, f"Compacted topic cannot accept message without key in topic partition "
                              f"{topic_partition}"))
            continue
        ts = max_ts_header if batch_lat else base_ts + d
        if not log_append_time and ts != NO_TIMESTAMP:
            if now_ms - ts > before or ts - now_ms > after:
                any_timestamp = True
                errors.append((i, f"Timestamp {ts} of message with offset {base_offset + i} is out of range. "
                                  f"The timestamp should be within [{_java_long(now_ms - before)}, "
                                  f"{_java_long(now_ms + after)}]"))
        elif batch_lat:
            any_timestamp = True
            errors.append((i, f"Invalid timestamp type in message with offset {base_offset + i}. "
                              f"Producer should not set timestamp type to LogAppendTime."))
    if not errors:
        return
    if any_timestamp:
        raise RecordValidationError("One or more records have been rejected due to invalid timestamp",
                                    ErrorCode.INVALID_TIMESTAMP, errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    raise RecordValidationError(
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
        f"showing the first three errors at most: [{shown}]", ErrorCode.INVALID_RECORD, errors)
