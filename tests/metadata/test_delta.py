"""The immutable metadata image, its deltas and the publishers (Kafka's MetadataImage /
MetadataDelta / MetadataPublisher): deterministic, no process, no socket."""
from __future__ import annotations

import logging
import uuid
from types import SimpleNamespace as NS

from kwire.broker_metadata import CoordinatorPublisher, ReplicaPublisher
from kwire.metadata import records as R
from kwire.metadata.delta import MetadataDelta, replay
from kwire.metadata.image import MetadataImage
from kwire.metadata.publisher import MetadataPublishers
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot
from kwire.security.authorizer import LITERAL, TOPIC, Authorizer, Op

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def _broker(i, epoch=1):
    return (R.REGISTER_BROKER, R.REGISTER_BROKER.cls(broker_id=i, incarnation_id=uuid.UUID(int=0), broker_epoch=epoch,
                                                     end_points=[], fenced=False))


def _partition(tid, i, leader, replicas, isr):
    return (R.PARTITION, R.PARTITION.cls(partition_id=i, topic_id=tid, replicas=replicas, isr=isr, leader=leader,
                                         leader_epoch=0, partition_epoch=0))


def _base() -> MetadataImage:
    return replay(MetadataImage(), [
        _broker(1), _broker(2),
        (R.TOPIC, R.TOPIC.cls(name="a", topic_id=T1)), _partition(T1, 0, 1, [1, 2], [1, 2]),
        _partition(T1, 1, 2, [2, 1], [2, 1]),
        (R.TOPIC, R.TOPIC.cls(name="b", topic_id=T2)), _partition(T2, 0, 1, [1], [1]),
    ], offset=6)


def _acl(i, name="orders"):
    return (R.ACCESS_CONTROL_ENTRY, R.ACCESS_CONTROL_ENTRY.cls(
        id=i, resource_type=TOPIC, resource_name=name, pattern_type=LITERAL, principal="User:alice", host="*",
        operation=Op.READ, permission_type=3))


def test_a_delta_leaves_the_old_image_as_it_was_and_shares_what_it_did_not_touch():
    old = _base()
    held = old.topics["a"].partitions[0]          # a reader that took the image keeps its view
    delta = MetadataDelta(old)
    delta.replay(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=T1, isr=[1], leader=2))
    delta.replay(R.FENCE_BROKER, R.FENCE_BROKER.cls(id=1, epoch=1))
    new = delta.apply(7)
    assert (held.leader, held.leader_epoch, held.isr) == (1, 0, [1, 2])
    assert old.topics["a"].partitions[0] is held and not old.brokers[1].fenced and old.offset == 6
    p = new.topics["a"].partitions[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (2, 1, 1, [1]) and new.brokers[1].fenced
    assert new.offset == 7
    # copy on write: the untouched partition, topic and broker are the old image's objects
    assert new.topics["a"].partitions[1] is old.topics["a"].partitions[1]
    assert new.topics["b"] is old.topics["b"] and new.topics_by_id[T2] is old.topics_by_id[T2]
    assert new.brokers[2] is old.brokers[2]
    assert new.acls is old.acls and new.client_quotas is old.client_quotas and new.scram is old.scram


def test_two_changes_of_one_partition_in_a_batch_both_apply_to_one_copy():
    old = _base()
    new = replay(old, [
        (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=1, topic_id=T1, isr=[2])),
        (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=1, topic_id=T1, leader=1, isr=[1, 2]))])
    p = new.topics["a"].partitions[1]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (1, 1, 2, [1, 2])
    assert old.topics["a"].partitions[1].partition_epoch == 0


def test_the_delta_says_what_changed():
    old = _base()
    t3 = uuid.UUID(int=3)
    delta = MetadataDelta(old).replay_all([
        (R.TOPIC, R.TOPIC.cls(name="c", topic_id=t3)), _partition(t3, 0, 2, [2], [2]),
        (R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=T2)),
        (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=1, topic_id=T1, isr=[2])),
        (R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_TOPIC, resource_name="a", name="retention.ms", value="5")),
        (R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_BROKER, resource_name="", name="x", value="1")),
        _broker(3),
        _acl(uuid.UUID(int=9)),
    ])
    new = delta.apply(20)
    assert delta.created_topics == {t3}
    assert set(delta.deleted_topics) == {T2} and delta.deleted_topics[T2] is old.topics["b"]
    assert delta.changed_partitions == {t3: {0}, T1: {1}}
    assert list(delta.changed_partition_names(new)) == [("c", 0), ("a", 1)]
    assert delta.changed_topic_configs == {"a"} and delta.changed_broker_configs == {""} and delta.configs_changed
    assert delta.registered_brokers == {3} and delta.changed_brokers == {3}
    assert delta.acls_changed and not delta.client_quotas_changed and not delta.scram_changed
    assert "b" not in new.topics and T2 not in new.topics_by_id and "b" in old.topics
    assert new.topics["a"].configs == {"retention.ms": "5"} and old.topics["a"].configs == {}
    assert new.broker_configs == {"": {"x": "1"}} and old.broker_configs == {}
    assert len(new.acls) == 1 and len(old.acls) == 0


def test_a_topic_made_and_removed_in_one_batch_is_neither_created_nor_deleted():
    t3 = uuid.UUID(int=3)
    delta = MetadataDelta(_base()).replay_all([
        (R.TOPIC, R.TOPIC.cls(name="c", topic_id=t3)), _partition(t3, 0, 2, [2], [2]),
        (R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=t3))])
    new = delta.apply()
    assert (delta.created_topics, delta.deleted_topics, delta.changed_partitions) == (set(), {}, {})
    assert "c" not in new.topics


def test_a_clear_elr_copies_only_the_partitions_it_empties():
    old = replay(_base(), [(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(
        partition_id=0, topic_id=T1, isr=[1], eligible_leader_replicas=[2]))])
    delta = MetadataDelta(old).replay_all([(R.CLEAR_ELR, R.CLEAR_ELR.cls(topic_name=""))])
    new = delta.apply()
    assert delta.changed_partitions == {T1: {0}}
    assert new.topics["a"].partitions[0].elr == [] and old.topics["a"].partitions[0].elr == [2]
    assert new.topics["a"].partitions[1] is old.topics["a"].partitions[1]


def test_a_snapshot_delta_yields_the_snapshot_image():
    old, new = MetadataImage(), decode_snapshot(encode_snapshot(_base()))
    delta = MetadataDelta.snapshot(old, new)
    assert delta.is_snapshot and delta.apply() is new and delta.acls_changed


# ------------------------------------------------------------------ publishers
class _Recorder:
    def __init__(self, name, calls, fail=False):
        self.name, self.calls, self.fail = name, calls, fail

    def on_metadata_update(self, delta, image):
        self.calls.append((self.name, delta, image))
        if self.fail:
            raise RuntimeError("boom")


def test_publishers_run_in_install_order_and_one_failing_does_not_stop_the_rest(caplog):
    calls: list = []
    pubs = MetadataPublishers()
    for name, fail in (("first", False), ("broken", True), ("last", False)):
        pubs.install(_Recorder(name, calls, fail))
    delta = MetadataDelta(_base())
    image = delta.apply(9)
    with caplog.at_level(logging.ERROR, "kwire.metadata.publisher"):
        pubs.publish(delta, image)
    assert [(n, d, i) for n, d, i in calls] == [("first", delta, image), ("broken", delta, image),
                                                ("last", delta, image)]
    assert "metadata publisher broken failed on the image at offset 9" in caplog.text
    try:
        pubs.install(_Recorder("first", calls))
    except ValueError:
        pass
    else:
        raise AssertionError("a second publisher of one name was installed")


def test_the_authorizer_takes_the_acls_of_a_batch_that_changed_them():
    image = MetadataImage()
    a = Authorizer(image.acls)
    delta = MetadataDelta(image).replay_all([_acl(uuid.UUID(int=1))])
    image = delta.apply()
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "orders")   # not published yet
    a.on_metadata_update(delta, image)
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "orders")
    other = MetadataDelta(image).replay_all([_broker(1)])
    a.on_metadata_update(other, MetadataImage())      # no ACL change: the store stays
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "orders")


class _FakeReplicas:
    """The broker parts the replica publisher drives, recording what it asks."""

    def __init__(self, node_id=1):
        self.calls: list = []
        rec = self.calls.append
        self.partitions: dict = {}
        self.replica_manager = NS(
            partitions=self.partitions,
            apply_partition=lambda t, p: rec(("apply", t, p)),
            partition_deleted=lambda t, p: rec(("deleted", t, p)),
            log_offline=lambda t, p: False, log_opening=lambda t, p: False)
        self.replica_fetchers = NS(remove=lambda tp: rec(("fetcher-remove", tp)), update=lambda part: None)
        self.logs = NS(reconfigure=lambda t: rec(("reconfigure", t)), delete_later=lambda t, p: None)
        self.node_id = node_id
        self._nursery = None


def test_the_replica_publisher_acts_on_the_delta_once_live():
    b = _FakeReplicas(node_id=1)
    pub = ReplicaPublisher(b)
    old = _base()
    delta = MetadataDelta(old).replay_all([
        (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=T1, leader=2)),
        (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=1, topic_id=T1, isr=[2])),
        (R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=T2)),
        (R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_TOPIC, resource_name="a", name="retention.ms", value="5"))])
    new = delta.apply()
    pub.on_metadata_update(delta, new)
    assert b.calls == []                               # still replaying: start() takes the roles up
    pub.live = True
    pub.on_metadata_update(delta, new)
    # configs after the partitions: a log the controller made before the commit takes them up
    assert b.calls == [("deleted", "b", 0), ("fetcher-remove", ("b", 0)),
                       ("apply", "a", 0), ("fetcher-remove", ("a", 0)),
                       ("apply", "a", 1), ("fetcher-remove", ("a", 1)), ("reconfigure", "a")]


def test_a_replica_publisher_ignores_partitions_this_node_never_hosted():
    b = _FakeReplicas(node_id=3)
    pub = ReplicaPublisher(b)
    pub.live = True
    delta = MetadataDelta(_base()).replay_all([
        (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=T1, isr=[1]))])
    pub.on_metadata_update(delta, delta.apply())
    assert b.calls == []


def test_the_coordinators_follow_their_topics_and_drop_a_deleted_topics_offsets():
    calls: list = []
    tid = uuid.UUID(int=50)
    b = NS(group_edge=NS(follow_image=lambda: calls.append("groups")),
           txn_edge=NS(follow_image=lambda: calls.append("txn")),
           groups=NS(delete_topic_offsets=lambda names: calls.append(("offsets", names))))
    pub = CoordinatorPublisher(b)
    pub.start()
    assert calls == ["groups", "txn"]
    calls.clear()
    old = replay(_base(), [(R.TOPIC, R.TOPIC.cls(name="__consumer_offsets", topic_id=tid)),
                           _partition(tid, 0, 1, [1], [1])])
    delta = MetadataDelta(old).replay_all([
        (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=tid, leader=2)),
        (R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=T2))])
    pub.on_metadata_update(delta, delta.apply())
    assert calls == [("offsets", ["b"]), "groups"]
