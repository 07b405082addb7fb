"""The transaction coordinator's APIs on the wire (kwire's own client, no data plane needed):
version rules (PRODUCER_FENCED below v2/v4 is INVALID_PRODUCER_EPOCH), AddPartitionsToTxn v0-3
and the batched, verify_only v4-5 a partition leader sends, AddOffsetsToTxn, EndTxn's state
errors, DescribeTransactions and ListTransactions, and the coordinator's state surviving a
restart (loaded from __transaction_state)."""
from __future__ import annotations

import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

E = ErrorCode
APT = api("AddPartitionsToTxn").request


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"transaction.state.log.num.partitions": 3, "transaction.max.timeout.ms": 120000,
                           "kwire.emulate.kafka.version": "4.1"}) as b:   # ListTransactions v2 is Kafka 4.1's
        b.create_topic("tt", 3)
        yield b


def _tid() -> str:
    return f"w-{uuid.uuid4().hex[:8]}"


def init(c, tid, version=4, timeout_ms=60000, **kw):
    wait_until(lambda: c.request("FindCoordinator", 4, key_type=1, coordinator_keys=[tid]).coordinators[0].error_code == 0)
    fields = dict(transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=-1, producer_epoch=-1)
    fields.update(kw)
    for _ in range(100):
        r = c.request("InitProducerId", version, **fields)
        if r.error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS):
            return r
    return r


def add_v3(c, tid, pid, epoch, parts, version=3):
    T = APT.struct("AddPartitionsToTxnTopic")
    r = c.request("AddPartitionsToTxn", version, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[T(name=t, partitions=ps) for t, ps in parts.items()])
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def test_add_partitions_and_end_versions(broker):
    tid = _tid()
    with WireClient(broker.bootstrap_servers) as c:
        r = init(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        assert (r.error_code, epoch) == (0, 0)
        assert init(c, tid, timeout_ms=120001).error_code == E.INVALID_TRANSACTION_TIMEOUT
        # an unknown topic fails the whole request; nothing is added
        assert add_v3(c, tid, pid, 0, {"tt": [0], "nope": [1], }) == \
            {("tt", 0): E.OPERATION_NOT_ATTEMPTED, ("nope", 1): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert add_v3(c, tid, pid, 0, {"tt": [9]}) == {("tt", 9): E.UNKNOWN_TOPIC_OR_PARTITION}
        assert add_v3(c, tid, pid, 0, {"tt": [0, 1]}) == {("tt", 0): 0, ("tt", 1): 0}
        # a stale epoch: PRODUCER_FENCED from v2 on, INVALID_PRODUCER_EPOCH before
        assert add_v3(c, tid, pid, 5, {"tt": [2]}, version=2) == {("tt", 2): E.PRODUCER_FENCED}
        assert add_v3(c, tid, pid, 5, {"tt": [2]}, version=1) == {("tt", 2): E.INVALID_PRODUCER_EPOCH}
        assert add_v3(c, tid, pid + 1000, 0, {"tt": [2]}) == {("tt", 2): E.INVALID_PRODUCER_ID_MAPPING}
        r = c.request("AddOffsetsToTxn", 3, transactional_id=tid, producer_id=pid, producer_epoch=0, group_id="grp")
        assert r.error_code == 0
        d = c.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]
        parts = {(t.topic, p) for t in d.topics for p in t.partitions}
        assert ("tt", 0) in parts and ("tt", 1) in parts and any(t == "__consumer_offsets" for t, _ in parts)
        assert d.transaction_state == "Ongoing" and d.transaction_start_time_ms > 0
        for v, code in ((0, E.INVALID_PRODUCER_EPOCH), (1, E.INVALID_PRODUCER_EPOCH), (2, E.PRODUCER_FENCED),
                        (4, E.PRODUCER_FENCED)):
            r = c.request("EndTxn", v, transactional_id=tid, producer_id=pid, producer_epoch=3, committed=True)
            assert r.error_code == code, v
        r = c.request("EndTxn", 3, transactional_id=tid, producer_id=pid, producer_epoch=0, committed=False)
        assert r.error_code == 0
        r = c.request("EndTxn", 3, transactional_id=tid, producer_id=pid, producer_epoch=0, committed=True)
        assert r.error_code in (E.CONCURRENT_TRANSACTIONS, E.INVALID_TXN_STATE)
        # a new producer InitProducerId waits for the abort (its markers) to complete
        r = c.request("InitProducerId", 0, transactional_id=tid, transaction_timeout_ms=1000)
        assert r.error_code in (0, E.CONCURRENT_TRANSACTIONS)


def test_empty_transactional_ids(broker):
    with WireClient(broker.bootstrap_servers) as c:
        assert c.request("InitProducerId", 4, transactional_id="", transaction_timeout_ms=1000,
                         producer_id=-1, producer_epoch=-1).error_code == E.INVALID_REQUEST
        assert c.request("EndTxn", 3, transactional_id="x-unknown", producer_id=1, producer_epoch=0,
                         committed=True).error_code in (E.INVALID_PRODUCER_ID_MAPPING, E.NOT_COORDINATOR)


def test_batched_verify_only_as_a_partition_leader_asks(broker):
    tid, other = _tid(), _tid()
    with WireClient(broker.bootstrap_servers) as c:
        r = init(c, tid)
        init(c, other)
        pid = r.producer_id
        assert add_v3(c, tid, pid, 0, {"tt": [0]}) == {("tt", 0): 0}
        T = APT.struct("AddPartitionsToTxnTopic")
        X = APT.struct("AddPartitionsToTxnTransaction")

        def verify(version, epoch=0):
            r = c.request("AddPartitionsToTxn", version, transactions=[
                X(transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=True,
                  topics=[T(name="tt", partitions=[0, 1])])])
            assert r.error_code == 0
            (res,) = r.results_by_transaction
            return {(t.name, p.partition_index): p.partition_error_code
                    for t in res.topic_results for p in t.results_by_partition}

        assert verify(5) == {("tt", 0): 0, ("tt", 1): E.TRANSACTION_ABORTABLE}
        assert verify(4) == {("tt", 0): 0, ("tt", 1): E.INVALID_TXN_STATE}
        assert verify(5, epoch=7) == {("tt", 0): E.PRODUCER_FENCED, ("tt", 1): E.PRODUCER_FENCED}
        # batched add (not verify) of two transactions at once
        r = c.request("AddPartitionsToTxn", 5, transactions=[
            X(transactional_id=tid, producer_id=pid, producer_epoch=0, verify_only=False,
              topics=[T(name="tt", partitions=[1])]),
            X(transactional_id="", producer_id=pid, producer_epoch=0, verify_only=False,
              topics=[T(name="tt", partitions=[2])])])
        codes = {res.transactional_id: [p.partition_error_code for t in res.topic_results for p in t.results_by_partition]
                 for res in r.results_by_transaction}
        assert codes == {tid: [0], "": [E.INVALID_REQUEST]}
        r = c.request("AddPartitionsToTxn", 4, transactions=[
            X(transactional_id=tid, producer_id=pid, producer_epoch=0, verify_only=True, topics=[]),
            X(transactional_id=tid, producer_id=pid, producer_epoch=0, verify_only=True, topics=[])])
        assert r.error_code == E.INVALID_REQUEST


def test_list_transactions_filters(broker):
    tid = _tid()
    with WireClient(broker.bootstrap_servers) as c:
        r = init(c, tid)
        add_v3(c, tid, r.producer_id, 0, {"tt": [2]})
        lt = c.request("ListTransactions", 2, state_filters=["Ongoing", "Nope"], producer_id_filters=[],
                       duration_filter=-1, transactional_id_pattern=tid[:4] + ".*")
        assert lt.error_code == 0 and lt.unknown_state_filters == ["Nope"]
        assert (tid, r.producer_id, "Ongoing") in {(x.transactional_id, x.producer_id, x.transaction_state)
                                                   for x in lt.transaction_states}
        lt = c.request("ListTransactions", 0, state_filters=["Empty"], producer_id_filters=[r.producer_id])
        assert lt.transaction_states == []
        lt = c.request("ListTransactions", 2, state_filters=[], producer_id_filters=[], duration_filter=-1,
                       transactional_id_pattern="(")
        assert lt.error_code == E.INVALID_REGULAR_EXPRESSION


def test_coordinator_state_survives_a_restart(tmp_path):
    tid = "restart-me"
    with Broker(data_dir=str(tmp_path), overrides={"transaction.state.log.num.partitions": 2}) as b:
        b.create_topic("tr", 2)
        with WireClient(b.bootstrap_servers) as c:
            r = init(c, tid)
            r = init(c, tid)        # epoch 1
            assert add_v3(c, tid, r.producer_id, 1, {"tr": [0, 1]}) == {("tr", 0): 0, ("tr", 1): 0}
        b.restart()
        with WireClient(b.bootstrap_servers) as c:
            def described():
                d = c.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]
                return d if d.error_code == 0 else None
            d = wait_until(described)
            assert (d.transaction_state, d.producer_id, d.producer_epoch) == ("Ongoing", r.producer_id, 1)
            assert sorted((t.topic, p) for t in d.topics for p in t.partitions) == [("tr", 0), ("tr", 1)]
            # the old producer is fenced by a new one; its transaction is aborted first
            r2 = c.request("InitProducerId", 4, transactional_id=tid, transaction_timeout_ms=60000,
                           producer_id=-1, producer_epoch=-1)
            assert r2.error_code == E.CONCURRENT_TRANSACTIONS
            assert add_v3(c, tid, r.producer_id, 1, {"tr": [0]}) == {("tr", 0): E.PRODUCER_FENCED}
