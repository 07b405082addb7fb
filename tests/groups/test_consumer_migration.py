"""The online upgrade of a classic group to a KIP-848 consumer group and the downgrade back
(kwire.groups.consumer_migration), on the coordinator's state machine with a fake clock:
classic members (JoinGroup/SyncGroup/Heartbeat, eager or cooperative) and consumer-protocol
members (ConsumerGroupHeartbeat) in one group; no partition is ever owned by two members, and
committed offsets survive both conversions."""
from __future__ import annotations

import uuid

import pytest

from kwire.clock import FakeClock
from kwire.codec import consumer_protocol as cp
from kwire.errors import ErrorCode as E
from kwire.groups import GroupConfig, GroupCoordinator
from kwire.groups import consumer_records as CR
from kwire.groups.group import GroupState

T1 = uuid.UUID(int=1)
NAMES = {T1: "t"}


class Cluster:
    def __init__(self, policy="bidirectional", partitions=6):
        self.clock = FakeClock()
        self.log: list = []
        cfg = GroupConfig(consumer_session_timeout_ms=10_000, consumer_heartbeat_interval_ms=100,
                          group_initial_rebalance_delay_ms=0, consumer_migration_policy=policy)
        self.coord = GroupCoordinator(cfg, self.clock, self.write)
        self.coord.topic_metadata = lambda: {"t": (T1, partitions)}

    def write(self, partition, records, done, **_kw):
        self.log.extend(records)
        done(E.NONE)

    def group(self, gid="g"):
        return self.coord.groups[gid]


class Classic:
    """A classic consumer (eager by default: it revokes everything before it rejoins; a
    cooperative one keeps what it owns and reports it in its subscription)."""

    def __init__(self, c: Cluster, cooperative=False, name="c"):
        self.c, self.cooperative, self.name = c, cooperative, name
        self.member_id, self.generation, self.owned = "", -1, set()

    def _subscription(self) -> bytes:
        if not self.cooperative:
            return cp.encode_subscription(cp.Subscription(topics=["t"], user_data=None), 0)
        owned = [cp.SubscriptionTopicPartition(topic="t", partitions=sorted(self.owned))] if self.owned else []
        return cp.encode_subscription(cp.Subscription(topics=["t"], user_data=None, owned_partitions=owned,
                                                      generation_id=self.generation, rack_id=None), 3)

    def join(self):
        """JoinGroup (twice for MEMBER_ID_REQUIRED); returns the Pending."""
        if not self.cooperative:
            self.owned = set()   # eager: revoke all before joining
        for _ in range(2):
            p = self.c.coord.join_group("g", self.member_id, protocol_type="consumer",
                                        protocols=[("range", self._subscription())],
                                        session_timeout_ms=10_000, rebalance_timeout_ms=5_000,
                                        client_id=self.name)
            if p.done and p.result.error == E.MEMBER_ID_REQUIRED:
                self.member_id = p.result.member_id
                continue
            return p
        return p

    def on_joined(self, r, assignments=None):
        assert r.error == E.NONE, r
        self.generation = r.generation_id
        p = self.c.coord.sync_group("g", self.generation, self.member_id, assignments=assignments or {},
                                    protocol_type="consumer", protocol_name="range")
        return p

    def on_synced(self, r):
        assert r.error == E.NONE, r
        self.owned = {p for tp in cp.decode_assignment(r.assignment).assigned_partitions for p in tp.partitions}

    def rejoin_in_consumer_group(self):
        """Join and sync against a consumer group (answers come at once)."""
        p = self.join()
        assert p.done
        s = self.on_joined(p.result)
        assert s.done
        if s.result.error == E.REBALANCE_IN_PROGRESS:
            return False
        self.on_synced(s.result)
        return True

    def heartbeat(self):
        return self.c.coord.heartbeat("g", self.generation, self.member_id)

    def step(self):
        """One poll of a classic consumer in a consumer group: heartbeat, rejoin when asked."""
        e = self.heartbeat()
        if e == E.REBALANCE_IN_PROGRESS:
            self.rejoin_in_consumer_group()
        else:
            assert e == E.NONE, e


class Modern:
    def __init__(self, c: Cluster, mid=None):
        self.c, self.mid, self.epoch, self.owned = c, mid or str(uuid.uuid4()), 0, set()

    def step(self):
        owned = None if self.epoch == 0 else [(T1, sorted(self.owned))]
        p = self.c.coord.consumer_group_heartbeat(
            "g", self.mid, self.epoch, rebalance_timeout_ms=5_000 if self.epoch == 0 else -1,
            subscribed_topic_names=["t"] if self.epoch == 0 else None, topic_partitions=owned)
        assert p.done
        r = p.result
        assert r.error == E.NONE, r
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = set(r.assignment.get(T1, ()))
        return r

    def leave(self):
        p = self.c.coord.consumer_group_heartbeat("g", self.mid, -1)
        assert p.done and p.result.error == E.NONE


def assert_owned_once(members, partitions=6, complete=False):
    seen = [p for m in members for p in m.owned]
    assert len(seen) == len(set(seen)), [sorted(m.owned) for m in members]
    if complete:
        assert sorted(seen) == list(range(partitions)), [sorted(m.owned) for m in members]


def classic_group(c: Cluster, *members: Classic):
    """Form a classic group of ``members`` (the first is the leader, range-like assignment)."""
    pend = [members[0].join()]
    for i, m in enumerate(members[1:], 1):
        pend.append(m.join())
        for j in range(i):   # those that joined earlier learn of the rebalance and rejoin
            if pend[j].result.error == E.NONE and members[j].generation != pend[j].result.generation_id:
                members[j].generation = pend[j].result.generation_id
            assert members[j].heartbeat() == E.REBALANCE_IN_PROGRESS
            pend[j] = members[j].join()
    assert all(p.done for p in pend), [p.done for p in pend]
    leader = next(r for r in (p.result for p in pend) if r.members)
    ids = [x.member_id for x in leader.members]
    share = 6 // len(ids)
    plan = {mid: cp.encode_assignment(cp.Assignment(assigned_partitions=[cp.AssignmentTopicPartition(
        topic="t", partitions=list(range(i * share, (i + 1) * share)))], user_data=None), 0)
        for i, mid in enumerate(ids)}
    syncs = [m.on_joined(p.result, plan if p.result.members else None) for m, p in zip(members, pend)]
    for m, s in zip(members, syncs):
        assert s.done
        m.on_synced(s.result)
    assert c.group().is_(GroupState.STABLE)


def settle(members, rounds=8):
    for _ in range(rounds):
        for m in members:
            m.step()
            assert_owned_once(members)


def commit(c, member, gen, offset):
    p = c.coord.commit_offsets("g", gen, member, [("t", 0, offset, -1, None)], api_version=8)
    assert p.done
    return p.result.errors[("t", 0)]


@pytest.mark.parametrize("cooperative", [False, True])
def test_upgrade_then_downgrade_keeps_partitions_once_and_offsets(cooperative):
    c = Cluster()
    a, b = Classic(c, cooperative, "a"), Classic(c, cooperative, "b")
    classic_group(c, a, b)
    assert commit(c, a.member_id, a.generation, 42) == E.NONE
    generation = a.generation

    # a member switches to group.protocol=consumer: the group becomes a consumer group
    m = Modern(c)
    r = m.step()
    g = c.group()
    assert g.consumer is not None and g.consumer.group_epoch == generation + 1
    assert set(g.consumer.members) == {a.member_id, b.member_id, m.mid}
    assert g.consumer.members[a.member_id].classic is not None
    assert not m.owned, "nothing is given while the classic members still own it"
    assert r.member_epoch == generation + 1
    assert_owned_once([a, b, m])
    # the classic members learn of it through their heartbeats and rejoin
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
    settle([a, b, m])
    assert_owned_once([a, b, m], complete=True)
    assert {len(x.owned) for x in (a, b, m)} == {2}
    assert c.group().consumer.state().value == "Stable"
    # a classic member commits with its generation (= member epoch); one newer than it, or an
    # older one for a partition it does not own or got after that generation, is refused
    # (Kafka 4.3's assignment epochs, KIP-1251, with ILLEGAL_GENERATION for a classic member)
    assert commit(c, a.member_id, a.generation, 43) == E.NONE
    assert commit(c, a.member_id, a.generation + 1, 44) == E.ILLEGAL_GENERATION
    ma, outcomes = c.group().consumer.members[a.member_id], set()
    for p in range(6):
        e = ma.assignment_epoch(T1, p)
        got = c.coord.commit_offsets("g", a.generation - 1, a.member_id, [("t", p, 43, -1, None)],
                                     api_version=8).result.errors[("t", p)]
        assert got == (E.NONE if e is not None and e <= a.generation - 1 else E.ILLEGAL_GENERATION), (p, e)
        outcomes.add(got)
    assert outcomes == {E.NONE, E.ILLEGAL_GENERATION}
    # a classic member leaving is fenced (LeaveGroup); the others take over
    # (the consumer-protocol member stays: no downgrade)
    c.coord.leave_group("g", [(b.member_id, None)])
    b.owned = set()
    settle([a, m])
    assert_owned_once([a, m], complete=True)

    # the last consumer-protocol member leaves: the group becomes classic again and rebalances
    m.leave()
    m.owned = set()
    g = c.group()
    assert g.consumer is None and g.is_(GroupState.PREPARING_REBALANCE)
    assert list(g.members) == [a.member_id] and g.protocol_type == "consumer"
    assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
    p = a.join()
    assert p.done and p.result.error == E.NONE and p.result.leader == a.member_id
    plan = {a.member_id: cp.encode_assignment(cp.Assignment(assigned_partitions=[
        cp.AssignmentTopicPartition(topic="t", partitions=list(range(6)))], user_data=None), 0)}
    s = a.on_joined(p.result, plan)
    a.on_synced(s.result)
    assert a.owned == set(range(6)) and c.group().is_(GroupState.STABLE)
    assert c.coord.fetch_offsets("g", [("t", 0)]).offsets[("t", 0)].offset == 43


def test_upgrade_records_replay_into_the_same_group():
    """The conversion's records, replayed on another coordinator (a failover), rebuild the
    consumer group with its classic members and their protocols."""
    c = Cluster()
    a = Classic(c, name="a")
    classic_group(c, a)
    Modern(c, "m1").step()
    other = GroupCoordinator(GroupConfig(), FakeClock(), lambda *a_, **k: None)
    other.topic_metadata = lambda: {"t": (T1, 6)}
    for k, v in c.log:
        other.replay(k, v)
    cg = other.groups["g"].consumer
    assert cg is not None and set(cg.members) == {a.member_id, "m1"}
    assert cg.members[a.member_id].classic.protocols[0][0] == "range"
    assert cg.members[a.member_id].classic.session_timeout_ms == 10_000
    assert other.groups["g"].members == {}
    assert any(CR.decode_key(k).kind == CR.MEMBER_METADATA for k, _ in c.log if k[:2] == b"\x00\x05")


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_upgrade_refused_by_policy(policy):
    c = Cluster(policy=policy)
    classic_group(c, Classic(c))
    p = c.coord.consumer_group_heartbeat("g", "m", 0, rebalance_timeout_ms=5_000, subscribed_topic_names=["t"])
    assert p.result.error == E.GROUP_ID_NOT_FOUND
    assert c.group().consumer is None and c.group().is_(GroupState.STABLE)


def test_upgrade_only_policy_keeps_the_consumer_group():
    c = Cluster(policy="upgrade")
    a = Classic(c)
    classic_group(c, a)
    m = Modern(c)
    m.step()
    settle([a, m])
    m.leave()
    g = c.group()
    assert g.consumer is not None and set(g.consumer.members) == {a.member_id}
    settle([a])
    assert a.owned == set(range(6))


def test_classic_member_missing_its_session_is_fenced_and_downgrade_on_consumer_timeout():
    c = Cluster()
    a, b = Classic(c, name="a"), Classic(c, name="b")
    classic_group(c, a, b)
    m = Modern(c)
    m.step()
    settle([a, b, m])
    # b stops; its classic session timeout (10 s) fences it
    for _ in range(4):
        c.clock.advance(3_000)
        c.coord.tick()
        a.step()
        m.step()
    assert b.member_id not in c.group().consumer.members
    settle([a, m])
    assert_owned_once([a, m], complete=True)
    # the consumer member stops: its session timeout (10 s) fences it and the group goes classic
    for _ in range(4):
        c.clock.advance(3_000)
        c.coord.tick()
        e = a.heartbeat()
        if e == E.REBALANCE_IN_PROGRESS:
            break
        a.step()
    g = c.group()
    assert g.consumer is None and list(g.members) == [a.member_id]


def test_classic_apis_on_consumer_group_errors():
    c = Cluster()
    a = Classic(c)
    classic_group(c, a)
    m = Modern(c)
    m.step()
    # unknown members, wrong generations, consumer-protocol members on classic APIs
    assert c.coord.heartbeat("g", 1, "nobody") == E.UNKNOWN_MEMBER_ID
    assert c.coord.heartbeat("g", 99, a.member_id) == E.ILLEGAL_GENERATION
    assert c.coord.heartbeat("g", m.epoch, m.mid) == E.UNKNOWN_MEMBER_ID
    s = c.coord.sync_group("g", a.generation, a.member_id, protocol_type="consumer", protocol_name="range")
    assert s.result.error == E.REBALANCE_IN_PROGRESS   # its epoch is behind the group's
    p = c.coord.join_group("g", "", protocol_type="connect", protocols=[("x", b"")], session_timeout_ms=10_000,
                           rebalance_timeout_ms=5_000)
    assert p.result.error == E.INCONSISTENT_GROUP_PROTOCOL
    p = c.coord.join_group("g", "nobody", protocol_type="consumer", protocols=[("range", b"\0\0")],
                           session_timeout_ms=10_000, rebalance_timeout_ms=5_000)
    assert p.result.error == E.INCONSISTENT_GROUP_PROTOCOL   # no subscription in those bytes


def test_a_new_classic_member_joins_a_consumer_group():
    """MEMBER_ID_REQUIRED, then the JoinGroup with that id creates the member (Kafka keeps
    nothing in between); it gets its share through SyncGroup once the others let go."""
    c = Cluster()
    m = Modern(c)
    m.step()
    assert m.owned == set(range(6))
    a = Classic(c, name="late")
    settle([m])
    a.rejoin_in_consumer_group()
    assert a.member_id in c.group().consumer.members
    assert c.group().consumer.members[a.member_id].classic is not None
    settle([a, m])
    assert_owned_once([a, m], complete=True)
    assert len(a.owned) == 3 and len(m.owned) == 3
    # a classic member offering no protocol the classic members share is refused
    other = cp.encode_subscription(cp.Subscription(topics=["t"], user_data=None), 0)
    p = c.coord.join_group("g", "x1", protocol_type="consumer", protocols=[("roundrobin", other)],
                           session_timeout_ms=10_000, rebalance_timeout_ms=5_000)
    assert p.result.error == E.INCONSISTENT_GROUP_PROTOCOL
    # a consumer-protocol member's id on the classic APIs is not a classic member
    p = c.coord.join_group("g", m.mid, protocol_type="consumer", protocols=[("range", a._subscription())],
                           session_timeout_ms=10_000, rebalance_timeout_ms=5_000)
    assert p.result.error == E.UNKNOWN_MEMBER_ID


def test_downgrade_records_replay_into_a_classic_group():
    c = Cluster()
    a = Classic(c, name="a")
    classic_group(c, a)
    m = Modern(c, "m1")
    m.step()
    settle([a, m])
    m.leave()
    other = GroupCoordinator(GroupConfig(), FakeClock(), lambda *a_, **k: None)
    other.topic_metadata = lambda: {"t": (T1, 6)}
    for k, v in c.log:
        other.replay(k, v)
    g = other.groups["g"]
    assert g.consumer is None and list(g.members) == [a.member_id]
    assert g.generation_id == c.group().generation_id and g.protocol_name == "range"
    owned = cp.decode_assignment(g.members[a.member_id].assignment).assigned_partitions
    assert sorted(p for tp in owned for p in tp.partitions) == sorted(a.owned)


def test_classic_member_that_does_not_rejoin_or_sync_is_fenced():
    c = Cluster()
    a, b = Classic(c, name="a"), Classic(c, name="b")
    classic_group(c, a, b)
    m = Modern(c)
    m.step()
    # a is told to rejoin but only keeps heartbeating: fenced after its rebalance timeout (5 s)
    for _ in range(3):   # at 0, 2 and 4 s
        assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
        b.step()
        m.step()
        c.clock.advance(2_000)
        c.coord.tick()
    assert a.member_id not in c.group().consumer.members
    assert a.heartbeat() == E.UNKNOWN_MEMBER_ID
    # b joins but never sends its SyncGroup: fenced after its rebalance timeout too
    settle([b, m])
    nb = Classic(c, name="nb")
    p = nb.join()
    assert p.done and p.result.error == E.NONE
    for _ in range(4):
        b.step()
        m.step()
        c.clock.advance(2_000)
        c.coord.tick()
    assert nb.member_id not in c.group().consumer.members
    settle([b, m])
    assert_owned_once([b, m], complete=True)


def classic_rebalance(c: Cluster, members):
    """Drive a classic group's rebalance to its end: every member gives up what it owns
    (eager), rejoins until one generation holds them all; the leader assigns round-robin."""
    pend = {}
    for m in members:
        m.owned = set()
        pend[m] = m.join()
    for _ in range(len(members) + 3):
        g = c.group()
        results = [p.result for p in pend.values() if p.done]
        if len(results) == len(pend) and all(r.error == E.NONE for r in results) \
                and len({r.generation_id for r in results}) == 1 and not g.is_(GroupState.PREPARING_REBALANCE):
            break
        for m, p in list(pend.items()):
            if p.done and (p.result.error != E.NONE or g.is_(GroupState.PREPARING_REBALANCE)):
                if p.result.error == E.UNKNOWN_MEMBER_ID:
                    m.member_id = ""
                pend[m] = m.join()
    leader = next(p.result for p in pend.values() if p.result.members)
    ids = [x.member_id for x in leader.members]
    plan = {mid: cp.encode_assignment(cp.Assignment(assigned_partitions=[cp.AssignmentTopicPartition(
        topic="t", partitions=list(range(i, 6, len(ids))))], user_data=None), 0) for i, mid in enumerate(ids)}
    for m, p in pend.items():
        s = m.on_joined(p.result, plan if p.result.members else None)
        assert s.done
        m.on_synced(s.result)


@pytest.mark.parametrize("seed", range(12))
def test_random_mixes_of_protocols_never_own_a_partition_twice(seed):
    """Seeded random runs: classic members (eager or cooperative) and consumer-protocol
    members join, poll in random order, leave; the group goes classic -> consumer -> classic
    as they come and go. Checked after every step: no partition owned twice; at the end,
    after everyone polled a while, every partition owned once; the offsets committed at the
    start are still there. (The 12 seeds go through 16 upgrades and 6 downgrades.)"""
    import random

    rnd = random.Random(seed)
    c = Cluster()
    first = Classic(c, rnd.random() < 0.5, "c0")
    classic_group(c, first)
    assert commit(c, first.member_id, first.generation, 42) == E.NONE
    live: list = [first]

    def poll(x):
        g = c.group()
        if isinstance(x, Modern):
            x.step()
        elif g.consumer is not None:
            e = x.heartbeat()
            if e == E.UNKNOWN_MEMBER_ID:
                x.member_id, x.owned = "", set()
            if e != E.NONE:
                x.rejoin_in_consumer_group()
        elif x.heartbeat() != E.NONE:
            classic_rebalance(c, [y for y in live if isinstance(y, Classic)])

    for step in range(50):
        r = rnd.random()
        if r < 0.15 and len(live) < 5:
            if rnd.random() < 0.5:
                live.append(Modern(c))
                live[-1].step()
            else:
                x = Classic(c, rnd.random() < 0.5, f"c{step}")
                live.append(x)
                if c.group().consumer is not None:
                    x.rejoin_in_consumer_group()
                else:
                    classic_rebalance(c, [y for y in live if isinstance(y, Classic)])
        elif r < 0.25 and len(live) > 1:
            x = live.pop(rnd.randrange(len(live)))
            if isinstance(x, Modern):
                x.leave()
            else:
                c.coord.leave_group("g", [(x.member_id, None)])
            x.owned = set()
        assert_owned_once(live)
        for x in rnd.sample(live, len(live)):
            poll(x)
            assert_owned_once(live)
    for _ in range(8):
        for x in live:
            poll(x)
            assert_owned_once(live)
    assert_owned_once(live, complete=True)
    assert c.coord.fetch_offsets("g", [("t", 0)]).offsets[("t", 0)].offset == 42


def test_upgrade_refused_when_the_classic_assignment_gives_a_partition_twice():
    c = Cluster()
    a, b = Classic(c, name="a"), Classic(c, name="b")
    classic_group(c, a, b)
    both = cp.encode_assignment(cp.Assignment(assigned_partitions=[cp.AssignmentTopicPartition(
        topic="t", partitions=[0, 1])], user_data=None), 0)
    for m in c.group().members.values():   # as a buggy client-side assignor would
        m.assignment = both
    p = c.coord.consumer_group_heartbeat("g", "m", 0, rebalance_timeout_ms=5_000, subscribed_topic_names=["t"])
    assert p.result.error == E.GROUP_ID_NOT_FOUND
    assert c.group().consumer is None and c.group().is_(GroupState.STABLE)
