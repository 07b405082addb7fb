"""TxnOffsetCommit and OffsetFetch require_stable against an in-process broker, over the wire.

The transaction marker is written the way the WriteTxnMarkers handler writes it: a control
batch appended to the group's ``__consumer_offsets`` partition through the replica manager
(acks=all), then ``broker.groups.complete_transaction``.
"""
from __future__ import annotations

import pytest
import trio

from kwire.codec.apis import api
from kwire.codec.records import build_control_batch
from kwire.errors import ErrorCode
from kwire.groups.records import OFFSETS_TOPIC
from kwire.testing.broker import Broker

pytestmark = pytest.mark.slow

E = ErrorCode


@pytest.fixture
def kw():
    # these tests commit with an idempotent producer id and write the markers by hand, no
    # transaction coordinator involved: KIP-890 verification, which would refuse such a producer
    # (INVALID_PRODUCER_ID_MAPPING, as Kafka), is off here and tested in test_txn_offset_verification
    b = Broker(overrides={"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
                          "offsets.commit.timeout.ms": 2000,
                          "transaction.partition.verification.enable": "false"}).start()
    try:
        b.create_topic("t", 2)
        with b.client() as c:   # a group's first FindCoordinator creates __consumer_offsets, as in Kafka
            assert c.request("FindCoordinator", 3, key="g", key_type=0).error_code == E.NONE
        yield b
    finally:
        b.cleanup()


def producer_id(b: Broker) -> tuple[int, int]:
    with b.client() as c:
        r = c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=60_000,
                      producer_id=-1, producer_epoch=-1)
    assert r.error_code == E.NONE
    return r.producer_id, r.producer_epoch


def txn_commit(b: Broker, group: str, pid: int, epoch: int, offsets: dict, *, version: int = 3,
               topic: str = "t", **kw) -> dict:
    """{partition: error} of a TxnOffsetCommit of ``offsets`` {partition: offset}."""
    Req = api("TxnOffsetCommit").request
    T = Req.struct("TxnOffsetCommitRequestTopic")
    P = Req.struct("TxnOffsetCommitRequestPartition")
    fields = dict(transactional_id="txn-app", group_id=group, producer_id=pid, producer_epoch=epoch,
                  topics=[T(name=topic, partitions=[
                      P(partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                        committed_metadata="m") for p, o in offsets.items()])])
    if version >= 3:
        fields.update(generation_id=-1, member_id="", group_instance_id=None)
        fields.update(kw)
    with b.client() as c:
        r = c.request("TxnOffsetCommit", version, **fields)
    assert [t.name for t in r.topics] == [topic]
    return {p.partition_index: p.error_code for p in r.topics[0].partitions}


def fetch(b: Broker, group: str, *, stable: bool, version: int = 7) -> dict:
    """{partition: (error, committed offset)} of t-0 and t-1."""
    Req = api("OffsetFetch").request
    with b.client() as c:
        if version < 8:
            r = c.request("OffsetFetch", version, group_id=group, require_stable=stable, topics=[
                Req.struct("OffsetFetchRequestTopic")(name="t", partition_indexes=[0, 1])])
            assert r.error_code == E.NONE
            parts = r.topics[0].partitions
        else:
            G = Req.struct("OffsetFetchRequestGroup")
            T = Req.struct("OffsetFetchRequestTopics")
            r = c.request("OffsetFetch", version, require_stable=stable, groups=[
                G(group_id=group, member_id=None, member_epoch=-1,
                  topics=[T(name="t", partition_indexes=[0, 1])])])
            assert r.groups[0].error_code == E.NONE
            parts = r.groups[0].topics[0].partitions
    return {p.partition_index: (p.error_code, p.committed_offset) for p in parts}


def write_marker(b: Broker, group: str, pid: int, epoch: int, committed: bool) -> None:
    """What WriteTxnMarkers does for the group's __consumer_offsets partition."""
    async def write():
        kb = b.broker
        part = kb.groups.partition_for(group)
        rm = kb.replica_manager
        now = kb.clock.now_ms()
        res = rm.append(OFFSETS_TOPIC, part, bytearray(build_control_batch(committed, pid, epoch, now)),
                        now, acks=-1).result()
        assert await res.wait(10_000) == E.NONE
        await kb.groups.complete_transaction(part, pid, epoch, committed, res.base_offset)
    trio.from_thread.run(write, trio_token=b._trio_token)


UNSTABLE = (E.UNSTABLE_OFFSET_COMMIT, -1)
NOTHING = (E.NONE, -1)


def test_api_versions_and_errors_that_need_no_write(kw):
    with kw.client() as c:
        r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    served = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert served[28] == (0, 5)   # v5 at transaction version 2, a 4.x broker's default
    pid, epoch = producer_id(kw)
    # a topic or partition that does not exist
    assert txn_commit(kw, "app", pid, epoch, {0: 1}, topic="nope") == {0: E.UNKNOWN_TOPIC_OR_PARTITION}
    assert txn_commit(kw, "app", pid, epoch, {0: 1, 5: 1}, version=0)[5] == E.UNKNOWN_TOPIC_OR_PARTITION
    # the empty group id; no producer
    assert txn_commit(kw, "", pid, epoch, {0: 1}) == {0: E.INVALID_GROUP_ID}
    assert txn_commit(kw, "app", -1, -1, {0: 1}) == {0: E.INVALID_PRODUCER_ID_MAPPING}
    # v3: a generation of a group the coordinator does not know
    assert txn_commit(kw, "new", pid, epoch, {0: 1}, generation_id=4, member_id="m") == {0: E.ILLEGAL_GENERATION}
    assert "new" not in kw.broker.groups.groups
    assert fetch(kw, "new", stable=True) == {0: NOTHING, 1: NOTHING}


def test_offsets_are_pending_until_the_commit_marker(kw):
    pid, epoch = producer_id(kw)
    assert txn_commit(kw, "app", pid, epoch, {0: 10, 1: 11}) == {0: E.NONE, 1: E.NONE}
    for v in (7, 8, 9):
        assert fetch(kw, "app", stable=True, version=v) == {0: UNSTABLE, 1: UNSTABLE}
    assert fetch(kw, "app", stable=False) == {0: NOTHING, 1: NOTHING}
    write_marker(kw, "app", pid, epoch, True)
    assert fetch(kw, "app", stable=True) == {0: (E.NONE, 10), 1: (E.NONE, 11)}
    # the next transaction aborts: its offsets vanish, the committed ones stay
    assert txn_commit(kw, "app", pid, epoch, {0: 20}, version=0) == {0: E.NONE}
    assert fetch(kw, "app", stable=True) == {0: UNSTABLE, 1: (E.NONE, 11)}
    write_marker(kw, "app", pid, epoch, False)
    assert fetch(kw, "app", stable=True) == {0: (E.NONE, 10), 1: (E.NONE, 11)}


def test_a_restart_replays_transactional_commits_and_their_markers(kw):
    pid, epoch = producer_id(kw)
    pid2, epoch2 = producer_id(kw)
    assert txn_commit(kw, "done", pid, epoch, {0: 5}) == {0: E.NONE}
    write_marker(kw, "done", pid, epoch, True)
    assert txn_commit(kw, "aborted", pid, epoch, {0: 6}) == {0: E.NONE}
    write_marker(kw, "aborted", pid, epoch, False)
    assert txn_commit(kw, "open", pid2, epoch2, {1: 7}) == {1: E.NONE}
    kw.restart()
    assert fetch(kw, "done", stable=True) == {0: (E.NONE, 5), 1: NOTHING}
    assert fetch(kw, "aborted", stable=True) == {0: NOTHING, 1: NOTHING}
    assert fetch(kw, "open", stable=True) == {0: NOTHING, 1: UNSTABLE}
    write_marker(kw, "open", pid2, epoch2, True)
    assert fetch(kw, "open", stable=True) == {0: NOTHING, 1: (E.NONE, 7)}
