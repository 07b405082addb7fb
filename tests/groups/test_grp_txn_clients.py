"""Stock clients' consume-transform-produce against a running kwire: a transactional producer
sends a consumer group's offsets with its transaction (sendOffsetsToTransaction, i.e.
AddOffsetsToTxn + TxnOffsetCommit v3 with the consumer's member id and generation); the
group's committed offsets move only when the transaction commits, and stay where they were
when it aborts; meanwhile OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT.
"""
from __future__ import annotations

import time

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing.broker import Broker

pytestmark = pytest.mark.slow

E = ErrorCode
TIMEOUT = 30


@pytest.fixture
def kw():
    b = Broker(overrides={"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
                          "transaction.state.log.num.partitions": 3}).start()
    try:
        b.create_topic("in", 1)
        b.create_topic("out", 1)
        b.produce("in", [b"a", b"b", b"c"])
        yield b
    finally:
        b.cleanup()


def stable_fetch(b: Broker, group: str) -> tuple[int, int]:
    """(error, committed offset) of in-0 for ``group``, asked with require_stable."""
    Req = api("OffsetFetch").request
    with b.client() as c:
        r = c.request("OffsetFetch", 7, group_id=group, require_stable=True, topics=[
            Req.struct("OffsetFetchRequestTopic")(name="in", partition_indexes=[0])])
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


def read_committed(b: Broker, topic: str, n: int) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": f"reader-{topic}",
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                if len(out) >= n:
                    break
                continue
            out.append(m.value())
    finally:
        c.close()
    return out


def test_confluent_offsets_move_with_the_transaction(kw):
    from confluent_kafka import Consumer, Producer, TopicPartition

    bs = kw.bootstrap_servers
    c = Consumer({"bootstrap.servers": bs, "group.id": "eos", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe(["in"])
    got = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < 3 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    assert [m.value() for m in got] == [b"a", b"b", b"c"]
    p = Producer({"bootstrap.servers": bs, "transactional.id": "eos-app", "transaction.timeout.ms": 20_000})
    try:
        p.init_transactions(TIMEOUT)
        p.begin_transaction()
        for m in got:
            p.produce("out", m.value().upper())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), TIMEOUT)
        assert stable_fetch(kw, "eos") == (E.UNSTABLE_OFFSET_COMMIT, -1)
        p.commit_transaction(TIMEOUT)
        assert [tp.offset for tp in c.committed([TopicPartition("in", 0)], TIMEOUT)] == [3]
        assert stable_fetch(kw, "eos") == (E.NONE, 3)
        # an aborted transaction's offsets vanish
        p.begin_transaction()
        p.produce("out", b"never")
        p.send_offsets_to_transaction([TopicPartition("in", 0, 1)], c.consumer_group_metadata(), TIMEOUT)
        p.abort_transaction(TIMEOUT)
        assert [tp.offset for tp in c.committed([TopicPartition("in", 0)], TIMEOUT)] == [3]
    finally:
        c.close()
    assert read_committed(kw, "out", 3) == [b"A", b"B", b"C"]


def test_kafka_python_offsets_move_with_the_transaction(kw):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    bs = kw.bootstrap_servers
    tp = TopicPartition("in", 0)
    c = KafkaConsumer("in", bootstrap_servers=bs, group_id="eos-kp", enable_auto_commit=False,
                      auto_offset_reset="earliest", isolation_level="read_committed")
    p = KafkaProducer(bootstrap_servers=bs, transactional_id="eos-kp-app")
    try:
        got = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < 3 and time.monotonic() < deadline:
            for recs in c.poll(500).values():
                got.extend(recs)
        assert [r.value for r in got] == [b"a", b"b", b"c"]
        p.init_transactions()
        p.begin_transaction()
        for r in got:
            p.send("out", r.value.upper())
        p.send_offsets_to_transaction({tp: OffsetAndMetadata(3, "", -1)}, c.group_metadata())
        assert stable_fetch(kw, "eos-kp") == (E.UNSTABLE_OFFSET_COMMIT, -1)
        p.commit_transaction()
        assert c.committed(tp) == 3
        p.begin_transaction()
        p.send_offsets_to_transaction({tp: OffsetAndMetadata(1, "", -1)}, c.group_metadata())
        p.abort_transaction()
        assert c.committed(tp) == 3
    finally:
        c.close()
        p.close()
    assert read_committed(kw, "out", 3) == [b"A", b"B", b"C"]
