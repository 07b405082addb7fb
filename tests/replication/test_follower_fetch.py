"""Fetch from follower (KIP-392) in the replica managers, without sockets: the leader's choice
of a preferred read replica (Kafka's RackAwareReplicaSelector over the in-sync followers that
hold the fetch offset) and a follower serving a consumer (Fetch v11+: ``client_rack`` set) up
to its own high watermark, with Kafka's errors around it. The three-process cluster with
stock clients is tests/replication/test_follower_fetch_cluster.py."""
from __future__ import annotations

import uuid

import pytest

from kwire.metadata.delta import replay
from kwire.configdef import ConfigError
from kwire.config_keys import BROKER
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.replication.replica_selector import RACK_AWARE, ReplicaView, rack_aware, selector_for

from tests.replication.test_followers import T, Nodes


def _view(node, rack, leo, lag=0):
    return ReplicaView(node, rack, leo, lag)


def test_rack_aware_selector_rules():
    leader = _view(1, "r1", 10)
    f2, f3 = _view(2, "r2", 10, 5), _view(3, "r2", 10, 1)
    every = [f2, f3, leader]
    assert rack_aware(None, every, leader) is leader and rack_aware("", every, leader) is leader
    assert rack_aware("r9", every, leader) is leader          # nobody in the client's rack
    assert rack_aware("r1", every + [_view(4, "r1", 10)], leader) is leader   # the leader is in it
    assert rack_aware("r2", every, leader) is f3              # same offsets: the one caught up last
    ahead = _view(2, "r2", 11, 50)
    assert rack_aware("r2", [ahead, f3, leader], leader) is ahead   # the larger log end offset first
    assert rack_aware("r2", [_view(2, "r2", 10), _view(3, "r2", 10), leader], leader).node_id == 3  # then the id


def test_replica_selector_class_is_checked_at_start_up():
    key = BROKER["replica.selector.class"]
    for ok in (None, "", RACK_AWARE):
        key.parse(ok)
    with pytest.raises(ConfigError, match="replica.selector.class"):
        key.parse("com.example.NearestReplicaSelector")
    assert selector_for(None) is None and selector_for("") is None and selector_for(RACK_AWARE) is rack_aware


@pytest.fixture
def racked(tmp_path):
    """Three brokers in racks r1, r2, r3; partition 0 of ``t`` on [1, 2, 3] led by 1, two
    records everywhere and the high watermark at 2 on every replica."""
    n = Nodes(tmp_path)
    for i in (1, 2, 3):
        n.image = replay(n.image, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
            broker_id=i, incarnation_id=uuid.uuid4(), broker_epoch=2, end_points=[], rack=f"r{i}", fenced=False))])
    n.rms[1].replica_selector = selector_for(RACK_AWARE)
    n.partition([1, 2, 3])
    n.produce(1, b"a", b"b")
    for _ in range(3):
        n.fetch(2, 1)
        n.fetch(3, 1)
    assert [n.plog(i).high_watermark for i in (1, 2, 3)] == [2, 2, 2]
    yield n
    n.close()


def test_the_leader_names_the_in_sync_follower_in_the_clients_rack(racked):
    lead = racked.rms[1]
    res = lead.read(T, 0, 0, 1 << 20, client_rack="r2")
    assert (res.error, res.preferred_read_replica, res.size) == (0, 2, 0)   # no records: read them there
    assert (res.high_watermark, res.log_start_offset) == (2, 0)
    assert lead.read(T, 0, 0, 1 << 20, client_rack="r3").preferred_read_replica == 3
    for rack in ("r1", "", "r9", None):   # the leader's rack, no rack, a rack nobody is in, Fetch < v11
        res = lead.read(T, 0, 0, 1 << 20, client_rack=rack)
        assert (res.error, res.preferred_read_replica, res.size > 0) == (0, -1, True), rack
    lead.replica_selector = None          # replica.selector.class unset: the leader serves everyone
    assert lead.read(T, 0, 0, 1 << 20, client_rack="r2").preferred_read_replica == -1
    # the epoch checks still come first
    assert lead.read(T, 0, 0, 1 << 20, client_rack="r2", current_leader_epoch=7).error == \
        ErrorCode.UNKNOWN_LEADER_EPOCH


def test_the_leader_stops_naming_a_follower_out_of_the_isr_or_without_the_offset(racked):
    lead = racked.rms[1]
    racked.produce(1, b"c", b"d")         # offsets 2-3: on the leader only, until the followers fetch
    # as Kafka: a follower whose log ends at the fetch offset (2) may serve it (the consumer waits there)
    assert lead.read(T, 0, 2, 1 << 20, client_rack="r2").preferred_read_replica == 2
    assert lead.read(T, 0, 3, 1 << 20, client_rack="r2").preferred_read_replica == -1
    racked.fetch(2, 1)                    # 2 has them now (log end offset 4), its next fetch says so
    racked.fetch(2, 1)
    assert lead.read(T, 0, 3, 1 << 20, client_rack="r2").preferred_read_replica == 2
    racked.change(isr=[1, 3])             # 2 fell out of the ISR: it may lag without end
    assert lead.read(T, 0, 0, 1 << 20, client_rack="r2").preferred_read_replica == -1
    racked.change(isr=[1, 2, 3])
    assert lead.read(T, 0, 0, 1 << 20, client_rack="r2").preferred_read_replica == 2
    racked.image = replay(racked.image, [(R.FENCE_BROKER, R.FENCE_BROKER.cls(id=2, epoch=2))])   # no endpoint to send it to
    assert lead.read(T, 0, 0, 1 << 20, client_rack="r2").preferred_read_replica == -1


def test_a_follower_serves_consumers_up_to_its_own_high_watermark(racked):
    fol = racked.rms[2]
    res = fol.read(T, 0, 0, 1 << 20, client_rack="r2")
    assert (res.error, res.high_watermark, res.preferred_read_replica) == (0, 2, -1) and res.size > 0
    assert fol.read(T, 0, 0, 1 << 20, client_rack="").size > 0   # any v11+ consumer, rack or not
    # Fetch < v10 carries no client metadata: the leader only, as Kafka's fetchOnlyLeader
    assert fol.read(T, 0, 0, 1 << 20).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    racked.produce(1, b"c")
    racked.fetch(2, 1)                    # appended here, but the leader's high watermark is still 2
    assert racked.plog(2).log_end_offset == 3
    res = fol.read(T, 0, 2, 1 << 20, client_rack="r2")
    assert (res.error, res.high_watermark, res.size) == (0, 2, 0)   # past its high watermark: nothing yet
    res = fol.read(T, 0, 4, 1 << 20, client_rack="r2")
    assert (res.error, res.high_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, 2)   # past its log end
    racked.fetch(3, 1)
    racked.fetch(3, 1)                    # 3 has it too: the leader's high watermark moves to 3,
    racked.fetch(2, 1)                    # and this follower's with it at its next fetch
    res = fol.read(T, 0, 2, 1 << 20, client_rack="r2")
    assert (res.error, res.high_watermark) == (0, 3) and res.size > 0


def test_a_followers_leader_epoch_checks_and_what_stays_with_the_leader(racked):
    fol = racked.rms[2]
    racked.change(leader=1)                # a new leader epoch (1) everywhere
    epoch = racked.rms[2].partitions[(T, 0)].leader_epoch
    assert epoch == 1
    assert fol.read(T, 0, 0, 1 << 20, client_rack="r2", current_leader_epoch=epoch).error == 0
    assert fol.read(T, 0, 0, 1 << 20, client_rack="r2", current_leader_epoch=0).error == \
        ErrorCode.FENCED_LEADER_EPOCH
    assert fol.read(T, 0, 0, 1 << 20, client_rack="r2", current_leader_epoch=2).error == \
        ErrorCode.UNKNOWN_LEADER_EPOCH
    assert fol.read("nope", 0, 0, 1 << 20, client_rack="r2").error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # ListOffsets is the leader's (a consumer's replica_id -1)
    assert fol.fetch_offset_for_timestamp(T, 0, -1)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # a broker without a replica of the partition serves no consumer
    racked.partition([1, 3])
    assert fol.read(T, 0, 0, 1 << 20, client_rack="r2").error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_consumer_waiting_on_a_follower_wakes_when_its_high_watermark_moves(racked):
    fol = racked.rms[2]
    ev = fol.watch([(T, 0)])
    racked.produce(1, b"c")
    racked.fetch(2, 1)
    assert not ev.is_set()                # appended, high watermark unchanged
    racked.fetch(3, 1)
    racked.fetch(3, 1)
    assert not ev.is_set()
    racked.fetch(2, 1)
    assert ev.is_set()
    fol.unwatch(ev, [(T, 0)])
