"""Transactional producers of stock clients against a running kwire, end to end: the
transaction coordinator (FindCoordinator key type 1, InitProducerId, AddPartitionsToTxn,
EndTxn, its WriteTxnMarkers to the partition leaders) with the data plane (transactional
batches, markers, read_committed). confluent-kafka and kafka-python producers: commit, abort,
abort by the coordinator after transaction.timeout.ms, fencing by a second producer with the
same transactional.id; read_committed consumers see only committed records, in order."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

import kwire.handlers as H
from kwire.testing import Broker
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.skipif("write_txn_markers" not in H._MODULES,
                                reason="needs the data plane (txl): transactional batches and WriteTxnMarkers")


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"transaction.state.log.num.partitions": 5,
                           "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
                           "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(broker, partitions=2) -> str:
    t = _name("txt")
    broker.create_topic(t, partitions)
    return t


def _read(bs, topic, isolation, expect, partitions=2, timeout=15.0):
    c = Consumer({"bootstrap.servers": bs, "group.id": _name("g"), "isolation.level": isolation,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expect and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append((m.partition(), m.value().decode()))
    # read a little longer: nothing more may come
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        m = c.poll(0.1)
        if m is not None and not m.error():
            got.append((m.partition(), m.value().decode()))
    c.close()
    return got


def _state(bs, tid):
    with WireClient(bs) as c:
        return c.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]


def test_confluent_commit_and_abort(broker):
    bs, topic, tid = broker.bootstrap_servers, _topic(broker), _name("tx")
    p = Producer({"bootstrap.servers": bs, "transactional.id": tid, "linger.ms": 5})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"c1-{i}".encode(), partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, value=f"a-{i}".encode(), partition=i % 2)
    p.flush(10)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, value=b"c2-0", partition=0)
    p.commit_transaction(30)
    committed = _read(bs, topic, "read_committed", 11)
    assert sorted(v for _, v in committed) == sorted([f"c1-{i}" for i in range(10)] + ["c2-0"])
    assert [v for part, v in committed if part == 0] == ["c1-0", "c1-2", "c1-4", "c1-6", "c1-8", "c2-0"]
    everything = _read(bs, topic, "read_uncommitted", 15)
    assert len(everything) == 15 and {v for _, v in everything} >= {f"a-{i}" for i in range(4)}
    wait_until(lambda: _state(bs, tid).transaction_state == "CompleteCommit", timeout=10)


def test_kafka_python_commit_and_abort(broker):
    from kafka import KafkaProducer

    bs, topic, tid = broker.bootstrap_servers, _topic(broker, 1), _name("kp")
    p = KafkaProducer(bootstrap_servers=bs, transactional_id=tid)
    p.init_transactions()
    p.begin_transaction()
    for i in range(5):
        p.send(topic, value=f"yes-{i}".encode(), partition=0)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, value=f"no-{i}".encode(), partition=0)
    p.flush()
    p.abort_transaction()
    p.close()
    assert _read(bs, topic, "read_committed", 5, partitions=1) == [(0, f"yes-{i}") for i in range(5)]


def test_second_producer_fences_the_first_and_aborts_its_transaction(broker):
    bs, topic, tid = broker.bootstrap_servers, _topic(broker), _name("fence")
    p1 = Producer({"bootstrap.servers": bs, "transactional.id": tid})
    p1.init_transactions(30)
    p1.begin_transaction()
    p1.produce(topic, value=b"zombie", partition=0)
    p1.flush(10)
    assert _state(bs, tid).transaction_state == "Ongoing"
    p2 = Producer({"bootstrap.servers": bs, "transactional.id": tid})
    p2.init_transactions(30)           # aborts p1's transaction, bumps the epoch
    p2.begin_transaction()
    p2.produce(topic, value=b"fresh", partition=0)
    p2.commit_transaction(30)
    with pytest.raises(KafkaException) as info:
        p1.commit_transaction(10)
    assert info.value.args[0].fatal() or "fenced" in str(info.value).lower()
    assert _read(bs, topic, "read_committed", 1) == [(0, "fresh")]


def test_stalled_transaction_is_aborted_after_its_timeout(broker):
    bs, topic, tid = broker.bootstrap_servers, _topic(broker), _name("stall")
    p = Producer({"bootstrap.servers": bs, "transactional.id": tid, "transaction.timeout.ms": 1000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"stalled", partition=1)
    p.flush(10)
    wait_until(lambda: _state(bs, tid).transaction_state == "CompleteAbort", timeout=10)
    assert _state(bs, tid).producer_epoch == 1    # the stalled producer is fenced
    with pytest.raises(KafkaException):
        p.commit_transaction(10)
    assert _read(bs, topic, "read_committed", 1, timeout=2) == []
    # the LSO moved past the aborted records: later committed data is readable
    p2 = Producer({"bootstrap.servers": bs, "transactional.id": tid})
    p2.init_transactions(30)
    p2.begin_transaction()
    p2.produce(topic, value=b"after", partition=1)
    p2.commit_transaction(30)
    assert _read(bs, topic, "read_committed", 1) == [(1, "after")]
