"""Transaction version 2 (KIP-890 part 2) on the wire, without a JDK (the Java client's run is
tests/transactions/test_tv2_java.py): ApiVersions at levels 1 and 2, a producer that never
sends AddPartitionsToTxn (Produce v12 adds the partition), EndTxn v5's bumped epoch, the next
transaction's batch at that epoch while the markers are written, the old epoch refused, the
read_committed view; TxnOffsetCommit v5 adding the offsets partition."""
from __future__ import annotations

import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until
from tests.integration.test_transactions_verification import kp_batch, offsets, produce1

pytestmark = pytest.mark.slow

E = ErrorCode


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"transaction.version": 2, "transaction.state.log.num.partitions": 2,
                           "group.initial.rebalance.delay.ms": 0,
                           "kwire.emulate.kafka.version": "4.0"}) as b:   # transaction version 2 is Kafka 4's
        yield b


def _versions(c) -> tuple[dict, object]:
    r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    return {k.api_key: k.max_version for k in r.api_keys}, r


def test_api_versions_finalize_the_feature_at_level_2_only(broker):
    with WireClient(broker.bootstrap_servers) as c:
        maxes, r = _versions(c)
    assert (maxes[0], maxes[26], maxes[28]) == (12, 5, 5)
    assert [(f.name, f.min_version_level, f.max_version_level) for f in r.finalized_features] == \
        [("transaction.version", 2, 2)]
    assert [(f.name, f.min_version, f.max_version) for f in r.supported_features] == [("transaction.version", 0, 2)]
    with Broker(overrides={"transaction.version": 1}) as b1, WireClient(b1.bootstrap_servers) as c:
        maxes, r = _versions(c)
    assert (maxes[0], maxes[26], maxes[28]) == (11, 4, 4)
    # (share.version is finalized beside it under 4.1+, the default 4.3's)
    assert "transaction.version" not in {f.name for f in r.finalized_features} | {f.name for f in r.supported_features}


def _init(c, tid):
    wait_until(lambda: c.request("FindCoordinator", 4, key_type=1, coordinator_keys=[tid]).coordinators[0]
               .error_code == 0)
    r = wait_until(lambda: (x := c.request("InitProducerId", 4, transactional_id=tid, transaction_timeout_ms=60000,
                                           producer_id=-1, producer_epoch=-1)).error_code == 0 and x)
    return r.producer_id, r.producer_epoch


def _end(c, tid, pid, epoch, committed):
    r = c.request("EndTxn", 5, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=committed)
    return r.error_code, r.producer_id, r.producer_epoch


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(broker):
    tid = f"v2-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c:
        topic = f"v2t-{uuid.uuid4().hex[:8]}"
        c.create_topic(topic, 1)
        pid, epoch = _init(c, tid)
        # no AddPartitionsToTxn: v11 is refused (verification: not in the transaction), v12 adds
        assert produce1(c, tid, topic, 0, kp_batch([b"x"], pid, epoch, 0), version=11)[0] == \
            E.TRANSACTION_ABORTABLE
        assert produce1(c, tid, topic, 0, kp_batch([b"a0", b"a1"], pid, epoch, 0), version=12) == (0, 0)
        coord = broker.broker.txn_edge.coordinator
        assert coord.describe(tid).partitions == ((topic, 0),)
        assert _end(c, tid, pid, epoch, True) == (0, pid, epoch + 1)
        # right away, at the new epoch from sequence 0: the marker of the last one (epoch + 1)
        # is waited for, and this batch opens the next transaction
        assert produce1(c, tid, topic, 0, kp_batch([b"b0"], pid, epoch + 1, 0), version=12) == (0, 3)
        assert produce1(c, tid, topic, 0, kp_batch([b"z"], pid, epoch, 2), version=12)[0] == \
            E.INVALID_PRODUCER_EPOCH
        assert _end(c, tid, pid, epoch + 1, False) == (0, pid, epoch + 2)
        assert _end(c, tid, pid, epoch + 1, False) == (0, pid, epoch + 2)   # a retry: answered again
        assert produce1(c, tid, topic, 0, kp_batch([b"c0"], pid, epoch + 2, 0), version=12) == (0, 5)
        assert _end(c, tid, pid, epoch + 2, True) == (0, pid, epoch + 3)
        # a0 a1 | commit marker | b0 | abort marker | c0 | commit marker: all stable
        wait_until(lambda: offsets(c, topic) == (7, 7))
    d = broker.broker.txn_edge.coordinator.describe(tid)
    assert (d.state, d.producer_epoch) == ("CompleteCommit", epoch + 3)


def test_txn_offset_commit_v5_adds_the_offsets_partition(broker):
    tid = f"v2o-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c:
        topic = f"v2o-{uuid.uuid4().hex[:8]}"
        c.create_topic(topic, 1)
        pid, epoch = _init(c, tid)
        wait_until(lambda: c.request("FindCoordinator", 4, key_type=0, coordinator_keys=[group]).coordinators[0]
                   .error_code == 0)
        R = api("TxnOffsetCommit").request

        def commit(version, offset):
            r = c.request("TxnOffsetCommit", version, transactional_id=tid, group_id=group, producer_id=pid,
                          producer_epoch=epoch, generation_id=-1, member_id="", group_instance_id=None,
                          topics=[R.struct("TxnOffsetCommitRequestTopic")(name=topic, partitions=[
                              R.struct("TxnOffsetCommitRequestPartition")(
                                  partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                                  committed_metadata="")])])
            return r.topics[0].partitions[0].error_code

        assert wait_until(lambda: commit(5, 42) == 0)
        coord = broker.broker.txn_edge.coordinator
        assert [tp[0] for tp in coord.describe(tid).partitions] == ["__consumer_offsets"]
        assert _end(c, tid, pid, epoch, True) == (0, pid, epoch + 1)
        OF = api("OffsetFetch").request

        def fetched():
            r = c.request("OffsetFetch", 7, group_id=group, require_stable=True, topics=[
                OF.struct("OffsetFetchRequestTopic")(name=topic, partition_indexes=[0])])
            p = r.topics[0].partitions[0]
            return p.error_code == 0 and p.committed_offset
        assert wait_until(lambda: fetched() == 42)


def test_next_transaction_waits_for_the_last_ones_marker_and_keeps_its_guard(broker, monkeypatch):
    """The next transaction's first batch (new epoch) arrives while the last one's markers are
    held back: the leader takes its verification guard, the add waits for the completion, the
    marker (carrying the same bumped epoch) leaves the guard alone, and the batch goes in."""
    import threading

    import trio

    coord = broker.broker.txn_edge.coordinator
    tid = f"v2w-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c, WireClient(broker.bootstrap_servers) as c2:
        topic = f"v2w-{uuid.uuid4().hex[:8]}"
        c.create_topic(topic, 1)
        pid, epoch = _init(c, tid)
        assert produce1(c, tid, topic, 0, kp_batch([b"a"], pid, epoch, 0), version=12) == (0, 0)
        held = []
        send = coord.send_markers
        monkeypatch.setattr(coord, "send_markers", held.append)
        assert _end(c, tid, pid, epoch, True) == (0, pid, epoch + 1)
        out = []
        t = threading.Thread(target=lambda: out.append(
            produce1(c2, tid, topic, 0, kp_batch([b"b"], pid, epoch + 1, 0), version=12)))
        t.start()
        # the produce waits for the last transaction to complete (up to 100 ms): release its markers then
        wait_until(lambda: tid in broker.broker.txn_edge._completions, timeout=5, interval=0.002)
        (job,) = held
        trio.from_thread.run_sync(lambda: send(job), trio_token=broker._trio_token)
        t.join(10)
        assert out == [(0, 2)]   # a | commit marker | b
