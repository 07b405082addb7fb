"""The source's fast read path (kwire.spark.fetch: Fetch answers to Arrow buffers in C) against
the librdkafka path it stands in for: the same rows for every codec, null keys and values,
headers, LogAppendTime, transactions (aborted records and control batches), sub-ranges; and
the hand-over to librdkafka where it stops (records deleted: failOnDataLoss). No Spark
session: kwire.spark.consume.read_range is what each Spark task runs."""
from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from kwire.codec.records import GZIP, LOG_APPEND_TIME, build_batch  # noqa: E402
from kwire.spark import consume, fetch  # noqa: E402
from kwire.spark.offsets import DataLossError, Range  # noqa: E402
from tests.spark.helpers import CODECS, produce  # noqa: E402

pytestmark = [pytest.mark.skipif(not fetch._load(), reason="kwire.log._walk is not built"),
              pytest.mark.xdist_group("spark")]

SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                    ("partition", pa.int32()), ("offset", pa.int64()),
                    ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())])


@pytest.fixture(autouse=True)
def _no_pooled_clients():
    """The worker-wide pools outlive a test: close what a test left there."""
    yield
    for c in consume._POOL.values():
        c.close()
    consume._POOL.clear()
    for s in fetch._SOCKS.values():
        s.close()
    fetch._SOCKS.clear()


def _read(monkeypatch, bootstrap: str, rng: Range, *, fast: bool, fail_on_data_loss: bool = True):
    """(rows, where the fast path stopped or None) of read_range over ``rng``."""
    stops = []
    real = fetch.read

    def spy(*args, **kwargs):
        stops.append((yield from real(*args, **kwargs)))
        return stops[-1]
    monkeypatch.setattr(fetch, "usable", lambda client, headers: fast)
    monkeypatch.setattr(fetch, "read", spy)
    batches = list(consume.read_range(rng, {"bootstrap.servers": bootstrap}, SCHEMA, include_headers=False,
                                      fail_on_data_loss=fail_on_data_loss, poll_timeout_ms=30_000))
    for b in batches:
        assert b.schema.equals(SCHEMA)
    return pa.Table.from_batches(batches, SCHEMA).to_pylist(), (stops[0] if stops else None)


def _records(n: int):
    for i in range(n):
        key = None if i % 5 == 0 else f"k{i}".encode()
        value = None if i % 7 == 3 else (b"" if i % 11 == 0 else f"value-{i}".encode() * (i % 4 + 1))
        yield key, value, ([("h", str(i).encode()), ("n", None)] if i % 3 else None)


@pytest.mark.slow
@pytest.mark.parametrize("codec", CODECS)
def test_fast_path_reads_what_librdkafka_reads(monkeypatch, kafka_broker, kafka_topic, codec):
    b = kafka_broker.bootstrap_servers
    produce(b, kafka_topic, list(_records(3000)), codec=codec, partition=0)
    for lo, hi in ((0, 3000), (7, 2995), (1500, 1501)):
        rng = Range(kafka_topic, 0, lo, hi)
        slow, _ = _read(monkeypatch, b, rng, fast=False)
        quick, stop = _read(monkeypatch, b, rng, fast=True)
        assert stop == hi, "the fast path read the whole range by itself"
        assert [r["offset"] for r in quick] == list(range(lo, hi))
        assert quick == slow


@pytest.mark.slow
def test_log_append_time(monkeypatch, kafka_broker, kafka_topic):
    b = kafka_broker.bootstrap_servers
    topic = kafka_topic + "-lat"
    kafka_broker.create_topic(topic, 1, {"message.timestamp.type": "LogAppendTime"})
    produce(b, topic, [(None, str(i).encode(), None) for i in range(200)], partition=0)
    rng = Range(topic, 0, 0, 200)
    slow, _ = _read(monkeypatch, b, rng, fast=False)
    quick, stop = _read(monkeypatch, b, rng, fast=True)
    assert stop == 200 and quick == slow
    assert {r["timestampType"] for r in quick} == {1}


@pytest.mark.slow
def test_transactions_aborted_records_and_control_batches(monkeypatch, kafka_broker, kafka_topic):
    """read_uncommitted: aborted records are read, control records are not rows but their
    offsets are stepped over, up to a range end just past a commit marker."""
    b = kafka_broker.bootstrap_servers
    p = Producer({"bootstrap.servers": b, "transactional.id": f"tx-{kafka_topic}", "linger.ms": 5})
    p.init_transactions(30)
    for i in range(6):
        p.begin_transaction()
        for j in range(50):
            p.produce(kafka_topic, f"{i}-{j}".encode(), partition=0)
        p.flush(30)   # an abort purges what is still queued: these are written, then aborted
        (p.commit_transaction if i % 2 == 0 else p.abort_transaction)(30)
    c = Consumer({"bootstrap.servers": b, "group.id": "x"})
    _low, high = c.get_watermark_offsets(TopicPartition(kafka_topic, 0), 10)
    c.close()
    assert high == 6 * 51
    rng = Range(kafka_topic, 0, 0, high)
    slow, _ = _read(monkeypatch, b, rng, fast=False)
    quick, stop = _read(monkeypatch, b, rng, fast=True)
    assert stop == high and quick == slow
    assert len(quick) == 300


@pytest.mark.slow
def test_records_deleted_hand_over_to_librdkafka(monkeypatch, kafka_broker, kafka_topic):
    b = kafka_broker.bootstrap_servers
    produce(b, kafka_topic, [(None, str(i).encode(), None) for i in range(100)], partition=0)
    admin = AdminClient({"bootstrap.servers": b})
    for f in admin.delete_records([TopicPartition(kafka_topic, 0, 40)]).values():
        f.result(30)
    with pytest.raises(DataLossError):
        _read(monkeypatch, b, Range(kafka_topic, 0, 10, 100), fast=True)
    rows, stop = _read(monkeypatch, b, Range(kafka_topic, 0, 10, 100), fast=True, fail_on_data_loss=False)
    assert stop == 10   # OFFSET_OUT_OF_RANGE: librdkafka read it all, with Spark's semantics
    assert [r["offset"] for r in rows] == list(range(40, 100))


@pytest.mark.slow
def test_leader_from_the_driver(monkeypatch, kafka_broker, kafka_topic):
    """A range carrying its leader (the driver's metadata) is read with no librdkafka client at
    all; a stale one (nobody listens there any more) hands the range over to librdkafka."""
    import socket

    from kwire.spark.offsets import OffsetReader
    from kwire.spark.options import read_options
    b = kafka_broker.bootstrap_servers
    produce(b, kafka_topic, [(None, str(i).encode(), None) for i in range(300)], partition=0)
    reader = OffsetReader(read_options({"kafka.bootstrap.servers": b, "subscribe": kafka_topic}, streaming=False))
    reader.topic_partitions()
    reader.close()
    leader = reader.leaders[(kafka_topic, 0)]
    slow, _ = _read(monkeypatch, b, Range(kafka_topic, 0, 0, 300), fast=False)
    consume._POOL.pop(next(iter(consume._POOL))).close()
    quick, stop = _read(monkeypatch, b, Range(kafka_topic, 0, 0, 300, leader), fast=True)
    assert stop == 300 and quick == slow
    assert not consume._POOL, "the fast path made a consumer"
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    gone = s.getsockname()
    s.close()
    rows, stop = _read(monkeypatch, b, Range(kafka_topic, 0, 0, 300, gone), fast=True)
    assert stop == 0 and rows == slow and consume._POOL


def test_columns_of_built_batches():
    """The C walk on batches made here: rows in [lo, hi), a compressed batch left to the caller,
    a malformed batch adding no row."""
    plain = build_batch([(b"k", b"v0", [], 1000), (None, None, [("h", b"x")], 1005)], base_offset=10)
    log_append = build_batch([(b"a", b"b", [], 1000)], base_offset=12, timestamp_type=LOG_APPEND_TIME,
                             max_timestamp=4242)
    zipped = build_batch([(None, b"z", [], 7)], base_offset=13, compression=GZIP)
    data = plain + log_append + zipped
    status, pos, nxt, cols = fetch.fetch_columns(data, 0, len(data), 0, 100)
    assert (status, pos, nxt) == (1, len(plain) + len(log_append), 13)
    rng = Range("t", 3, 0, 100)
    rows = fetch._columns_batch(cols, rng, SCHEMA).to_pylist()
    assert [(r["offset"], r["key"], r["value"], r["timestampType"]) for r in rows] == [
        (10, b"k", b"v0", 0), (11, None, None, 0), (12, b"a", b"b", 1)]
    assert [r["timestamp"].timestamp() for r in rows] == [1.0, 1.005, 4.242]
    cols, size, nxt = fetch._inflate(data, pos, 0, 100)
    assert (size, nxt) == (len(zipped), 14)
    assert fetch._columns_batch(cols, rng, SCHEMA).to_pylist()[0]["value"] == b"z"
    # [11, 12): one row; a batch at or past hi stops the walk
    status, pos, nxt, cols = fetch.fetch_columns(data, 0, len(data), 11, 12)
    assert (status, pos, nxt, cols[0]) == (2, len(plain), 12, 1)
    # a record whose length runs past its batch: status -1 at that batch, none of its rows
    bad = bytearray(plain)
    bad[61] = 0x7E   # the first record's length varint: 63, more than the batch holds
    status, pos, nxt, cols = fetch.fetch_columns(bytes(log_append) + bytes(bad), 0, len(log_append) + len(bad), 0, 100)
    assert (status, pos, nxt, cols[0]) == (-1, len(log_append), 13, 1)
    # a partial batch at the end: the walk stops before it
    status, pos, nxt, cols = fetch.fetch_columns(plain + log_append[:30], 0, len(plain) + 30, 0, 100)
    assert (status, pos, nxt, cols[0]) == (0, len(plain), 12, 2)
