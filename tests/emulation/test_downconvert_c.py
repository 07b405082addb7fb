"""The down-conversion's plain-batch walk in C (kwire/codec/_downconvert.c) answers exactly as
the pure-Python walk (kwire.codec.legacy_records._plain_batch) and the general path (each
record of batch.records() as a message), on kwire's batches and on damaged ones; and kafka-python's
legacy reader reads what it makes (offsets, timestamps, keys, values, CRC-32)."""
from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.codec import legacy_records as L
from kwire.codec.records import build_batch, iter_batches


def _reference(batch, magic: int, first: int) -> bytes:
    return b"".join(L._message_bytes(r.offset, magic, 0, r.timestamp if magic else -1, r.key, r.value)
                    for r in batch.records() if r.offset >= first)


def _c(batch, magic: int, first: int):
    return L._plain_c(batch.payload(), batch.record_count, batch.base_offset, batch.base_timestamp, magic, first)


def test_c_downconvert_is_built():
    assert L._plain_c is not None, "kwire.codec._downconvert is not built: pip install -e . needs a C compiler"
    from kwire.codec._downconvert import crc32
    for data in (b"", b"a", b"123456789", bytes(range(256)) * 41):
        assert crc32(data) == zlib.crc32(data)


_bytes = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=60, max_size=200),
                   st.sampled_from([b"x" * 9000, b"y" * 20000]))   # 1-, 2- and 3-byte length varints
_record = st.tuples(_bytes, _bytes, st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=10)), max_size=2),
                    st.one_of(st.integers(0, 10), st.integers(-(1 << 40), 1 << 40)))


@settings(max_examples=150, deadline=None)
@given(recs=st.lists(_record, min_size=1, max_size=12), base=st.integers(0, 1 << 40), magic=st.sampled_from([0, 1]),
       first_delta=st.integers(-2, 14))
def test_c_matches_python(recs, base, magic, first_delta):
    ts0 = 1_700_000_000_000
    data = build_batch([(k, v, [(h, hv) for h, hv in hs], ts0 + d) for k, v, hs, d in recs], base_offset=base)
    batch = next(iter_batches(data))
    first = base + first_delta
    got = _c(batch, magic, first)
    assert got == _reference(batch, magic, first)
    py = L._plain_batch(batch, magic, first)
    assert py is None or py == got   # the Python walk leaves long varints to the general path
    assert b"".join(L.down_convert(data, magic, first)) == got


@settings(max_examples=300, deadline=None)
@given(recs=st.lists(_record, min_size=1, max_size=6), magic=st.sampled_from([0, 1]),
       flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=3),
       cut=st.integers(0, 8))
def test_c_on_damaged_batches_agrees_or_declines(recs, magic, flips, cut):
    """Flipped bytes in the records (not the header) or a short payload: the C walk answers None,
    or the same bytes as the Python walk wherever that one answers."""
    data = bytearray(build_batch([(k, v, [], 1_700_000_000_000 + (d % 100)) for k, v, _, d in recs], base_offset=5))
    batch = next(iter_batches(bytes(data)))
    payload = bytearray(batch.payload())
    for at, x in flips:
        payload[at % len(payload)] ^= x
    payload = bytes(payload[:len(payload) - cut] if cut < len(payload) else payload)
    got = L._plain_c(payload, batch.record_count, 5, batch.base_timestamp, magic, 0)

    class Fake:   # the Python walk over the same damaged payload
        record_count, base_offset, base_timestamp = batch.record_count, 5, batch.base_timestamp

        @staticmethod
        def payload():
            return memoryview(payload)
    try:
        py = L._plain_batch(Fake, magic, 0)
    except (IndexError, ValueError):
        py = None
    if py is not None:
        assert got == py
    if got is not None:
        assert py is None or py == got


def test_kafka_python_reads_the_c_output():
    from kafka.record.legacy_records import LegacyRecordBatch

    recs = [(b"k%d" % i if i % 3 else None, b"v" * (i * 50) if i % 4 else None, [], 1_700_000_000_000 + i)
            for i in range(20)]
    data = build_batch(recs, base_offset=100)
    for magic in (0, 1):
        out = _c(next(iter_batches(data)), magic, 103)
        got, pos = [], 0
        while pos < len(out):
            size = int.from_bytes(out[pos + 8:pos + 12], "big")
            m = LegacyRecordBatch(out[pos:pos + 12 + size], magic)
            m.validate_crc() if hasattr(m, "validate_crc") else None
            got += [(r.offset, r.timestamp, r.key, r.value) for r in m]
            pos += 12 + size
        assert got == [(100 + i, (1_700_000_000_000 + i) if magic else None, k, v)
                       for i, (k, v, _, _) in enumerate(recs) if i >= 3]
