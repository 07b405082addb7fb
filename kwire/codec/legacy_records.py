"""Message sets: Kafka's message formats v0 and v1 (magic 0 and 1), which record batch v2
replaced in Kafka 0.11 and Kafka 4.0 stopped serving. kwire stores only v2 batches; under 3.x
emulation (kwire.emulation) it takes v0/v1 message sets in Produce v0-2 and answers Fetch v0-3
with them, converting as Kafka's LogValidator and RecordsUtil.downConvert do. No I/O.

A message set is a run of ``offset int64, size int32`` + message, where a message is
``crc uint32 (CRC-32 of the rest, not CRC-32C), magic int8, attributes int8, [timestamp int64
(v1)], key bytes, value bytes`` (bytes: int32 length, -1 for null). attributes: bits 0-2 the
compression codec (0 none, 1 gzip, 2 snappy, 3 lz4; zstd needs v2), bit 3 (v1) LogAppendTime.
A compressed message is a wrapper whose value is the compressed message set of its inner
messages; in v1 the inner offsets are relative (0, 1, ...) and the wrapper carries the last
inner message's absolute offset, in v0 they are absolute.

lz4 in magic 0: Kafka computed that frame's header checksum over the frame's magic number too
(KAFKA-3160); kwire reads such frames (and correct ones) and writes magic 0 frames Kafka's way.
"""
from __future__ import annotations

import struct
import zlib

from kwire.codec import compression as Z
from kwire.codec.records import CREATE_TIME, LOG_APPEND_TIME, build_batch, iter_batches
from kwire.errors import ErrorCode

try:   # the plain-batch walk in C (kwire/codec/_downconvert.c, built by setup.py when a compiler is there)
    from kwire.codec._downconvert import plain_batch as _plain_c
except ImportError:   # pragma: no cover - a build without a C compiler: the Python walk below
    _plain_c = None

MAGIC_V0 = 0
MAGIC_V1 = 1
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
NO_TIMESTAMP = -1
LOG_OVERHEAD = 12                     # offset int64 + size int32
_HEAD = struct.Struct(">qi")          # offset, size
_MSG_V0 = struct.Struct(">Ibb")       # crc, magic, attributes
_MSG_V1 = struct.Struct(">Ibbq")      # crc, magic, attributes, timestamp
_I32 = struct.Struct(">i")
MIN_MESSAGE_V0 = 4 + 1 + 1 + 4 + 4    # crc, magic, attributes, key length, value length
MIN_MESSAGE_V1 = MIN_MESSAGE_V0 + 8
MAX_INNER_BYTES = 64 << 20            # the largest decompressed wrapper value accepted


class LegacyRecordError(Exception):
    """A message set that cannot be taken; ``code`` is the Kafka error for its partition."""

    def __init__(self, message: str, code: int = ErrorCode.CORRUPT_MESSAGE):
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------------------ reading
def iter_messages(buf, pos: int = 0, end: int | None = None):
    """(offset, magic, attributes, timestamp, key, value) of each message of a message set,
    CRC-32 checked. A partial message at the end is ignored, as Kafka's reader does; a message
    that lies about its own size or CRC raises LegacyRecordError(CORRUPT_MESSAGE)."""
    view = memoryview(buf)
    end = len(view) if end is None else end
    while pos + LOG_OVERHEAD <= end:
        offset, size = _HEAD.unpack_from(view, pos)
        body = pos + LOG_OVERHEAD
        if size < MIN_MESSAGE_V0:
            raise LegacyRecordError(f"message at offset {offset} has size {size}")
        if body + size > end:
            return
        crc, magic, attributes = _MSG_V0.unpack_from(view, body)
        if magic not in (MAGIC_V0, MAGIC_V1):
            raise LegacyRecordError(f"message at offset {offset} has magic {magic}; a message set holds "
                                    f"magic 0 or 1", ErrorCode.INVALID_RECORD)
        if zlib.crc32(view[body + 4: body + size]) != crc:
            raise LegacyRecordError(f"message at offset {offset} is corrupt (CRC-32 mismatch)")
        p = body + 6
        timestamp = NO_TIMESTAMP
        if magic == MAGIC_V1:
            if size < MIN_MESSAGE_V1:
                raise LegacyRecordError(f"message at offset {offset} has size {size}")
            timestamp = _MSG_V1.unpack_from(view, body)[3]
            p += 8
        key, p = _read_bytes(view, p, body + size, offset)
        value, p = _read_bytes(view, p, body + size, offset)
        if p != body + size:
            raise LegacyRecordError(f"message at offset {offset} has {body + size - p} bytes after its value")
        yield offset, magic, attributes, timestamp, key, value
        pos = body + size


def _read_bytes(view, p: int, end: int, offset: int):
    if p + 4 > end:
        raise LegacyRecordError(f"message at offset {offset} is truncated")
    n = _I32.unpack_from(view, p)[0]
    p += 4
    if n < 0:
        return None, p
    if p + n > end:
        raise LegacyRecordError(f"message at offset {offset} is truncated")
    return bytes(view[p: p + n]), p + n


def is_message_set(buf) -> bool:
    """True when ``buf`` starts like a v0/v1 message (magic at byte 16 below 2)."""
    return len(buf) >= LOG_OVERHEAD + MIN_MESSAGE_V0 and buf[16] in (MAGIC_V0, MAGIC_V1)


# ------------------------------------------------------------------------------ produce: up to v2
def to_record_batch(buf) -> tuple[bytes, int]:
    """A producer's v0/v1 message set as one v2 record batch (offset deltas 0..n-1; the log
    assigns offsets) and the message format it came in. As Kafka's LogValidator converting to
    magic 2: every (inner) message becomes a record with its key, value, no headers and its
    timestamp (-1 in magic 0); a compressed set keeps its codec; a v1 wrapper with
    LogAppendTime gives its records its own timestamp and the batch the LogAppendTime bit (the
    validator refuses that from a producer, INVALID_TIMESTAMP, as Kafka does)."""
    records = []
    codec = Z.NONE
    magic_seen = None
    ts_type = CREATE_TIME
    for offset, magic, attributes, timestamp, key, value in iter_messages(buf):
        if magic_seen is None:
            magic_seen = magic
        elif magic != magic_seen:
            raise LegacyRecordError("a message set mixes magic 0 and 1", ErrorCode.INVALID_RECORD)
        c = attributes & CODEC_MASK
        wrapper_lat = magic == MAGIC_V1 and attributes & TIMESTAMP_TYPE_BIT
        if wrapper_lat:
            ts_type = LOG_APPEND_TIME
        if c == Z.NONE:
            records.append((key, value, [], timestamp))
            continue
        if c not in (Z.GZIP, Z.SNAPPY, Z.LZ4):
            raise LegacyRecordError(f"message at offset {offset} has compression codec {c}; message format "
                                    f"v{magic} knows gzip, snappy and lz4", ErrorCode.INVALID_RECORD)
        if c == Z.LZ4 and magic == MAGIC_V0:
            value = lz4_frame_checksum(value, broken=False)
        if value is None:
            raise LegacyRecordError(f"compressed message at offset {offset} has no value")
        codec = c
        try:
            inner = Z.decompress(c, value, max_output_size=MAX_INNER_BYTES)
        except Z.CompressionError as exc:
            raise LegacyRecordError(f"compressed message at offset {offset}: {exc}") from None
        for _, imagic, iattributes, its, ikey, ivalue in iter_messages(inner):
            if imagic != magic:
                raise LegacyRecordError("an inner message's magic differs from its wrapper's",
                                        ErrorCode.INVALID_RECORD)
            if iattributes & CODEC_MASK:
                raise LegacyRecordError("Compressed outer record should not have an inner record with a "
                                        "compression attribute set", ErrorCode.INVALID_RECORD)
            records.append((ikey, ivalue, [], timestamp if wrapper_lat else its))
    if not records:
        raise LegacyRecordError("the message set holds no complete message")
    return build_batch(records, compression=codec, timestamp_type=ts_type), magic_seen


# ------------------------------------------------------------------------------ fetch: down to v0/v1
_PREFIX = struct.Struct(">qiI")      # offset, size, crc
_V0_HEAD = struct.Struct(">bb")       # magic, attributes
_V1_HEAD = struct.Struct(">bbq")      # magic, attributes, timestamp
_NULL = b"\xff\xff\xff\xff"


def _message_bytes(offset: int, magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    """One message with its offset and size prefix (the down-conversion's inner loop)."""
    head = _V1_HEAD.pack(magic, attributes, timestamp) if magic else _V0_HEAD.pack(magic, attributes)
    body = b"".join((head, _NULL if key is None else _I32.pack(len(key)), key or b"",
                     _NULL if value is None else _I32.pack(len(value)), value or b""))
    return _PREFIX.pack(offset, len(body) + 4, zlib.crc32(body)) + body


def down_convert(data, to_magic: int, first_offset: int) -> list[bytes]:
    """v2 record batches as v0/v1 message sets, one unit per batch (a wrapper for a compressed
    batch, a run of messages otherwise), Kafka's RecordsUtil.downConvert: records below
    ``first_offset`` and control batches are left out, headers are dropped (the older formats
    have none), timestamps too in v0; a LogAppendTime batch gives its messages its max
    timestamp and the LogAppendTime bit. Raises LegacyRecordError(UNSUPPORTED_COMPRESSION_TYPE)
    for a zstd batch, which the older formats cannot carry."""
    units = []
    for batch in iter_batches(data, allow_partial_tail=True):
        if batch.is_control:
            continue
        codec = batch.compression
        if codec == Z.NONE and batch.timestamp_type != LOG_APPEND_TIME:
            unit = None
            if _plain_c is not None:   # the same bytes as _plain_batch (a property test holds it to that)
                unit = _plain_c(batch.payload(), batch.record_count, batch.base_offset, batch.base_timestamp,
                                to_magic, first_offset)
            if unit is None:
                try:
                    unit = _plain_batch(batch, to_magic, first_offset)
                except (IndexError, ValueError, struct.error):   # anything unusual: the general path names it
                    unit = None
            if unit is not None:
                if unit:
                    units.append(unit)
                continue
        recs = [r for r in batch.records() if r.offset >= first_offset]
        if not recs:
            continue
        if codec == Z.ZSTD:
            raise LegacyRecordError(f"{Z.codec_name(codec)} batches cannot be down-converted to message "
                                    f"format v{to_magic}", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        lat = batch.timestamp_type == LOG_APPEND_TIME
        ts_bit = TIMESTAMP_TYPE_BIT if lat and to_magic == MAGIC_V1 else 0
        max_ts = batch.max_timestamp
        if codec == Z.NONE:
            if lat:
                units.append(b"".join([_message_bytes(r.offset, to_magic, ts_bit, max_ts, r.key, r.value)
                                       for r in recs]))
            else:
                units.append(b"".join([_message_bytes(r.offset, to_magic, 0, r.timestamp, r.key, r.value)
                                       for r in recs]))
            continue
        inner = b"".join([_message_bytes(i if to_magic == MAGIC_V1 else r.offset, to_magic, 0,
                                         max_ts if lat else r.timestamp, r.key, r.value)
                          for i, r in enumerate(recs)])
        wrapper_ts = max_ts if lat else max(r.timestamp for r in recs)
        packed = Z.compress(codec, inner)
        if codec == Z.LZ4 and to_magic == MAGIC_V0:
            packed = lz4_frame_checksum(packed, broken=True)
        units.append(_message_bytes(recs[-1].offset, to_magic, codec | ts_bit, wrapper_ts, None, packed))
    return units


def _plain_batch(batch, magic: int, first_offset: int) -> bytes | None:
    """An uncompressed CreateTime batch's records as messages, walked straight from the batch
    bytes (keys and values are copied once, into the output); None when a record is not the
    usual shape (long varints), for the general path."""
    view = batch.payload()
    base_offset, base_ts = batch.base_offset, batch.base_timestamp
    out = []
    append = out.append
    pack_prefix, crc32, i32 = _PREFIX.pack, zlib.crc32, _I32.pack
    head = _V1_HEAD.pack if magic else None
    pos, n = 0, len(view)
    for _ in range(batch.record_count):
        b = view[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif view[pos + 1] < 0x80:
            b = (b & 0x7F) | (view[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            return None
        end = pos + length
        if end > n:
            return None
        p = pos + 1   # attributes
        b = view[p]   # timestamp delta
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif view[p + 1] < 0x80:
            b = (b & 0x7F) | (view[p + 1] << 7)
            ts_delta = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            return None
        b = view[p]   # offset delta
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif view[p + 1] < 0x80:
            b = (b & 0x7F) | (view[p + 1] << 7)
            offset_delta = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            return None
        b = view[p]   # key length
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            p += 1
        elif view[p + 1] < 0x80:
            b = (b & 0x7F) | (view[p + 1] << 7)
            klen = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            return None
        if klen >= 0:
            key = view[p:p + klen]
            p += klen
        elif klen == -1:
            key = None
        else:
            return None
        b = view[p]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            p += 1
        elif view[p + 1] < 0x80:
            b = (b & 0x7F) | (view[p + 1] << 7)
            vlen = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            return None
        if vlen >= 0:
            value = view[p:p + vlen]
            p += vlen
        elif vlen == -1:
            value = None
        else:
            return None
        if p > end:
            return None
        pos = end
        offset = base_offset + offset_delta
        if offset < first_offset:
            continue
        body = b"".join((head(1, 0, base_ts + ts_delta) if magic else b"\x00\x00",
                         _NULL if key is None else i32(klen), b"" if key is None else key,
                         _NULL if value is None else i32(vlen), b"" if value is None else value))
        append(pack_prefix(offset, len(body) + 4, crc32(body)))
        append(body)
    if pos != n:
        return None
    return b"".join(out)


# ------------------------------------------------------------------------------ lz4 in magic 0
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _xxh32_short(data: bytes) -> int:
    """XXH32 with seed 0 of fewer than 16 bytes (an lz4 frame descriptor)."""
    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & _M32
    h = (_P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        h = (h + int.from_bytes(data[i:i + 4], "little") * _P3) & _M32
        h = (rotl(h, 17) * _P4) & _M32
        i += 4
    for b in data[i:]:
        h = (h + b * _P5) & _M32
        h = (rotl(h, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def lz4_frame_checksum(frame, *, broken: bool) -> bytes:
    """An lz4 frame with its header checksum set the standard way, or (``broken``) Kafka's
    magic-0 way: over the magic number and the descriptor instead of the descriptor alone."""
    frame = bytes(frame)
    if len(frame) < 7 or frame[:4] != b"\x04\x22\x4d\x18":
        return frame
    hc_at = 6 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
    if len(frame) <= hc_at:
        return frame
    covered = frame[0 if broken else 4: hc_at]
    return frame[:hc_at] + bytes([(_xxh32_short(covered) >> 8) & 0xFF]) + frame[hc_at + 1:]


def fetch_magic(fetch_version: int) -> int:
    """The message format a Fetch of this version reads: v0-1 magic 0, v2-3 magic 1."""
    return MAGIC_V0 if fetch_version < 2 else MAGIC_V1
