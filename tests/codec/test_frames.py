"""Frames and headers: FrameDecoder (size prefix, limits, byte-at-a-time input) and the request
and response headers, with every failure a specific named error of kwire/errors.py."""
from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.codec import frame as fr
from kwire.codec import primitives as P
from kwire.codec.apis import APIS, Api
from kwire.codec.schema import F, Message
from kwire.errors import (CodecError, FrameError, FrameTooLarge, InvalidLength, TrailingBytes,
                          TruncatedData, UnknownApiKey, UnsupportedVersion, VarintTooLong)

API_VERSIONS = APIS[18]
METADATA = APIS[3]


def exactly(exc_info, cls):
    assert type(exc_info.value) is cls, f"raised {type(exc_info.value).__name__}, want {cls.__name__}"
    return exc_info.value


def sample_requests(kit) -> list[bytes]:
    """Whole request frames (size prefix included) of every API, lowest and highest version."""
    out = []
    for api in APIS.values():
        for v in sorted({api.min_version, api.max_version}):
            body = kit.sample_value(api.request, v)
            out.append(fr.encode_request(api, v, 1000 + len(out), body, client_id=f"c{len(out)}"))
    return out


def drain(dec: fr.FrameDecoder) -> list[bytes]:
    frames = []
    while (f := dec.next_frame()) is not fr.NEED_DATA:
        frames.append(f)
    return frames


# --- FrameDecoder ---------------------------------------------------------------------------
def test_one_byte_at_a_time(codec_kit):
    wire = sample_requests(codec_kit)
    stream = b"".join(wire)
    dec = fr.FrameDecoder()
    got = []
    for i in range(len(stream)):
        dec.feed(stream[i:i + 1])
        got += drain(dec)
    assert got == [w[4:] for w in wire]
    assert dec.buffered == 0
    for frame, w in zip(got, wire):
        req = fr.decode_request(frame)
        assert req.header.correlation_id == struct.unpack_from(">i", w, 8)[0]


def test_many_frames_in_one_feed(codec_kit):
    wire = sample_requests(codec_kit)
    dec = fr.FrameDecoder()
    dec.feed(b"".join(wire) + wire[0][:6])  # and the start of one more
    assert drain(dec) == [w[4:] for w in wire]
    assert dec.buffered == 6
    dec.feed(wire[0][6:])
    assert drain(dec) == [wire[0][4:]]


@settings(max_examples=40, deadline=None, database=None)
@given(sizes=st.lists(st.integers(0, 300), min_size=1, max_size=8),
       cuts=st.lists(st.integers(1, 50), min_size=1, max_size=40))
def test_any_split_gives_the_same_frames(sizes, cuts):
    frames = [bytes([i % 256]) * n for i, n in enumerate(sizes)]
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    dec = fr.FrameDecoder(max_frame_size=300)
    got, pos, i = [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        dec.feed(stream[pos:pos + step])
        pos += step
        i += 1
        got += drain(dec)
    assert got == frames


def test_empty_frame_and_empty_feed():
    dec = fr.FrameDecoder()
    dec.feed(b"")
    assert dec.next_frame() is fr.NEED_DATA
    dec.feed(b"\x00\x00\x00\x00")
    assert dec.next_frame() == b""
    assert dec.next_frame() is fr.NEED_DATA


@pytest.mark.parametrize("size", [-1, -2, -(2**31)])
def test_negative_size_is_frame_error(size):
    dec = fr.FrameDecoder()
    with pytest.raises(FrameError) as ei:
        dec.feed(struct.pack(">i", size))
    exactly(ei, FrameError)


def test_size_over_limit_raises_as_soon_as_the_prefix_arrives():
    dec = fr.FrameDecoder(max_frame_size=1000)
    prefix = struct.pack(">i", 1001)
    for b in prefix[:3]:
        dec.feed(bytes([b]))
        assert dec.next_frame() is fr.NEED_DATA
    with pytest.raises(FrameTooLarge) as ei:
        dec.feed(prefix[3:])
    exactly(ei, FrameTooLarge)
    assert dec.buffered <= 4  # nothing of the body was waited for or kept


def test_default_limit_is_100_mib():
    dec = fr.FrameDecoder()
    dec.feed(struct.pack(">i", 100 * 1024 * 1024))  # exactly the limit is allowed
    assert dec.next_frame() is fr.NEED_DATA
    with pytest.raises(FrameTooLarge):
        fr.FrameDecoder().feed(struct.pack(">i", 100 * 1024 * 1024 + 1))


def test_size_at_limit_is_accepted():
    dec = fr.FrameDecoder(max_frame_size=10)
    dec.feed(struct.pack(">i", 10) + b"x" * 10)
    assert dec.next_frame() == b"x" * 10


def test_truncated_body_waits_for_more():
    dec = fr.FrameDecoder()
    dec.feed(struct.pack(">i", 10) + b"123456789")
    assert dec.next_frame() is fr.NEED_DATA
    assert dec.buffered == 13
    dec.feed(b"0")
    assert dec.next_frame() == b"1234567890"


# --- request decoding errors ----------------------------------------------------------------
def _frame(api_key, version, corr, rest=b"", client_id="cli"):
    b = bytearray(struct.pack(">hhi", api_key, version, corr))
    if client_id is not ...:
        P.write_string(b, client_id)
    return bytes(b + rest)


@pytest.mark.parametrize("cut", range(0, 8))
def test_header_shorter_than_fixed_prefix(cut):
    with pytest.raises(TruncatedData) as ei:
        fr.decode_request(_frame(18, 0, 1)[:cut])
    exactly(ei, TruncatedData)


def test_truncated_request_bodies(codec_kit):
    for api in APIS.values():
        v = api.max_version
        wire = fr.encode_request(api, v, 77, codec_kit.sample_value(api.request, v))
        frame = wire[4:]
        _, _, body_pos = fr.decode_request_header(frame)
        for cut in range(body_pos, len(frame)):
            with pytest.raises(CodecError) as ei:
                fr.decode_request(frame[:cut])
            assert isinstance(ei.value, (TruncatedData, InvalidLength)), (api.name, cut, ei.value)
            assert ei.value.header.correlation_id == 77


@pytest.mark.parametrize("api_key", [-1, 999, 32767])
def test_unknown_api_key(api_key):
    assert api_key not in APIS
    with pytest.raises(UnknownApiKey) as ei:
        fr.decode_request(_frame(api_key, 0, 4242))
    exc = exactly(ei, UnknownApiKey)
    assert exc.api_key == api_key
    assert exc.header.correlation_id == 4242


def test_unsupported_version():
    too_new = API_VERSIONS.max_version + 1
    with pytest.raises(UnsupportedVersion) as ei:
        fr.decode_request(_frame(18, too_new, 99, client_id="probe"))
    exc = exactly(ei, UnsupportedVersion)
    assert (exc.api_key, exc.version) == (18, too_new)
    assert exc.header.correlation_id == 99 and exc.header.client_id == "probe"
    with pytest.raises(UnsupportedVersion):
        fr.decode_request(_frame(18, -1, 99))
    if METADATA.min_version > 0:
        with pytest.raises(UnsupportedVersion):
            fr.decode_request(_frame(3, METADATA.min_version - 1, 1))


def test_overlong_varint_in_header_tagged_fields():
    v = API_VERSIONS.request.flexible.lo  # flexible: request header v2
    frame = _frame(18, v, 5, b"\xff" * 6)
    with pytest.raises(VarintTooLong) as ei:
        fr.decode_request(frame)
    exactly(ei, VarintTooLong)


def test_overlong_varint_in_body():
    v = API_VERSIONS.request.flexible.lo
    frame = _frame(18, v, 5, b"\x00" + b"\x80" * 5 + b"\x01")  # compact string length of 6 bytes
    with pytest.raises(VarintTooLong) as ei:
        fr.decode_request(frame)
    exactly(ei, VarintTooLong)
    assert ei.value.header.correlation_id == 5


@pytest.mark.parametrize("count", [-2, -(2**31)])
def test_negative_array_length(count):
    frame = _frame(3, 1, 6, struct.pack(">i", count))
    with pytest.raises(InvalidLength) as ei:
        fr.decode_request(frame)
    exactly(ei, InvalidLength)


def test_negative_string_length():
    # Metadata v1: topics[1] with a name of length -2
    frame = _frame(3, 1, 6, struct.pack(">ih", 1, -2))
    with pytest.raises(InvalidLength) as ei:
        fr.decode_request(frame)
    exactly(ei, InvalidLength)


def test_negative_client_id_length():
    frame = struct.pack(">hhih", 18, 0, 1, -5)
    with pytest.raises(InvalidLength) as ei:
        fr.decode_request(frame)
    exactly(ei, InvalidLength)


def test_null_in_a_non_nullable_array():
    frame = _frame(3, 0, 6, struct.pack(">i", -1))  # Metadata v0 topics are not nullable
    with pytest.raises(InvalidLength):
        fr.decode_request(frame)


@pytest.mark.parametrize(("version", "count"), [(1, struct.pack(">i", 2**31 - 1)),
                                                 (9, P.uvarint_bytes(2**32 - 1))])
def test_huge_array_count_allocates_nothing(version, count):
    frame = _frame(3, version, 6, count + b"\x00" * 16)
    tracemalloc.start()
    try:
        with pytest.raises(InvalidLength) as ei:
            fr.decode_request(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    exactly(ei, InvalidLength)
    assert peak < 256 * 1024, f"decoding a lying array count peaked at {peak} bytes"


def test_trailing_bytes():
    msg = API_VERSIONS.response
    body = msg.encode(msg(error_code=0), 0)
    with pytest.raises(TrailingBytes) as ei:
        msg.decode(body + b"\x00", 0)
    exactly(ei, TrailingBytes)
    # a response frame with bytes after the body
    frame = fr.join_parts(fr.encode_response(API_VERSIONS, 0, 3, msg(error_code=0)))[4:]
    with pytest.raises(TrailingBytes):
        fr.decode_response(API_VERSIONS, 0, frame + b"\x01\x02")


def test_requests_ignore_trailing_bytes_like_kafka(codec_kit):
    """Kafka's request parser ignores bytes after the last field (librdkafka relies on it)."""
    body = codec_kit.sample_value(METADATA.request, 12)
    wire = fr.encode_request(METADATA, 12, 8, body)
    req = fr.decode_request(wire[4:] + b"\x00\x00")
    assert req.body == body


# --- headers --------------------------------------------------------------------------------
def _dummy_api(key):
    req = Message("DummyRequest", api_key=key, kind="request", valid="0-3", flexible="2+",
                  fields=[F("x", "int32", "0+")])
    resp = Message("DummyResponse", api_key=key, kind="response", valid="0-3", flexible="2+",
                   fields=[F("y", "int32", "0+")])
    return Api(key, "Dummy", req, resp)


def test_request_header_versions():
    dummy = _dummy_api(12)
    assert fr.request_header_version(dummy, 0) == 1
    assert fr.request_header_version(dummy, 1) == 1
    assert fr.request_header_version(dummy, 2) == 2
    controlled_shutdown = _dummy_api(7)
    assert fr.request_header_version(controlled_shutdown, 0) == 0
    assert fr.request_header_version(controlled_shutdown, 1) == 1
    for api in APIS.values():
        for v in range(api.min_version, api.max_version + 1):
            hv = fr.request_header_version(api, v)
            assert hv == (0 if (api.key, v) == (7, 0) else 2 if api.request.is_flexible(v) else 1)


@pytest.mark.parametrize("client_id", ["kwire", "", None])
def test_request_header_v1_and_v2_layout(client_id):
    api = API_VERSIONS
    body = api.request(client_software_name="n", client_software_version="1")
    for v in range(api.min_version, api.max_version + 1):
        wire = fr.encode_request(api, v, 0x01020304, body, client_id=client_id)
        assert struct.unpack_from(">ihhi", wire, 0) == (len(wire) - 4, 18, v, 0x01020304)
        cid, pos = P.read_string(wire, 12)  # never compact, even in header v2
        assert cid == client_id
        flexible = api.request.is_flexible(v)
        if flexible:
            assert wire[pos] == 0  # empty header tagged fields
            pos += 1
        assert api.request.decode(wire[pos:], v) == (body if flexible else api.request())
        hdr, _, body_pos = fr.decode_request_header(wire[4:])
        assert (hdr.header_version, hdr.client_id, body_pos) == (2 if flexible else 1, client_id, pos - 4)


def test_request_header_v0_has_no_client_id():
    api = _dummy_api(7)
    body = api.request(x=5)
    wire = fr.encode_request(api, 0, 9, body, client_id="ignored")
    assert wire == struct.pack(">ihhii", 12, 7, 0, 9, 5)
    wire1 = fr.encode_request(api, 1, 9, body, client_id="c")
    assert wire1 == struct.pack(">ihhih", 15, 7, 1, 9, 1) + b"c" + struct.pack(">i", 5)


def test_request_header_v2_skips_tagged_fields():
    v = API_VERSIONS.request.flexible.lo
    body = API_VERSIONS.request.encode(API_VERSIONS.request(client_software_name="a",
                                                            client_software_version="b"), v)
    tagged = b"\x02" + b"\x00\x01\xaa" + b"\x05\x02\xbb\xcc"
    req = fr.decode_request(_frame(18, v, 3, tagged + body))
    assert req.header.header_version == 2
    assert req.body.client_software_name == "a"
    with pytest.raises(InvalidLength):  # tags out of order
        fr.decode_request(_frame(18, v, 3, b"\x02\x05\x00\x01\x00" + body))


def test_response_header_choice():
    for api in APIS.values():
        for v in range(api.min_version, api.max_version + 1):
            want = 0 if api.key == 18 else (1 if api.response.is_flexible(v) else 0)
            assert fr.response_header_version(api, v) == want, (api.name, v)


@pytest.mark.parametrize("version", range(API_VERSIONS.min_version, API_VERSIONS.max_version + 1))
def test_api_versions_response_always_header_v0(version):
    msg = API_VERSIONS.response
    body = msg(error_code=0, api_keys=[msg.struct("ApiVersion")(api_key=18, min_version=0, max_version=4)])
    wire = fr.join_parts(fr.encode_response(API_VERSIONS, version, 0x0A0B0C0D, body))
    assert struct.unpack_from(">ii", wire) == (len(wire) - 4, 0x0A0B0C0D)
    assert msg.decode(wire[8:], version) == body  # body starts right after the correlation id
    assert fr.decode_response(API_VERSIONS, version, wire[4:]) == (0x0A0B0C0D, body)


def test_flexible_response_header_v1_has_tagged_fields():
    api = METADATA
    v = api.response.flexible.lo
    body = api.response(throttle_time_ms=1)
    wire = fr.join_parts(fr.encode_response(api, v, 42, body))
    assert wire[8] == 0  # the header's empty tagged-field section
    assert api.response.decode(wire[9:], v) == body
    old = fr.join_parts(fr.encode_response(api, v - 1, 42, body))
    assert api.response.decode(old[8:], v - 1) == body
