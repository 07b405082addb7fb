"""kwire.codec.compression: round trips, cross-checks with independent encoders (kafka-python's
codec helpers over python-snappy / lz4 / zstandard and the stdlib gzip), corrupt input, and
decompression bombs."""
from __future__ import annotations

import gzip
import os
import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.codec import compression as C
from kwire.errors import CompressionError, CorruptRecordBatch, UnsupportedCompression

CODECS = [C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD]
COMPRESSED = [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD]
kcodec = pytest.importorskip("kafka.codec")

SAMPLE = (b"kafka record payload " * 3000) + os.urandom(20000) + bytes(70000)


@settings(max_examples=40, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=5000))
def test_round_trip(codec, data):
    out = C.decompress(codec, C.compress(codec, data))
    assert type(out) is bytes
    assert out == data


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_large_and_bytes_like_inputs(codec):
    for payload in (SAMPLE, bytearray(SAMPLE), memoryview(SAMPLE)):
        assert C.decompress(codec, C.compress(codec, payload)) == SAMPLE


def test_snappy_compresses_with_xerial_framing_in_32k_blocks():
    z = C.compress(C.SNAPPY, SAMPLE)
    assert z[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", z[8:16]) == (1, 1)
    pos, blocks = 16, 0
    while pos < len(z):
        (n,) = struct.unpack_from(">i", z, pos)
        pos += 4 + n
        blocks += 1
    assert pos == len(z)
    assert blocks == -(-len(SAMPLE) // (32 * 1024))


def test_lz4_frame_uses_independent_blocks_without_content_checksum():
    z = C.compress(C.LZ4, SAMPLE)
    assert z[:4] == b"\x04\x22\x4d\x18"
    flg = z[4]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # block independence: Kafka refuses linked blocks
    assert not flg & 0x04  # no content checksum


# --- independent encoders/decoders -------------------------------------------------------
def _require(has):
    if not has():
        pytest.skip("kafka-python lacks this codec's library")


def test_snappy_reads_java_style_xerial_and_raw_snappy():
    _require(kcodec.has_snappy)
    assert C.decompress(C.SNAPPY, kcodec.snappy_encode(SAMPLE)) == SAMPLE
    assert C.decompress(C.SNAPPY, kcodec.snappy_encode(SAMPLE, xerial_compatible=False)) == SAMPLE
    # small xerial blocks: several blocks joined
    assert C.decompress(C.SNAPPY, kcodec.snappy_encode(SAMPLE, xerial_blocksize=1000)) == SAMPLE
    assert kcodec.snappy_decode(C.compress(C.SNAPPY, SAMPLE)) == SAMPLE


def test_snappy_reads_the_official_framing_format():
    import cramjam

    assert C.decompress(C.SNAPPY, bytes(cramjam.snappy.compress(SAMPLE))) == SAMPLE


def test_lz4_against_python_lz4():
    _require(kcodec.has_lz4)
    assert C.decompress(C.LZ4, kcodec.lz4_encode(SAMPLE)) == SAMPLE
    assert kcodec.lz4_decode(C.compress(C.LZ4, SAMPLE)) == SAMPLE
    import lz4.frame

    # a frame that declares its content size and carries checksums
    z = lz4.frame.compress(SAMPLE, store_size=True, content_checksum=True, block_checksum=True)
    assert C.decompress(C.LZ4, z) == SAMPLE


def test_zstd_against_zstandard():
    _require(kcodec.has_zstd)
    assert C.decompress(C.ZSTD, kcodec.zstd_encode(SAMPLE)) == SAMPLE
    assert kcodec.zstd_decode(C.compress(C.ZSTD, SAMPLE)) == SAMPLE
    import zstandard

    # streaming frames do not declare their size (as zstd-jni's output stream writes them)
    cobj = zstandard.ZstdCompressor().compressobj()
    z = cobj.compress(SAMPLE) + cobj.flush()
    assert C.decompress(C.ZSTD, z) == SAMPLE


def test_gzip_against_stdlib_including_multi_member():
    assert C.decompress(C.GZIP, gzip.compress(SAMPLE)) == SAMPLE
    assert gzip.decompress(C.compress(C.GZIP, SAMPLE)) == SAMPLE
    two = gzip.compress(b"first ") + gzip.compress(b"second")
    assert C.decompress(C.GZIP, two) == b"first second"


# --- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("codec", [5, 6, 7, -1, 99])
def test_unknown_codec(codec):
    with pytest.raises(UnsupportedCompression):
        C.compress(codec, b"x")
    with pytest.raises(UnsupportedCompression):
        C.decompress(codec, b"x")
    with pytest.raises(UnsupportedCompression):
        C.codec_name(codec)


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize(
    "payload",
    [b"", b"\x00", b"garbage" * 20, b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x10\x00"],
)
def test_garbage_raises_compression_error(codec, payload):
    try:
        out = C.decompress(codec, payload)
    except CompressionError:
        return
    # raw snappy of b"\x00" is a valid empty block: nothing else may decode
    assert (codec, payload, out) == (C.SNAPPY, b"\x00", b"")


@pytest.mark.parametrize("codec", COMPRESSED)
def test_truncated_and_bit_flipped_payloads(codec):
    z = C.compress(codec, SAMPLE)
    with pytest.raises(CompressionError):
        C.decompress(codec, z[: len(z) // 2])
    for i in range(0, len(z), max(1, len(z) // 25)):
        bad = bytearray(z)
        bad[i] ^= 0xFF
        try:
            out = C.decompress(codec, bytes(bad))
        except CompressionError as exc:
            assert isinstance(exc, CorruptRecordBatch)
        else:  # a flip in literal data can survive codecs without checksums; never silently long
            assert len(out) <= 4 * len(SAMPLE)


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(COMPRESSED), junk=st.binary(max_size=300))
def test_fuzz_never_raises_anything_but_compression_error(codec, junk):
    try:
        C.decompress(codec, junk, max_output_size=1 << 20)
    except CompressionError:
        pass


@pytest.mark.parametrize("codec", COMPRESSED)
def test_decompression_bomb_is_refused_quickly(codec):
    bomb = C.compress(codec, bytes(64 * 1024 * 1024))
    assert len(bomb) < 4 * 1024 * 1024
    t0 = time.perf_counter()
    with pytest.raises(C.DecompressedTooLarge):
        C.decompress(codec, bomb, max_output_size=1024 * 1024)
    assert time.perf_counter() - t0 < 2.0


@pytest.mark.parametrize("codec", CODECS)
def test_exactly_the_limit_is_accepted(codec):
    data = bytes(range(256)) * 1024  # 256 KiB
    assert C.decompress(codec, C.compress(codec, data), max_output_size=len(data)) == data
    with pytest.raises(C.DecompressedTooLarge):
        C.decompress(codec, C.compress(codec, data), max_output_size=len(data) - 1)


def test_snappy_declared_length_checked_before_allocation():
    # raw snappy that claims a 2 GiB output in five bytes
    claim = bytes([0x80, 0x80, 0x80, 0x80, 0x08])
    with pytest.raises(C.DecompressedTooLarge):
        C.decompress(C.SNAPPY, claim + b"\x00" * 10)
    xerial = C.XERIAL_HEADER + struct.pack(">i", 15) + claim + b"\x00" * 10
    with pytest.raises(C.DecompressedTooLarge):
        C.decompress(C.SNAPPY, xerial)
    bad_len = C.XERIAL_HEADER + struct.pack(">i", 1000) + b"\x00"
    with pytest.raises(CompressionError):
        C.decompress(C.SNAPPY, bad_len)
