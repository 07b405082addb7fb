"""Record batch compression codecs: gzip, snappy, lz4 (frame), zstd. No I/O.

All four go through cramjam (a project dependency). Formats, as Kafka's clients write them:

- gzip: a gzip stream (RFC 1952), possibly several members.
- snappy: the xerial snappy-java framing that the Java client writes
  (``0x82 'SNAPPY' 0x00``, int32 version, int32 min compatible version, then
  ``[int32 length, raw snappy block]*``), or plain raw snappy, as librdkafka may write.
  Both are detected on decompress (as Kafka's broker does); we compress with xerial framing,
  32 KiB uncompressed blocks, like snappy-java. The official snappy *framing* format
  (``0xff 0x06 0 0 'sNaPpY'``) is accepted on decompress too.
- lz4: the standard LZ4 frame format with independent blocks (Kafka refuses linked blocks)
  and no content checksum, as Kafka's KafkaLZ4BlockOutputStream writes.
- zstd: a standard zstd frame.

Decompression bombs: every decompress has ``max_output_size`` (default 128 MiB). Output is
written into a bounded buffer (cramjam's ``decompress_into`` stops when the buffer is full, it
does not inflate the whole stream first), grown geometrically from a guess up to the limit, so
a tiny hostile payload costs at most the limit in memory, never gigabytes. Raw snappy blocks
declare their length up front, which is checked before anything is allocated.
"""
from __future__ import annotations

import struct

import cramjam

from kwire.errors import CompressionError, UnsupportedCompression

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODECS_BY_NAME = {v: k for k, v in CODEC_NAMES.items()}

DEFAULT_MAX_OUTPUT_SIZE = 128 * 1024 * 1024

# Kafka's defaults: compression.gzip.level = 6 (Deflater default), compression.zstd.level = 3
GZIP_LEVEL = 6
ZSTD_LEVEL = 3

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_VERSION = 1
XERIAL_MIN_COMPATIBLE_VERSION = 1
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", XERIAL_VERSION, XERIAL_MIN_COMPATIBLE_VERSION)
XERIAL_BLOCK_SIZE = 32 * 1024
SNAPPY_FRAMED_MAGIC = b"\xff\x06\x00\x00sNaPpY"

_INT32 = struct.Struct(">i")
_FULL_BUFFER = "failed to write whole buffer"


class DecompressedTooLarge(CompressionError):
    """A payload decompresses to more than the allowed maximum (a decompression bomb, or a
    batch larger than we accept)."""


def codec_name(codec: int) -> str:
    try:
        return CODEC_NAMES[codec]
    except KeyError:
        raise UnsupportedCompression(f"unknown compression codec {codec}") from None


# --- compress ------------------------------------------------------------------------------
def compress(codec: int, data, *, level: int | None = None) -> bytes:
    """Compress ``data`` (bytes-like) with the Kafka codec number ``codec``."""
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return bytes(cramjam.gzip.compress(data, level=GZIP_LEVEL if level is None else level))
        if codec == SNAPPY:
            return _xerial_compress(data)
        if codec == LZ4:
            c = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
            c.compress(data if isinstance(data, bytes) else bytes(data))
            return bytes(c.finish())
        if codec == ZSTD:
            return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL if level is None else level))
    except cramjam.CompressionError as exc:  # pragma: no cover - only on absurd input
        raise CompressionError(f"{CODEC_NAMES[codec]} compression failed: {exc}") from None
    raise UnsupportedCompression(f"unknown compression codec {codec}")


def _xerial_compress(data) -> bytes:
    view = memoryview(data)
    out = bytearray(XERIAL_HEADER)
    pack = _INT32.pack
    compress_raw = cramjam.snappy.compress_raw
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = compress_raw(view[start : start + XERIAL_BLOCK_SIZE])
        out += pack(len(block))
        out += block
    return bytes(out)


# --- decompress ----------------------------------------------------------------------------
def decompress(codec: int, data, *, max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE) -> bytes:
    """Decompress ``data`` (bytes-like). Returns bytes, at most ``max_output_size``
    bytes; raises CompressionError (DecompressedTooLarge past the limit) or
    UnsupportedCompression."""
    if codec == NONE:
        if len(data) > max_output_size:
            raise DecompressedTooLarge(f"{len(data)} bytes exceed {max_output_size}")
        return bytes(data)
    if codec == SNAPPY:
        return _snappy_decompress(data, max_output_size)
    if codec == GZIP:
        module = cramjam.gzip
    elif codec == LZ4:
        module = cramjam.lz4
    elif codec == ZSTD:
        module = cramjam.zstd
    else:
        raise UnsupportedCompression(f"unknown compression codec {codec}")
    return _bounded(module, CODEC_NAMES[codec], data, max_output_size, _size_hint(codec, data))


def _size_hint(codec: int, data) -> int | None:
    """The decompressed size a zstd or lz4 frame header declares, if it declares one."""
    try:
        if codec == ZSTD and len(data) >= 6 and bytes(data[:4]) == b"\x28\xb5\x2f\xfd":
            fhd = data[4]
            fcs_flag = fhd >> 6
            single_segment = (fhd >> 5) & 1
            dict_id_flag = fhd & 3
            pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_id_flag]
            fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
            if fcs_size == 0 or len(data) < pos + fcs_size:
                return None
            value = int.from_bytes(data[pos : pos + fcs_size], "little")
            return value + 256 if fcs_size == 2 else value
        if codec == GZIP and len(data) >= 18 and bytes(data[:2]) == b"\x1f\x8b":
            # ISIZE: the last member's size mod 2**32 (a starting guess; growth covers the rest)
            return int.from_bytes(data[len(data) - 4 :], "little")
        if codec == LZ4 and len(data) >= 15 and bytes(data[:4]) == b"\x04\x22\x4d\x18":
            if data[4] & 0x08:  # content size present
                return int.from_bytes(data[6:14], "little")
    except IndexError:  # pragma: no cover - lengths are checked above
        return None
    return None


def _bounded(module, name: str, data, limit: int, hint: int | None) -> bytes:
    """Decompress into a buffer that grows geometrically up to ``limit`` (+1 to tell "exactly
    the limit" from "more")."""
    if hint is not None and name == "gzip":
        size = min(limit + 1, max(hint + 1, 1024))
    elif hint is not None:
        if hint > limit:
            raise DecompressedTooLarge(f"{name} frame declares {hint} bytes, limit {limit}")
        size = hint + 1
    else:
        size = min(limit + 1, max(64 * 1024, 4 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = module.decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if _FULL_BUFFER in str(exc):
                if size > limit:
                    raise DecompressedTooLarge(
                        f"{name} payload decompresses past the limit of {limit} bytes"
                    ) from None
                size = min(limit + 1, size * 4)
                continue
            raise CompressionError(f"corrupt {name} payload: {exc}") from None
        except (ValueError, TypeError, OverflowError) as exc:  # pragma: no cover
            raise CompressionError(f"corrupt {name} payload: {exc}") from None
        if n > limit:
            raise DecompressedTooLarge(f"{name} payload decompresses past {limit} bytes")
        return bytes(memoryview(out)[:n])


def _snappy_decompress(data, limit: int) -> bytes:
    head = bytes(data[:16])
    if head.startswith(XERIAL_MAGIC) and len(data) >= 16:
        return _xerial_decompress(data, limit)
    if head.startswith(SNAPPY_FRAMED_MAGIC):
        return _bounded(cramjam.snappy, "snappy (framed)", data, limit, None)
    return bytes(_snappy_raw(data, limit))


def _snappy_raw(block, limit: int):
    try:
        n = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        raise CompressionError(f"corrupt snappy payload: {exc}") from None
    if n > limit:
        raise DecompressedTooLarge(f"snappy block declares {n} bytes, limit {limit}")
    try:
        return cramjam.snappy.decompress_raw(block)
    except cramjam.DecompressionError as exc:
        raise CompressionError(f"corrupt snappy payload: {exc}") from None


def _xerial_decompress(data, limit: int) -> bytes:
    view = memoryview(data)
    n = len(view)
    pos = 16
    out = bytearray()
    unpack = _INT32.unpack_from
    while pos < n:
        if n - pos < 4:
            raise CompressionError("xerial snappy: truncated block length")
        (length,) = unpack(view, pos)
        pos += 4
        if length < 0 or pos + length > n:
            raise CompressionError(f"xerial snappy: block of {length} bytes runs past the input")
        block = _snappy_raw(view[pos : pos + length], limit - len(out))
        out += block
        pos += length
    return bytes(out)
