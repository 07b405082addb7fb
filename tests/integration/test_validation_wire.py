"""Batch validation seen from the wire: sarama-shaped batches (header max timestamp -1),
LogAppendTime topics, timestamp bounds, keyless records on compacted topics (stock clients)."""
from __future__ import annotations

import struct
import time

import pytest

from kwire.codec import records as R
from kwire.codec.apis import api
from kwire.codec.records import RecordBatch, build_batch, iter_batches
from kwire.errors import ErrorCode
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow

CODECS = [R.NONE, R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD]


def sarama_shaped(recs, codec=R.NONE) -> bytes:
    buf = bytearray(build_batch(recs, compression=codec))
    struct.pack_into(">q", buf, R.MAX_TIMESTAMP_OFFSET, -1)
    R._rewrite_crc(buf, 0)
    return bytes(buf)


def produce_raw(c: WireClient, topic: str, batch: bytes, version: int = 9, acks: int = -1,
                transactional_id: str | None = None):
    Rq = api("Produce").request
    pd = Rq.struct("PartitionProduceData")(index=0, records=batch)
    td = Rq.struct("TopicProduceData")(name=topic, partition_data=[pd])
    resp = c.request("Produce", version, transactional_id=transactional_id, acks=acks, timeout_ms=10000,
                     topic_data=[td])
    return resp.responses[0].partition_responses[0]


def list_offsets(c: WireClient, topic: str, timestamp: int, version: int = 8):
    Rq = api("ListOffsets").request
    P = Rq.struct("ListOffsetsPartition")(partition_index=0, current_leader_epoch=-1, timestamp=timestamp)
    T = Rq.struct("ListOffsetsTopic")(name=topic, partitions=[P])
    resp = c.request("ListOffsets", version, replica_id=-1, isolation_level=0, topics=[T])
    p = resp.topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp


def fetch_batches(c: WireClient, topic: str) -> list[RecordBatch]:
    Rq = api("Fetch").request
    ft = Rq.struct("FetchTopic")(topic=topic, partitions=[Rq.struct("FetchPartition")(
        partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])
    resp = c.request("Fetch", 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=8 << 20,
                     isolation_level=0, session_id=0, session_epoch=-1, topics=[ft], forgotten_topics_data=[],
                     rack_id="")
    pd = resp.responses[0].partitions[0]
    assert pd.error_code == 0
    return list(iter_batches(bytes(pd.records)))


@pytest.mark.parametrize("codec", CODECS)
def test_sarama_shaped_batch_then_list_offsets(bootstrap, topic, codec):
    base = int(time.time() * 1000) - 60_000
    with WireClient(bootstrap) as c:
        c.create_topic(topic)
        first = [(b"a", b"x" * 20, [], base + d) for d in (5, 1, 9)]
        second = [(b"b", b"y" * 20, [], base + d) for d in (20, 40, 30)]
        for batch in (first, second):
            pr = produce_raw(c, topic, sarama_shaped(batch, codec))
            assert pr.error_code == 0, pr
        # Kafka's answers: the first record at or after the time; -3 the record with the max
        assert list_offsets(c, topic, 0) == (0, 0, base + 5)
        assert list_offsets(c, topic, base + 6) == (0, 2, base + 9)
        assert list_offsets(c, topic, base + 10) == (0, 3, base + 20)
        assert list_offsets(c, topic, base + 31) == (0, 4, base + 40)
        assert list_offsets(c, topic, base + 41) == (0, -1, -1)
        assert list_offsets(c, topic, -3) == (0, 4, base + 40)
        assert list_offsets(c, topic, -1)[:2] == (0, 6)
        stored = fetch_batches(c, topic)
        assert [b.max_timestamp for b in stored] == [base + 9, base + 40]
        assert all(b.crc_valid() and b.compression == codec for b in stored)


def test_log_append_time_topic(bootstrap, topic):
    with WireClient(bootstrap) as c:
        c.create_topic(topic, config={"message.timestamp.type": "LogAppendTime"})
        before = int(time.time() * 1000)
        pr = produce_raw(c, topic, sarama_shaped([(b"k", b"v", [], 5), (b"k", b"w", [], 6)], R.SNAPPY))
        after = int(time.time() * 1000)
        assert pr.error_code == 0 and before <= pr.log_append_time_ms <= after
        (b,) = fetch_batches(c, topic)
        assert b.timestamp_type == 1 and b.max_timestamp == pr.log_append_time_ms and b.crc_valid()
        assert list_offsets(c, topic, 0) == (0, 0, pr.log_append_time_ms)
        assert list_offsets(c, topic, -3)[2] == pr.log_append_time_ms


def test_timestamp_bounds_refused_with_record_errors(bootstrap, topic):
    with WireClient(bootstrap) as c:
        c.create_topic(topic, config={"message.timestamp.before.max.ms": 3_600_000,
                                      "message.timestamp.after.max.ms": 60_000})
        now = int(time.time() * 1000)
        pr = produce_raw(c, topic, build_batch([(b"k", b"v", [], now), (b"k", b"v", [], now - 7_200_000)]))
        assert pr.error_code == ErrorCode.INVALID_TIMESTAMP
        assert pr.error_message == "One or more records have been rejected due to invalid timestamp"
        assert [e.batch_index for e in pr.record_errors] == [1]
        assert "is out of range" in pr.record_errors[0].batch_index_error_message
        pr = produce_raw(c, topic, build_batch([(b"k", b"v", [], now + 3_600_000)]))
        assert pr.error_code == ErrorCode.INVALID_TIMESTAMP
        assert produce_raw(c, topic, build_batch([(b"k", b"v", [], now)])).error_code == 0
        assert list_offsets(c, topic, -1)[:2] == (0, 1)  # only the good batch is in


def test_client_control_batch_and_base_offset_refused(bootstrap, topic):
    with WireClient(bootstrap) as c:
        c.create_topic(topic)
        marker = R.build_control_batch(True, 1, 0, int(time.time() * 1000))
        # a marker is transactional: without a transactional id Kafka refuses the request first
        assert produce_raw(c, topic, marker).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # with one, Kafka asks the transaction coordinator first (KIP-890 part 1): none is
        # up yet (no __transaction_state: the retriable NOT_ENOUGH_REPLICAS) or it does not
        # know "t"; a producer whose transaction has the partition gets INVALID_RECORD from
        # the validator (test_transactions_verification.py)
        pr = produce_raw(c, topic, marker, transactional_id="t")
        assert pr.error_code in (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        pr = produce_raw(c, topic, build_batch([(b"k", b"v", [], 1)], base_offset=3))
        assert pr.error_code == ErrorCode.INVALID_RECORD
        one = build_batch([(b"k", b"v", [], 1)])
        assert produce_raw(c, topic, one + one).error_code == ErrorCode.INVALID_RECORD
        assert list_offsets(c, topic, -1)[:2] == (0, 0)


def test_keyless_records_on_compacted_topic_confluent(bootstrap, topic):
    from confluent_kafka import KafkaError, Producer

    with WireClient(bootstrap) as c:
        c.create_topic(topic, config={"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all", "retries": 0})
    results = []
    p.produce(topic, value=b"no key", on_delivery=lambda err, msg: results.append(err))
    assert p.flush(30) == 0
    (err,) = results
    assert err is not None and err.code() == KafkaError.INVALID_RECORD
    p.produce(topic, key=b"k", value=b"keyed", on_delivery=lambda err, msg: results.append(err))
    assert p.flush(30) == 0
    assert results[1] is None


def test_keyless_records_on_compacted_topic_kafka_python(bootstrap, topic):
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError

    with WireClient(bootstrap) as c:
        c.create_topic(topic, config={"cleanup.policy": "compact,delete"})
    p = KafkaProducer(bootstrap_servers=bootstrap, retries=0, acks="all")
    try:
        with pytest.raises(InvalidRecordError):
            p.send(topic, value=b"no key", partition=0).get(timeout=30)
        md = p.send(topic, key=b"k", value=b"v", partition=0).get(timeout=30)
        assert md.offset == 0
    finally:
        p.close(timeout=5)


def test_consumer_offsets_is_compacted(kwire_broker):
    from kwire.groups.records import OFFSETS_TOPIC

    with kwire_broker.client() as c:   # created on a group's first FindCoordinator, as in Kafka
        assert c.request("FindCoordinator", 3, key="compacted", key_type=0).error_code == 0
    cfg = kwire_broker.broker.logs.get(OFFSETS_TOPIC, 0).config
    assert cfg.compact and not cfg.delete
