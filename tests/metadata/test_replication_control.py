"""The controller's partition decisions against an image (Kafka's ReplicationControlManager):
fencing, unfencing, controlled shutdown, AlterPartition checks, ElectLeaders, preferred
leader rebalancing."""
from __future__ import annotations

import uuid

from .imageutil import LiveImage
from kwire.metadata.delta import replay, replay_bytes
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata import replication_control as RC
from kwire.metadata.image import MetadataImage
from kwire.metadata.partition_change import Election

TID = uuid.UUID(int=5)


def cluster(parts: dict[int, tuple[int, list[int], list[int]]], unclean=False) -> MetadataImage:
    """Brokers 1-3 (epoch 10+id), topic t with ``parts``: index -> (leader, replicas, isr)."""
    img = MetadataImage()
    for i in (1, 2, 3):
        img = replay(img, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=i, incarnation_id=uuid.UUID(int=0),
                                                           broker_epoch=10 + i, end_points=[], fenced=False))])
    img = replay(img, [(R.TOPIC, R.TOPIC.cls(name="t", topic_id=TID))])
    for idx, (leader, replicas, isr) in parts.items():
        img = replay(img, [(R.PARTITION, R.PARTITION.cls(partition_id=idx, topic_id=TID, replicas=replicas, isr=isr,
                                               removing_replicas=[], adding_replicas=[], leader=leader,
                                               leader_epoch=0, partition_epoch=0))])
    return LiveImage(img)


def commit(img: LiveImage, recs) -> None:
    for m, o in recs:
        img.image = replay_bytes(img.image, [R.encode_record(m, o)])


def state(img, idx=0):
    p = img.topics["t"].partitions[idx]
    return p.leader, p.isr, p.leader_epoch


def test_fencing_moves_leaders_and_shrinks_isrs():
    img = cluster({0: (1, [1, 2, 3], [1, 2, 3]), 1: (2, [2, 1, 3], [2, 1, 3]), 2: (1, [1, 2], [1]), 3: (2, [2, 3], [2, 3])})
    commit(img, RC.fence_broker(img, 1))
    assert img.brokers[1].fenced
    assert state(img, 0) == (2, [2, 3], 1)
    assert state(img, 1) == (2, [2, 3], 0)      # a follower left the ISR: same leader epoch
    assert state(img, 2) == (-1, [1], 1)        # the last ISR member stays; offline
    assert state(img, 3) == (2, [2, 3], 0)      # untouched
    # back: unfenced, and the offline partition it is the ISR of gets it as leader
    commit(img, RC.unfence_broker(img, 1))
    assert not img.brokers[1].fenced
    assert state(img, 2) == (1, [1], 2)
    assert state(img, 0) == (2, [2, 3], 1)      # it rejoins ISRs only through AlterPartition


def test_unclean_election_when_enabled():
    img = cluster({0: (1, [1, 2], [1])})
    commit(img, RC.fence_broker(img, 1, unclean=lambda t: True))
    p = img.topics["t"].partitions[0]
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, [2], 1)


def test_controlled_shutdown_until_registered_again():
    img = cluster({0: (1, [1, 2, 3], [1, 2, 3]), 1: (1, [1], [1])})
    assert RC.has_leaderships(img, 1)
    commit(img, RC.controlled_shutdown(img, 1))
    assert img.brokers[1].in_controlled_shutdown and not img.brokers[1].fenced
    assert state(img, 0) == (2, [2, 3], 1) and state(img, 1) == (-1, [1], 1)
    assert not RC.has_leaderships(img, 1)
    assert RC.elect_leaderless(img) == []      # shutting down: not eligible
    assert RC.controlled_shutdown(img, 1) == []   # asked again: nothing more to do
    img.replay([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=1, incarnation_id=uuid.UUID(int=1), broker_epoch=12,
                                                       end_points=[], fenced=False))])
    commit(img, RC.elect_leaderless(img))
    assert state(img, 1) == (1, [1], 2)


def alter(img, broker=1, le=0, pe=0, isr=(1, 2), **kw):
    return RC.alter_partition(img, broker, TID, 0, le, pe, list(isr), **kw)


def test_alter_partition_checks():
    img = cluster({0: (1, [1, 2, 3], [1, 2, 3])})
    assert alter(img, le=1)[0].code == ErrorCode.NOT_CONTROLLER
    assert alter(img, broker=2)[0].code == ErrorCode.INVALID_REQUEST
    assert alter(img, pe=-1)[0].code == ErrorCode.INVALID_UPDATE_VERSION
    assert alter(img, isr=(1, 4))[0].code == ErrorCode.INVALID_REQUEST      # not a replica
    assert alter(img, isr=(1, 1))[0].code == ErrorCode.INVALID_REQUEST
    assert alter(img, isr=(2, 3))[0].code == ErrorCode.INVALID_REQUEST      # without the leader
    assert RC.alter_partition(img, 1, uuid.UUID(int=9), 0, 0, 0, [1])[0].code == ErrorCode.UNKNOWN_TOPIC_ID
    assert RC.alter_partition(img, 1, TID, 7, 0, 0, [1])[0].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    res, recs = alter(img, isr=(1, 3))
    assert (res.code, res.leader, res.leader_epoch, res.isr, res.partition_epoch) == (ErrorCode.NONE, 1, 0, [1, 3], 1)
    commit(img, recs)
    assert state(img) == (1, [1, 3], 0) and img.topics["t"].partitions[0].partition_epoch == 1
    assert alter(img, isr=(1, 2, 3))[0].code == ErrorCode.INVALID_UPDATE_VERSION   # stale partition epoch
    commit(img, RC.fence_broker(img, 2))
    assert alter(img, pe=1, isr=(1, 2, 3))[0].code == ErrorCode.INELIGIBLE_REPLICA
    assert alter(img, pe=1, isr=(1, 3), broker_epochs=[11, 99])[0].code == ErrorCode.INELIGIBLE_REPLICA
    res, recs = alter(img, pe=1, isr=(1, 3))
    assert res.code == ErrorCode.NONE and recs == []          # no change: answered with the state as is
    commit(img, RC.fence_broker(img, 1))                      # leader 1 fenced: epoch 1, leader 3
    assert alter(img, pe=1, isr=(1, 3))[0].code == ErrorCode.FENCED_LEADER_EPOCH


def test_elect_leaders():
    img = cluster({0: (2, [1, 2, 3], [1, 2, 3]), 1: (1, [1, 2, 3], [1, 2, 3]), 2: (3, [2, 3], [3])})
    results, recs = RC.elect_leaders(img, Election.PREFERRED, {"t": [0, 1, 2, 9], "nope": [0]})
    assert results == {"t": [(0, ErrorCode.NONE, None),
                             (1, ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
                             (2, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."),
                             (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-9")],
                       "nope": [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")]}
    commit(img, recs)
    assert state(img, 0) == (1, [1, 2, 3], 1)
    results, recs = RC.elect_leaders(img, Election.PREFERRED, None)   # all: the not-needed ones left out
    assert results == {"t": [(2, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available.")]}
    commit(img, RC.fence_broker(img, 3))
    assert state(img, 2) == (-1, [3], 1)
    results, recs = RC.elect_leaders(img, Election.UNCLEAN, {"t": [0, 2]})
    assert results["t"][0][1] == ErrorCode.ELECTION_NOT_NEEDED and results["t"][1][1] == ErrorCode.NONE
    commit(img, recs)
    assert state(img, 2) == (2, [2], 2)
    commit(img, RC.fence_broker(img, 2))
    results, recs = RC.elect_leaders(img, Election.UNCLEAN, {"t": [2]})
    assert results["t"][0][1] == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_rebalance_preferred_leaders():
    img = cluster({i: (2, [1, 2, 3], [1, 2, 3]) for i in range(10)} | {10: (2, [1, 2], [2])})
    # broker 1 should lead eleven; it leads one; it is not in the ISR of the last
    commit(img, RC.elect_leaders(img, Election.PREFERRED, {"t": [0]})[1])
    recs = RC.rebalance_preferred_leaders(img)
    assert len(recs) == 9
    commit(img, recs)
    assert [p.leader for p in img.topics["t"].partitions.values()] == [1] * 10 + [2]
    assert RC.rebalance_preferred_leaders(img) == []
    commit(img, RC.controlled_shutdown(img, 1))     # not active: not elected back
    assert RC.rebalance_preferred_leaders(img) == []


def reassign(img, part, target, **kw):
    return RC.alter_reassignment(img, "t", part, target, **kw)


def test_reassignment_adds_then_removes():
    img = cluster({0: (1, [1, 2], [1, 2]), 1: (2, [2, 3], [2, 3])})
    img.replay([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=4, incarnation_id=uuid.UUID(int=0), broker_epoch=14,
                                                       end_points=[], fenced=False))])
    code, msg, recs = reassign(img, 0, [3, 4])
    assert (code, msg) == (ErrorCode.NONE, None)
    commit(img, recs)
    p = img.topics["t"].partitions[0]
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.isr, p.leader, p.leader_epoch) == (
        [3, 4, 1, 2], [3, 4], [1, 2], [1, 2], 1, 0)
    assert {n: [q.index for q in ps] for n, ps in RC.list_reassignments(img, None).items()} == {"t": [0]}
    # 3 catches up: not complete yet
    res, recs = RC.alter_partition(img, 1, TID, 0, 0, 1, [1, 2, 3])
    commit(img, recs)
    p = img.topics["t"].partitions[0]   # a new image: the new partition state
    assert (res.code, p.replicas, p.isr) == (ErrorCode.NONE, [3, 4, 1, 2], [1, 2, 3])
    # 4 catches up: complete in the same change; the leader was removed, so 3 leads
    res, recs = RC.alter_partition(img, 1, TID, 0, 0, 2, [1, 2, 3, 4])
    commit(img, recs)
    p = img.topics["t"].partitions[0]
    assert res.code == ErrorCode.NEW_LEADER_ELECTED
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.adding_replicas, p.removing_replicas) == (
        [3, 4], [3, 4], 3, 1, [], [])
    assert RC.list_reassignments(img, None) == {}


def test_reassignment_shrink_reorder_cancel_and_checks():
    img = cluster({0: (1, [1, 2, 3], [1, 2, 3]), 1: (2, [2, 3], [2, 3])})
    code, _, recs = reassign(img, 0, [1, 2])           # removing only: done at once, same leader, new epoch
    commit(img, recs)
    p = img.topics["t"].partitions[0]
    assert (code, p.replicas, p.isr, p.leader, p.leader_epoch) == (ErrorCode.NONE, [1, 2], [1, 2], 1, 1)
    code, _, recs = reassign(img, 0, [2, 1])           # a new order: the preferred leader changes
    commit(img, recs)
    p = img.topics["t"].partitions[0]
    assert (p.replicas, p.leader, p.leader_epoch) == ([2, 1], 1, 1)
    assert reassign(img, 1, None)[:2] == (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                          "No partition reassignment is in progress.")
    commit(img, reassign(img, 1, [1, 3])[2])
    q = img.topics["t"].partitions[1]
    assert (q.replicas, q.adding_replicas, q.removing_replicas) == ([1, 3, 2], [1], [2])
    code, _, recs = reassign(img, 1, None)             # cancel: back to the replicas it had
    commit(img, recs)
    q = img.topics["t"].partitions[1]
    assert (code, q.replicas, q.isr, q.adding_replicas, q.removing_replicas) == (ErrorCode.NONE, [3, 2], [2, 3], [], [])
    assert reassign(img, 1, [3, 9])[:2] == (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment "
                                            "includes broker 9, but no such broker is registered.")
    assert reassign(img, 1, [1, 2, 3], allow_rf_change=False)[:2] == (
        ErrorCode.INVALID_REPLICATION_FACTOR, "The replication factor is changed from 2 to 3")
    assert reassign(img, 7, [1])[:2] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:7.")
    assert RC.alter_reassignment(img, "x", 0, [1])[:2] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                           "Unable to find a topic named x.")


def test_a_broker_registering_again_leaves_the_isrs_it_shares_first():
    import uuid as _uuid

    from kwire.metadata import records as R
    from kwire.metadata import replication_control as RC
    from kwire.metadata.image import MetadataImage

    image = MetadataImage()
    for b in (1, 2, 3):
        image = replay(image, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=b, incarnation_id=_uuid.uuid4(), broker_epoch=1,
                                                             end_points=[], rack=None, fenced=False))])
    tid = _uuid.uuid4()
    image = replay(image, [(R.TOPIC, R.TOPIC.cls(name="t", topic_id=tid))])
    for i, (replicas, isr, leader) in enumerate((([1, 2, 3], [1, 2, 3], 1), ([2, 1], [2, 1], 2), ([1], [1], 1))):
        image = replay(image, [(R.PARTITION, R.PARTITION.cls(partition_id=i, topic_id=tid, replicas=replicas, isr=isr,
                                                 removing_replicas=[], adding_replicas=[], leader=leader,
                                                 leader_epoch=0, partition_epoch=0))])
    assert RC.register_again(image, 1, 1) == []          # not a higher epoch: nothing
    recs = RC.register_again(image, 1, 2)
    for m, o in recs:
        image = replay(image, [(m, o)])
    ps = image.topics["t"].partitions
    assert (ps[0].leader, sorted(ps[0].isr), ps[0].leader_epoch) == (2, [2, 3], 1)   # led: new leader, out of ISR
    assert (ps[1].leader, ps[1].isr, ps[1].leader_epoch) == (2, [2], 0)              # followed: out of ISR
    assert (ps[2].leader, ps[2].isr) == (1, [1])                                     # the only copy: kept


def test_a_failed_log_dir_moves_its_partitions_only():
    """Kafka's handleDirectoriesOffline: the broker leaves the ISR and leadership of the
    partitions in its failed dir, nothing else; a replica there is never elected again (even
    as the last ISR member), until the broker registers anew."""
    img = cluster({0: (1, [1, 2, 3], [1, 2, 3]), 1: (2, [2, 1, 3], [2, 1, 3]), 2: (1, [1, 2], [1]),
                   3: (1, [1, 2, 3], [1, 2, 3])})
    failed = {(TID, 0), (TID, 1), (TID, 2)}      # partition 3 sits in a healthy dir
    offline = {tp: {1} for tp in failed}
    commit(img, RC.offline_dir_updates(img, 1, failed, offline=offline))
    assert state(img, 0) == (2, [2, 3], 1)
    assert state(img, 1) == (2, [2, 3], 0)       # a follower left the ISR: same leader epoch
    assert state(img, 2) == (-1, [1], 1)         # the last ISR member stays; no leader
    assert state(img, 3) == (1, [1, 2, 3], 0)    # untouched
    assert RC.offline_dir_updates(img, 1, failed, offline=offline) == []   # reported again: nothing
    assert RC.elect_leaderless(img, offline=offline) == []
    assert RC.elect_leaderless(img) != []        # what the acceptor keeps out
