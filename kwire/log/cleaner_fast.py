"""The log cleaner's fast path: its offset map and per-record work in C (kwire/log/_walk.c,
the optional extension setup.py builds), one call per batch, without the GIL.

* ``CMap``: the offset map (key -> offset of its latest record) as a hash table in buffers
  this object owns (a table of 24-byte slots, an arena of key bytes). A hash match is
  confirmed by comparing the key bytes, so a key is never taken for another and no
  collision can lose a record (Kafka's SkimpyOffsetMap keeps MD5s only and accepts that
  risk; kwire does not).
* ``put_batches`` / ``put_batch``: the keys and offsets of data batches' keyed records in
  the dirty section go into the map: a run of plain batches of a chunk read from a segment
  in one call, or one batch (compressed ones, after decompression).
* ``retain_batches`` / ``retain``: Kafka's per-record rule of Cleaner.cleanInto for a data batch (kept when past
  the map's last offset, or the latest of its key and not a tombstone whose delete horizon
  has passed), and the batch as it stays: the kept records' bytes as they were (offset and
  timestamp deltas from the same base offset and base timestamp), a new header (record
  count, max timestamp, CRC), recompressed with the batch's codec: a run of plain batches of
  a chunk in one call (the last batch of an active producer, the one that ends the pass's
  range and those that keep a tombstone without a delete horizon are left to the Python
  path), or one batch (compressed ones).

The walks run with the GIL released, so the event loop's thread runs Python meanwhile
(bench/compaction_bench.py measures produce latency while a pass runs). Each answers None
when it cannot (a record it finds odd, a kept tombstone that needs a delete horizon written
into the batch): the caller then runs the pure-Python path (kwire.log.cleaner), which,
with a dict for a map, stays the reference these are tested against
(tests/log/test_cleaner_fast.py). ``ENABLED`` is False without the extension.
One difference: the C walk does not check that header keys are UTF-8.
"""
from __future__ import annotations

import array
import struct

from kwire.codec import compression as _compression
from kwire.codec.records import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CRC_OFFSET,
    HEADER,
    LOG_OVERHEAD,
    NONE,
    TIMESTAMP_TYPE_MASK,
    _UINT32,
    crc32c,
)

try:
    from kwire.log import _walk
    for _name in ("map_put_batch", "map_put_batches", "map_retain", "map_retain_batches", "map_put", "map_get",
                  "map_grow"):
        getattr(_walk, _name)   # an older build lacks the map: the Python path then
except (ImportError, AttributeError):   # no C compiler at install: the Python path does it all
    _walk = None

ENABLED = _walk is not None

_SLOT = 24
_STATE = struct.Struct("=qq")   # entries, arena bytes used (native: the C side's int64s)
_NO_LIMIT = (1 << 62)


class CMap:
    """The offset map's table (see the module doc); grows as keys come."""

    __slots__ = ("table", "arena", "state")

    def __init__(self):
        self.table = bytearray(_SLOT * 1024)
        self.arena = bytearray(1 << 16)
        self.state = bytearray(_STATE.size)

    def __len__(self) -> int:
        return _STATE.unpack(self.state)[0]

    @property
    def arena_used(self) -> int:
        return _STATE.unpack(self.state)[1]

    def clear(self) -> None:
        self.__init__()

    def reserve(self, keys: int, key_bytes: int) -> None:
        """Room for ``keys`` more keys of ``key_bytes`` bytes in all (the table at most
        half full)."""
        n, used = _STATE.unpack(self.state)
        slots = len(self.table) // _SLOT
        if (n + keys) * 2 > slots:
            while (n + keys) * 2 > slots:
                slots *= 2
            self.table = _walk.map_grow(self.table, slots * _SLOT, True, 0)   # rehashed without the GIL
        if used + key_bytes > len(self.arena):
            size = max(2 * len(self.arena), used + key_bytes)
            self.arena = _walk.map_grow(self.arena, size, False, used)

    def put(self, key: bytes, offset: int) -> None:
        self.reserve(1, len(key))
        _walk.map_put(self.table, self.arena, self.state, key, offset, _NO_LIMIT)

    def get(self, key: bytes) -> int:
        return _walk.map_get(self.table, self.arena, self.state, key)


def _records_data(b):
    """(buffer, start, end) of the batch's records, decompressed if need be; None when the
    header does not add up (the Python walk names the error)."""
    start = b.pos + BATCH_HEADER_SIZE
    end = b.pos + LOG_OVERHEAD + b.batch_length
    if b.magic != 2 or end > len(b.buf) or b.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD or b.record_count < 0:
        return None
    codec = b.attributes & COMPRESSION_MASK
    if codec == NONE:
        return b.buf, start, end
    data = _compression.decompress(codec, memoryview(b.buf)[start:end])
    return data, 0, len(data)


def put_batch(cmap: CMap, b, lo: int, hi: int, max_entries: int):
    """Put the keyed records of data batch ``b`` with offsets in [lo, hi) into ``cmap``, in
    order: True, False when the map filled up on the way (a new key past ``max_entries``),
    None: let the Python walk do it."""
    got = _records_data(b)
    if got is None:
        return None
    data, start, end = got
    cmap.reserve(b.record_count, end - start)
    return _walk.map_put_batch(cmap.table, cmap.arena, cmap.state, data, start, end, b.record_count,
                               b.base_offset, b.last_offset_delta, lo, hi, max_entries)


# map_put_batches' answers
CHUNK_END, FOR_PYTHON, FULL, PAST_END, NEEDS_ROOM = range(5)


def put_batches(cmap: CMap, buf, pos: int, end: int, lo: int, hi: int, max_entries: int):
    """The map's build over the plain data batches (uncompressed, neither transactional nor
    control) of ``buf[pos:end]`` from ``pos`` on, in one call without the GIL:
    (status, pos, latest, records, bytes), see map_put_batches in kwire/log/_walk.c."""
    return _walk.map_put_batches(cmap.table, cmap.arena, cmap.state, buf, pos, end, lo, hi, max_entries)


def reserve_for_batch(cmap: CMap, buf, pos: int) -> None:
    """Room for the keys of the batch at ``buf[pos:]`` (NEEDS_ROOM)."""
    count = int.from_bytes(buf[pos + 57:pos + 61], "big", signed=True)
    size = LOG_OVERHEAD + int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
    cmap.reserve(max(0, count), max(0, size))


_META = struct.Struct("=qqq")


def special_offsets(producers: dict) -> bytes:
    """The last data offsets of the active producers (their batches stay even if empty:
    the Python path decides those), as sorted native int64s for map_retain_batches."""
    offs = sorted({p.last_data_offset for p in producers.values() if p.last_data_offset is not None})
    return array.array("q", offs).tobytes()


def retain_batches(cmap: CMap, buf, pos: int, end: int, latest: int, now_ms: int, first_uncleanable: int,
                   special: bytes):
    """The recopy over the plain data batches of ``buf[pos:end]`` from ``pos`` on, in one
    call without the GIL: (pos of the first batch left, kept batches' bytes, their (size,
    last offset, max timestamp), records read, records kept, keyless records dropped, bytes
    read); see map_retain_batches in kwire/log/_walk.c. The batch left at ``pos`` (if a
    whole one) is for the Python path."""
    room = max(0, end - pos)
    out = bytearray(room)
    metas = bytearray(room // 61 * _META.size)
    status, pos, out_len, nmeta, read, kept, keyless, nread = _walk.map_retain_batches(
        cmap.table, cmap.arena, cmap.state, buf, pos, end, latest, now_ms, first_uncleanable, special, out, metas)
    data = bytes(out[:out_len]) if out_len else b""
    got = list(_META.iter_unpack(memoryview(metas)[:nmeta * _META.size])) if nmeta else []
    return pos, data, got, read, kept, keyless, nread


def retain(cmap: CMap, b, bsize: int, latest: int, now_ms: int):
    """Data batch ``b`` as the cleaner keeps it: (bytes or None, records kept, records
    read, keyless records dropped), where bytes None with 0 kept means nothing stays; or
    None: let the Python path decide (also when a kept tombstone needs a delete horizon)."""
    got = _records_data(b)
    if got is None:
        return None
    data, start, end = got
    has_horizon = b.has_delete_horizon
    res = _walk.map_retain(cmap.table, cmap.arena, cmap.state, data, start, end, b.record_count, b.base_offset,
                           b.last_offset_delta, latest, has_horizon and now_ms >= b.base_timestamp)
    if res is None:
        return None
    payload, kept, tombstones, keyless, max_delta, whole = res
    if not kept:
        return None, 0, b.record_count, keyless
    if tombstones and not has_horizon:
        return None   # the batch gets a delete horizon: its records are re-encoded (Python)
    if whole:
        return bytes(b.buf[b.pos:b.pos + bsize]), kept, b.record_count, keyless
    attrs = b.attributes
    codec = attrs & COMPRESSION_MASK
    if codec != NONE:
        payload = _compression.compress(codec, payload)
    max_ts = b.max_timestamp if attrs & TIMESTAMP_TYPE_MASK else b.base_timestamp + max_delta
    out = bytearray(HEADER.pack(
        b.base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload), b.partition_leader_epoch, 2, 0, attrs,
        b.last_offset_delta, b.base_timestamp, max_ts, b.producer_id, b.producer_epoch, b.base_sequence, kept))
    out += payload
    _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out), kept, b.record_count, keyless
