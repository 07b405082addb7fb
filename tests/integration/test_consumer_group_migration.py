"""The online upgrade and downgrade of a group whose members switch protocol, with stock
clients (kwire.groups.consumer_migration): classic members (confluent-kafka with
group.protocol=classic, kafka-python) and a member with group.protocol=consumer (librdkafka
2.16) in one group. Checked at every poll: no partition owned by two members; at the end:
the committed offsets are still there.

All clients are polled from this thread in turn, so each one's local assignment is what it
last told the broker."""
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kwire.testing import Broker

pytestmark = pytest.mark.slow

OVERRIDES = {
    "kwire.emulate.kafka.version": "4.0",
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 200,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.session.timeout.ms": 6000,
}
PARTITIONS = 6


@pytest.fixture(scope="module")
def broker():
    with Broker(mode="thread", overrides=OVERRIDES) as b:
        yield b


def _topic(broker):
    name = f"mig-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(15)
    return name


class Rd:
    """A confluent-kafka consumer (classic or consumer protocol)."""

    def __init__(self, bs, group, topic, protocol, strategy="range"):
        conf = {"bootstrap.servers": bs, "group.id": group, "group.protocol": protocol,
                "auto.offset.reset": "earliest", "enable.auto.commit": False}
        if protocol == "classic":
            conf.update({"heartbeat.interval.ms": 200, "session.timeout.ms": 6000,
                         "partition.assignment.strategy": strategy})
        self.c = Consumer(conf)
        self.c.subscribe([topic])
        self.topic = topic

    def poll(self):
        self.c.poll(0.02)

    def owned(self):
        return {tp.partition for tp in self.c.assignment()}

    def commit(self, partition, offset):
        self.c.commit(offsets=[TopicPartition(self.topic, partition, offset)], asynchronous=False)

    def close(self):
        self.c.close()


class Kp:
    """A kafka-python consumer (classic protocol, eager range)."""

    def __init__(self, bs, group, topic):
        from kafka import KafkaConsumer

        self.c = KafkaConsumer(bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                               enable_auto_commit=False, heartbeat_interval_ms=200, session_timeout_ms=6000)
        # kafka-python 3.0.x strands a member whose first join is redone for fresh metadata
        # while its poll() times out (the xfail pinned in test_groups.py): learn the partitions
        # before subscribing, as the other kafka-python group tests do
        self.c.partitions_for_topic(topic)
        self.c.subscribe([topic])

    def poll(self):
        self.c.poll(timeout_ms=20)

    def owned(self):
        """Eager: a member that sent its JoinGroup has given up everything (its subscription
        names no owned partitions, and the coordinator hands them on); kafka-python still
        lists them in assignment() until its SyncGroup answer replaces them."""
        from kafka.coordinator.base import MemberState

        if self.c._coordinator.state is MemberState.REBALANCING:  # noqa: SLF001
            return set()
        return {tp.partition for tp in self.c.assignment()}

    def close(self):
        self.c.close()


def _poll_until(members, cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
            owned = [p for x in members for p in x.owned()]
            assert len(owned) == len(set(owned)), f"a partition owned twice: {[sorted(x.owned()) for x in members]}"
        if cond():
            return
    raise AssertionError(f"not settled: {[sorted(x.owned()) for x in members]}")


def _all_once(members):
    owned = [p for x in members for p in x.owned()]
    return sorted(owned) == list(range(PARTITIONS)) and all(x.owned() for x in members)


def _group(admin, group):
    from confluent_kafka import ConsumerGroupType

    d = admin.describe_consumer_groups([group])[group].result(10)
    return d.type, d.state, {m.member_id: m for m in d.members}, ConsumerGroupType


def test_classic_members_upgrade_to_a_consumer_group_and_back(broker, capsys):
    bs = broker.bootstrap_servers
    topic = _topic(broker)
    group = f"mig-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bs})
    a, b = Rd(bs, group, topic, "classic"), Kp(bs, group, topic)
    members = [a, b]
    m = None
    try:
        _poll_until(members, lambda: _all_once(members))
        a.commit(0, 7)
        # one member switches to group.protocol=consumer: the group is upgraded online
        m = Rd(bs, group, topic, "consumer")
        members.append(m)
        _poll_until(members, lambda: _all_once(members))
        kind, state, described, GT = _group(admin, group)
        assert kind == GT.CONSUMER and len(described) == 3
        wire = broker.client()   # member types (ConsumerGroupDescribe v1): 0 classic, 1 consumer
        try:
            d = wire.request("ConsumerGroupDescribe", 1, group_ids=[group], include_authorized_operations=False)
            assert sorted(x.member_type for x in d.groups[0].members) == [0, 0, 1]
            assert d.groups[0].group_epoch > 0
        finally:
            wire.close()
        # kwire groups describes the mixed group through ConsumerGroupDescribe
        from kwire.cli import main

        capsys.readouterr()
        assert main(["groups", "--bootstrap-server", bs, "--describe", "--group", group, "--members",
                     "--verbose"]) == 0
        rows = [r.split() for r in capsys.readouterr().out.splitlines()[2:]]
        assert sum(int(r[4]) for r in rows) == PARTITIONS
        assert {r[1] for r in rows} == set(described)
        # a new classic member joins the consumer group (JoinGroup/SyncGroup into it)
        late = Rd(bs, group, topic, "classic")
        members.append(late)
        _poll_until(members, lambda: _all_once(members))
        # the last consumer-protocol member leaves: the group goes back to classic
        members.remove(m)
        m.close()
        m = None
        _poll_until(members, lambda: _all_once(members))
        kind, *_rest, GT = _group(admin, group)
        assert kind == GT.CLASSIC
        committed = a.c.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset == 7
    finally:
        for x in members + ([m] if m else []):
            x.close()


class Jv:
    """A Java kafka-clients 4.x member (the compat suite's driver)."""

    def __init__(self, java, group, topic, protocol):
        conf = {"group.protocol": protocol}
        if protocol == "classic":
            conf.update({"heartbeat.interval.ms": "200", "session.timeout.ms": "6000"})
        self.m = java.group_member(group, [topic], **conf)

    def poll(self):
        self.m.poll(0.05)

    def owned(self):
        return {p for _, p in self.m.assignment()}

    def close(self):
        self.m.close()


def test_java_classic_member_upgraded_by_a_consumer_protocol_member_and_back(broker):
    """Kafka 4's own client as the classic member (eager range): a librdkafka member with
    group.protocol=consumer upgrades the group; when it leaves the group is classic again and
    the Java member owns everything; then the Java member itself rejoins with the consumer
    protocol beside a classic librdkafka member."""
    from compat_tests.clients.java import JavaClient, JavaUnavailable
    try:
        java = JavaClient(broker.bootstrap_servers)
    except JavaUnavailable as exc:
        pytest.fail(f"the Java client is part of the test set-up: {exc}")
    bs = broker.bootstrap_servers
    topic = _topic(broker)
    group = f"migj-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bs})
    j = Jv(java, group, topic, "classic")
    members = [j]
    m = None
    try:
        _poll_until(members, lambda: _all_once(members))
        m = Rd(bs, group, topic, "consumer")
        members.append(m)
        _poll_until(members, lambda: _all_once(members))
        kind, _state, described, GT = _group(admin, group)
        assert kind == GT.CONSUMER and len(described) == 2
        members.remove(m)
        m.close()
        m = None
        _poll_until(members, lambda: j.owned() == set(range(PARTITIONS)))
        assert _group(admin, group)[0] == GT.CLASSIC
        # the Java member switches: a classic librdkafka member joins, then the Java member
        # comes back with group.protocol=consumer (the group is upgraded again)
        m = Rd(bs, group, topic, "classic")
        members.append(m)
        _poll_until(members, lambda: _all_once(members))
        members.remove(j)
        j.close()
        j = Jv(java, group, topic, "consumer")
        members.append(j)
        _poll_until(members, lambda: _all_once(members))
        assert _group(admin, group)[0] == GT.CONSUMER
    finally:
        for x in members + ([m] if m and m not in members else []):
            x.close()
        java.close()


def test_cooperative_classic_members_in_a_consumer_group(broker):
    """librdkafka classic members with cooperative-sticky (they report what they own and give
    partitions up incrementally): a consumer-protocol member upgrades the group; partitions
    move without being owned twice, first to it, then back when it leaves (downgrade)."""
    bs = broker.bootstrap_servers
    topic = _topic(broker)
    group = f"migc-{uuid.uuid4().hex[:8]}"
    a, b = Rd(bs, group, topic, "classic", "cooperative-sticky"), Rd(bs, group, topic, "classic", "cooperative-sticky")
    members = [a, b]
    m = None
    try:
        _poll_until(members, lambda: _all_once(members))
        m = Rd(bs, group, topic, "consumer")
        members.append(m)
        _poll_until(members, lambda: _all_once(members) and all(len(x.owned()) == 2 for x in members))
        admin = AdminClient({"bootstrap.servers": bs})
        kind, _state, described, GT = _group(admin, group)
        assert kind == GT.CONSUMER and len(described) == 3
        members.remove(m)
        m.close()
        m = None
        _poll_until(members, lambda: _all_once(members))
        assert _group(admin, group)[0] == GT.CLASSIC
    finally:
        for x in members + ([m] if m else []):
            x.close()
