"""Kafka record batch v2 (magic 2): a view over bytes, record iteration, building, CRC32C.

No I/O. The produce path touches only the 61-byte header and the CRC (habit 8):
``RecordBatch(buf, pos)`` reads the header with one ``struct.unpack_from`` and never copies
the batch; offsets are assigned with ``set_base_offset`` (outside the CRC).

Layout (Kafka's DefaultRecordBatch)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32 | records...

batchLength counts from partitionLeaderEpoch to the end, so a batch takes
``LOG_OVERHEAD + batchLength`` bytes. The CRC-32C covers attributes to the end.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import struct

from kwire.codec import compression as _compression
from kwire.codec.primitives import read_varint, read_varlong
from kwire.errors import (
    CodecError,
    CorruptRecordBatch,
    CrcMismatch,
    ErrorCode,
    EncodeError,
    TruncatedData,
    UnsupportedCompression,
    VarintTooLong,
)

# --- layout -------------------------------------------------------------------------------
BASE_OFFSET_OFFSET = 0
BATCH_LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61
BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base offset + batch length
# the smallest legal batchLength: the header after the length field, no records
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD  # 49
CURRENT_MAGIC = 2

# compression codecs (attributes bits 0-2)
NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

HEADER = struct.Struct(">qiibIhiqqqhii")
assert HEADER.size == BATCH_HEADER_SIZE
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

# --- errors -------------------------------------------------------------------------------
class TruncatedRecordBatch(CorruptRecordBatch, TruncatedData):
    """The input ends inside a record batch (a torn tail, or a short read)."""


class UnsupportedMagic(CorruptRecordBatch):
    """The batch's magic byte is not 2 (kwire serves record batch v2 only)."""


class InvalidRecord(CorruptRecordBatch):
    """A record inside a batch is malformed: bad length, varint, count or offset delta."""

    code = ErrorCode.CORRUPT_MESSAGE


class RecordVarintTooLong(InvalidRecord, VarintTooLong):
    """A varint inside a record runs past its maximum length."""


class RecordCountMismatch(InvalidRecord):
    """The records found do not match the batch's recordsCount."""


DEFAULT_MAX_DECOMPRESSED_SIZE = _compression.DEFAULT_MAX_OUTPUT_SIZE


def _load_crc32c():
    """The crc32c package's C function. Its extension module is loaded straight from the
    package's directory: the package's ``__init__`` reads its own installed metadata for
    ``__version__`` (importlib.metadata, email, zipfile, csv: 25-30 ms of every start, as
    the metadata log's first batch needs a CRC). Any surprise: the ordinary import."""
    try:
        spec = importlib.util.find_spec("crc32c")   # finds the package without running it
        for d in (spec.submodule_search_locations or ()) if spec else ():
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(d, "_crc32c" + suffix)
                if os.path.exists(path):
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader("crc32c._crc32c", loader))
                    loader.exec_module(mod)
                    fn = mod.crc32c
                    if fn(b"123456789") == 0xE3069283:   # the check value of CRC-32C
                        return fn
    except Exception:  # noqa: BLE001 - fall back to the package's own import
        pass
    from crc32c import crc32c as fn  # noqa: PLC0415 - fallback; 25-30 ms (docstring)

    return fn


def _crc32c(data, value: int = 0) -> int:
    """The first CRC loads the C function (``_load_crc32c``) and rebinds this module's
    ``_crc32c`` to it: no import cost before a CRC is needed, no wrapper after."""
    global _crc32c
    _crc32c = _load_crc32c()
    return _crc32c(data, value)


def crc32c(data, value: int = 0) -> int:
    """CRC-32C (Castagnoli) of a bytes-like object, unsigned; ``value``: the CRC so far (to
    continue it over more data)."""
    return _crc32c(data, value)


# --- the header view ----------------------------------------------------------------------
class RecordBatch:
    """A view over one v2 record batch at ``buf[pos:]``; the header is read eagerly (one
    ``struct.unpack_from``), nothing else is read or copied until asked."""

    __slots__ = (
        "buf",
        "pos",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
    )

    def __init__(self, buf, pos: int = 0):
        if len(buf) - pos < BATCH_HEADER_SIZE:
            raise TruncatedRecordBatch(
                f"record batch header needs {BATCH_HEADER_SIZE} bytes at {pos}, "
                f"have {len(buf) - pos}"
            )
        self.buf = buf
        self.pos = pos
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = HEADER.unpack_from(buf, pos)

    # derived header fields
    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def end(self) -> int:
        """Position just past this batch in ``buf``."""
        return self.pos + LOG_OVERHEAD + self.batch_length

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        """The sequence of the last record (wraps at int32 max), or -1 without sequences."""
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    # checks
    def validate(self) -> None:
        """Structural checks, no CRC (see validate_crc). Raises CorruptRecordBatch."""
        if self.magic != CURRENT_MAGIC:
            raise UnsupportedMagic(f"record batch magic {self.magic}, expected 2")
        if self.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordBatch(
                f"record batch length {self.batch_length} is below the minimum {MIN_BATCH_LENGTH}"
            )
        if self.pos + LOG_OVERHEAD + self.batch_length > len(self.buf):
            raise TruncatedRecordBatch(
                f"record batch of {self.size} bytes at {self.pos} runs past the input "
                f"({len(self.buf) - self.pos} bytes)"
            )
        if self.record_count < 0:
            raise CorruptRecordBatch(f"negative record count {self.record_count}")
        if self.last_offset_delta < 0:
            raise CorruptRecordBatch(f"negative last offset delta {self.last_offset_delta}")
        if self.record_count > self.last_offset_delta + 1:
            raise CorruptRecordBatch(
                f"{self.record_count} records but last offset delta {self.last_offset_delta}"
            )
        codec = self.attributes & COMPRESSION_MASK
        if codec > ZSTD:
            raise UnsupportedCompression(f"unknown compression codec {codec}")
        if codec == NONE and self.record_count > self.batch_length - MIN_BATCH_LENGTH:
            # every record takes at least one byte (in fact at least seven)
            raise CorruptRecordBatch(
                f"{self.record_count} records cannot fit in "
                f"{self.batch_length - MIN_BATCH_LENGTH} bytes"
            )

    def compute_crc(self) -> int:
        """CRC-32C over attributes..end of batch, as it should be stored."""
        start = self.pos + ATTRIBUTES_OFFSET
        end = self.pos + LOG_OVERHEAD + self.batch_length
        if end > len(self.buf) or end < start:
            raise TruncatedRecordBatch(f"record batch at {self.pos} runs past the input")
        return _crc32c(memoryview(self.buf)[start:end])

    def crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def validate_crc(self) -> None:
        actual = self.compute_crc()
        if actual != self.crc:
            raise CrcMismatch(
                f"record batch at offset {self.base_offset}: stored CRC {self.crc:#010x}, "
                f"computed {actual:#010x}"
            )

    def bytes(self) -> bytes:
        return bytes(self.buf[self.pos : self.pos + LOG_OVERHEAD + self.batch_length])

    def payload(self):
        """The bytes after the 61-byte header (compressed if the batch is), as a memoryview."""
        start = self.pos + BATCH_HEADER_SIZE
        return memoryview(self.buf)[start : self.pos + LOG_OVERHEAD + self.batch_length]

    def records(self, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE):
        """Iterate the batch's records as Record objects, decompressing first if needed.

        Decompression happens here, at the call: CompressionError (DecompressedTooLarge past
        ``max_decompressed_size``) on bad compressed payloads, UnsupportedCompression on an
        unknown codec. Records are parsed lazily while iterating: InvalidRecord subclasses
        on malformed records, RecordCountMismatch when they do not match recordsCount. Offset deltas must increase strictly
        and stay within lastOffsetDelta (gaps are legal: compaction makes them). Under
        LogAppendTime every record's timestamp is the batch's maxTimestamp, as in Kafka.
        The CRC is not checked here (see validate_crc)."""
        if self.magic != CURRENT_MAGIC:
            raise UnsupportedMagic(f"record batch magic {self.magic}, expected 2")
        start = self.pos + BATCH_HEADER_SIZE
        end = self.pos + LOG_OVERHEAD + self.batch_length
        if self.batch_length < MIN_BATCH_LENGTH or end > len(self.buf):
            raise TruncatedRecordBatch(f"record batch at {self.pos} runs past the input")
        if self.record_count < 0:
            raise RecordCountMismatch(f"negative record count {self.record_count}")
        codec = self.attributes & COMPRESSION_MASK
        if codec == NONE:
            data = bytes(memoryview(self.buf)[start:end])
        else:
            data = _compression.decompress(
                codec, memoryview(self.buf)[start:end], max_output_size=max_decompressed_size
            )
        if self.record_count > len(data):
            raise RecordCountMismatch(
                f"{self.record_count} records cannot fit in {len(data)} bytes"
            )
        log_append_time = (
            self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        )
        return _iter_records(
            data,
            self.record_count,
            self.base_offset,
            self.base_timestamp,
            log_append_time,
            self.last_offset_delta,
        )

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset_delta="
            f"{self.last_offset_delta}, count={self.record_count}, size={self.size}, "
            f"magic={self.magic}, compression={self.compression}, "
            f"timestamp_type={self.timestamp_type}, producer_id={self.producer_id}, "
            f"producer_epoch={self.producer_epoch}, base_sequence={self.base_sequence}, "
            f"transactional={self.is_transactional}, control={self.is_control})"
        )


def iter_batches(buf, pos: int = 0, *, allow_partial_tail: bool = False):
    """Yield RecordBatch views over consecutive batches in ``buf[pos:]``.

    A batch whose declared length is impossible (below the header size) raises
    CorruptRecordBatch. A final batch that runs past the input raises TruncatedRecordBatch,
    unless ``allow_partial_tail`` is true: then iteration just stops there (what a fetch
    response's last partial batch and log recovery's torn tail need). Only the length is
    checked here; call ``validate()`` / ``validate_crc()`` on each batch as needed.
    """
    n = len(buf)
    unpack_len = _INT32.unpack_from
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            if allow_partial_tail:
                return
            raise TruncatedRecordBatch(f"{n - pos} bytes at {pos}: not even a batch length")
        (length,) = unpack_len(buf, pos + BATCH_LENGTH_OFFSET)
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordBatch(f"record batch length {length} at {pos} is impossible")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            if allow_partial_tail:
                return
            raise TruncatedRecordBatch(
                f"record batch of {LOG_OVERHEAD + length} bytes at {pos} runs past the "
                f"input ({n - pos} bytes)"
            )
        yield RecordBatch(buf, pos)
        pos = end


# --- in-place header edits ----------------------------------------------------------------
def set_base_offset(buf, pos: int, base_offset: int) -> None:
    """Rewrite baseOffset (outside the CRC: the CRC stays valid)."""
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf, pos: int, epoch: int) -> None:
    """Rewrite partitionLeaderEpoch (outside the CRC)."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf, pos: int, timestamp_ms: int) -> None:
    """Stamp a batch with LogAppendTime, as Kafka's DefaultRecordBatch.setMaxTimestamp does:
    set the timestamp-type attribute bit and maxTimestamp, leave baseTimestamp and the
    records' deltas alone, and recompute the CRC. Readers then report every record's
    timestamp as maxTimestamp."""
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _rewrite_crc(buf, pos)


def _rewrite_crc(buf, pos: int) -> None:
    (length,) = _INT32.unpack_from(buf, pos + BATCH_LENGTH_OFFSET)
    end = pos + LOG_OVERHEAD + length
    if length < MIN_BATCH_LENGTH or end > len(buf):
        raise TruncatedRecordBatch(f"record batch at {pos} runs past the input")
    crc = _crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : end])
    _UINT32.pack_into(buf, pos + CRC_OFFSET, crc)


# --- records ------------------------------------------------------------------------------
class Record:
    """One record: absolute offset and timestamp, key and value (bytes or None), headers as a
    list of (str key, bytes-or-None value)."""

    __slots__ = ("offset", "timestamp", "key", "value", "headers")

    def __init__(self, offset, timestamp, key, value, headers=None):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = [] if headers is None else headers

    def _tuple(self):
        return (self.offset, self.timestamp, self.key, self.value, list(self.headers))

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return self._tuple() == other._tuple()

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r})"
        )


def _iter_records(data: bytes, count, base_offset, base_timestamp, log_append_time, last_delta):
    """The hot loop: parse ``count`` records filling ``data`` exactly. Varints are decoded
    inline on their one- and two-byte fast paths; longer ones go to kwire.codec.primitives."""
    n = len(data)
    pos = 0
    prev_delta = -1
    make = Record
    index = 0
    try:
        for index in range(count):
            if pos >= n:
                raise RecordCountMismatch(
                    f"batch declares {count} records but holds only {index}"
                )
            # length (varint)
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = read_varint(data, pos)
            record_end = pos + length
            if length < 6 or record_end > n:
                raise InvalidRecord(
                    f"record {index}: length {length} impossible with {n - pos} bytes left"
                )
            pos += 1  # attributes (int8, unused)
            # timestamp delta (varlong)
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                ts_delta, pos = read_varlong(data, pos)
            # offset delta (varint)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                offset_delta, pos = read_varint(data, pos)
            if offset_delta <= prev_delta or offset_delta > last_delta:
                raise InvalidRecord(
                    f"record {index}: offset delta {offset_delta} after {prev_delta} "
                    f"(last offset delta {last_delta})"
                )
            prev_delta = offset_delta
            # key
            b = data[pos]
            if b < 0x80:
                klen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                klen = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                klen, pos = read_varint(data, pos)
            if klen >= 0:
                if pos + klen > record_end:
                    raise InvalidRecord(f"record {index}: key of {klen} bytes overruns it")
                key = data[pos : pos + klen]
                pos += klen
            elif klen == -1:
                key = None
            else:
                raise InvalidRecord(f"record {index}: key length {klen}")
            # value
            b = data[pos]
            if b < 0x80:
                vlen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                vlen = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                vlen, pos = read_varint(data, pos)
            if vlen >= 0:
                if pos + vlen > record_end:
                    raise InvalidRecord(f"record {index}: value of {vlen} bytes overruns it")
                value = data[pos : pos + vlen]
                pos += vlen
            elif vlen == -1:
                value = None
            else:
                raise InvalidRecord(f"record {index}: value length {vlen}")
            # headers
            b = data[pos]
            if b < 0x80:
                hcount = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                hcount, pos = read_varint(data, pos)
            if hcount == 0:
                headers = []
            else:
                if hcount < 0 or hcount > (record_end - pos) // 2:
                    raise InvalidRecord(f"record {index}: {hcount} headers")
                headers = []
                for _ in range(hcount):
                    hklen, pos = read_varint(data, pos)
                    if hklen < 0 or pos + hklen > record_end:
                        raise InvalidRecord(f"record {index}: header key length {hklen}")
                    hkey = data[pos : pos + hklen].decode("utf-8")
                    pos += hklen
                    hvlen, pos = read_varint(data, pos)
                    if hvlen >= 0:
                        if pos + hvlen > record_end:
                            raise InvalidRecord(
                                f"record {index}: header value of {hvlen} bytes overruns it"
                            )
                        hval = data[pos : pos + hvlen]
                        pos += hvlen
                    elif hvlen == -1:
                        hval = None
                    else:
                        raise InvalidRecord(f"record {index}: header value length {hvlen}")
                    headers.append((hkey, hval))
            if pos != record_end:
                raise InvalidRecord(
                    f"record {index}: declared {length} bytes, read {length + pos - record_end}"
                )
            yield make(
                base_offset + offset_delta,
                log_append_time if log_append_time is not None else base_timestamp + ts_delta,
                key,
                value,
                headers,
            )
    except VarintTooLong as exc:
        raise RecordVarintTooLong(f"record {index}: {exc}") from None
    except (IndexError, TruncatedData) as exc:
        raise InvalidRecord(f"record {index} runs past the batch: {exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidRecord(f"record {index}: header key is not UTF-8: {exc}") from None
    except InvalidRecord:
        raise
    except CodecError as exc:  # pragma: no cover - primitives raise only the above
        raise InvalidRecord(f"record {index}: {exc}") from None
    if pos != n:
        raise RecordCountMismatch(
            f"{n - pos} bytes remain after the {count} records the batch declares"
        )


# --- building -----------------------------------------------------------------------------
def _put_varint(out: bytearray, v: int) -> None:
    """Zigzag varint/varlong (64-bit zigzag is the same encoding for values in int32)."""
    z = (v << 1) ^ (v >> 63)
    if z < 0:
        raise EncodeError(f"varint out of range: {v}")
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def _normalize(records, base_offset):
    """Yield (offset_delta, timestamp, key, value, headers)."""
    prev = -1
    for i, r in enumerate(records):
        if isinstance(r, Record):
            delta = i if r.offset is None else r.offset - base_offset
            ts, key, value, headers = r.timestamp, r.key, r.value, r.headers
        else:
            if not 2 <= len(r) <= 4:
                raise EncodeError(f"record {i}: expected (key, value, headers, timestamp_ms)")
            key, value = r[0], r[1]
            headers = r[2] if len(r) > 2 else None
            ts = r[3] if len(r) > 3 else None
            delta = i
        if delta <= prev:
            raise EncodeError(f"record {i}: offset delta {delta} does not increase")
        prev = delta
        yield delta, NO_TIMESTAMP if ts is None else ts, key, value, headers or ()


def _encode_records(items, base_timestamp) -> bytearray:
    out = bytearray()
    body = bytearray()
    put = _put_varint
    for delta, ts, key, value, headers in items:
        body.clear()
        body.append(0)  # record attributes
        put(body, ts - base_timestamp)
        put(body, delta)
        if key is None:
            body.append(1)  # zigzag(-1)
        else:
            put(body, len(key))
            body += key
        if value is None:
            body.append(1)
        else:
            put(body, len(value))
            body += value
        put(body, len(headers))
        for hkey, hval in headers:
            raw = hkey.encode("utf-8") if isinstance(hkey, str) else hkey
            put(body, len(raw))
            body += raw
            if hval is None:
                body.append(1)
            else:
                put(body, len(hval))
                body += hval
        put(out, len(body))
        out += body
    return out


def build_batch(
    records,
    *,
    base_offset: int = 0,
    compression: int = NONE,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression_level: int | None = None,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Build one v2 record batch.

    ``records`` holds ``(key, value, headers, timestamp_ms)`` tuples (headers and timestamp may
    be left off; a None timestamp is -1) with offset deltas 0, 1, 2, ...; or Record objects,
    whose ``offset`` (if not None) gives the delta from ``base_offset`` (so gaps survive a
    rebuild). baseTimestamp is the first record's timestamp, maxTimestamp the largest, as
    Kafka's MemoryRecordsBuilder does.

    The log cleaner's rebuild of a batch keeps its ``last_offset_delta`` (records removed
    from its end leave the batch's offset range as it was), may keep ``max_timestamp``
    (LogAppendTime) and sets ``delete_horizon_ms`` (KIP-534: baseTimestamp is then the
    delete horizon and attribute bit 6 says so; record timestamps stay deltas from it)."""
    items = list(_normalize(records, base_offset))
    if not items:
        raise EncodeError("a record batch needs at least one record")
    base_timestamp = items[0][1] if delete_horizon_ms is None else delete_horizon_ms
    if max_timestamp is None:
        max_timestamp = max(item[1] for item in items)
    if last_offset_delta is None:
        last_offset_delta = items[-1][0]
    elif last_offset_delta < items[-1][0]:
        raise EncodeError(f"last offset delta {last_offset_delta} is below the last record's {items[-1][0]}")
    try:
        payload = _encode_records(items, base_timestamp)
    except (TypeError, AttributeError) as exc:
        raise EncodeError(f"record key, value and headers must be bytes: {exc}") from None
    if compression != NONE:
        payload = _compression.compress(compression, payload, level=compression_level)
    elif compression not in _compression.CODEC_NAMES:  # pragma: no cover - NONE is known
        raise UnsupportedCompression(f"unknown compression codec {compression}")
    attributes = compression & COMPRESSION_MASK
    if compression > ZSTD or compression < 0:
        raise UnsupportedCompression(f"unknown compression codec {compression}")
    if timestamp_type:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    out = bytearray(BATCH_HEADER_SIZE)
    HEADER.pack_into(
        out,
        0,
        base_offset,
        BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload),
        partition_leader_epoch,
        CURRENT_MAGIC,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(items),
    )
    out += payload
    _UINT32.pack_into(out, CRC_OFFSET, _crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


# --- control records (transaction markers) ------------------------------------------------
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


def build_control_batch(
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    *,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker: a transactional control batch holding one control record
    (key: version int16 0, type int16 0 abort / 1 commit; value: version int16 0,
    coordinator epoch int32)."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    return build_batch(
        [(key, value, [], timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def parse_control_record(record: Record) -> tuple[int, int | None]:
    """(control type, coordinator epoch or None) of a control record: type 0 abort, 1 commit.
    Raises InvalidRecord if the key is not a control key."""
    key = record.key
    if key is None or len(key) < 4:
        raise InvalidRecord("control record key shorter than 4 bytes")
    version, ctype = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecord(f"control record key version {version}")
    epoch = None
    value = record.value
    if value is not None and len(value) >= 6:
        epoch = _CONTROL_VALUE.unpack_from(value)[1]
    return ctype, epoch
