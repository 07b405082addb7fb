"""The share coordinator's inter-broker RPCs (KIP-932) over the wire against an in-process
broker: FindCoordinator key type 2, ReadShareGroupState (84), WriteShareGroupState (85) and
DeleteShareGroupState (86)
answered from ``__share_group_state`` (kwire.handlers.share_state), with the errors Kafka
gives (FENCED_LEADER_EPOCH, INVALID_REQUEST); and a share partition started from a state
written by another "leader" through WriteShareGroupState. The three-node failover is
tests/replication/test_share_group_failover.py."""
from __future__ import annotations

import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode as E
from kwire.share import records as SR
from kwire.testing import Broker
from kwire.testing.client import WireClient
from tests.share.test_share_wire import _acquired, _fetch, _hb, _setup

pytestmark = pytest.mark.slow

ACCEPT = 1


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"kwire.emulate.kafka.version": "4.3", "offsets.topic.num.partitions": 1,
                           "share.coordinator.state.topic.num.partitions": 3,
                           "share.coordinator.state.topic.replication.factor": 1}) as b:
        yield b


def _read(c, group, tid, partition=0, leader_epoch=0):
    R = api("ReadShareGroupState").request
    r = c.request("ReadShareGroupState", 0, group_id=group, topics=[R.struct("ReadStateData")(
        topic_id=tid, partitions=[R.struct("PartitionData")(partition=partition, leader_epoch=leader_epoch)])])
    return r.results[0].partitions[0]


def _write(c, group, tid, leader_epoch, start, batches, partition=0, version=1, state_epoch=0):
    R = api("WriteShareGroupState").request
    B = R.struct("StateBatch")
    r = c.request("WriteShareGroupState", version, group_id=group, topics=[R.struct("WriteStateData")(
        topic_id=tid, partitions=[R.struct("PartitionData")(
            partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start,
            state_batches=[B(first_offset=f, last_offset=l, delivery_state=s, delivery_count=n)
                           for f, l, s, n in batches])])])
    return r.results[0].partitions[0]


def _delete(c, group, tid, partition=0):
    D = api("DeleteShareGroupState").request
    r = c.request("DeleteShareGroupState", 0, group_id=group, topics=[D.struct("DeleteStateData")(
        topic_id=tid, partitions=[D.struct("PartitionData")(partition=partition)])])
    return r.results[0].partitions[0]


def _batches(p):
    return [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches]


def test_find_coordinator_read_write(broker):
    node = broker.broker.node_id
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=5)
        key = f"{group}:{SR.kafka_uuid_string(tid)}:0"
        # no __share_group_state yet: no share coordinator (not created by the look-up, as Kafka)
        fc = c.request("FindCoordinator", 6, key_type=2, coordinator_keys=[key]).coordinators[0]
        assert fc.error_code == E.COORDINATOR_NOT_AVAILABLE
        m = str(uuid.uuid4())
        _hb(c, group, m, 0, [topic])
        assert _acquired(_fetch(c, group, m, 0, tid)) == [(0, 4, 1)]
        r = _fetch(c, group, m, 1, tid, acks=[(0, 1, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        fc = c.request("FindCoordinator", 6, key_type=2, coordinator_keys=[key, "nonsense", f"{group}:x:0"])
        assert [(k.node_id, k.error_code) for k in fc.coordinators] == [
            (node, 0), (-1, E.INVALID_REQUEST), (-1, E.INVALID_REQUEST)]
        old = c.request("FindCoordinator", 5, key_type=2, coordinator_keys=[key]).coordinators[0]
        assert old.error_code == E.INVALID_REQUEST
        # the state the share partition's leader wrote: 0-1 acknowledged (the start moved),
        # 2-4 held, written as available with their delivery count
        p = _read(c, group, tid)
        assert (p.error_code, p.start_offset, _batches(p)) == (0, 2, [(2, 4, 0, 1)])
        # never written: start offset -1
        p = _read(c, group, tid, partition=7)
        assert (p.error_code, p.start_offset, _batches(p)) == (0, -1, [])
        assert _read(c, group, tid, partition=-1).error_code == E.INVALID_REQUEST
        # another leader (a higher leader epoch) writes; an older one is fenced after it
        assert _write(c, group, tid, 5, 3, [(3, 3, 2, 2), (4, 4, 0, 2)]).error_code == 0
        assert _write(c, group, tid, 4, 0, []).error_code == E.FENCED_LEADER_EPOCH
        assert _read(c, group, tid, leader_epoch=3).error_code == E.FENCED_LEADER_EPOCH
        p = _read(c, group, tid, leader_epoch=5)
        assert (p.error_code, p.start_offset, _batches(p)) == (0, 3, [(3, 3, 2, 2), (4, 4, 0, 2)])
        assert _write(c, group, tid, 5, 0, [], partition=-2, version=0).error_code == E.INVALID_REQUEST
        # deleted: as never written
        D = api("DeleteShareGroupState").request
        r = c.request("DeleteShareGroupState", 0, group_id=group, topics=[D.struct("DeleteStateData")(
            topic_id=tid, partitions=[D.struct("PartitionData")(partition=0)])])
        assert r.results[0].partitions[0].error_code == 0
        p = _read(c, group, tid, leader_epoch=5)
        assert (p.error_code, p.start_offset, _batches(p)) == (0, -1, [])


def test_leader_starts_from_the_coordinators_state(broker):
    """A share partition made on its leader starts from what the coordinator holds (here:
    written by WriteShareGroupState before the first fetch of the group)."""
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=6)
        m = str(uuid.uuid4())
        _hb(c, group, m, 0, [topic])
        other = f"{group}-other"   # a group whose first fetch creates __share_group_state
        _hb(c, other, m, 0, [topic])
        _fetch(c, other, m, 0, tid)
        # 0-1 done; 2 acknowledged; 3-5 delivered twice already
        assert _write(c, group, tid, 0, 2, [(2, 2, 2, 1), (3, 5, 0, 2)]).error_code == 0
        assert _acquired(_fetch(c, group, m, 0, tid)) == [(3, 5, 3)]


def test_delete_bumps_the_state_epoch_and_fences_the_leader(broker):
    """DeleteShareGroupState (as another broker's group coordinator sends it) bumps the state
    epoch: a write at the older one answers FENCED_STATE_EPOCH; the share partition's leader
    (this broker, holding the state in memory) is fenced on its next write, drops its state
    and reads it again: no state, so share.auto.offset.reset (earliest) and the delivery
    counts start over."""
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=5)
        m = str(uuid.uuid4())
        _hb(c, group, m, 0, [topic])
        assert _acquired(_fetch(c, group, m, 0, tid)) == [(0, 4, 1)]
        r = _fetch(c, group, m, 1, tid, acks=[(0, 1, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        p = _read(c, group, tid)
        assert (p.error_code, p.state_epoch, p.start_offset) == (0, 0, 2)
        assert _delete(c, group, tid).error_code == 0
        p = _read(c, group, tid)
        assert (p.error_code, p.state_epoch, p.start_offset, _batches(p)) == (0, 1, -1, [])
        assert _write(c, group, tid, 0, 2, [], state_epoch=0).error_code == E.FENCED_STATE_EPOCH
        # the leader's own write of its next acknowledgement is fenced the same way
        r = _fetch(c, group, m, 2, tid, acks=[(2, 2, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == E.FENCED_STATE_EPOCH
        # the state is read again: nothing there, so from the earliest offset, first delivery
        assert _acquired(_fetch(c, group, m, 3, tid)) == [(0, 4, 1)]
        p = _read(c, group, tid)
        assert (p.state_epoch, p.start_offset) == (1, 0)   # written back at the new state epoch
        r = _fetch(c, group, m, 4, tid, acks=[(0, 0, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        p = _read(c, group, tid)
        assert (p.error_code, p.state_epoch, p.start_offset) == (0, 1, 1)
        # a delete of a state never written answers NONE and bumps nothing
        assert _delete(c, group, tid, partition=9).error_code == 0
        assert _read(c, group, tid, partition=9).start_offset == -1


def test_records_acquired_from_a_fenced_state_are_delivered_and_their_ack_fenced(broker):
    """An idle leader (everything acknowledged) keeps its in-memory state after a delete at
    the share coordinator. Its next acquisition writes nothing (Kafka's SharePartition.acquire
    calls no persister), so those records are delivered; their acknowledgement is written at
    the old state epoch, fenced, and answers FENCED_STATE_EPOCH: the fetch after reads the
    state again and starts from the earliest."""
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=3)
        m = str(uuid.uuid4())
        _hb(c, group, m, 0, [topic])
        assert _acquired(_fetch(c, group, m, 0, tid)) == [(0, 2, 1)]
        r = _fetch(c, group, m, 1, tid, acks=[(0, 2, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        assert _read(c, group, tid).start_offset == 3
        assert _delete(c, group, tid).error_code == 0
        c.produce(topic, [(None, b"v3"), (None, b"v4")])
        assert _acquired(_fetch(c, group, m, 2, tid)) == [(3, 4, 1)]   # from the old state, not written
        r = _fetch(c, group, m, 3, tid, acks=[(3, 4, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == E.FENCED_STATE_EPOCH
        assert _acquired(r) == []
        assert _acquired(_fetch(c, group, m, 4, tid)) == [(0, 4, 1)]
        p = _read(c, group, tid)
        assert (p.state_epoch, p.start_offset) == (1, 0)


def _initialize(c, group, tid, state_epoch, start, partition=0):
    R = api("InitializeShareGroupState").request
    r = c.request("InitializeShareGroupState", 0, group_id=group, topics=[R.struct("InitializeStateData")(
        topic_id=tid, partitions=[R.struct("PartitionData")(partition=partition, state_epoch=state_epoch,
                                                            start_offset=start)])])
    return r.results[0].partitions[0]


def _summary(c, group, tid, partition=0):
    R = api("ReadShareGroupStateSummary").request
    r = c.request("ReadShareGroupStateSummary", 1, group_id=group, topics=[R.struct("ReadStateSummaryData")(
        topic_id=tid, partitions=[R.struct("PartitionData")(partition=partition, leader_epoch=-1)])])
    return r.results[0].partitions[0]


def test_initialize_moves_the_leader_to_the_new_start_offset(broker):
    """InitializeShareGroupState (as a group coordinator elsewhere sends it for
    AlterShareGroupOffsets) at the next state epoch: an older one is fenced; the leader's
    next write is fenced, and it serves from the new start offset; the summary (87) reads it."""
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=6)
        m = str(uuid.uuid4())
        _hb(c, group, m, 0, [topic])
        assert _acquired(_fetch(c, group, m, 0, tid)) == [(0, 5, 1)]
        r = _fetch(c, group, m, 1, tid, acks=[(0, 0, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        s = _summary(c, group, tid)
        assert (s.error_code, s.state_epoch, s.start_offset, s.delivery_complete_count) == (0, 0, 1, 0)
        assert _initialize(c, group, tid, 2, 4).error_code == 0
        assert _initialize(c, group, tid, 1, 3).error_code == E.FENCED_STATE_EPOCH
        assert _initialize(c, group, tid, 2, 4, partition=-1).error_code == E.INVALID_REQUEST
        s = _summary(c, group, tid)
        assert (s.error_code, s.state_epoch, s.start_offset) == (0, 2, 4)
        r = _fetch(c, group, m, 2, tid, acks=[(1, 1, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == E.FENCED_STATE_EPOCH
        assert _acquired(_fetch(c, group, m, 3, tid)) == [(4, 5, 1)]
        # never written: start offset -1
        s = _summary(c, group, tid, partition=5)
        assert (s.error_code, s.start_offset, s.delivery_complete_count) == (0, -1, -1)


def test_a_new_share_session_starts_from_a_newer_state_epoch(broker):
    """An idle leader (all done, nothing to acquire, so no write to fence) after an
    InitializeShareGroupState elsewhere: the next share session's first fetch reads the state
    again and serves from the new start offset at once."""
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=4)
        m = str(uuid.uuid4())
        _hb(c, group, m, 0, [topic])
        assert _acquired(_fetch(c, group, m, 0, tid)) == [(0, 3, 1)]
        r = _fetch(c, group, m, 1, tid, acks=[(0, 3, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        assert _acquired(_fetch(c, group, m, 2, tid)) == []
        assert _initialize(c, group, tid, 1, 1).error_code == 0
        m2 = str(uuid.uuid4())
        _hb(c, group, m2, 0, [topic])
        assert _acquired(_fetch(c, group, m2, 0, tid)) == [(1, 3, 1)]


def test_delete_of_many_partitions_in_one_request(broker):
    """One DeleteShareGroupState naming several share partitions (spread over the state
    partitions; one batch per state partition at the coordinator, see
    tests/share/test_share_coordinator_load.py): each answered, each state emptied at the
    next state epoch; an index below 0 answers INVALID_REQUEST without stopping the rest."""
    parts = list(range(1, 7))
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=5)
        m = str(uuid.uuid4())
        _hb(c, group, m, 0, [topic])   # the leader's first write creates __share_group_state
        assert _acquired(_fetch(c, group, m, 0, tid)) == [(0, 4, 1)]
        r = _fetch(c, group, m, 1, tid, acks=[(0, 1, (ACCEPT,))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        for p in parts[:5]:   # the last one never written
            assert _write(c, group, tid, 0, 3, [(3, 4, 0, 1)], partition=p).error_code == 0
        D = api("DeleteShareGroupState").request
        r = c.request("DeleteShareGroupState", 0, group_id=group, topics=[D.struct("DeleteStateData")(
            topic_id=tid, partitions=[D.struct("PartitionData")(partition=p) for p in [*parts, -1]])])
        assert [(x.partition, x.error_code) for x in r.results[0].partitions] == \
            [(p, 0) for p in parts] + [(-1, E.INVALID_REQUEST)]
        for p in parts[:5]:
            x = _read(c, group, tid, partition=p)
            assert (x.error_code, x.state_epoch, x.start_offset, _batches(x)) == (0, 1, -1, [])
        assert _read(c, group, tid, partition=6).state_epoch == 0
