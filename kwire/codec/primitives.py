"""Kafka wire primitives: no I/O, bytes in, values out.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; ``buf`` is bytes, bytearray or a
memoryview. Writers append to a ``bytearray``. Every length read is checked against the
input before anything is sliced, so a hostile length never allocates.
"""
from __future__ import annotations

import struct
import uuid as _uuid

from kwire.errors import InvalidLength, TruncatedData, VarintTooLong, EncodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")
BOOL = struct.Struct(">?")

ZERO_UUID = _uuid.UUID(int=0)


# --- varints ---------------------------------------------------------------------------
def read_uvarint(buf, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Unsigned LEB128 (Kafka's unsigned varint; 5 bytes max for 32 bits, 10 for 64)."""
    try:
        b = buf[pos]
    except IndexError:
        raise TruncatedData("varint truncated") from None
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    n = len(buf)
    for _ in range(max_bytes - 1):
        if pos >= n:
            raise TruncatedData("varint truncated")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result >> (7 * max_bytes - (3 if max_bytes == 5 else 6)):
                raise VarintTooLong(f"varint {result} out of range for {max_bytes} bytes")
            return result, pos
        shift += 7
    raise VarintTooLong(f"varint longer than {max_bytes} bytes")


def read_uvarlong(buf, pos: int) -> tuple[int, int]:
    return read_uvarint(buf, pos, 10)


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Signed zigzag varint (32 bits)."""
    v, pos = read_uvarint(buf, pos, 5)
    return (v >> 1) ^ -(v & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Signed zigzag varlong (64 bits)."""
    v, pos = read_uvarint(buf, pos, 10)
    return (v >> 1) ^ -(v & 1), pos


def write_uvarint(out: bytearray, v: int) -> None:
    if v < 0:
        raise EncodeError(f"negative unsigned varint {v}")
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def uvarint_bytes(v: int) -> bytes:
    out = bytearray()
    write_uvarint(out, v)
    return bytes(out)


def write_varint(out: bytearray, v: int) -> None:
    write_uvarint(out, ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, v: int) -> None:
    write_uvarint(out, ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


def uvarint_size(v: int) -> int:
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def varint_size(v: int) -> int:
    return uvarint_size(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


# --- fixed width -----------------------------------------------------------------------
def _fixed_reader(st: struct.Struct):
    size = st.size
    unpack_from = st.unpack_from

    def read(buf, pos: int):
        if pos + size > len(buf):
            raise TruncatedData(f"need {size} bytes at {pos}, have {len(buf) - pos}")
        return unpack_from(buf, pos)[0], pos + size

    return read


read_int8 = _fixed_reader(INT8)
read_int16 = _fixed_reader(INT16)
read_int32 = _fixed_reader(INT32)
read_int64 = _fixed_reader(INT64)
read_uint16 = _fixed_reader(UINT16)
read_uint32 = _fixed_reader(UINT32)
read_float64 = _fixed_reader(FLOAT64)
read_bool = _fixed_reader(BOOL)


def read_uuid(buf, pos: int) -> tuple[_uuid.UUID, int]:
    if pos + 16 > len(buf):
        raise TruncatedData("uuid truncated")
    return _uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def write_uuid(out: bytearray, v) -> None:
    out += v.bytes if v is not None else bytes(16)


# --- strings and bytes -----------------------------------------------------------------
def _take(buf, pos: int, n: int):
    end = pos + n
    if end > len(buf):
        raise InvalidLength(f"length {n} at {pos} runs past the input ({len(buf)} bytes)")
    return buf[pos:end], end


def read_string(buf, pos: int) -> tuple[str | None, int]:
    """INT16 length, -1 means null."""
    n, pos = read_int16(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        raise InvalidLength(f"negative string length {n}")
    raw, pos = _take(buf, pos, n)
    return _utf8(raw), pos


def read_compact_string(buf, pos: int) -> tuple[str | None, int]:
    """Unsigned varint length + 1, 0 means null."""
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    raw, pos = _take(buf, pos, n - 1)
    return _utf8(raw), pos


def _utf8(raw) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidLength(f"string is not valid UTF-8: {exc}") from None


def read_bytes(buf, pos: int) -> tuple[bytes | None, int]:
    """INT32 length, -1 means null."""
    n, pos = read_int32(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        raise InvalidLength(f"negative bytes length {n}")
    raw, pos = _take(buf, pos, n)
    return bytes(raw), pos


def read_compact_bytes(buf, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    raw, pos = _take(buf, pos, n - 1)
    return bytes(raw), pos


def read_records(buf, pos: int):
    """A records field (INT32 length, -1 null) as a slice of ``buf`` (a view when ``buf`` is
    a memoryview: record batches are not copied on the way to the log)."""
    n, pos = read_int32(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        raise InvalidLength(f"negative records length {n}")
    return _take(buf, pos, n)


def read_compact_records(buf, pos: int):
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    return _take(buf, pos, n - 1)


def write_string(out: bytearray, v: str | None) -> None:
    if v is None:
        out += b"\xff\xff"
        return
    raw = v.encode()
    if len(raw) > 0x7FFF:
        raise EncodeError("string longer than 32767 bytes")
    out += INT16.pack(len(raw))
    out += raw


def write_compact_string(out: bytearray, v: str | None) -> None:
    if v is None:
        out.append(0)
        return
    raw = v.encode()
    write_uvarint(out, len(raw) + 1)
    out += raw


def write_bytes(out: bytearray, v) -> None:
    if v is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(v))
    out += v


def write_compact_bytes(out: bytearray, v) -> None:
    if v is None:
        out.append(0)
        return
    write_uvarint(out, len(v) + 1)
    out += v


# --- arrays ----------------------------------------------------------------------------
def read_array_len(buf, pos: int) -> tuple[int, int]:
    """INT32 count; -1 is null (returned as -1). The count is bounded by the input left:
    every element takes at least one byte, so a larger count is a lie."""
    n, pos = read_int32(buf, pos)
    if n < -1:
        raise InvalidLength(f"negative array length {n}")
    if n > len(buf) - pos:
        raise InvalidLength(f"array of {n} elements in {len(buf) - pos} bytes")
    return n, pos


def read_compact_array_len(buf, pos: int) -> tuple[int, int]:
    """Unsigned varint count + 1; 0 is null (returned as -1)."""
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n > len(buf) - pos:
        raise InvalidLength(f"array of {n} elements in {len(buf) - pos} bytes")
    return n, pos


# --- tagged fields ---------------------------------------------------------------------
def skip_tagged_fields(buf, pos: int) -> int:
    """Read a tagged-field section, skipping every field (used where none are known)."""
    count, pos = read_uvarint(buf, pos)
    last = -1
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        if tag <= last:
            raise InvalidLength(f"tagged fields out of order: {tag} after {last}")
        last = tag
        size, pos = read_uvarint(buf, pos)
        _, pos = _take(buf, pos, size)
    return pos


# --- fixed-width arrays ----------------------------------------------------------------
# code -> {count: Struct}; generated codecs look counts up here directly (hot path).
ARRAY_STRUCTS: dict[str, dict[int, struct.Struct]] = {c: {} for c in "bhHiIqd?"}


def array_struct(code: str, n: int) -> struct.Struct:
    """A Struct for ``n`` big-endian values of one fixed-width type (small ones cached, so a
    hostile count cannot grow the cache)."""
    st = struct.Struct(f">{n}{code}")
    if n <= 64:
        ARRAY_STRUCTS[code][n] = st
    return st
