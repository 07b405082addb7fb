"""kwire.codec.records: the v2 batch header view, record iteration, building, in-place header
edits; differential against kafka-python's record batch builder and reader (both directions,
every codec); malformed input raising named errors."""
from __future__ import annotations

import socket
import struct
import threading
import time

import construct
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.codec import compression as C
from kwire.codec import frame as FR
from kwire.codec import records as R
from kwire.codec.apis import APIS
from kwire.codec.records import (
    Record,
    RecordBatch,
    build_batch,
    build_control_batch,
    iter_batches,
    parse_control_record,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from kwire.errors import (
    CodecError,
    CompressionError,
    CorruptRecordBatch,
    CrcMismatch,
    ErrorCode,
    TruncatedData,
    UnsupportedCompression,
    VarintTooLong,
)

from crc32c import crc32c

kmem = pytest.importorskip("kafka.record.memory_records")
kdef = pytest.importorskip("kafka.record.default_records")
kcodec = pytest.importorskip("kafka.codec")

CODECS = [R.NONE, R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD]
_HAS = {R.NONE: True, R.GZIP: True, R.SNAPPY: kcodec.has_snappy(), R.LZ4: kcodec.has_lz4(),
        R.ZSTD: kcodec.has_zstd()}
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

maybe_bytes = st.none() | st.binary(max_size=60)
headers_st = st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3)
timestamps = st.integers(min_value=0, max_value=2**42)
record_st = st.tuples(maybe_bytes, maybe_bytes, headers_st, timestamps)
records_st = st.lists(record_st, min_size=1, max_size=15)


def _expected(recs, base_offset):
    return [Record(base_offset + i, ts, k, v, list(h)) for i, (k, v, h, ts) in enumerate(recs)]


# --- independent helpers (no kwire code) ---------------------------------------------------
def _zz(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _raw_record(offset_delta, key=b"k", value=b"v", ts_delta=0, headers=(), length_adjust=0):
    body = b"\x00" + _zz(ts_delta) + _zz(offset_delta)
    body += _zz(-1) if key is None else _zz(len(key)) + key
    body += _zz(-1) if value is None else _zz(len(value)) + value
    body += _zz(len(headers))
    for hk, hv in headers:
        body += _zz(len(hk)) + hk + (_zz(-1) if hv is None else _zz(len(hv)) + hv)
    return _zz(len(body) + length_adjust) + body


def _raw_batch(payload: bytes, count: int, last_offset_delta: int, attributes=0, magic=2,
               base_offset=0) -> bytes:
    """A batch around ``payload`` with a correct CRC, built with plain struct."""
    head = struct.pack(">qiibIhiqqqhii", base_offset, 49 + len(payload), -1, magic, 0,
                       attributes, last_offset_delta, 1000, 1000, -1, -1, -1, count)
    buf = bytearray(head + payload)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


# --- layout ---------------------------------------------------------------------------------
def test_layout_constants_match_kafka_python():
    base = kdef.DefaultRecordBase
    assert R.BATCH_HEADER_SIZE == base.HEADER_STRUCT.size == 61
    assert R.CRC_OFFSET == base.CRC_OFFSET
    assert R.ATTRIBUTES_OFFSET == base.ATTRIBUTES_OFFSET
    assert R.LOG_OVERHEAD == base.AFTER_LEN_OFFSET
    assert (R.TIMESTAMP_TYPE_MASK, R.TRANSACTIONAL_MASK, R.CONTROL_MASK) == (
        base.TIMESTAMP_TYPE_MASK, base.TRANSACTIONAL_MASK, base.CONTROL_MASK)
    assert (R.NONE, R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD) == (
        base.CODEC_NONE, base.CODEC_GZIP, base.CODEC_SNAPPY, base.CODEC_LZ4, base.CODEC_ZSTD)
    # every named offset is where the packed header puts that field
    fields = [
        ("BASE_OFFSET_OFFSET", ">q", -5), ("BATCH_LENGTH_OFFSET", ">i", 123),
        ("PARTITION_LEADER_EPOCH_OFFSET", ">i", 7), ("MAGIC_OFFSET", ">b", 2),
        ("CRC_OFFSET", ">I", 0xDEADBEEF), ("ATTRIBUTES_OFFSET", ">h", 0x35),
        ("LAST_OFFSET_DELTA_OFFSET", ">i", 9), ("BASE_TIMESTAMP_OFFSET", ">q", 11),
        ("MAX_TIMESTAMP_OFFSET", ">q", 12), ("PRODUCER_ID_OFFSET", ">q", 13),
        ("PRODUCER_EPOCH_OFFSET", ">h", 14), ("BASE_SEQUENCE_OFFSET", ">i", 15),
        ("RECORDS_COUNT_OFFSET", ">i", 16),
    ]
    packed = struct.pack(">qiibIhiqqqhii", *(v for _, _, v in fields))
    for name, fmt, value in fields:
        assert struct.unpack_from(fmt, packed, getattr(R, name))[0] == value, name


# The header layout again, declared independently with construct: a cross-check of the
# hand-written struct format and offsets the hot path uses (construct is kept off that path:
# ~40x slower per header, bench/records_bench.py).
HEADER_LAYOUT = construct.Struct(
    "base_offset" / construct.Int64sb,
    "batch_length" / construct.Int32sb,
    "partition_leader_epoch" / construct.Int32sb,
    "magic" / construct.Int8sb,
    "crc" / construct.Int32ub,
    "attributes" / construct.Int16sb,
    "last_offset_delta" / construct.Int32sb,
    "base_timestamp" / construct.Int64sb,
    "max_timestamp" / construct.Int64sb,
    "producer_id" / construct.Int64sb,
    "producer_epoch" / construct.Int16sb,
    "base_sequence" / construct.Int32sb,
    "record_count" / construct.Int32sb,
)


def test_construct_layout_agrees_with_the_view():
    raw = build_batch([(b"k", b"v", [("h", b"x")], 1234)], base_offset=42, producer_id=7,
                      producer_epoch=3, base_sequence=5, partition_leader_epoch=9,
                      compression=R.GZIP)
    parsed = HEADER_LAYOUT.parse(raw)
    view = RecordBatch(raw)
    for name in ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
                 "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "record_count"):
        assert parsed[name] == getattr(view, name), name
    assert HEADER_LAYOUT.sizeof() == R.BATCH_HEADER_SIZE


# --- round trips ----------------------------------------------------------------------------
@SETTINGS
@given(recs=records_st, codec=st.sampled_from(CODECS),
       base_offset=st.integers(0, 2**40), ple=st.integers(-1, 2**20))
def test_round_trip(recs, codec, base_offset, ple):
    raw = build_batch(recs, base_offset=base_offset, compression=codec,
                      partition_leader_epoch=ple)
    b = RecordBatch(raw)
    b.validate()
    b.validate_crc()
    assert b.crc_valid()
    assert b.size == len(raw) == R.LOG_OVERHEAD + b.batch_length
    assert (b.magic, b.compression, b.timestamp_type) == (2, codec, 0)
    assert (b.base_offset, b.partition_leader_epoch) == (base_offset, ple)
    assert b.record_count == len(recs)
    assert b.last_offset_delta == len(recs) - 1
    assert b.last_offset == base_offset + len(recs) - 1 and b.next_offset == b.last_offset + 1
    assert b.base_timestamp == recs[0][3]
    assert b.max_timestamp == max(r[3] for r in recs)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
    assert not b.is_transactional and not b.is_control
    got = list(b.records())
    assert got == _expected(recs, base_offset)
    for r in got:
        assert r.key is None or type(r.key) is bytes
        assert r.value is None or type(r.value) is bytes
        assert all(type(k) is str and (v is None or type(v) is bytes) for k, v in r.headers)
    assert b.bytes() == raw


@pytest.mark.parametrize("codec", CODECS)
def test_nulls_and_empties_are_distinct(codec):
    recs = [(None, None, [], 1), (b"", b"", [], 2), (None, b"", [("", b"")], 3),
            (b"", None, [("k", None)], 4)]
    got = list(RecordBatch(build_batch(recs, compression=codec)).records())
    assert [(r.key, r.value, r.headers) for r in got] == [(k, v, h) for k, v, h, _ in recs]


@pytest.mark.parametrize("codec", CODECS)
def test_large_records_and_many_headers(codec):
    big = bytes(range(256)) * 4096  # 1 MiB
    headers = [(f"h{i}", bytes([i]) * i) for i in range(200)] + [("ünïcode-ключ", None)]
    recs = [(b"key" * 1000, big, headers, 10**12), (None, big[:300000], [], 10**12 - 5)]
    raw = build_batch(recs, compression=codec, base_offset=99)
    b = RecordBatch(raw)
    b.validate()
    b.validate_crc()
    assert list(b.records()) == _expected(recs, 99)
    if codec != R.NONE:
        assert len(raw) < len(big)


def test_many_small_records():
    recs = [(str(i).encode(), b"v" * (i % 50), [], 1000 + i) for i in range(5000)]
    b = RecordBatch(build_batch(recs, compression=R.LZ4))
    assert list(b.records()) == _expected(recs, 0)


def test_record_objects_keep_offset_gaps_and_negative_timestamp_deltas():
    recs = [Record(100, 5000, b"a", b"1"), Record(103, 4000, None, b"2", [("x", b"y")]),
            Record(110, 6000, b"c", None)]
    raw = build_batch(recs, base_offset=100)
    b = RecordBatch(raw)
    b.validate()
    assert (b.last_offset_delta, b.record_count, b.next_offset) == (10, 3, 111)
    assert list(b.records()) == recs
    # the log's compaction rebuild: a Record object list re-based keeps absolute offsets
    assert list(RecordBatch(build_batch(list(b.records()), base_offset=100)).records()) == recs
    with pytest.raises(R.EncodeError):
        build_batch([Record(5, 1, b"a", b"b"), Record(5, 1, b"a", b"b")], base_offset=0)
    with pytest.raises(R.EncodeError):
        build_batch([])


def test_short_tuples_and_missing_timestamps():
    b = RecordBatch(build_batch([(b"k", b"v"), (None, b"w", [("h", b"1")])]))
    assert [(r.timestamp, r.key, r.value, r.headers) for r in b.records()] == [
        (-1, b"k", b"v", []), (-1, None, b"w", [("h", b"1")])]


def test_producer_fields_and_flags():
    raw = build_batch([(b"k", b"v", [], 5)] * 3, producer_id=2**40, producer_epoch=7,
                      base_sequence=2**31 - 2, is_transactional=True, timestamp_type=1)
    b = RecordBatch(raw)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (2**40, 7, 2**31 - 2)
    assert b.has_producer_id and b.is_transactional and not b.is_control
    assert b.timestamp_type == 1
    assert b.last_sequence == 0  # wraps past int32 max, as Kafka's sequences do
    assert RecordBatch(build_batch([(b"k", b"v")])).last_sequence == -1


def test_control_batch():
    for commit in (True, False):
        raw = build_control_batch(commit, 77, 4, 123456, coordinator_epoch=9, base_offset=50)
        b = RecordBatch(raw)
        b.validate()
        b.validate_crc()
        assert b.is_control and b.is_transactional
        assert (b.producer_id, b.producer_epoch, b.base_offset, b.record_count) == (77, 4, 50, 1)
        (rec,) = list(b.records())
        assert rec.key == struct.pack(">hh", 0, int(commit))
        assert rec.value == struct.pack(">hi", 0, 9)
        assert parse_control_record(rec) == (int(commit), 9)
        # kafka-python reads it as a ControlRecord
        kb = kmem.MemoryRecords(raw).next_batch()
        assert kb.is_control_batch
        (krec,) = list(kb)
        assert (krec.commit, krec.abort) == (commit, not commit)
    with pytest.raises(R.InvalidRecord):
        parse_control_record(Record(0, 0, b"\x00", None))


# --- header edits ---------------------------------------------------------------------------
@pytest.mark.parametrize("codec", CODECS)
def test_set_base_offset_and_leader_epoch_keep_crc(codec):
    raw = build_batch([(b"a", b"1", [], 10), (b"b", b"2", [], 20)], compression=codec)
    crc = RecordBatch(raw).crc
    buf = bytearray(b"\xee" * 7 + raw)
    set_base_offset(buf, 7, 2**50 + 3)
    set_partition_leader_epoch(buf, 7, 12)
    b = RecordBatch(buf, 7)
    assert (b.base_offset, b.partition_leader_epoch, b.crc) == (2**50 + 3, 12, crc)
    b.validate_crc()
    assert [r.offset for r in b.records()] == [2**50 + 3, 2**50 + 4]
    # through a memoryview too
    mv = memoryview(buf)
    set_base_offset(mv, 7, 5)
    del mv
    assert RecordBatch(buf, 7).base_offset == 5


@pytest.mark.parametrize("codec", CODECS)
def test_set_log_append_time(codec):
    recs = [(b"a", b"1", [], 1000), (b"b", b"2", [], 3000), (b"c", b"3", [], 2000)]
    buf = bytearray(build_batch(recs, compression=codec, is_transactional=True,
                                producer_id=1, producer_epoch=0, base_sequence=0))
    crc_before = RecordBatch(buf).crc
    set_log_append_time(buf, 0, 999_999)
    b = RecordBatch(buf)
    assert b.timestamp_type == 1 and b.crc != crc_before
    assert b.max_timestamp == 999_999 and b.base_timestamp == 1000
    assert b.compression == codec and b.is_transactional  # other attributes untouched
    b.validate_crc()
    assert [r.timestamp for r in b.records()] == [999_999] * 3
    if _HAS[codec]:
        kb = kmem.MemoryRecords(bytes(buf)).next_batch()
        assert kb.validate_crc()
        assert kb.timestamp_type == 1
        assert [r.timestamp for r in kb] == [999_999] * 3


# --- iter_batches ---------------------------------------------------------------------------
def test_iter_batches_and_partial_tails():
    batches = [build_batch([(b"k%d" % i, b"v" * i, [], i)] * (i + 1), base_offset=i * 10,
                           compression=CODECS[i % 5]) for i in range(5)]
    data = b"".join(batches)
    views = list(iter_batches(data))
    assert [v.bytes() for v in views] == batches
    assert [v.base_offset for v in views] == [0, 10, 20, 30, 40]
    assert [v.pos for v in views] == [sum(map(len, batches[:i])) for i in range(5)]
    assert [v.base_offset for v in iter_batches(data, len(batches[0]))] == [10, 20, 30, 40]
    assert list(iter_batches(b"")) == []
    whole = len(data) - len(batches[-1])
    for cut in range(whole + 1, len(data)):  # every cut inside the last batch
        short = data[:cut]
        with pytest.raises(R.TruncatedRecordBatch) as info:
            list(iter_batches(short))
        assert isinstance(info.value, CorruptRecordBatch) and isinstance(info.value, TruncatedData)
        assert [v.base_offset for v in iter_batches(short, allow_partial_tail=True)] == [
            0, 10, 20, 30]
    # a memoryview over a bytearray works and does not copy
    buf = bytearray(data)
    mv = memoryview(buf)
    assert [v.base_offset for v in iter_batches(mv)] == [0, 10, 20, 30, 40]


def test_iter_batches_impossible_length_is_corrupt_even_with_partial_tail():
    good = build_batch([(b"k", b"v")])
    for junk in (bytes(20), b"\x00" * 8 + struct.pack(">i", -5) + b"\x00" * 60,
                 b"\x00" * 8 + struct.pack(">i", 48) + b"\x00" * 60):
        with pytest.raises(CorruptRecordBatch):
            list(iter_batches(good + junk, allow_partial_tail=True))


# --- kafka-python differential ----------------------------------------------------------------
def _kafka_python_build(recs, codec, base_offset=0, producer=None):
    pid, epoch, seq, txn = producer or (-1, -1, -1, False)
    builder = kmem.MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 30,
                                        offset=base_offset, transactional=txn, producer_id=pid,
                                        producer_epoch=epoch, base_sequence=seq)
    for key, value, headers, ts in recs:
        assert builder.append(ts, key, value, headers) is not None
    builder.close()
    return bytes(builder.buffer())


# compressible values, so kafka-python does not fall back to an uncompressed batch
compressible = st.none() | st.integers(0, 400).map(lambda n: b"abcd" * n)
kp_record_st = st.tuples(maybe_bytes, compressible, headers_st, timestamps)


@SETTINGS
@given(recs=st.lists(kp_record_st, min_size=1, max_size=12), codec=st.sampled_from(CODECS),
       producer=st.none() | st.tuples(st.integers(0, 2**40), st.integers(0, 32000),
                                      st.integers(0, 2**30), st.booleans()))
def test_kafka_python_built_batches_parse_in_kwire(recs, codec, producer):
    if not _HAS[codec]:
        pytest.skip("kafka-python lacks this codec's library")
    raw = _kafka_python_build(recs, codec, producer=producer)
    b = RecordBatch(raw)
    b.validate()
    b.validate_crc()
    kb = kmem.MemoryRecords(raw).next_batch()
    assert b.compression == kb.compression_type
    assert (b.base_offset, b.last_offset_delta, b.record_count) == (
        kb.base_offset, kb.last_offset_delta, kb.records_count)
    assert (b.base_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch,
            b.base_sequence, b.is_transactional) == (
        kb.first_timestamp, kb.max_timestamp, kb.producer_id, kb.producer_epoch,
        kb.base_sequence, kb.is_transactional)
    assert list(b.records()) == _expected(recs, 0)


@SETTINGS
@given(recs=st.lists(kp_record_st, min_size=1, max_size=12), codec=st.sampled_from(CODECS),
       base_offset=st.integers(0, 2**40))
def test_kwire_built_batches_parse_in_kafka_python(recs, codec, base_offset):
    if not _HAS[codec]:
        pytest.skip("kafka-python lacks this codec's library")
    raw = build_batch(recs, base_offset=base_offset, compression=codec, producer_id=5,
                      producer_epoch=1, base_sequence=10)
    mr = kmem.MemoryRecords(raw + raw)  # two batches back to back
    for _ in range(2):
        kb = mr.next_batch()
        assert kb.validate_crc()
        assert (kb.compression_type, kb.base_offset, kb.records_count) == (
            codec, base_offset, len(recs))
        assert (kb.producer_id, kb.producer_epoch, kb.base_sequence) == (5, 1, 10)
        got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in kb]
        assert got == [(base_offset + i, ts, k, v, list(h)) for i, (k, v, h, ts) in enumerate(recs)]
    assert mr.next_batch() is None


@pytest.mark.parametrize("codec", CODECS)
def test_uncompressed_bytes_identical_to_kafka_python(codec):
    """Records encode byte for byte as kafka-python's builder writes them (uncompressed)."""
    recs = [(b"k", b"value" * 30, [("a", b"1"), ("b", None)], 1_600_000_000_000),
            (None, b"x" * 200, [], 1_600_000_000_500), (b"", None, [], 1_599_999_999_000)]
    kp = _kafka_python_build(recs, R.NONE)
    ours = build_batch(recs, partition_leader_epoch=0)  # kafka-python writes epoch 0
    assert ours == kp


# --- malformed input -----------------------------------------------------------------------
def test_crc_mismatch_on_every_covered_byte():
    raw = build_batch([(b"key", b"value", [("h", b"v")], 77)] * 3, compression=R.NONE)
    assert RecordBatch(raw).crc_valid()
    for i in range(R.ATTRIBUTES_OFFSET, len(raw)):
        bad = bytearray(raw)
        bad[i] ^= 0x01
        b = RecordBatch(bad)
        assert not b.crc_valid()
        with pytest.raises(CrcMismatch) as info:
            b.validate_crc()
        assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    for i in list(range(0, 8)) + list(range(12, 16)):  # base offset, leader epoch: not covered
        bad = bytearray(raw)
        bad[i] ^= 0x01
        assert RecordBatch(bad).crc_valid()
    bad = bytearray(raw)  # the stored CRC itself
    bad[R.CRC_OFFSET] ^= 0x80
    assert not RecordBatch(bad).crc_valid()


def test_header_shorter_than_61_bytes():
    raw = build_batch([(b"k", b"v")])
    for n in (0, 1, 12, 60):
        with pytest.raises(R.TruncatedRecordBatch):
            RecordBatch(raw[:n])
    with pytest.raises(R.TruncatedRecordBatch):
        RecordBatch(raw, len(raw) - 60)


def test_validate_rejects_bad_headers():
    good = build_batch([(b"k", b"v")] * 2)
    cases = {
        "magic": (R.MAGIC_OFFSET, ">b", 1, R.UnsupportedMagic),
        "short length": (R.BATCH_LENGTH_OFFSET, ">i", 48, CorruptRecordBatch),
        "long length": (R.BATCH_LENGTH_OFFSET, ">i", len(good), R.TruncatedRecordBatch),
        "negative count": (R.RECORDS_COUNT_OFFSET, ">i", -1, CorruptRecordBatch),
        "count > deltas": (R.RECORDS_COUNT_OFFSET, ">i", 3, CorruptRecordBatch),
        "negative delta": (R.LAST_OFFSET_DELTA_OFFSET, ">i", -1, CorruptRecordBatch),
        "codec 5": (R.ATTRIBUTES_OFFSET, ">h", 5, UnsupportedCompression),
        "codec 7": (R.ATTRIBUTES_OFFSET, ">h", 7, UnsupportedCompression),
    }
    RecordBatch(good).validate()
    for name, (off, fmt, value, exc) in cases.items():
        bad = bytearray(good)
        struct.pack_into(fmt, bad, off, value)
        with pytest.raises(exc):
            RecordBatch(bad).validate()
    for magic in (0, 1, 3, -1):
        with pytest.raises(R.UnsupportedMagic):
            RecordBatch(_raw_batch(_raw_record(0), 1, 0, magic=magic)).records()
    # huge count with a tiny body is rejected without looping
    bad = bytearray(good)
    struct.pack_into(">i", bad, R.RECORDS_COUNT_OFFSET, 2**31 - 1)
    struct.pack_into(">i", bad, R.LAST_OFFSET_DELTA_OFFSET, 2**31 - 1)
    with pytest.raises(CorruptRecordBatch):
        RecordBatch(bad).validate()
    with pytest.raises(R.RecordCountMismatch):
        list(RecordBatch(bad).records())


def test_record_count_mismatch_both_ways():
    payload = _raw_record(0) + _raw_record(1)
    assert [r.offset for r in RecordBatch(_raw_batch(payload, 2, 1)).records()] == [0, 1]
    with pytest.raises(R.RecordCountMismatch):  # declares more than it holds
        list(RecordBatch(_raw_batch(payload, 3, 2)).records())
    with pytest.raises(R.RecordCountMismatch):  # bytes left over
        list(RecordBatch(_raw_batch(payload, 1, 1)).records())
    # through compression too
    z = C.compress(R.ZSTD, payload)
    with pytest.raises(R.RecordCountMismatch):
        list(RecordBatch(_raw_batch(z, 3, 2, attributes=R.ZSTD)).records())


def test_over_long_varints():
    ten = b"\xff" * 10 + b"\x01"
    cases = [
        ten,  # record length
        _zz(20) + b"\x00" + b"\xff" * 11 + b"\x01",  # timestamp delta (varlong: 10 max)
        _zz(20) + b"\x00\x00" + b"\xff" * 6 + b"\x01",  # offset delta (varint: 5 max)
    ]
    for payload in cases:
        with pytest.raises(R.RecordVarintTooLong) as info:
            list(RecordBatch(_raw_batch(payload + b"\x00" * 30, 1, 0)).records())
        assert isinstance(info.value, VarintTooLong) and isinstance(info.value, CorruptRecordBatch)


def test_malformed_records_raise_invalid_record():
    cases = {
        "length too long": _raw_record(0, length_adjust=+3),
        "length too short": _raw_record(0, length_adjust=-1),
        "negative length": _zz(-3) + b"\x00" * 10,
        "key overruns": _zz(8) + b"\x00\x00\x00" + _zz(40) + b"kkkk",
        "key length -2": _zz(6) + b"\x00\x00\x00" + _zz(-2) + b"\x01\x00",
        "value length -5": _zz(6) + b"\x00\x00\x00\x01" + _zz(-5) + b"\x00",
        "negative headers": _zz(6) + b"\x00\x00\x00\x01\x01" + _zz(-1),
        "header key -1": _zz(8) + b"\x00\x00\x00\x01\x01" + _zz(1) + _zz(-1) + b"\x01",
        "header key not utf-8": _raw_record(0, headers=[(b"\xff\xfe", b"v")]),
        "truncated inside": _raw_record(0)[:-2],
    }
    for name, payload in cases.items():
        with pytest.raises(R.InvalidRecord):
            list(RecordBatch(_raw_batch(payload, 1, 0)).records())
    # offset deltas must increase and stay within lastOffsetDelta
    for deltas, last in (([0, 0], 1), ([1, 0], 1), ([0, 5], 1), ([-1, 0], 1)):
        payload = b"".join(_raw_record(d) for d in deltas)
        with pytest.raises(R.InvalidRecord):
            list(RecordBatch(_raw_batch(payload, 2, last)).records())
    # gaps (compaction) are fine
    payload = _raw_record(0) + _raw_record(4)
    assert [r.offset for r in RecordBatch(_raw_batch(payload, 2, 4, base_offset=10)).records()] == [
        10, 14]


@pytest.mark.parametrize("codec", [R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD])
def test_corrupt_compressed_payload(codec):
    payload = _raw_record(0) * 1 + _raw_record(1)
    z = bytearray(C.compress(codec, payload * 1))
    z[len(z) // 2 :] = b"\x00" * (len(z) - len(z) // 2)
    with pytest.raises(CompressionError):
        list(RecordBatch(_raw_batch(bytes(z[: max(4, len(z) // 3)]), 2, 1, attributes=codec))
             .records())
    with pytest.raises(CompressionError):
        list(RecordBatch(_raw_batch(b"not compressed at all", 2, 1, attributes=codec)).records())


def test_unknown_codec_in_records():
    with pytest.raises(UnsupportedCompression):
        list(RecordBatch(_raw_batch(_raw_record(0), 1, 0, attributes=6)).records())


def test_decompression_limit_applies_to_records():
    raw = build_batch([(None, bytes(2_000_000), [], 1)], compression=R.ZSTD)
    with pytest.raises(C.DecompressedTooLarge):
        list(RecordBatch(raw).records(max_decompressed_size=1_000_000))
    assert len(next(RecordBatch(raw).records()).value) == 2_000_000


@settings(max_examples=150, deadline=None)
@given(data=st.data(), codec=st.sampled_from(CODECS))
def test_fuzzed_batches_raise_only_named_errors(data, codec):
    raw = bytearray(build_batch([(b"key", b"value" * 5, [("h", b"x")], 5)] * 4,
                                compression=codec))
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(1, 255)),
                               min_size=1, max_size=4))
    for i, x in flips:
        raw[i] ^= x
    cut = data.draw(st.integers(R.BATCH_HEADER_SIZE, len(raw)))
    raw = bytes(raw[:cut])
    try:
        for b in iter_batches(raw):
            b.validate()
            b.crc_valid()
            for _ in b.records(max_decompressed_size=1 << 20):
                pass
    except CorruptRecordBatch:
        pass


# --- batches captured from librdkafka (confluent-kafka) ----------------------------------
# A tiny capture broker inside the test (plain sockets on 127.0.0.1, one thread per
# connection) answers ApiVersions and Metadata with kwire's own frame codec and schemas and
# captures each Produce request's records field, decoded with kwire's Produce schema. The
# captured batches are then parsed by kwire.codec.records: header, CRC, records.


def _confluent():
    return pytest.importorskip("confluent_kafka")


PRODUCE, METADATA, API_VERSIONS = 0, 3, 18
SERVED = (PRODUCE, METADATA, API_VERSIONS)
CODEC_NUMBERS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class CaptureBroker:
    """Answers just enough of the protocol for a producer; keeps every Produce records blob."""

    def __init__(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.captured: list[tuple[str, int, bytes, int]] = []  # topic, partition, records, version
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.closed = False
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self):
        self.closed = True
        self.listener.close()
        for c in list(self.conns):
            try:
                c.close()
            except OSError:
                pass

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        decoder = FR.FrameDecoder()
        conn.settimeout(30)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                decoder.feed(data)
                while True:
                    frame = decoder.next_frame()
                    if frame is FR.NEED_DATA:
                        break
                    reply = self._handle(frame)
                    if reply is not None:
                        conn.sendall(reply)
        except (OSError, socket.timeout):
            return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)
        finally:
            conn.close()

    def _handle(self, frame):
        try:
            req = FR.decode_request(frame)
        except CodecError as exc:
            hdr = getattr(exc, "header", None)
            if hdr is not None and hdr.api_key == API_VERSIONS:
                return self._api_versions(0, hdr.correlation_id, error=35)
            raise
        h = req.header
        if h.api_key == API_VERSIONS:
            return self._api_versions(h.api_version, h.correlation_id)
        if h.api_key == METADATA:
            return self._metadata(req)
        if h.api_key == PRODUCE:
            return self._produce(req)
        raise AssertionError(f"unexpected request {h.api_key} v{h.api_version}")

    def _api_versions(self, version, corr, error=0):
        api = APIS[API_VERSIONS]
        ApiVersion = api.response.struct("ApiVersion")
        # advertise every API kwire has schemas for (librdkafka derives features such as
        # message format v2 from several of them: Produce v3 *and* Fetch v4); only the three
        # a producer needs are answered here
        keys = [ApiVersion(api_key=k, min_version=a.min_version, max_version=a.max_version)
                for k, a in APIS.items()]
        body = api.response(error_code=error, api_keys=keys)
        return FR.join_parts(FR.encode_response(api, version, corr, body))

    def _metadata(self, req):
        api = APIS[METADATA]
        R = api.response
        v = req.header.api_version
        names = [t.name for t in (req.body.topics or [])]
        broker = R.struct("MetadataResponseBroker")(node_id=0, host="127.0.0.1", port=self.port)
        topics = []
        for name in names:
            part = R.struct("MetadataResponsePartition")(
                error_code=0, partition_index=0, leader_id=0, leader_epoch=0,
                replica_nodes=[0], isr_nodes=[0])
            topics.append(R.struct("MetadataResponseTopic")(error_code=0, name=name,
                                                             partitions=[part]))
        body = R(brokers=[broker], cluster_id="capture", controller_id=0, topics=topics)
        return FR.join_parts(FR.encode_response(api, v, req.header.correlation_id, body))

    def _produce(self, req):
        api = APIS[PRODUCE]
        R = api.response
        v = req.header.api_version
        responses = []
        for topic in req.body.topic_data:
            parts = []
            for pd in topic.partition_data:
                with self.lock:
                    self.captured.append((topic.name, pd.index, bytes(pd.records), v))
                parts.append(R.struct("PartitionProduceResponse")(index=pd.index, error_code=0,
                                                                  base_offset=0))
            responses.append(R.struct("TopicProduceResponse")(name=topic.name,
                                                             partition_responses=parts))
        if req.body.acks == 0:
            return None
        body = R(responses=responses)
        return FR.join_parts(FR.encode_response(api, v, req.header.correlation_id, body))


@pytest.fixture
def broker():
    b = CaptureBroker()
    yield b
    b.close()


def _messages(codec: str):
    out = []
    for i in range(40):
        key = None if i % 7 == 0 else f"{codec}-key-{i}".encode()
        value = None if i % 11 == 5 else (f"value {i} " * (i % 9 + 1)).encode()
        headers = [("idx", str(i).encode()), ("empty", b"")] if i % 3 == 0 else []
        out.append((key, value, headers, 1_700_000_000_000 + i * 3))
    return out


@pytest.mark.slow
def test_confluent_kafka_batches_parse_in_kwire(broker):
    expected = {}
    for codec in CODEC_NUMBERS:
        topic = f"cap-{codec}"
        msgs = _messages(codec)
        expected[topic] = (codec, msgs)
        producer = _confluent().Producer({
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "compression.type": codec,
            "linger.ms": 200,  # flush() sends at once; this only keeps one batch whole
            "enable.idempotence": False,
            "message.timeout.ms": 20000,
            "socket.timeout.ms": 10000,
        })
        delivered = []
        for key, value, headers, ts in msgs:
            producer.produce(topic, value=value, key=key, headers=headers or None,
                             partition=0, timestamp=ts,
                             on_delivery=lambda err, msg: delivered.append(err))
        t0 = time.monotonic()
        remaining = producer.flush(20)
        assert remaining == 0, f"{codec}: {remaining} messages undelivered after {time.monotonic() - t0:.1f}s"
        assert delivered == [None] * len(msgs)
    assert not broker.errors, broker.errors

    for topic, (codec, msgs) in expected.items():
        got = []
        codecs_seen = set()
        blobs = [rec for (t, p, rec, v) in broker.captured if t == topic]
        assert blobs, topic
        for blob in blobs:
            for batch in iter_batches(blob):
                batch.validate()
                batch.validate_crc()
                # librdkafka sends a batch uncompressed when compression does not shrink it
                # (a small batch cut off by linger.ms); the larger ones use the codec
                assert batch.compression in (0, CODEC_NUMBERS[codec]), (topic, batch)
                codecs_seen.add(batch.compression)
                assert batch.magic == 2 and batch.timestamp_type == 0
                assert batch.record_count == batch.last_offset_delta + 1
                recs = list(batch.records())
                assert [r.offset for r in recs] == list(range(len(recs)))
                got.extend((r.key, r.value, r.headers, r.timestamp) for r in recs)
        assert got == msgs, topic
        assert CODEC_NUMBERS[codec] in codecs_seen, (topic, codecs_seen)


@pytest.mark.slow
def test_capture_broker_rejects_corrupted_capture(broker):
    """The same path notices a flipped byte: the CRC check is real."""
    producer = _confluent().Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}",
                                         "compression.type": "none", "linger.ms": 5})
    producer.produce("cap-crc", value=b"payload" * 10, key=b"k", partition=0)
    assert producer.flush(20) == 0
    (blob,) = [rec for (t, p, rec, v) in broker.captured if t == "cap-crc"]
    batch = RecordBatch(blob)
    batch.validate_crc()
    bad = bytearray(blob)
    bad[-3] ^= 0x40
    assert not RecordBatch(bad).crc_valid()
