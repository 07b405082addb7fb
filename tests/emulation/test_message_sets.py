"""Message formats v0/v1 (kwire.codec.legacy_records) against kafka-python's own legacy record
builder and reader (kafka.record.legacy_records, written for brokers before 0.11)."""
from __future__ import annotations

import pytest
from compat_tests.old_wire import lend_xxhash, legacy_set, read_legacy
from kwire.codec import legacy_records as L
from kwire.codec.compression import compress
from kwire.codec.records import LOG_APPEND_TIME, build_batch, build_control_batch, iter_batches, set_base_offset
from kwire.errors import ErrorCode

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}




@pytest.fixture(autouse=True)
def xxhash_for_kafka_python(monkeypatch):
    lend_xxhash(monkeypatch)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", list(CODECS))
def test_up_and_down_again(magic, codec):
    c = CODECS[codec]
    v2, got_magic = L.to_record_batch(legacy_set(magic, c))
    assert got_magic == magic
    (batch,) = list(iter_batches(v2))
    assert batch.compression == c and batch.record_count == 3
    recs = [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()]
    ts = [1_700_000_000_000 + i if magic else -1 for i in range(3)]
    assert recs == [(i, ts[i], b"k%d" % i if i % 2 == 0 else None, b"value-%d" % i * (i + 1)) for i in range(3)]
    # stored at offset 100 (the log assigns offsets), fetched back in either format
    buf = bytearray(v2)
    set_base_offset(buf, 0, 100)
    for to_magic in (0, 1):
        units = L.down_convert(bytes(buf), to_magic, 101)
        assert len(units) == 1
        back = read_legacy(units[0])
        want_ts = [None if to_magic == 0 else (t if t >= 0 else None) for t in ts]
        assert [(o, k, v) for o, _, k, v in back] == [(100 + i, r[2], r[3]) for i, r in enumerate(recs)][1:]
        if to_magic == 1 and magic == 1:
            assert [t for _, t, _, _ in back] == want_ts[1:]


def test_errors():
    good = bytearray(legacy_set(1, 0))
    good[-1] ^= 1   # the last value byte: CRC-32 no longer matches
    with pytest.raises(L.LegacyRecordError) as ei:
        L.to_record_batch(bytes(good))
    assert ei.value.code == ErrorCode.CORRUPT_MESSAGE
    # a magic 0 lz4 wrapper with a correct header checksum is taken too
    lz4_v0 = L._message_bytes(2, 0, 3, -1, None, compress(3, legacy_set(0, 0)))
    assert L.to_record_batch(bytes(lz4_v0))[1] == 0
    assert not L.is_message_set(build_batch([(b"k", b"v")]))
    zstd = build_batch([(b"k", b"v")], compression=4)
    with pytest.raises(L.LegacyRecordError) as ei:
        L.down_convert(zstd, 1, 0)
    assert ei.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    # a partial message at the end is left for the next fetch, as Kafka's readers do
    whole = legacy_set(1, 0)
    assert len(list(L.iter_messages(whole[:-3]))) == 2


def test_down_convert_drops_headers_and_control_batches_keeps_log_append_time():
    data = build_batch([(b"k", b"v", [("h", b"x")], 5)], base_offset=0) \
        + build_control_batch(True, producer_id=1, producer_epoch=0, base_offset=1, timestamp=6) \
        + build_batch([(None, b"w", [], 7)], base_offset=2, timestamp_type=LOG_APPEND_TIME, compression=1)
    units = L.down_convert(data, 1, 0)
    assert len(units) == 2
    assert read_legacy(b"".join(units)) == [(0, 5, b"k", b"v"), (2, 7, None, b"w")]
    m = list(L.iter_messages(units[1]))
    assert m[0][2] & L.TIMESTAMP_TYPE_BIT and m[0][0] == 2   # the wrapper: LogAppendTime, last offset


def test_fetch_magic():
    assert [L.fetch_magic(v) for v in range(4)] == [0, 0, 1, 1]
