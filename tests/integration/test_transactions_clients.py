"""Transactional producers of stock clients against a running kwire, end to end: the
transaction coordinator (FindCoordinator key type 1, InitProducerId, AddPartitionsToTxn,
EndTxn, its WriteTxnMarkers to the partition leaders) with the data plane (transactional
batches, markers, read_committed).

Each test runs once per client (confluent-kafka, kafka-python, aiokafka; the producer and the
consumer of the same client, see txn_clients.py): commit and abort, abort by the coordinator
after transaction.timeout.ms, fencing by a second producer with the same transactional.id.
A read_committed consumer sees exactly the committed records, in order per partition; a
read_uncommitted one sees every record, aborted ones included, in the same order."""
from __future__ import annotations

import uuid

import pytest

from kwire.testing import Broker
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until
from tests.integration.txn_clients import CLIENTS, END, Fenced

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"transaction.state.log.num.partitions": 5,
                           "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200,
                           "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture(params=sorted(CLIENTS))
def client(request):
    return request.param


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(broker, partitions=2) -> str:
    t = _name("txt")
    broker.create_topic(t, partitions)
    return t


def _state(bs, tid):
    with WireClient(bs) as c:
        return c.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]


def _end(broker, topic, partitions=2):
    """Every transaction is decided: a plain record marks the end of each partition."""
    for p in range(partitions):
        broker.produce(topic, [END], partition=p)


def _producer(client, broker, tid, timeout_ms=None):
    make, _ = CLIENTS[client]
    p = make(broker.bootstrap_servers, tid, timeout_ms)
    p.init()
    return p


def _read(client, broker, topic, isolation, partitions=2):
    _, read = CLIENTS[client]
    return [(part, v.decode()) for part, v in read(broker.bootstrap_servers, topic, partitions, isolation)]


def _per_partition(records, partition):
    return [v for part, v in records if part == partition]


def test_commit_and_abort(client, broker):
    topic, tid = _topic(broker), _name("tx")
    p = _producer(client, broker, tid)
    try:
        p.begin()
        for i in range(10):
            p.send(topic, f"c1-{i}".encode(), i % 2)
        p.commit()
        p.begin()
        for i in range(4):
            p.send(topic, f"a-{i}".encode(), i % 2)
        p.flush()                      # the aborted records are in the log, then the abort marker
        p.abort()
        p.begin()
        p.send(topic, b"c2-0", 0)
        p.commit()
        # EndTxn answers once PrepareCommit is durable; the markers follow
        wait_until(lambda: _state(broker.bootstrap_servers, tid).transaction_state == "CompleteCommit",
                   timeout=20, message="the commit markers are written")
    finally:
        p.close()
    _end(broker, topic)
    committed = _read(client, broker, topic, "read_committed")
    assert _per_partition(committed, 0) == ["c1-0", "c1-2", "c1-4", "c1-6", "c1-8", "c2-0"]
    assert _per_partition(committed, 1) == ["c1-1", "c1-3", "c1-5", "c1-7", "c1-9"]
    everything = _read(client, broker, topic, "read_uncommitted")
    assert _per_partition(everything, 0) == ["c1-0", "c1-2", "c1-4", "c1-6", "c1-8", "a-0", "a-2", "c2-0"]
    assert _per_partition(everything, 1) == ["c1-1", "c1-3", "c1-5", "c1-7", "c1-9", "a-1", "a-3"]


def test_second_producer_fences_the_first_and_aborts_its_transaction(client, broker):
    bs, topic, tid = broker.bootstrap_servers, _topic(broker), _name("fence")
    p1 = _producer(client, broker, tid)
    p2 = None
    try:
        p1.begin()
        p1.send(topic, b"zombie", 0)
        p1.flush()
        assert _state(bs, tid).transaction_state == "Ongoing"
        epoch = _state(bs, tid).producer_epoch
        p2 = _producer(client, broker, tid)     # aborts p1's transaction, bumps the epoch
        assert _state(bs, tid).producer_epoch > epoch
        p2.begin()
        p2.send(topic, b"fresh", 1)
        p2.commit()
        with pytest.raises(Fenced):
            p1.commit()
    finally:
        p1.close()
        if p2 is not None:
            p2.close()
    _end(broker, topic)
    assert _read(client, broker, topic, "read_committed") == [(1, "fresh")]
    assert sorted(_read(client, broker, topic, "read_uncommitted")) == [(0, "zombie"), (1, "fresh")]


def test_stalled_transaction_is_aborted_after_its_timeout(client, broker):
    bs, topic, tid = broker.bootstrap_servers, _topic(broker), _name("stall")
    p = _producer(client, broker, tid, timeout_ms=1000)
    try:
        p.begin()
        p.send(topic, b"stalled", 1)
        p.flush()
        epoch = _state(bs, tid).producer_epoch
        wait_until(lambda: _state(bs, tid).transaction_state == "CompleteAbort", timeout=20,
                   message="the coordinator aborts the stalled transaction")
        assert _state(bs, tid).producer_epoch == epoch + 1    # the stalled producer is fenced
        with pytest.raises(Fenced):
            p.commit()
    finally:
        p.close()
    # the LSO moved past the aborted records: later committed data is readable
    p2 = _producer(client, broker, tid)
    try:
        p2.begin()
        p2.send(topic, b"after", 1)
        p2.commit()
    finally:
        p2.close()
    _end(broker, topic)
    assert _read(client, broker, topic, "read_committed") == [(1, "after")]
    assert _read(client, broker, topic, "read_uncommitted") == [(1, "stalled"), (1, "after")]
