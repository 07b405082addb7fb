"""kwire.log.validator and the append path: batches validated and normalised as Kafka's
LogValidator does (magic v2), checked against batches built by kafka-python."""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.codec import records as R
from kwire.codec.records import InvalidRecord, RecordBatch, build_batch, build_control_batch
from kwire.errors import CorruptRecordBatch, CrcMismatch, ErrorCode
from kwire.log import LogConfig, PartitionLog
from kwire.log.errors import InvalidRecordError
from kwire.log.validator import CLIENT, COORDINATOR, RecordValidationError, validate_records
from .logutil import read_all

kmem = pytest.importorskip("kafka.record.memory_records")
kcodec = pytest.importorskip("kafka.codec")

NOW = 1_700_000_000_000
CODECS = [R.NONE, R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sarama_shaped(recs, codec=R.NONE, max_timestamp=-1, **kw) -> bytes:
    """A batch as older sarama writes it: real record timestamps, maxTimestamp -1 in the
    header (CRC made valid again, so only the header's max timestamp is wrong)."""
    buf = bytearray(build_batch(recs, compression=codec, **kw))
    struct.pack_into(">q", buf, R.MAX_TIMESTAMP_OFFSET, max_timestamp)
    R._rewrite_crc(buf, 0)
    return bytes(buf)


def stored_batches(log) -> list[RecordBatch]:
    return [RecordBatch(raw) for raw in read_all(log)]


def open_log(tmp_path, name="t-0", **cfg) -> PartitionLog:
    return PartitionLog.open(str(tmp_path / name), LogConfig(**cfg), now_ms=NOW, topic="t", partition=0)


# --- max timestamp: recomputed (CreateTime) -------------------------------------------------
@pytest.mark.parametrize("codec", CODECS)
def test_sarama_batch_max_timestamp_recomputed(tmp_path, codec):
    log = open_log(tmp_path)
    recs = [(b"k%d" % i, b"v" * 30, [], NOW - 5000 + ts) for i, ts in enumerate([30, 10, 70, 20])]
    log.append(sarama_shaped(recs, codec), now_ms=NOW, origin=CLIENT)
    (b,) = stored_batches(log)
    assert b.max_timestamp == NOW - 5000 + 70 and b.timestamp_type == 0 and b.crc_valid()
    assert b.compression == codec
    assert [r.timestamp for r in b.records()] == [NOW - 5000 + t for t in (30, 10, 70, 20)]
    # ListOffsets by time: timestamp 0 finds the first record, -3 the record with the max
    assert log.offset_for_timestamp(0) == (0, NOW - 5000 + 30)
    assert log.offset_for_timestamp(NOW - 5000 + 31) == (2, NOW - 5000 + 70)
    assert log.offset_for_timestamp(NOW - 5000 + 71) is None
    assert log.max_timestamp_offset() == (2, NOW - 5000 + 70)
    seg = log.segments[-1]
    assert (seg.max_timestamp, seg.offset_of_max_timestamp) == (NOW - 5000 + 70, 3)


def test_time_index_entries_follow_recomputed_timestamps(tmp_path):
    log = open_log(tmp_path, index_interval_bytes=1, segment_bytes=4_000)
    for i in range(40):
        recs = [(b"k", b"v" * 50, [], NOW + i * 10 + j) for j in range(3)]
        log.append(sarama_shaped(recs), now_ms=NOW + 1000, origin=CLIENT)
    assert len(log.segments) > 2
    last_offsets = {b.last_offset: b.max_timestamp for b in stored_batches(log)}
    entries = 0
    for seg in log.segments:
        ti = seg.time_index
        for ts, rel in zip(ti._ts, ti._rel):  # every entry names a batch and its true max timestamp
            assert last_offsets[seg.base_offset + rel] == ts
            entries += 1
    assert entries >= 30
    assert log.offset_for_timestamp(0) == (0, NOW)
    assert log.offset_for_timestamp(NOW + 205) == (63, NOW + 210)
    assert log.offset_for_timestamp(NOW + 211) == (64, NOW + 211)
    assert log.max_timestamp_offset() == (119, NOW + 392)


def test_header_that_is_right_is_not_rewritten(tmp_path):
    log = open_log(tmp_path)
    raw = build_batch([(b"k", b"v", [], NOW + 1), (b"k", b"w", [], NOW + 9)])
    log.append(raw, now_ms=NOW, origin=CLIENT)
    (b,) = stored_batches(log)
    assert b.bytes() == raw  # byte for byte (base offset 0 here)
    checked = validate_records(raw, LogConfig(), now_ms=NOW)
    assert not checked.batches[0].rewrite
    assert validate_records(sarama_shaped([(b"k", b"v", [], NOW)]), LogConfig(), now_ms=NOW).batches[0].rewrite


def test_records_without_timestamps_keep_minus_one(tmp_path):
    log = open_log(tmp_path)
    log.append(sarama_shaped([(b"k", b"v", [], -1)], max_timestamp=5), now_ms=NOW, origin=CLIENT)
    (b,) = stored_batches(log)
    assert b.max_timestamp == -1 and b.crc_valid()


# --- LogAppendTime --------------------------------------------------------------------------
@pytest.mark.parametrize("codec", [R.NONE, R.LZ4])
def test_log_append_time_topic(tmp_path, codec):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    res = log.append(sarama_shaped([(b"k", b"v", [], 5), (b"k", b"v", [], 9)], codec), now_ms=NOW + 3,
                     origin=CLIENT, leader_epoch=4)
    assert res.log_append_time_ms == NOW + 3
    (b,) = stored_batches(log)
    assert b.timestamp_type == 1 and b.max_timestamp == NOW + 3 and b.crc_valid()
    assert b.partition_leader_epoch == 4 and b.compression == codec
    assert [r.timestamp for r in b.records()] == [NOW + 3, NOW + 3]
    assert log.offset_for_timestamp(0) == (0, NOW + 3)


def test_client_may_not_send_log_append_time(tmp_path):
    lat = build_batch([(b"k", b"v", [], NOW)], timestamp_type=R.LOG_APPEND_TIME)
    log = open_log(tmp_path / "lat", message_timestamp_type="LogAppendTime")
    with pytest.raises(RecordValidationError) as e:
        log.append(lat, now_ms=NOW, origin=CLIENT)
    assert e.value.code == ErrorCode.INVALID_TIMESTAMP
    assert "Producer should not set timestamp type to LogAppendTime" in e.value.record_errors[0][1]
    # on a CreateTime topic Kafka only checks the timestamp and stores the batch as CreateTime
    log = open_log(tmp_path / "ct")
    log.append(lat, now_ms=NOW, origin=CLIENT)
    (b,) = stored_batches(log)
    assert b.timestamp_type == 0 and b.crc_valid()


# --- timestamp bounds -----------------------------------------------------------------------
def test_timestamp_bounds(tmp_path):
    log = open_log(tmp_path, message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=500)
    ok = [(b"k", b"v", [], NOW - 1000), (b"k", b"v", [], NOW + 500), (b"k", b"v", [], -1)]
    log.append(build_batch(ok), now_ms=NOW, origin=CLIENT)
    bad = [(b"k", b"v", [], NOW), (b"k", b"v", [], NOW - 1001), (b"k", b"v", [], NOW + 501)]
    with pytest.raises(RecordValidationError) as e:
        log.append(sarama_shaped(bad, R.GZIP), now_ms=NOW, origin=CLIENT)
    assert e.value.code == ErrorCode.INVALID_TIMESTAMP
    assert str(e.value) == "One or more records have been rejected due to invalid timestamp"
    assert [i for i, _ in e.value.record_errors] == [1, 2]
    assert e.value.record_errors[0][1] == (
        f"Timestamp {NOW - 1001} of message with offset 1 is out of range. "
        f"The timestamp should be within [{NOW - 1000}, {NOW + 500}]")
    assert log.log_end_offset == 3  # nothing of the refused batch was written
    # LogAppendTime topics do not check client timestamps
    lat = open_log(tmp_path, "lat-0", message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=1)
    lat.append(build_batch(bad), now_ms=NOW, origin=CLIENT)


# --- cleanup.policy=compact: keys required --------------------------------------------------
@pytest.mark.parametrize("policy", ["compact", "compact,delete", "delete,compact"])
def test_compacted_topic_needs_keys(tmp_path, policy):
    log = open_log(tmp_path, cleanup_policy=policy)
    log.append(build_batch([(b"k", b"v", [], NOW)]), now_ms=NOW, origin=CLIENT)
    with pytest.raises(RecordValidationError) as e:
        log.append(build_batch([(b"k", b"v", [], NOW), (None, b"v", [], NOW)], compression=R.ZSTD),
                   now_ms=NOW, origin=CLIENT)
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert e.value.record_errors == [(1, "Compacted topic cannot accept message without key in topic partition t-0")]
    assert str(e.value) == (
        "One or more records have been rejected due to 1 record errors in total, and only showing the first "
        "three errors at most: [RecordError(batchIndex=1, message='Compacted topic cannot accept message "
        "without key in topic partition t-0')]")
    assert log.log_end_offset == 1
    # delete-only topics take keyless records
    open_log(tmp_path, "d-0").append(build_batch([(None, b"v", [], NOW)]), now_ms=NOW, origin=CLIENT)


# --- batch and record structure -------------------------------------------------------------
def _with_crc(buf: bytearray) -> bytes:
    R._rewrite_crc(buf, 0)
    return bytes(buf)


def _raw_batch(records: bytes, count: int, last_offset_delta: int, attributes: int = 0, base_offset: int = 0,
               producer_id: int = -1, base_sequence: int = -1) -> bytes:
    out = bytearray(R.BATCH_HEADER_SIZE)
    R.HEADER.pack_into(out, 0, base_offset, R.BATCH_HEADER_SIZE - R.LOG_OVERHEAD + len(records), -1, 2, 0,
                       attributes, last_offset_delta, NOW, NOW, producer_id, 0, base_sequence, count)
    return _with_crc(out + records)


def _zz(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _record(offset_delta: int, key=b"k", value=b"v", headers=(), extra=b"", length_adjust=0) -> bytes:
    body = bytearray(b"\x00" + _zz(0) + _zz(offset_delta))
    body += _zz(-1) if key is None else _zz(len(key)) + key
    body += _zz(-1) if value is None else _zz(len(value)) + value
    body += _zz(len(headers))
    for hk, hv in headers:
        body += _zz(len(hk)) + hk + _zz(len(hv)) + hv
    body += extra
    return _zz(len(body) + length_adjust) + bytes(body)


def test_structure_errors_are_invalid_record():
    cfg = LogConfig()
    good = _record(0) + _record(1, headers=[(b"h", b"x")])
    validate_records(_raw_batch(good, 2, 1), cfg, now_ms=NOW)
    cases = {
        "offset delta": _raw_batch(_record(0) + _record(2), 2, 1),
        "too few records": _raw_batch(_record(0), 2, 1),
        "bytes left over": _raw_batch(good + b"\x00", 2, 1),
        "record longer than said": _raw_batch(_record(0, extra=b"zz") + _record(1), 2, 1),
        "record shorter than said": _raw_batch(_record(0, length_adjust=3) + _record(1), 2, 1),
        "negative key length": _raw_batch(_record(0)[:4] + _zz(-3) + _record(0)[5:], 1, 0),
        "bad header count": _raw_batch(_record(0)[:-1] + _zz(-2), 1, 0),
        "count vs last offset delta": _raw_batch(good, 2, 5),
        "no records": _raw_batch(b"", 0, -1),
    }
    for name, raw in cases.items():
        with pytest.raises(InvalidRecordError):
            validate_records(raw, cfg, now_ms=NOW)
            pytest.fail(name)


def test_client_only_rules():
    cfg = LogConfig()
    one = build_batch([(b"k", b"v", [], NOW)])
    with pytest.raises(InvalidRecordError, match="more than one batch"):
        validate_records(one + one, cfg, now_ms=NOW, origin=CLIENT)
    assert len(validate_records(one + one, cfg, now_ms=NOW, origin=COORDINATOR).batches) == 2
    control = build_control_batch(True, 5, 0, NOW)
    with pytest.raises(InvalidRecordError, match="not allowed to write control records"):
        validate_records(control, cfg, now_ms=NOW, origin=CLIENT)
    validate_records(control, cfg, now_ms=NOW, origin=COORDINATOR)
    with pytest.raises(InvalidRecordError, match="should be 0, but it is 7"):
        validate_records(build_batch([(b"k", b"v", [], NOW)], base_offset=7), cfg, now_ms=NOW, origin=CLIENT)
    with pytest.raises(InvalidRecordError, match="Invalid sequence number -1"):
        validate_records(build_batch([(b"k", b"v", [], NOW)], producer_id=3, producer_epoch=0), cfg,
                         now_ms=NOW, origin=CLIENT)


def test_corrupt_batches():
    cfg = LogConfig()
    good = bytearray(build_batch([(b"k", b"v", [], NOW)]))
    good[-1] ^= 1
    with pytest.raises(CrcMismatch):
        validate_records(bytes(good), cfg, now_ms=NOW)
    # a compressed payload that is not what its codec says
    raw = _raw_batch(b"\x00" * 20, 1, 0, attributes=R.LZ4)
    with pytest.raises(CorruptRecordBatch) as e:
        validate_records(raw, cfg, now_ms=NOW)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE


def test_refused_batch_writes_nothing(tmp_path):
    log = open_log(tmp_path, cleanup_policy="compact")
    log.append(build_batch([(b"k", b"v", [], NOW)]), now_ms=NOW, origin=CLIENT)
    size = log.size_in_bytes
    with pytest.raises(RecordValidationError):
        log.append(build_batch([(None, b"v", [], NOW)]), now_ms=NOW, origin=CLIENT)
    assert log.size_in_bytes == size and log.log_end_offset == 1


# --- property: kafka-python's builder -------------------------------------------------------
maybe_bytes = st.none() | st.binary(max_size=40)
headers_st = st.lists(st.tuples(st.text(max_size=6), maybe_bytes), max_size=3)
timestamps = st.integers(min_value=0, max_value=NOW + 3_600_000)  # Kafka 4 refuses more than 1 h ahead
compressible = st.none() | st.integers(0, 300).map(lambda n: b"abcd" * n)
records_st = st.lists(st.tuples(maybe_bytes, compressible, headers_st, timestamps), min_size=1, max_size=12)
_HAS = {R.NONE: True, R.GZIP: True, R.SNAPPY: kcodec.has_snappy(), R.LZ4: kcodec.has_lz4(),
        R.ZSTD: kcodec.has_zstd()}


def _kafka_python_build(recs, codec) -> bytes:
    builder = kmem.MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 30, offset=0)
    for key, value, headers, ts in recs:
        assert builder.append(ts, key, value, headers) is not None
    builder.close()
    return bytes(builder.buffer())


@SETTINGS
@given(recs=records_st, codec=st.sampled_from([c for c in CODECS if _HAS[c]]), erase=st.booleans(),
       compacted=st.booleans())
def test_kafka_python_batches(tmp_path_factory, recs, codec, erase, compacted):
    raw = _kafka_python_build(recs, codec)
    if erase:  # the sarama shape: the header's max timestamp is -1
        buf = bytearray(raw)
        struct.pack_into(">q", buf, R.MAX_TIMESTAMP_OFFSET, -1)
        raw = _with_crc(buf)
    cfg = LogConfig(cleanup_policy="compact" if compacted else "delete")
    keyless = [i for i, r in enumerate(recs) if r[0] is None]
    if compacted and keyless:
        with pytest.raises(RecordValidationError) as e:
            validate_records(raw, cfg, now_ms=NOW, origin=CLIENT, topic_partition="t-0")
        assert [i for i, _ in e.value.record_errors] == keyless
        return
    checked = validate_records(raw, cfg, now_ms=NOW, origin=CLIENT, topic_partition="t-0")
    (vb,) = checked.batches
    assert vb.max_timestamp == max(r[3] for r in recs) == checked.max_timestamp
    assert vb.rewrite == erase
    assert checked.record_count == len(recs)
    # through the log: what is stored reads back as kafka-python wrote it, with a true header
    log = PartitionLog.open(str(tmp_path_factory.mktemp("p") / "t-0"), cfg, now_ms=NOW)
    log.append(raw, now_ms=NOW, origin=CLIENT)
    (b,) = stored_batches(log)
    assert b.crc_valid() and b.max_timestamp == vb.max_timestamp
    got = [(r.key, r.value, [(k, v) for k, v in r.headers], r.timestamp) for r in b.records()]
    assert got == [(k, v, [(hk, hv) for hk, hv in h], ts) for k, v, h, ts in recs]


@SETTINGS
@given(recs=records_st, flip=st.integers(min_value=0), value=st.integers(0, 255))
def test_damaged_records_never_pass_unnoticed(recs, flip, value):
    """Any change to the records region (CRC made valid again) is either refused as
    INVALID_RECORD or still parses to the declared number of records."""
    buf = bytearray(_kafka_python_build(recs, R.NONE))
    pos = R.BATCH_HEADER_SIZE + flip % (len(buf) - R.BATCH_HEADER_SIZE)
    buf[pos] = value
    raw = _with_crc(buf)
    try:
        checked = validate_records(raw, LogConfig(), now_ms=NOW, origin=CLIENT)
    except InvalidRecordError:
        return
    assert checked.record_count == len(recs)
    try:  # kwire's reader agrees (it also decodes header keys, which Kafka reads leniently)
        assert sum(1 for _ in RecordBatch(raw).records()) == len(recs)
    except InvalidRecord as exc:
        assert "UTF-8" in str(exc)


@SETTINGS
@given(ts=st.lists(st.integers(min_value=NOW - 10**6, max_value=NOW + 10**6), min_size=1, max_size=30),
       codec=st.sampled_from([R.NONE, R.GZIP]))
def test_timestamp_bounds_are_exact(ts, codec):
    """The bounds admit a batch exactly when its smallest and largest timestamps are within them."""
    raw = build_batch([(b"k", b"v", [], t) for t in ts], compression=codec)
    lo, hi = min(ts), max(ts)
    fits = LogConfig(message_timestamp_before_max_ms=NOW - lo, message_timestamp_after_max_ms=hi - NOW)
    assert validate_records(raw, fits, now_ms=NOW).max_timestamp == hi
    for cfg, bad in ((LogConfig(message_timestamp_before_max_ms=NOW - lo - 1), lo),
                     (LogConfig(message_timestamp_after_max_ms=hi - NOW - 1), hi)):
        if (cfg.message_timestamp_before_max_ms < 0) or (cfg.message_timestamp_after_max_ms < 0):
            continue
        with pytest.raises(RecordValidationError) as e:
            validate_records(raw, cfg, now_ms=NOW)
        assert [i for i, _ in e.value.record_errors] == [i for i, t in enumerate(ts) if t == bad]


@pytest.mark.parametrize("size", [0, 63, 64, 8191, 8192, 20_000, 1 << 20, 3 << 20])
def test_varint_widths(size):
    """Record and value lengths on 1 to 4 bytes, keys and header values too."""
    recs = [(b"k" * (size % 300), b"v" * size, [("h", b"x" * (size % 9000 + 1))], NOW + i * 5000)
            for i in range(3)]
    raw = build_batch(recs)
    cfg = LogConfig(max_message_bytes=len(raw) + 1)
    checked = validate_records(raw, cfg, now_ms=NOW, origin=CLIENT)
    assert checked.max_timestamp == NOW + 10000
    damaged = bytearray(raw)
    damaged[-1] ^= 0xFF  # the last header value byte: lengths still tile, so still valid
    validate_records(_with_crc(damaged), cfg, now_ms=NOW)
    with pytest.raises(InvalidRecordError):
        validate_records(_with_crc(_shorten_last_record(raw)), cfg, now_ms=NOW)


def _shorten_last_record(raw: bytes) -> bytearray:
    """Drop the batch's last byte (the length fields still claim it): records no longer tile."""
    buf = bytearray(raw[:-1])
    struct.pack_into(">i", buf, R.BATCH_LENGTH_OFFSET, len(buf) - R.LOG_OVERHEAD)
    return buf


# --- the C walk answers exactly as the Python walk ------------------------------------------
from kwire.log import validator as _validator  # noqa: E402


def test_c_walk_is_built():
    """`make test` installs kwire with its C walk (setup.py, gcc); without it the produce path
    runs at a third of its speed, so a missing build is a failure, not a skip."""
    assert _validator._walk_c is not None, "kwire.log._walk is not built: pip install -e . needs a C compiler"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=records_st, flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=3),
       cut=st.integers(min_value=0, max_value=3))
def test_c_walk_matches_python_walk(recs, flips, cut):
    from kwire.log.validator import _walk_c, walk_records_py

    assert _walk_c is not None, "kwire.log._walk is not built"

    data = bytearray(_kafka_python_build(recs, R.NONE)[R.BATCH_HEADER_SIZE:])
    for where, value in flips:
        data[where % len(data)] = value
    data = bytes(data[: len(data) - cut])
    for count in (len(recs), len(recs) + 1, max(0, len(recs) - 1)):
        try:
            expected = walk_records_py(data, 0, len(data), count)
        except InvalidRecordError:
            expected = None
        got = _walk_c(data, 0, len(data), count)
        assert got == expected, (got, expected)  # None exactly where the Python walk refuses
        # in place, inside a larger buffer (as the produce request's memoryview)
        big = memoryview(b"\x00\x01" + data + b"\x7f" * 5)
        assert _walk_c(big, 2, 2 + len(data), count) == got


def test_python_walk_alone(monkeypatch, tmp_path):
    """Without the C walk (a build without a compiler) the same batches pass and fail."""
    monkeypatch.setattr(_validator, "_walk_c", None)
    test_structure_errors_are_invalid_record()
    for codec in (R.NONE, R.GZIP):
        test_sarama_batch_max_timestamp_recomputed(tmp_path / str(codec), codec)
    test_compacted_topic_needs_keys(tmp_path / "c", "compact")
    test_timestamp_bounds(tmp_path / "b")
