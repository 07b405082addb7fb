"""Wire primitives against a reference written here from Kafka's protocol description:
zigzag varint/varlong, unsigned varints, compact and nullable strings and bytes, uuids,
tagged-field sections."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.codec import primitives as P
from kwire.errors import EncodeError, InvalidLength, TruncatedData, VarintTooLong

FAST = settings(max_examples=200, deadline=None, database=None)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


# --- the reference -------------------------------------------------------------------------
def ref_uvarint(n: int) -> bytes:
    """Unsigned LEB128: 7 bits per byte, low group first, high bit set on all but the last."""
    assert n >= 0
    out = []
    while True:
        group = n % 128
        n //= 128
        if n:
            out.append(group + 128)
        else:
            out.append(group)
            return bytes(out)


def ref_zigzag(v: int) -> int:
    """0, -1, 1, -2, 2 ... -> 0, 1, 2, 3, 4 ..."""
    return 2 * v if v >= 0 else -2 * v - 1


def ref_unzigzag(n: int) -> int:
    return n // 2 if n % 2 == 0 else -(n + 1) // 2


def ref_read_uvarint(data: bytes) -> tuple[int, int]:
    n = 0
    for i, b in enumerate(data):
        n += (b % 128) * 128**i
        if b < 128:
            return n, i + 1
    raise ValueError("unterminated")


def _w(fn, v) -> bytes:
    out = bytearray()
    fn(out, v)
    return bytes(out)


# --- varints ---------------------------------------------------------------------------------
EDGE32 = [0, 1, -1, 63, -64, 64, -65, 2**31 - 1, -(2**31), 8191, -8192, 8192, 2**20, -(2**20)]
EDGE64 = EDGE32 + [2**63 - 1, -(2**63), 2**32, -(2**32), 2**62, -(2**62) - 1]


@pytest.mark.parametrize("v", EDGE32)
def test_varint_edges(v):
    enc = _w(P.write_varint, v)
    assert enc == ref_uvarint(ref_zigzag(v))
    assert P.read_varint(enc, 0) == (v, len(enc))
    assert len(enc) <= 5
    assert P.varint_size(v) == len(enc)


@pytest.mark.parametrize("v", EDGE64)
def test_varlong_edges(v):
    enc = _w(P.write_varlong, v)
    assert enc == ref_uvarint(ref_zigzag(v))
    assert P.read_varlong(enc, 0) == (v, len(enc))
    assert len(enc) <= 10


def test_known_encodings():
    assert _w(P.write_varint, 0) == b"\x00"
    assert _w(P.write_varint, -1) == b"\x01"
    assert _w(P.write_varint, 1) == b"\x02"
    assert _w(P.write_varint, -64) == b"\x7f"
    assert _w(P.write_varint, 64) == b"\x80\x01"
    assert _w(P.write_varint, 2**31 - 1) == b"\xfe\xff\xff\xff\x0f"
    assert _w(P.write_varint, -(2**31)) == b"\xff\xff\xff\xff\x0f"
    assert _w(P.write_uvarint, 300) == b"\xac\x02"


@FAST
@given(INT32)
def test_varint_matches_reference(v):
    enc = _w(P.write_varint, v)
    assert enc == ref_uvarint(ref_zigzag(v))
    assert P.read_varint(enc + b"\xff", 0) == (v, len(enc))
    assert ref_unzigzag(ref_read_uvarint(enc)[0]) == v
    assert P.varint_size(v) == len(enc)


@FAST
@given(INT64)
def test_varlong_matches_reference(v):
    enc = _w(P.write_varlong, v)
    assert enc == ref_uvarint(ref_zigzag(v))
    assert P.read_varlong(b"\x00" + enc, 1) == (v, len(enc) + 1)


@FAST
@given(st.integers(0, 2**32 - 1))
def test_uvarint_matches_reference(n):
    enc = _w(P.write_uvarint, n)
    assert enc == ref_uvarint(n) == P.uvarint_bytes(n)
    assert P.read_uvarint(enc, 0) == (n, len(enc))
    assert P.uvarint_size(n) == len(enc)


def test_negative_uvarint_is_an_encode_error():
    with pytest.raises(EncodeError):
        _w(P.write_uvarint, -1)


def test_varint_too_long():
    with pytest.raises(VarintTooLong):
        P.read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(VarintTooLong):
        P.read_varint(b"\xff" * 5 + b"\x00", 0)
    with pytest.raises(VarintTooLong):
        P.read_varlong(b"\xff" * 10 + b"\x00", 0)
    assert P.read_varlong(b"\xff" * 9 + b"\x01", 0) == (-(2**63), 10)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"])
def test_varint_truncated(data):
    with pytest.raises(TruncatedData):
        P.read_uvarint(data, 0)


# --- fixed width ----------------------------------------------------------------------------
@pytest.mark.parametrize(("reader", "size"), [(P.read_int8, 1), (P.read_int16, 2), (P.read_int32, 4),
                                               (P.read_int64, 8), (P.read_uint16, 2),
                                               (P.read_uint32, 4), (P.read_float64, 8), (P.read_bool, 1)])
def test_fixed_truncated(reader, size):
    assert reader(b"\x00" * size, 0)[1] == size
    with pytest.raises(TruncatedData):
        reader(b"\x00" * (size - 1), 0)
    with pytest.raises(TruncatedData):
        reader(b"\x00" * size, 1)


# --- strings and bytes ----------------------------------------------------------------------
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@FAST
@given(st.one_of(st.none(), TEXT))
def test_nullable_string(s):
    enc = _w(P.write_string, s)
    if s is None:
        assert enc == b"\xff\xff"
    else:
        raw = s.encode()
        assert enc == len(raw).to_bytes(2, "big") + raw
    assert P.read_string(enc, 0) == (s, len(enc))


@FAST
@given(st.one_of(st.none(), TEXT))
def test_compact_string(s):
    enc = _w(P.write_compact_string, s)
    want = b"\x00" if s is None else ref_uvarint(len(s.encode()) + 1) + s.encode()
    assert enc == want
    assert P.read_compact_string(enc, 0) == (s, len(enc))


@FAST
@given(st.one_of(st.none(), st.binary(max_size=300)))
def test_nullable_and_compact_bytes(b):
    enc = _w(P.write_bytes, b)
    assert enc == (b"\xff\xff\xff\xff" if b is None else len(b).to_bytes(4, "big") + b)
    assert P.read_bytes(enc, 0) == (b, len(enc))
    cenc = _w(P.write_compact_bytes, b)
    assert cenc == (b"\x00" if b is None else ref_uvarint(len(b) + 1) + b)
    assert P.read_compact_bytes(memoryview(cenc), 0) == (b, len(cenc))


def test_empty_is_not_null():
    assert P.read_string(b"\x00\x00", 0) == ("", 2)
    assert P.read_compact_string(b"\x01", 0) == ("", 1)
    assert P.read_bytes(b"\x00\x00\x00\x00", 0) == (b"", 4)
    assert P.read_compact_bytes(b"\x01", 0) == (b"", 1)


def test_string_errors():
    with pytest.raises(InvalidLength):
        P.read_string(b"\xff\xfe", 0)  # -2
    with pytest.raises(InvalidLength):
        P.read_string(b"\x00\x05abc", 0)  # runs past the input
    with pytest.raises(InvalidLength):
        P.read_compact_string(b"\x05abc", 0)
    with pytest.raises(InvalidLength):
        P.read_string(b"\x00\x02\xc3\x28", 0)  # not UTF-8
    with pytest.raises(InvalidLength):
        P.read_bytes(b"\xff\xff\xff\xfe", 0)
    with pytest.raises(InvalidLength):
        P.read_bytes(b"\x7f\xff\xff\xff" + b"x" * 10, 0)
    with pytest.raises(InvalidLength):
        P.read_compact_bytes(b"\xff\xff\xff\xff\x0f", 0)
    with pytest.raises(EncodeError):
        _w(P.write_string, "x" * 32768)
    assert len(_w(P.write_string, "x" * 32767)) == 32769


# --- uuid ------------------------------------------------------------------------------------
@FAST
@given(st.uuids())
def test_uuid(u):
    enc = _w(P.write_uuid, u)
    assert enc == u.bytes
    assert P.read_uuid(b"\x01" + enc, 1) == (u, 17)


def test_uuid_null_is_zero_and_truncated():
    assert _w(P.write_uuid, None) == bytes(16)
    assert P.read_uuid(bytes(16), 0) == (uuid.UUID(int=0), 16)
    with pytest.raises(TruncatedData):
        P.read_uuid(bytes(15), 0)


# --- arrays ----------------------------------------------------------------------------------
def test_array_lengths():
    assert P.read_array_len(b"\xff\xff\xff\xff", 0) == (-1, 4)
    assert P.read_array_len(b"\x00\x00\x00\x02ab", 0) == (2, 4)
    assert P.read_compact_array_len(b"\x00", 0) == (-1, 1)
    assert P.read_compact_array_len(b"\x03ab", 0) == (2, 1)
    with pytest.raises(InvalidLength):
        P.read_array_len(b"\xff\xff\xff\xfe", 0)
    with pytest.raises(InvalidLength):
        P.read_array_len(b"\x00\x00\x00\x03ab", 0)
    with pytest.raises(InvalidLength):
        P.read_compact_array_len(b"\x04ab", 0)


# --- tagged fields -----------------------------------------------------------------------------
def ref_tagged(fields: dict[int, bytes]) -> bytes:
    out = ref_uvarint(len(fields))
    for tag in sorted(fields):
        out += ref_uvarint(tag) + ref_uvarint(len(fields[tag])) + fields[tag]
    return out


@FAST
@given(st.dictionaries(st.integers(0, 2**31 - 1), st.binary(max_size=200), max_size=6),
       st.binary(max_size=4))
def test_skip_tagged_fields(fields, after):
    enc = ref_tagged(fields)
    assert P.skip_tagged_fields(enc + after, 0) == len(enc)
    assert P.skip_tagged_fields(b"\xaa" + enc, 1) == len(enc) + 1


def test_tagged_fields_errors():
    with pytest.raises(InvalidLength):  # out of order
        P.skip_tagged_fields(b"\x02\x03\x00\x01\x00", 0)
    with pytest.raises(InvalidLength):  # repeated tag
        P.skip_tagged_fields(b"\x02\x01\x00\x01\x00", 0)
    with pytest.raises(InvalidLength):  # size runs past the input
        P.skip_tagged_fields(b"\x01\x00\x05ab", 0)
    with pytest.raises(TruncatedData):  # count promises a field that is not there
        P.skip_tagged_fields(b"\x01", 0)
    with pytest.raises(VarintTooLong):
        P.skip_tagged_fields(b"\x01\x80\x80\x80\x80\x80\x01\x00", 0)
