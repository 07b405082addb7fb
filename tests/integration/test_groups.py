"""Consumer groups end to end with stock clients: confluent-kafka (librdkafka), kafka-python and
aiokafka against a kwire broker with the group coordinator wired in."""
import asyncio
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kwire.testing import Broker
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

OVERRIDES = {"group.initial.rebalance.delay.ms": 0}


def _name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _create(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def _produce(bootstrap, topic, values, partitions):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % partitions)
    assert p.flush(15) == 0


def _consumer(bootstrap, group, **extra):
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500, "topic.metadata.refresh.interval.ms": 1000}
    conf.update(extra)
    return Consumer(conf)


def _poll_until(consumers, cond, timeout=30.0, sink=None):
    """Poll every consumer in turn until ``cond()`` holds; messages go to ``sink``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.05)
            if m is not None and not m.error() and sink is not None:
                sink.append((c, m))
        if cond():
            return True
    return False


def _owned(consumers):
    return [sorted(tp.partition for tp in c.assignment()) for c in consumers]


@pytest.fixture(scope="module")
def broker():
    with Broker(mode="thread", overrides=OVERRIDES) as b:
        yield b


def test_confluent_three_members_then_one_leaves(broker):
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    _create(bs, topic, 6)
    cs = [_consumer(bs, group) for _ in range(3)]
    for c in cs:
        c.subscribe([topic])

    def all_owned_once():
        owned = _owned(cs)
        flat = [p for ps in owned for p in ps]
        return all(owned) and sorted(flat) == list(range(6))
    assert _poll_until(cs, all_owned_once), _owned(cs)
    flat = [p for ps in _owned(cs) for p in ps]
    assert sorted(flat) == list(range(6)) and len(set(flat)) == 6

    cs[0].close()
    rest = cs[1:]

    def two_own_all():
        owned = _owned(rest)
        flat = [p for ps in owned for p in ps]
        return all(owned) and sorted(flat) == list(range(6))
    assert _poll_until(rest, two_own_all), _owned(rest)
    for c in rest:
        c.close()


def test_committed_offsets_survive_restart():
    with Broker(mode="thread", overrides=OVERRIDES) as b:
        bs = b.bootstrap_servers
        topic, group = _name("t"), _name("g")
        _create(bs, topic, 6)
        cs = [_consumer(bs, group) for _ in range(3)]
        for c in cs:
            c.subscribe([topic])
        # settle the group first, so no partition changes hands while we read
        assert _poll_until(cs, lambda: all(_owned(cs)) and sum(map(len, _owned(cs))) == 6)
        first = [f"a{i}".encode() for i in range(60)]
        _produce(bs, topic, first, 6)
        got = []
        assert _poll_until(cs, lambda: len(got) >= 60, sink=got), len(got)
        assert sorted(m.value() for _, m in got) == sorted(first)
        for c in cs:
            try:
                c.commit(asynchronous=False)
            except Exception:  # noqa: BLE001 - a member may own nothing to commit
                pass
        # every partition's committed offset is its end (10 records each)
        probe = _consumer(bs, group)
        committed = probe.committed([TopicPartition(topic, p) for p in range(6)], timeout=10)
        probe.close()
        assert [tp.offset for tp in committed] == [10] * 6
        for c in cs:
            c.close()

        b.restart()
        bs = b.bootstrap_servers
        second = [f"b{i}".encode() for i in range(12)]
        _produce(bs, topic, second, 6)
        c = _consumer(bs, group)
        c.subscribe([topic])
        got = []
        assert _poll_until([c], lambda: len(got) >= 12, sink=got), len(got)
        _poll_until([c], lambda: False, timeout=1.0, sink=got)  # anything extra would show up
        c.close()
        assert sorted(m.value() for _, m in got) == sorted(second)


def test_kafka_python_group_join_consume_commit(broker):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    _create(bs, topic, 3)
    values = [f"k{i}".encode() for i in range(30)]
    _produce(bs, topic, values, 3)
    c = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=6000,
                      heartbeat_interval_ms=500)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 30 and time.monotonic() < deadline:
        for recs in c.poll(500).values():
            got.extend(r.value for r in recs)
    assert sorted(got) == sorted(values)
    assert {tp.partition for tp in c.assignment()} == {0, 1, 2}
    c.commit()
    assert [c.committed(KTP(topic, p)) for p in range(3)] == [10, 10, 10]
    c.close()
    # a fresh member of the group resumes at the commits: nothing left to read
    c2 = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                       enable_auto_commit=False, session_timeout_ms=6000)
    extra = []
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        for recs in c2.poll(300).values():
            extra.extend(recs)
    assert {tp.partition for tp in c2.assignment()} == {0, 1, 2}
    c2.close()
    assert extra == []


def test_aiokafka_group_join_consume_commit(broker):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as ATP
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    _create(bs, topic, 2)
    values = [f"v{i}".encode() for i in range(20)]
    _produce(bs, topic, values, 2)

    async def run():
        c = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=500)
        await c.start()
        try:
            got = []
            async with asyncio.timeout(30):
                while len(got) < 20:
                    batch = await c.getmany(timeout_ms=500)
                    for recs in batch.values():
                        got.extend(r.value for r in recs)
            await c.commit()
            committed = [await c.committed(ATP(topic, p)) for p in range(2)]
            return got, committed
        finally:
            await c.stop()

    got, committed = asyncio.run(run())
    assert sorted(got) == sorted(values)
    assert committed == [10, 10]


def test_describe_and_list_groups(broker):
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    _create(bs, topic, 2)
    c = _consumer(bs, group)
    c.subscribe([topic])
    assert _poll_until([c], lambda: len(c.assignment()) == 2)
    a = AdminClient({"bootstrap.servers": bs})
    listed = {g.group_id for g in a.list_consumer_groups().result(10).valid}
    assert group in listed
    d = a.describe_consumer_groups([group])[group].result(10)
    assert len(d.members) == 1
    assert {tp.partition for tp in d.members[0].assignment.topic_partitions} == {0, 1}
    c.close()


def test_static_member_restarts_without_rebalance(broker):
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    _create(bs, topic, 4)
    events = {"s1": [], "s2": []}

    def member(iid):
        c = _consumer(bs, group, **{"group.instance.id": iid, "session.timeout.ms": 10000})
        c.subscribe([topic], on_assign=lambda _c, ps: events[iid].append(("assign", len(ps))),
                    on_revoke=lambda _c, ps: events[iid].append(("revoke", len(ps))))
        return c

    c1, c2 = member("s1"), member("s2")
    assert _poll_until([c1, c2], lambda: all(_owned([c1, c2])) and
                       sum(map(len, _owned([c1, c2]))) == 4), _owned([c1, c2])
    before1, before2 = _owned([c1, c2])
    seen2 = list(events["s2"])
    c1.close()  # a static member leaves no LeaveGroup behind: its place is kept
    c1 = member("s1")
    assert _poll_until([c1, c2], lambda: bool(c1.assignment())), _owned([c1, c2])
    _poll_until([c1, c2], lambda: False, timeout=1.5)
    assert _owned([c1, c2]) == [before1, before2]
    assert events["s2"] == seen2, "the other member saw a rebalance"
    c1.close()
    c2.close()


def test_cooperative_sticky_incremental_rebalance(broker):
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    _create(bs, topic, 6)
    revoked = {1: [], 2: []}

    def member(n):
        c = _consumer(bs, group, **{"partition.assignment.strategy": "cooperative-sticky"})
        c.subscribe([topic], on_revoke=lambda _c, ps: revoked[n].extend(p.partition for p in ps))
        return c

    c1 = member(1)
    assert _poll_until([c1], lambda: len(c1.assignment()) == 6), _owned([c1])
    c2 = member(2)
    low = [6]

    def split():
        low[0] = min(low[0], len(c1.assignment()))
        a, b = _owned([c1, c2])
        return len(a) == 3 and len(b) == 3 and sorted(a + b) == list(range(6))
    assert _poll_until([c1, c2], split), _owned([c1, c2])
    # incremental: the first member gave up only what moved, never everything
    assert low[0] == 3 and len(revoked[1]) == 3
    assert set(revoked[1]) == set(_owned([c2])[0])
    c1.close()
    c2.close()


# ---------------------------------------------------------------------------- mixed clients
def _kafka_python_range_consumer(bs, group, topic):
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    k = KafkaConsumer(bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=6000,
                      heartbeat_interval_ms=300,
                      partition_assignment_strategy=[RangePartitionAssignor])
    # kafka-python asks for its topics' metadata only after its retry backoff, so with
    # group.initial.rebalance.delay.ms=0 its first assignment as leader would be made
    # without partition metadata, and the rejoin that follows hits a kafka-python 3.0.x bug
    # (test_kafka_python_leader_rejoin_after_metadata_change_client_bug). Real deployments
    # keep Kafka's 3 s initial delay; here the consumer learns the topic before it joins.
    assert k.partitions_for_topic(topic) == set(range(6))
    k.subscribe([topic])
    return k


class _Pollers:
    """Each member polls from its own thread (a kafka-python member blocks in its JoinGroup)."""

    def __init__(self, members):
        import threading
        self.stop = threading.Event()
        self.errors = []
        self.threads = [threading.Thread(target=self._run, args=(m,), daemon=True)
                        for m in members]
        for t in self.threads:
            t.start()

    def _run(self, m):
        try:
            while not self.stop.is_set():
                m.poll(0.1) if hasattr(m, "store_offsets") else m.poll(100)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            self.errors.append(exc)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(15)


def test_mixed_confluent_and_kafka_python_range_group(broker):
    """One confluent-kafka and one kafka-python member, range assignor, 6 partitions: every
    partition is owned exactly once; when either leaves, the other takes all six."""
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    _create(bs, topic, 6)
    owned_c: set[int] = set()

    def on_assign(_c, ps):
        owned_c.clear()
        owned_c.update(p.partition for p in ps)

    def on_revoke(_c, _ps):
        owned_c.clear()

    c = _consumer(bs, group, **{"partition.assignment.strategy": "range"})
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    k = _kafka_python_range_consumer(bs, group, topic)
    owned_k = lambda: {tp.partition for tp in k.assignment()}  # noqa: E731
    pollers = _Pollers([c, k])
    try:
        def split():
            a, b = set(owned_c), owned_k()
            return a and b and not (a & b) and a | b == set(range(6))
        wait_until(split, 25)
        assert sorted(owned_c) == [3, 4, 5] or sorted(owned_c) == [0, 1, 2]
        # the kafka-python member leaves: the confluent member takes every partition
        pollers.close()
        k.close()
        k = None
        pollers = _Pollers([c])
        wait_until(lambda: owned_c == set(range(6)), 25)
        # a new kafka-python member joins, then the confluent member leaves
        pollers.close()
        k = _kafka_python_range_consumer(bs, group, topic)
        pollers = _Pollers([c, k])
        wait_until(split, 25)
        pollers.close()
        c.close()
        c = None
        pollers = _Pollers([k])
        wait_until(lambda: owned_k() == set(range(6)), 25)
        assert not pollers.errors
    finally:
        pollers.close()
        for m in (k, c):
            if m is not None:
                m.close()


# Not strict: the stuck join needs kafka-python's poll loop to time out before the SyncGroup
# answer, which a loaded machine's slow loop can miss (it XPASSed once in CI). AssertionError only:
# anything else fails the test.
@pytest.mark.xfail(strict=False, raises=AssertionError, reason=(
    "kafka-python 3.0.x bug: need_rejoin() ignores a join still in flight when the rejoin was "
    "asked for by a metadata change, so a leader whose poll() times out before its SyncGroup "
    "answer never completes the join (no heartbeats, evicted at its session timeout). kwire "
    "answers the SyncGroup; Apache Kafka behaves the same. When this XPASSes every time, "
    "kafka-python is fixed: drop the metadata warm-up in _kafka_python_range_consumer."))
def test_kafka_python_leader_rejoin_after_metadata_change_client_bug():
    """Deterministic reproduction of the stuck kafka-python leader: its first assignment is
    made without partition metadata (its topic Metadata request is held back), so it rejoins
    when the metadata arrives; its SyncGroup answers take longer than one poll(100 ms)."""
    from kafka import KafkaConsumer
    with Broker(mode="thread", overrides=OVERRIDES) as b:
        bs = b.bootstrap_servers
        topic, group = _name("t"), _name("g")
        _create(bs, topic, 3)
        b.faults.delay("Metadata", 1.0, n=1, topic=topic)
        b.faults.delay("SyncGroup", 0.4, n=2)
        k = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                          session_timeout_ms=6000, heartbeat_interval_ms=300)
        k.subscribe([topic])
        try:
            # a client without the bug is assigned in ~1.5 s (1 s Metadata delay, two 0.4 s
            # SyncGroups); the stuck one never is, so 4 s tells them apart
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline and len(k.assignment()) < 3:
                k.poll(100)
            assert {tp.partition for tp in k.assignment()} == {0, 1, 2}
        finally:
            k.close()
