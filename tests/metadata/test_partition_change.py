"""The controller's partition change builder (Kafka's PartitionChangeBuilder), and the
records it makes applied to the image (leader / partition epochs as Kafka's
PartitionRegistration.merge)."""
from __future__ import annotations

import uuid

import pytest

from kwire.metadata.delta import replay, replay_bytes
from kwire.metadata import records as R
from kwire.metadata.image import BrokerImage, MetadataImage, PartitionImage
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot
from kwire.metadata.partition_change import (NO_LEADER, RECOVERED, RECOVERING, Election, PartitionChangeBuilder,
                                             leader_acceptor, without)

TID = uuid.UUID(int=7)


def part(leader=1, replicas=(1, 2, 3), isr=(1, 2, 3), le=5, pe=9, lrs=RECOVERED) -> PartitionImage:
    return PartitionImage(0, leader, list(replicas), list(isr), le, pe, lrs)


def brokers(fenced=(), shutting=()) -> dict[int, BrokerImage]:
    return {i: BrokerImage(i, "h", 9000 + i, epoch=10 + i, fenced=i in fenced, in_controlled_shutdown=i in shutting)
            for i in (1, 2, 3, 4)}


def build(p, bs=None, *, isr=None, election=Election.ONLINE, removing=NO_LEADER, adding=NO_LEADER, replicas=None,
          lrs=None):
    b = PartitionChangeBuilder(p, TID, leader_acceptor(bs or brokers(), removing=removing, adding=adding), election)
    if isr is not None:
        b.set_target_isr(isr)
    if replicas is not None:
        b.set_target_replicas(replicas)
    if lrs is not None:
        b.set_target_leader_recovery_state(lrs)
    return b.build()


def test_no_change_is_none():
    assert build(part()) is None
    assert build(part(), isr=[1, 2, 3]) is None
    assert build(part(), election=Election.UNCLEAN) is None


def test_isr_shrink_keeps_the_leader_and_its_epoch():
    rec = build(part(), isr=[1, 3])
    assert (rec.leader, rec.isr, rec.replicas, rec.leader_recovery_state) == (-2, [1, 3], None, -1)
    assert (rec.topic_id, rec.partition_id) == (TID, 0)


def test_leader_leaving_the_isr_elects_the_next_isr_member_in_replica_order():
    rec = build(part(replicas=(1, 2, 3), isr=(1, 3, 2)), isr=[3, 2])
    assert (rec.leader, rec.isr) == (2, [3, 2])   # replica order, not ISR order


def test_fenced_and_shutting_down_replicas_are_not_elected():
    assert build(part(), brokers(fenced=(2,)), isr=[2, 3]).leader == 3
    assert build(part(), brokers(shutting=(2,)), isr=[2, 3]).leader == 3
    assert build(part(), brokers(fenced=(1,))).leader == 2   # the current leader is no longer acceptable


def test_removing_a_broker():
    # the broker being removed (fenced / shutting down) may not lead even while the image shows it active
    rec = build(part(), isr=without([1, 2, 3], 1), removing=1)
    assert (rec.leader, rec.isr) == (2, [2, 3])


def test_last_isr_member_stays_and_the_partition_goes_offline():
    p = part(leader=1, isr=(1,))
    rec = build(p, isr=without(p.isr, 1), removing=1)
    assert (rec.leader, rec.isr) == (NO_LEADER, None)   # ISR [1] kept: it can come back clean


def test_no_isr_member_alive_offline_unless_unclean():
    p = part(leader=1, isr=(1,))
    bs = brokers(fenced=(1,))
    rec = build(p, bs)
    assert (rec.leader, rec.isr) == (NO_LEADER, None)
    rec = build(p, bs, election=Election.UNCLEAN)
    assert (rec.leader, rec.isr, rec.leader_recovery_state) == (2, [2], RECOVERING)
    p2 = part(leader=NO_LEADER, isr=(1,), lrs=RECOVERING)
    assert build(p2, bs, election=Election.UNCLEAN).leader_recovery_state == -1   # already recovering


def test_unclean_prefers_the_isr():
    p = part(leader=1, isr=(1, 3))
    rec = build(p, brokers(fenced=(1,)), election=Election.UNCLEAN)
    assert (rec.leader, rec.isr, rec.leader_recovery_state) == (3, None, -1)


def test_offline_partition_comes_back_with_an_added_broker():
    p = part(leader=NO_LEADER, isr=(2,))
    assert build(p, brokers(fenced=(2,))) is None
    rec = build(p, brokers(fenced=(2,)), adding=2)
    assert (rec.leader, rec.isr) == (2, None)


def test_preferred_election():
    p = part(leader=2, isr=(1, 2, 3))
    assert build(p, election=Election.PREFERRED).leader == 1
    assert build(p, election=Election.ONLINE) is None           # the current leader is fine
    assert build(part(leader=2, isr=(2, 3)), election=Election.PREFERRED) is None   # preferred not in the ISR
    assert build(part(leader=2, isr=(1, 2, 3)), brokers(shutting=(1,)), election=Election.PREFERRED) is None
    # preferred unavailable and the current leader gone: the next replica in order
    assert build(part(leader=NO_LEADER, isr=(2, 3)), election=Election.PREFERRED).leader == 2


def test_replicas_and_recovery_state():
    rec = build(part(), replicas=[1, 2, 3, 4])
    assert (rec.leader, rec.isr, rec.replicas) == (-2, None, [1, 2, 3, 4])
    rec = build(part(isr=(1,), lrs=RECOVERING), lrs=RECOVERED)
    assert rec.leader_recovery_state == RECOVERED and rec.leader == -2


def image_with(p: PartitionImage) -> MetadataImage:
    img = MetadataImage()
    for b in brokers().values():
        img = replay(img, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
            broker_id=b.node_id, incarnation_id=uuid.UUID(int=0), broker_epoch=b.epoch, end_points=[], fenced=False))])
    img = replay(img, [(R.TOPIC, R.TOPIC.cls(name="t", topic_id=TID))])
    img = replay(img, [(R.PARTITION, R.PARTITION.cls(partition_id=0, topic_id=TID, replicas=p.replicas, isr=p.isr,
                                           removing_replicas=[], adding_replicas=[], leader=p.leader,
                                           leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                                           leader_recovery_state=p.leader_recovery_state))])
    return img


@pytest.mark.parametrize("change, leader_epoch", [(dict(isr=[1, 3]), 5), (dict(isr=[2, 3]), 6),
                                                  (dict(replicas=[1, 2, 3, 4]), 5)])
def test_applied_records_bump_epochs_like_kafka(change, leader_epoch):
    img = image_with(part())
    rec = build(img.topics["t"].partitions[0], img.brokers, **change)
    data = R.encode_record(R.PARTITION_CHANGE, rec)      # through the wire form, as the log carries it
    img = replay_bytes(img, [data])
    p = img.topics["t"].partitions[0]
    assert (p.leader_epoch, p.partition_epoch) == (leader_epoch, 10)   # partition epoch: every change


def test_broker_registration_change_record_and_snapshot():
    img = image_with(part())
    enc = R.encode_record(R.BROKER_REGISTRATION_CHANGE, R.BROKER_REGISTRATION_CHANGE.cls(
        broker_id=2, broker_epoch=12, in_controlled_shutdown=1))
    assert enc[:3] == bytes([1, 17, 1])    # frame version 1, Kafka's type id 17, record version 1
    img = replay_bytes(img, [enc])
    assert img.brokers[2].in_controlled_shutdown and not img.brokers[2].active and not img.brokers[2].fenced
    img = replay_bytes(img, [R.encode_record(R.BROKER_REGISTRATION_CHANGE, R.BROKER_REGISTRATION_CHANGE.cls(
        broker_id=3, broker_epoch=99, fenced=1))])      # an older / other registration's epoch: no change
    assert not img.brokers[3].fenced
    img = replay_bytes(img, [R.encode_record(R.BROKER_REGISTRATION_CHANGE, R.BROKER_REGISTRATION_CHANGE.cls(
        broker_id=3, broker_epoch=13, fenced=1))])
    assert img.brokers[3].fenced
    back = decode_snapshot(encode_snapshot(img))
    assert back.brokers[2].in_controlled_shutdown and back.brokers[3].fenced
    # registering again (a new broker epoch) ends the controlled shutdown
    img = replay(img, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=2, incarnation_id=uuid.UUID(int=1), broker_epoch=13,
                                                       end_points=[], fenced=False))])
    assert img.brokers[2].active


def test_record_type_ids_are_kafkas():
    # metadata/src/main/resources/common/metadata/*.json in apache/kafka
    assert {m.name: m.type_id for m in R.BY_TYPE.values()} == {
        "RegisterBrokerRecord": 0, "UnregisterBrokerRecord": 1, "TopicRecord": 2, "PartitionRecord": 3,
        "ConfigRecord": 4, "PartitionChangeRecord": 5, "FenceBrokerRecord": 7, "UnfenceBrokerRecord": 8,
        "RemoveTopicRecord": 9, "FeatureLevelRecord": 12, "ProducerIdsRecord": 15,
        "BrokerRegistrationChangeRecord": 17, "AccessControlEntryRecord": 18,
        "RemoveAccessControlEntryRecord": 19, "NoOpRecord": 20,
        "UserScramCredentialRecord": 11, "RemoveUserScramCredentialRecord": 22,
        "ClientQuotaRecord": 14, "ClearElrRecord": 28}
