"""Eligible leader replicas (KIP-966) in the controller's decisions: the change builder's rules
(Kafka 4.3's PartitionChangeBuilder: maybePopulateTargetElr, electLeader with the ELR and the
last known leader, maybeUpdateRecordElr, maybeUpdateLastKnownLeader), the records and the
image (snapshots keep both lists), and the controller's use of them (fencing, a broker back
from a clean or an unclean shutdown, the feature written at format)."""
from __future__ import annotations

import uuid

import pytest

from .imageutil import LiveImage
from kwire.metadata.delta import replay, replay_bytes
from kwire.metadata import records as R
from kwire.metadata import replication_control as RC
from kwire.metadata.config_control import (ELR_FEATURE, clear_elr_records, elr_enabled, elr_feature_records,
                                           topic_min_isr)
from kwire.metadata.image import BrokerImage, MetadataImage, PartitionImage
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot
from kwire.metadata.partition_change import (NO_LEADER, RECOVERED, RECOVERING, Election, PartitionChangeBuilder,
                                             leader_acceptor)

TID = uuid.UUID(int=7)


def part(leader=1, replicas=(1, 2, 3, 4), isr=(1, 2, 3, 4), elr=(), lke=(), lrs=RECOVERED) -> PartitionImage:
    return PartitionImage(0, leader, list(replicas), list(isr), 100, 200, lrs, elr=list(elr), last_known_elr=list(lke))


def brokers(fenced=()) -> dict[int, BrokerImage]:
    return {i: BrokerImage(i, "h", 9000 + i, epoch=10 + i, fenced=i in fenced) for i in (1, 2, 3, 4)}


def build(p, bs=None, *, isr=None, min_isr=3, elr=True, election=Election.ONLINE, removing=NO_LEADER,
          unclean_shutdown=()):
    b = PartitionChangeBuilder(p, TID, leader_acceptor(bs or brokers(), removing=removing), election,
                               min_isr=min_isr, elr_enabled=elr)
    if isr is not None:
        b.set_target_isr(isr)
    if unclean_shutdown:
        b.set_unclean_shutdown_replicas(unclean_shutdown)
    return b.build()


def applied(p, rec) -> PartitionImage:
    after = p.copy()
    after.merge(rec)
    return after


# ------------------------------------------------------------------ the builder
def test_isr_shrinking_below_min_isr_puts_the_leavers_in_the_elr():
    rec = build(part(), isr=[1, 2])
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas, rec.last_known_elr) == (-2, [1, 2], [3, 4], None)
    # at min ISR nothing joins the ELR
    rec = build(part(), isr=[1, 2, 3])
    assert (rec.isr, rec.eligible_leader_replicas) == ([1, 2, 3], None)


def test_without_elr_the_builder_keeps_no_elr_and_clears_a_stale_one():
    assert build(part(), isr=[1, 2], elr=False).eligible_leader_replicas is None
    rec = build(part(isr=(1, 2), elr=(3,)), elr=False)
    assert rec.eligible_leader_replicas == []


def test_isr_back_at_min_isr_empties_the_elr():
    p = part(isr=(1, 2), elr=(3, 4))
    rec = build(p, isr=[1, 2, 3])
    assert (rec.isr, rec.eligible_leader_replicas) == ([1, 2, 3], [])
    assert applied(p, rec).elr == []


def test_elr_accumulates_and_excludes_the_isr():
    p = part(isr=(1, 2), elr=(3, 4))
    rec = build(p, isr=[1])
    assert (rec.isr, rec.eligible_leader_replicas) == ([1], [2, 3, 4])
    rec = build(p, isr=[1, 3])   # 3 caught up again: out of the ELR (still below min ISR)
    assert (rec.isr, rec.eligible_leader_replicas) == ([1, 3], [2, 4])


def test_with_elr_the_last_isr_member_leaves_and_the_last_leader_is_remembered():
    p = part(isr=(1,), elr=(2, 3))
    rec = build(p, brokers(fenced=(1, 2, 3)), isr=[], removing=1)
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas, rec.last_known_elr) == (NO_LEADER, [], [1, 2, 3], [1])
    # without ELR the last member stays in the ISR (no other record of who holds the data)
    rec = build(part(isr=(1,)), brokers(fenced=(1,)), isr=[], removing=1, elr=False)
    assert (rec.leader, rec.isr, rec.last_known_elr) == (NO_LEADER, None, None)


def test_an_active_elr_member_leads_when_the_isr_is_empty_cleanly():
    p = part(leader=NO_LEADER, isr=(), elr=(1, 2, 3), lke=(1,))
    rec = build(p, brokers(fenced=(1, 3)))
    assert (rec.leader, rec.isr, rec.eligible_leader_replicas, rec.last_known_elr) == (2, [2], [1, 3], [])
    assert rec.leader_recovery_state == -1   # clean: the ELR member holds every committed record
    after = applied(p, rec)
    assert (after.leader, after.leader_epoch, after.isr, after.elr, after.last_known_elr) == (2, 101, [2], [1, 3], [])


def test_elr_members_do_not_lead_while_the_isr_has_members():
    p = part(leader=NO_LEADER, isr=(1,), elr=(2,))
    assert build(p, brokers(fenced=(1,))) is None   # ISR member 1 is fenced; 2 must wait


def test_nobody_acceptable_in_the_elr_leaves_the_partition_leaderless():
    p = part(leader=NO_LEADER, isr=(), elr=(2, 3), lke=(1,))
    assert build(p, brokers(fenced=(2, 3))) is None


def test_an_unclean_shutdown_takes_a_replica_out_of_the_elr():
    p = part(leader=NO_LEADER, isr=(), elr=(1, 2), lke=(1,))
    rec = build(p, brokers(fenced=(1,)), unclean_shutdown=[2], removing=2)
    assert (rec.leader, rec.eligible_leader_replicas, rec.isr) == (-2, [1], None)
    # and never joins it when the ISR shrinks below min ISR
    rec = build(part(), isr=[1], unclean_shutdown=[2])
    assert rec.eligible_leader_replicas == [3, 4]


def test_the_last_known_leader_leads_again_uncleanly_when_isr_and_elr_are_empty():
    p = part(leader=NO_LEADER, isr=(), elr=(), lke=(3,))
    rec = build(p, brokers())
    assert (rec.leader, rec.isr, rec.leader_recovery_state, rec.last_known_elr) == (3, [3], RECOVERING, [])
    assert build(p, brokers(fenced=(3,))) is None                  # it must be back first
    assert build(p, brokers(), elr=False) is None                   # no balanced recovery without ELR
    rec = build(p, brokers(), election=Election.PREFERRED)
    assert rec.leader == 3


def test_an_unclean_election_empties_the_elr():
    p = part(leader=1, isr=(1,), elr=(2,))
    rec = build(p, brokers(fenced=(1, 2)), isr=[], removing=1, election=Election.UNCLEAN)
    assert (rec.leader, rec.isr, rec.leader_recovery_state, rec.eligible_leader_replicas) == (3, [3], RECOVERING, [])
    assert rec.last_known_elr is None   # it has a leader


def test_no_change_is_still_none_with_elr():
    assert build(part()) is None
    assert build(part(isr=(1, 2), elr=(3, 4))) is None


# ------------------------------------------------------------------ records, image, snapshots
def test_records_round_trip_and_older_versions_decode_empty():
    p = R.PARTITION.cls(partition_id=0, topic_id=TID, replicas=[1, 2, 3], isr=[1], leader=1,
                        eligible_leader_replicas=[2, 3], last_known_elr=[])
    _, d = R.decode_record(R.encode_record(R.PARTITION, p))
    assert (d.eligible_leader_replicas, d.last_known_elr) == ([2, 3], [])
    c = R.PARTITION_CHANGE.cls(partition_id=0, topic_id=TID, eligible_leader_replicas=[3], last_known_elr=[1])
    _, d = R.decode_record(R.encode_record(R.PARTITION_CHANGE, c))
    assert (d.eligible_leader_replicas, d.last_known_elr, d.isr, d.leader) == ([3], [1], None, -2)
    # a version 0 PartitionRecord (kwire's snapshots before KIP-966) holds neither
    body = R.PARTITION.encode(R.PARTITION.cls(partition_id=0, topic_id=TID, replicas=[1], isr=[1], leader=1), 0)
    d = R.PARTITION.decode(memoryview(body), 0)
    img = MetadataImage()
    img = replay(img, [(R.TOPIC, R.TOPIC.cls(name="t", topic_id=TID))])
    img = replay(img, [(R.PARTITION, d)])
    assert (img.topics["t"].partitions[0].elr, img.topics["t"].partitions[0].last_known_elr) == ([], [])


def test_the_image_merges_elr_changes_and_snapshots_keep_them():
    img = MetadataImage()
    img = replay(img, [(R.FEATURE_LEVEL, R.FEATURE_LEVEL.cls(name=ELR_FEATURE, feature_level=1))])
    img = replay(img, [(R.TOPIC, R.TOPIC.cls(name="t", topic_id=TID))])
    img = replay(img, [(R.PARTITION, R.PARTITION.cls(partition_id=0, topic_id=TID, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1,
                                           leader_epoch=0, partition_epoch=0))])
    img = replay(img, [(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=TID, isr=[], leader=-1,
                                                         eligible_leader_replicas=[2, 3], last_known_elr=[1]))])
    p = img.topics["t"].partitions[0]
    assert (p.isr, p.elr, p.last_known_elr, p.leader_epoch, p.partition_epoch) == ([], [2, 3], [1], 1, 1)
    img = replay(img, [(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=TID, isr=[1]))])   # ELR untouched
    assert (p.elr, p.last_known_elr) == ([2, 3], [1])
    back = decode_snapshot(encode_snapshot(img))
    q = back.topics["t"].partitions[0]
    assert (q.isr, q.elr, q.last_known_elr, q.partition_epoch) == ([1], [2, 3], [1], 2)
    assert elr_enabled(back)


# ------------------------------------------------------------------ the controller
def cluster(elr=True, min_isr="2", rf=3):
    img = MetadataImage()
    for m, o in elr_feature_records(img, None if elr else "4.0"):
        img = replay(img, [(m, o)])
    img = replay(img, [(R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_BROKER, resource_name="", name="min.insync.replicas",
                                     value=min_isr))])
    for i in (1, 2, 3):
        img = replay(img, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=i, incarnation_id=uuid.uuid4(), broker_epoch=5,
                                                           end_points=[], fenced=False))])
    img = replay(img, [(R.TOPIC, R.TOPIC.cls(name="t", topic_id=TID))])
    reps = [1, 2, 3][:rf]
    img = replay(img, [(R.PARTITION, R.PARTITION.cls(partition_id=0, topic_id=TID, replicas=reps, isr=reps, leader=1,
                                           leader_epoch=0, partition_epoch=0))])
    return LiveImage(img)


def commit(img, recs):
    for m, o in recs:
        img.replay([(m, o)])
    return img.topics["t"].partitions[0]


def test_the_feature_is_written_at_format_by_the_emulated_release():
    img = MetadataImage()
    assert [(o.name, o.feature_level) for _, o in elr_feature_records(img, None)] == [(ELR_FEATURE, 1)]
    assert [o.feature_level for _, o in elr_feature_records(img, "4.1")] == [1]
    assert [o.feature_level for _, o in elr_feature_records(img, "4.0")] == [0]
    assert [o.feature_level for _, o in elr_feature_records(img, "3.9")] == [0]
    img = replay(img, [elr_feature_records(img, "3.9")[0]])
    assert not elr_enabled(img) and elr_feature_records(img, None) == []   # decided once, at format


def test_effective_min_isr_topic_then_cluster_capped_by_the_replication_factor():
    img = cluster(min_isr="2")
    t = img.topics["t"]
    assert topic_min_isr(img, t) == 2
    t.configs["min.insync.replicas"] = "3"
    assert topic_min_isr(img, t) == 3
    t.configs["min.insync.replicas"] = "5"
    assert topic_min_isr(img, t) == 3   # at most the replication factor


def test_fencing_followers_then_the_leader_keeps_who_may_lead_and_a_clean_restart_leads():
    img = cluster()
    p = commit(img, RC.fence_broker(img, 2))
    assert (p.isr, p.elr) == ([1, 3], [])          # at min ISR: no ELR
    p = commit(img, RC.fence_broker(img, 3))
    assert (p.leader, p.isr, p.elr) == (1, [1], [3])
    p = commit(img, RC.fence_broker(img, 1))
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (NO_LEADER, [], [1, 3], [1])
    # 3 comes back after a clean shutdown: it stays eligible and leads, cleanly
    assert RC.register_again(img, 3, 6, clean_shutdown=True) == []
    img.replay([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=3, incarnation_id=uuid.uuid4(), broker_epoch=6,
                                                       end_points=[], fenced=False))])
    p = commit(img, RC.elect_leaderless(img))
    assert (p.leader, p.isr, p.elr, p.last_known_elr, p.leader_recovery_state) == (3, [3], [1], [], RECOVERED)


def test_an_unclean_restart_leaves_the_elr():
    img = cluster()
    for b in (2, 3, 1):
        p = commit(img, RC.fence_broker(img, b))
    assert p.elr == [1, 3]
    p = commit(img, RC.register_again(img, 3, 6, clean_shutdown=False))
    assert (p.leader, p.isr, p.elr) == (NO_LEADER, [], [1])
    img.replay([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=3, incarnation_id=uuid.uuid4(), broker_epoch=6,
                                                       end_points=[], fenced=False))])
    assert RC.elect_leaderless(img) == []   # 3 may have lost acknowledged records: it waits for 1


def test_the_last_isr_member_restarting_uncleanly_comes_back_as_last_known_leader():
    img = cluster(rf=1, min_isr="1")
    p = commit(img, RC.register_again(img, 1, 6, clean_shutdown=False))
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (NO_LEADER, [], [], [1])
    img.replay([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=1, incarnation_id=uuid.uuid4(), broker_epoch=6,
                                                       end_points=[], fenced=False))])
    p = commit(img, RC.elect_leaderless(img))
    assert (p.leader, p.isr, p.leader_recovery_state, p.last_known_elr) == (1, [1], RECOVERING, [])


def test_without_elr_the_controller_keeps_the_pre_kip_966_rules():
    img = cluster(elr=False)
    for b in (2, 3, 1):
        p = commit(img, RC.fence_broker(img, b))
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (NO_LEADER, [1], [], [])
    img.replay([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=3, incarnation_id=uuid.uuid4(), broker_epoch=6,
                                                       end_points=[], fenced=False))])
    assert RC.elect_leaderless(img) == []   # only ISR member 1 may lead


def test_alter_partition_shrinking_below_min_isr_fills_the_elr_and_expanding_clears_it():
    img = cluster()
    res, recs = RC.alter_partition(img, 1, TID, 0, 0, 0, [1])
    p = commit(img, recs)
    assert (res.isr, p.isr, p.elr) == ([1], [1], [2, 3])
    res, recs = RC.alter_partition(img, 1, TID, 0, p.leader_epoch, p.partition_epoch, [1, 2])
    p = commit(img, recs)
    assert (p.isr, p.elr) == ([1, 2], [])


@pytest.mark.slow
def test_a_broker_formats_with_elr_unless_it_emulates_a_release_before_4_1():
    from kwire.testing import Broker  # noqa: PLC0415

    for emulated, level in ((None, 1), ("4.0", 0)):
        overrides = {"node.id": 1} if emulated is None else {"node.id": 1, "kwire.emulate.kafka.version": emulated}
        with Broker(mode="thread", overrides=overrides) as b:
            image = b.server.broker.image
            assert image.features.get(ELR_FEATURE) == level, (emulated, image.features)
            assert elr_enabled(image) is (level == 1)


# ------------------------------------------------------------------ ClearElrRecord
TID2 = uuid.UUID(int=77)


def _with_elr(img):
    """Partition t-0 with ELR [2, 3] (ISR shrunk below min ISR), and a second topic u with an
    ELR as well; returns the two partitions."""
    img.replay([(R.TOPIC, R.TOPIC.cls(name="u", topic_id=TID2))])
    img.replay([(R.PARTITION, R.PARTITION.cls(partition_id=0, topic_id=TID2, replicas=[1, 2, 3], isr=[1], leader=1,
                                      leader_epoch=0, partition_epoch=0, eligible_leader_replicas=[2],
                                      last_known_elr=[3]))])
    _, recs = RC.alter_partition(img, 1, TID, 0, 0, 0, [1])
    p = commit(img, recs)
    assert p.elr == [2, 3]
    return p, img.topics["u"].partitions[0]


def test_a_min_isr_change_clears_the_elr_of_its_topic_or_of_every_topic():
    img = cluster()
    p, q = _with_elr(img)
    epochs = (p.partition_epoch, q.partition_epoch)
    # the same topic value again: nothing to clear (Kafka writes no record for an unchanged topic value)
    img.replay([(R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_TOPIC, resource_name="t", name="min.insync.replicas",
                                     value="2"))])
    assert clear_elr_records(img, R.RESOURCE_TOPIC, "t", {"min.insync.replicas": "2"}) == []
    assert clear_elr_records(img, R.RESOURCE_TOPIC, "t", {"retention.ms": "5"}) == []
    recs = clear_elr_records(img, R.RESOURCE_TOPIC, "t", {"min.insync.replicas": "3"})
    assert [(m, o.topic_name) for m, o in recs] == [(R.CLEAR_ELR, "t")]
    for m, o in recs:   # through the wire format, as the metadata log carries it
        img.image = replay_bytes(img.image, [R.encode_record(m, o)])
    p, q = img.topics["t"].partitions[0], img.topics["u"].partitions[0]   # the new image's
    assert (p.elr, p.last_known_elr, p.partition_epoch) == ([], [], epochs[0] + 1)
    assert (q.elr, q.last_known_elr, q.partition_epoch) == ([2], [3], epochs[1])   # another topic: kept
    # cluster level: every topic, even for the value it has (a ConfigRecord is written all the same)
    recs = clear_elr_records(img, R.RESOURCE_BROKER, "", {"min.insync.replicas": "2"})
    assert [(m, o.topic_name) for m, o in recs] == [(R.CLEAR_ELR, "")]
    for m, o in recs:
        img.replay([(m, o)])
    p, q = img.topics["t"].partitions[0], img.topics["u"].partitions[0]
    assert (q.elr, q.last_known_elr, q.partition_epoch) == ([], [], epochs[1] + 1)
    assert p.partition_epoch == epochs[0] + 1   # already empty: unchanged


def test_without_elr_a_min_isr_change_clears_nothing():
    img = cluster(elr=False)
    assert clear_elr_records(img, R.RESOURCE_BROKER, "", {"min.insync.replicas": "3"}) == []
    assert clear_elr_records(img, R.RESOURCE_TOPIC, "t", {"min.insync.replicas": "3"}) == []


def test_a_controller_after_the_clear_elects_from_the_isr_only():
    """After the clear the ELR members are no longer leader candidates: the ISR's last member
    fenced leaves the partition leaderless (as before KIP-966), not led by a stale ELR member."""
    img = cluster()
    p, _ = _with_elr(img)
    for m, o in clear_elr_records(img, R.RESOURCE_TOPIC, "t", {"min.insync.replicas": "3"}):
        img.replay([(m, o)])
    p = commit(img, RC.fence_broker(img, 1))
    assert p.leader == NO_LEADER and 2 not in p.elr and 3 not in p.elr
