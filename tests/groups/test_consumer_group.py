"""KIP-848 consumer groups on a fake clock: ConsumerGroupHeartbeat through the coordinator's
state machine (no sockets, no sleeps), the assignors, and the records replayed on load."""
from __future__ import annotations

import os
import uuid

import pytest

from kwire.clock import FakeClock
from kwire.errors import ErrorCode as E
from kwire.groups import GroupConfig, GroupCoordinator
from kwire.groups import consumer_records as CR
from kwire.groups.assignors import range_, uniform
from kwire.groups.consumer_group import MemberState

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


class Cluster:
    """A coordinator with a fake clock and a writer that keeps every record (a log)."""

    def __init__(self, topics=None, **cfg):
        self.clock = FakeClock()
        self.log: list[tuple[bytes, bytes | None]] = []
        self.topics = topics if topics is not None else {"t": (T1, 6)}
        config = GroupConfig(consumer_session_timeout_ms=cfg.pop("session", 1000),
                             consumer_heartbeat_interval_ms=100, **cfg)
        self.coord = GroupCoordinator(config, self.clock, self.write)
        self.coord.topic_metadata = lambda: self.topics

    def write(self, partition, records, done, **_kw):
        self.log.extend(records)
        done(E.NONE)

    def hb(self, member, epoch, owned=None, group="g", topics=("t",), **kw):
        kw.setdefault("rebalance_timeout_ms", 500 if epoch == 0 else -1)
        p = self.coord.consumer_group_heartbeat(
            group, member, epoch, subscribed_topic_names=list(topics) if epoch == 0 else kw.pop("names", None),
            topic_partitions=None if owned is None else [(t, sorted(ps)) for t, ps in owned.items()], **kw)
        assert p.done
        return p.result

    def advance(self, ms):
        self.clock.advance(ms)
        self.coord.tick()


class Member:
    """A client following the protocol: owns what it was assigned, revokes when asked."""

    def __init__(self, c: Cluster, mid: str, **kw):
        self.c, self.mid, self.epoch, self.owned, self.kw = c, mid, 0, {}, kw

    def beat(self):
        r = self.c.hb(self.mid, self.epoch, owned=self.owned if self.epoch else None, **self.kw)
        assert r.error == E.NONE, r
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = {t: set(ps) for t, ps in r.assignment.items()}
        return r

    def beat_or_rejoin(self):
        """A heartbeat; a fenced member (UNKNOWN_MEMBER_ID) drops its partitions and rejoins."""
        r = self.c.hb(self.mid, self.epoch, owned=self.owned if self.epoch else None, **self.kw)
        if r.error == E.UNKNOWN_MEMBER_ID:
            self.epoch, self.owned = 0, {}
            return self.beat()
        assert r.error == E.NONE, r
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = {t: set(ps) for t, ps in r.assignment.items()}
        return r

    def partitions(self):
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def settle(members, rounds=10):
    for _ in range(rounds):
        for m in members:
            m.beat()


def test_three_members_six_partitions_each_owned_once_and_stable():
    c = Cluster()
    ms = [Member(c, f"m{i}") for i in range(3)]
    settle(ms)
    owned = [m.partitions() for m in ms]
    assert sum(len(o) for o in owned) == 6 and len(set().union(*owned)) == 6
    assert [len(o) for o in owned] == [2, 2, 2]
    cg = c.coord.consumer_group("g")
    assert cg.state().value == "Stable"
    assert all(m.epoch == cg.group_epoch for m in ms)


def test_revocation_before_assignment_no_partition_owned_twice():
    c = Cluster()
    a = Member(c, "a")
    a.beat()
    assert len(a.partitions()) == 6
    b = Member(c, "b")
    r = b.beat()   # joins: the target gives b half, but a still owns everything
    assert r.member_epoch == 2 and b.partitions() == set()
    cg = c.coord.consumer_group("g")
    assert cg.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    r = c.hb("a", a.epoch, owned=a.owned)   # a is asked to revoke, keeps its epoch
    assert r.member_epoch == 1 and cg.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert sum(len(ps) for ps in r.assignment.values()) == 3
    b.beat()
    assert b.partitions() == set()   # still held by a, which has not let go
    a.owned = {t: set(ps) for t, ps in r.assignment.items()}
    a.beat()   # revoked: moves to epoch 2
    assert a.epoch == 2 and len(a.partitions()) == 3
    b.beat()
    assert len(b.partitions()) == 3 and not (a.partitions() & b.partitions())
    assert cg.state().value == "Stable"


def test_leave_hands_partitions_to_the_others():
    c = Cluster()
    ms = [Member(c, f"m{i}") for i in range(3)]
    settle(ms)
    r = c.hb("m2", -1)
    assert r.error == E.NONE and r.member_epoch == -1
    settle(ms[:2])
    assert [len(m.partitions()) for m in ms[:2]] == [3, 3]
    assert not (ms[0].partitions() & ms[1].partitions())


def test_session_timeout_fences_a_silent_member():
    c = Cluster(session=1000)
    ms = [Member(c, f"m{i}") for i in range(3)]
    settle(ms)
    for _ in range(3):
        c.advance(400)
        for m in ms[:2]:
            m.beat()
    assert "m2" not in c.coord.consumer_group("g").members
    settle(ms[:2])
    assert len(ms[0].partitions() | ms[1].partitions()) == 6
    assert c.hb("m2", ms[2].epoch).error == E.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_fences_a_member_that_does_not_revoke():
    c = Cluster(session=10_000)
    a = Member(c, "a")
    a.beat()
    b = Member(c, "b")
    b.beat()
    c.hb("a", a.epoch, owned=a.owned)   # asked to revoke; never does
    c.advance(600)   # rebalance timeout 500
    assert "a" not in c.coord.consumer_group("g").members
    b.beat()
    assert len(b.partitions()) == 6


def test_epoch_validation():
    c = Cluster()
    a = Member(c, "a")
    a.beat()
    assert c.hb("a", a.epoch + 1).error == E.FENCED_MEMBER_EPOCH
    assert c.hb("nobody", 3).error == E.UNKNOWN_MEMBER_ID
    b = Member(c, "b")
    b.beat()
    c.hb("a", a.epoch, owned=a.owned)
    a.owned = {T1: set(range(3))}
    a.beat()  # now at epoch 2
    # the previous epoch with a subset of the assignment is accepted (a lost answer)
    assert c.hb("a", 1, owned={T1: {0}}).error == E.NONE
    assert c.hb("a", 1, owned={T1: {5}}).error == E.FENCED_MEMBER_EPOCH


@pytest.mark.parametrize("bad, code", [
    (dict(rebalance_timeout_ms=-1), E.INVALID_REQUEST),
    (dict(server_assignor="sticky"), E.UNSUPPORTED_ASSIGNOR),
    (dict(subscribed_topic_regex="("), E.INVALID_REGULAR_EXPRESSION),
    (dict(subscribed_topic_regex="(?!internal).*"), E.INVALID_REGULAR_EXPRESSION),   # RE2/J: no lookaround
    (dict(subscribed_topic_regex=r"(a)\1"), E.INVALID_REGULAR_EXPRESSION),          # nor backreferences
])
def test_invalid_requests(bad, code):
    c = Cluster()
    kw = dict(rebalance_timeout_ms=500, subscribed_topic_names=["t"])
    kw.update(bad)
    p = c.coord.consumer_group_heartbeat("g", "m", 0, **kw)
    assert p.result.error == code


def test_classic_group_with_members_is_not_a_consumer_group_and_vice_versa():
    c = Cluster()
    c.coord.config.group_initial_rebalance_delay_ms = 0
    j = c.coord.join_group("classic", "", protocol_type="consumer", protocols=[("range", b"")],
                           session_timeout_ms=10_000, require_known_member_id=False)
    assert j.done and j.result.error == E.NONE
    # the online upgrade (test_consumer_migration.py) needs the consumer embedded protocol:
    # b"" is no subscription, so the classic group stays
    assert c.hb("m", 0, group="classic").error == E.GROUP_ID_NOT_FOUND
    Member(c, "m").beat()
    j = c.coord.join_group("g", "", protocol_type="consumer", protocols=[("range", b"")],
                           session_timeout_ms=10_000, require_known_member_id=False)
    assert j.result.error == E.INCONSISTENT_GROUP_PROTOCOL
    listed = {x.group_id: x for x in c.coord.list_groups()}
    assert listed["g"].group_type == "consumer" and listed["g"].protocol_type == "consumer"
    assert [x.group_id for x in c.coord.list_groups(types_filter=["consumer"])] == ["g"]
    assert c.coord.describe_groups(["g"])[0].error == E.GROUP_ID_NOT_FOUND


def test_offset_commit_and_fetch_with_member_epochs():
    c = Cluster()
    a = Member(c, "a")
    a.beat()
    ok = c.coord.commit_offsets("g", a.epoch, "a", [("t", 0, 42, -1, None)])
    assert ok.result.errors[("t", 0)] == E.NONE
    stale = c.coord.commit_offsets("g", a.epoch - 1, "a", [("t", 0, 43, -1, None)])
    assert stale.result.errors[("t", 0)] == E.STALE_MEMBER_EPOCH
    unknown = c.coord.commit_offsets("g", a.epoch, "x", [("t", 0, 43, -1, None)])
    assert unknown.result.errors[("t", 0)] == E.UNKNOWN_MEMBER_ID
    old = c.coord.commit_offsets("g", a.epoch, "a", [("t", 0, 43, -1, None)], api_version=8)
    assert old.result.errors[("t", 0)] == E.UNSUPPORTED_VERSION
    assert c.coord.validate_consumer_offset_fetch("g", "a", a.epoch) is None
    assert c.coord.validate_consumer_offset_fetch("g", "a", a.epoch + 1) == E.STALE_MEMBER_EPOCH
    assert c.coord.validate_consumer_offset_fetch("g", None, -1) is None
    assert c.coord.fetch_offsets("g", [("t", 0)]).offsets[("t", 0)].offset == 42
    # a non-empty consumer group is not deleted
    assert c.coord.delete_groups(["g"]).result["g"] == E.NON_EMPTY_GROUP


def test_records_replayed_restore_the_group():
    c = Cluster()
    ms = [Member(c, f"m{i}") for i in range(3)]
    settle(ms)
    c.coord.commit_offsets("g", ms[0].epoch, "m0", [("t", 0, 7, -1, None)])
    c.hb("m2", -1)
    before = c.coord.consumer_group("g")
    fresh = GroupCoordinator(c.coord.config, c.clock, c.write)
    fresh.topic_metadata = lambda: c.topics
    for k, v in list(c.log):
        fresh.replay(k, v)
    cg = fresh.consumer_group("g")
    assert set(cg.members) == {"m0", "m1"}
    assert cg.group_epoch == before.group_epoch and cg.assignment_epoch == before.assignment_epoch
    for mid in ("m0", "m1"):
        assert cg.members[mid].assigned == before.members[mid].assigned
        assert cg.members[mid].member_epoch == before.members[mid].member_epoch
        assert cg.target[mid] == before.target[mid]
    assert fresh.fetch_offsets("g", [("t", 0)]).offsets[("t", 0)].offset == 7
    # the members carry on with the new coordinator at their epochs
    for m in ms[:2]:
        m.c = Cluster.__new__(Cluster)
        m.c.__dict__.update(c.__dict__, coord=fresh)
    settle(ms[:2])
    assert len(ms[0].partitions() | ms[1].partitions()) == 6
    assert not (ms[0].partitions() & ms[1].partitions())
    # session timers run again after the load
    c.clock.advance(5000)
    fresh.tick()
    assert fresh.consumer_group("g").is_empty()


def test_record_formats_round_trip():
    key = CR.member_key(CR.CURRENT_ASSIGNMENT, "g", "m")
    assert key[:2] == b"\x00\x08"
    k = CR.decode_key(key)
    assert (k.kind, k.group_id, k.member_id) == (8, "g", "m")
    assert CR.decode_metadata_value(CR.metadata_value(7)) == 7
    a = {T1: frozenset({0, 2}), T2: frozenset({1})}
    assert CR.decode_target_member_value(CR.target_member_value(a)) == a


def test_uniform_is_balanced_and_sticky():
    subs = {m: frozenset({T1, T2}) for m in ("a", "b", "c")}
    topics = {T1: 4, T2: 5}
    first = uniform(subs, topics, {})
    counts = sorted(sum(len(p) for p in a.values()) for a in first.values())
    assert counts == [3, 3, 3]
    subs["d"] = frozenset({T1, T2})
    second = uniform(subs, topics, first)
    moved = sum(len(ps - second[m].get(t, frozenset())) for m in first for t, ps in first[m].items())
    assert moved == 2   # only what d needs moves
    assert sorted(sum(len(p) for p in a.values()) for a in second.values()) == [2, 2, 2, 3]


def test_uniform_with_different_subscriptions():
    subs = {"a": frozenset({T1}), "b": frozenset({T1, T2})}
    out = uniform(subs, {T1: 2, T2: 2}, {})
    assert T2 not in out["a"] and out["b"][T2] == {0, 1}
    assert sum(len(p) for p in out["a"].values()) >= 1


def test_range_gives_contiguous_ranges():
    subs = {m: frozenset({T1}) for m in ("b", "a")}
    out = range_(subs, {T1: 5}, {})
    assert out["a"][T1] == {0, 1, 2} and out["b"][T1] == {3, 4}


def test_range_assignor_chosen_by_the_member():
    c = Cluster()
    ms = [Member(c, f"m{i}", server_assignor="range") for i in range(2)]
    settle(ms)
    assert ms[0].partitions() == {(T1, p) for p in range(3)}
    assert c.coord.describe_consumer_groups(["g"])[0].assignor == "range"


def test_regex_subscription_and_new_topic():
    c = Cluster(topics={"a1": (T1, 2), "b": (T2, 2)})
    r = c.coord.consumer_group_heartbeat("g", "m", 0, rebalance_timeout_ms=500,
                                         subscribed_topic_regex="a.*")
    assert r.result.error == E.NONE
    assert set(r.result.assignment) == {T1}
    T3 = uuid.UUID(int=3)
    c.topics["a2"] = (T3, 1)
    r = c.hb("m", r.result.member_epoch, owned={T1: {0, 1}})
    assert set(r.assignment) == {T1, T3}


def test_static_member_leaves_for_a_while_and_comes_back_without_rebalance():
    c = Cluster(session=1000)
    a = Member(c, "a1", instance_id="ia")
    b = Member(c, "b", )
    settle([a, b])
    cg = c.coord.consumer_group("g")
    epoch, mine = cg.group_epoch, a.partitions()
    assert len(mine) == 3
    r = c.hb("a1", -2, instance_id="ia")
    assert r.error == E.NONE and r.member_epoch == -2
    assert cg.members["a1"].member_epoch == -2 and cg.members["a1"].assigned   # keeps its partitions
    settle([b])
    assert len(b.partitions()) == 3   # b does not get a's partitions meanwhile
    a2 = Member(c, "a2", instance_id="ia")
    r = a2.beat()
    assert a2.partitions() == mine and "a1" not in cg.members and cg.members["a2"].instance_id == "ia"
    assert cg.group_epoch == epoch and r.member_epoch == epoch   # no rebalance
    assert c.hb("a1", r.member_epoch, instance_id="ia").error == E.UNKNOWN_MEMBER_ID
    # the instance cannot be taken twice while it is in use
    assert c.hb("a3", 0, instance_id="ia").error == E.UNRELEASED_INSTANCE_ID


def test_static_member_that_does_not_come_back_expires():
    c = Cluster(session=1000)
    a = Member(c, "a1", instance_id="ia")
    b = Member(c, "b")
    settle([a, b])
    c.hb("a1", -2, instance_id="ia")
    for _ in range(4):
        c.advance(400)
        b.beat()
    assert "a1" not in c.coord.consumer_group("g").members
    settle([b])
    assert len(b.partitions()) == 6


def test_static_member_state_replayed():
    c = Cluster()
    a = Member(c, "a1", instance_id="ia")
    a.beat()
    c.hb("a1", -2, instance_id="ia")
    Member(c, "a2", instance_id="ia").beat()
    fresh = GroupCoordinator(c.coord.config, c.clock, c.write)
    for k, v in list(c.log):
        fresh.replay(k, v)
    cg = fresh.consumer_group("g")
    assert set(cg.members) == {"a2"} and cg.static_members == {"ia": "a2"}
    assert cg.members["a2"].member_epoch == c.coord.consumer_group("g").members["a2"].member_epoch


def test_empty_classic_group_becomes_a_consumer_group_keeping_offsets_and_back():
    c = Cluster()
    c.coord.config.group_initial_rebalance_delay_ms = 0
    j = c.coord.join_group("g", "", protocol_type="consumer", protocols=[("range", b"")],
                           session_timeout_ms=10_000, require_known_member_id=False)
    mid, gen = j.result.member_id, j.result.generation_id
    c.coord.sync_group("g", gen, mid, assignments=[(mid, b"")])
    assert c.coord.commit_offsets("g", gen, mid, [("t", 1, 5, -1, None)]).result.errors[("t", 1)] == E.NONE
    c.coord.leave_group("g", [(mid, None)])
    a = Member(c, "a")
    a.beat()   # the empty classic group is now a consumer group
    assert c.coord.fetch_offsets("g", [("t", 1)]).offsets[("t", 1)].offset == 5
    assert any(k[:2] == b"\x00\x02" and v is None for k, v in c.log)   # the classic record deleted
    fresh = GroupCoordinator(c.coord.config, c.clock, c.write)
    for k, v in list(c.log):
        fresh.replay(k, v)
    assert set(fresh.consumer_group("g").members) == {"a"}
    assert c.hb("a", a.epoch, owned=a.owned, names=None).error == E.NONE
    c.hb("a", -1)
    j = c.coord.join_group("g", "", protocol_type="consumer", protocols=[("range", b"")],
                           session_timeout_ms=10_000, require_known_member_id=False)
    assert j.result.error == E.NONE and c.coord.consumer_group("g") is None   # classic again


def test_transactional_offset_commit_of_a_consumer_group_member():
    c = Cluster()
    a = Member(c, "a")
    a.beat()
    ok = c.coord.commit_txn_offsets("g", 7, 0, [("t", 0, 9, -1, None)], generation_id=a.epoch, member_id="a")
    assert ok.result.errors[("t", 0)] == E.NONE
    stale = c.coord.commit_txn_offsets("g", 7, 0, [("t", 0, 9, -1, None)], generation_id=a.epoch + 1,
                                       member_id="a")
    assert stale.result.errors[("t", 0)] == E.STALE_MEMBER_EPOCH
    anon = c.coord.commit_txn_offsets("g", 7, 0, [("t", 1, 9, -1, None)])
    assert anon.result.errors[("t", 1)] == E.NONE


def test_the_consumer_group_mixin_shadows_nothing_of_the_classic_coordinator():
    from kwire.groups.consumer_coordinator import ConsumerGroups
    from kwire.groups.coordinator import GroupCoordinator
    mine = {n for n in vars(ConsumerGroups) if not n.startswith("__")}
    others = set()
    for base in GroupCoordinator.__mro__:
        if base not in (ConsumerGroups, object):
            others |= {n for n in vars(base) if not n.startswith("__")}
    assert not mine & others


@pytest.mark.parametrize("seed", range(int(os.environ.get("KWIRE_848_SEEDS", "5"))))   # more: KWIRE_848_SEEDS=200
def test_random_membership_never_owns_a_partition_twice(seed):
    """A seeded simulation: members join, leave, crash and answer late, in random order;
    clients follow the protocol (they own what they were last given and report it). At every
    step no partition is owned by two live members (a member fenced for missing its session
    or rebalance timeout is not one), and once things calm down every subscribed partition
    is owned by exactly one member."""
    import random
    rnd = random.Random(seed)
    T3 = uuid.UUID(int=3)
    c = Cluster(topics={"t": (T1, 5), "u": (T2, 4), "v": (T3, 3)}, session=1000)
    members: dict[str, Member] = {}
    n = 0
    for step in range(200):
        op = rnd.random()
        if op < 0.15 or not members:
            n += 1
            topics = rnd.choice([("t",), ("t", "u"), ("u", "v"), ("t", "u", "v")])
            members[f"m{n}"] = Member(c, f"m{n}", topics=topics)
            members[f"m{n}"].beat()
        elif op < 0.22:
            mid = rnd.choice(sorted(members))
            assert c.hb(mid, -1).error in (E.NONE, E.UNKNOWN_MEMBER_ID)   # (it may have been fenced)
            del members[mid]
        elif op < 0.26:
            mid = rnd.choice(sorted(members))   # crashes: silent until its session expires
            del members[mid]
        else:
            members[rnd.choice(sorted(members))].beat_or_rejoin()
        c.advance(rnd.randint(0, 150))
        owners: dict = {}
        live = c.coord.consumer_group("g").members   # a fenced member loses its partitions (it
        for m in members.values():                   # learns so on its next heartbeat)
            if m.mid not in live:
                continue
            for tp in m.partitions():
                assert tp not in owners, f"step {step}: {tp} owned by {owners[tp]} and {m.mid}"
                owners[tp] = m.mid
    c.advance(2000)   # the crashed ones expire (and the silent live ones, which rejoin)
    for _ in range(6):
        for m in members.values():
            m.beat_or_rejoin()
    want = {(tid, p) for name, (tid, k) in c.topics.items()
            if any(name in m.kw.get("topics", ()) for m in members.values()) for p in range(k)}
    got = [tp for m in members.values() for tp in m.partitions()]
    assert len(got) == len(set(got)) and set(got) == want
    cg = c.coord.consumer_group("g")
    assert cg.state().value == "Stable", [(m.member_id, m.member_epoch, m.state.name, m.assigned,
                                           m.pending_revocation, cg.target.get(m.member_id))
                                          for m in cg.members.values()] + [cg.assignment_epoch]


def test_delete_and_offset_delete_of_a_consumer_group():
    c = Cluster()
    a = Member(c, "a")
    a.beat()
    c.coord.commit_offsets("g", a.epoch, "a", [("t", 0, 3, -1, None), ("x", 0, 4, -1, None)])
    r = c.coord.delete_offsets("g", [("t", 0), ("x", 0)]).result
    assert r.partitions == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("x", 0): E.NONE}
    assert c.coord.list_groups(states_filter=["stable"])[0].group_id == "g"
    c.hb("a", -1)
    assert [g.state for g in c.coord.list_groups()] == ["Empty"]
    assert c.coord.delete_groups(["g"]).result == {"g": E.NONE}
    assert c.coord.consumer_group("g") is None and c.coord.list_groups() == []
    # the tombstones forget it on replay too
    fresh = GroupCoordinator(c.coord.config, c.clock, c.write)
    for k, v in list(c.log):
        fresh.replay(k, v)
    assert "g" not in fresh.groups


def test_group_configs_override_session_timeout_and_heartbeat_interval():
    c = Cluster(session=1000)
    c.coord.group_overrides = lambda gid: {"consumer.session.timeout.ms": "5000",
                                           "consumer.heartbeat.interval.ms": "250"} if gid == "g" else {}
    a = Member(c, "a")
    assert a.beat().heartbeat_interval_ms == 250
    c.advance(3000)   # past the broker's 1000 ms, inside the group's 5000 ms
    assert "a" in c.coord.consumer_group("g").members
    c.advance(2500)
    assert "a" not in c.coord.consumer_group("g").members
    assert c.hb("m", 0, group="other").heartbeat_interval_ms == 100


def test_record_bytes_as_kafka_lays_them_out():
    """Hand-laid bytes of Kafka's formats (keys: int16 type + non-flexible struct; values:
    int16 version 0 + flexible struct with an empty tagged-field section)."""
    import struct
    from kwire.groups.consumer_group import ConsumerGroupMember
    assert CR.member_key(CR.CURRENT_ASSIGNMENT, "g", "m") == b"\x00\x08" + b"\x00\x01g" + b"\x00\x01m"
    assert CR.group_key(CR.GROUP_METADATA, "g") == b"\x00\x03\x00\x01g"
    assert CR.metadata_value(5) == b"\x00\x00" + struct.pack(">i", 5) + b"\x00"
    m = ConsumerGroupMember("m", member_epoch=4, previous_member_epoch=3, state=MemberState.UNREVOKED_PARTITIONS,
                            assigned={T1: frozenset({2, 0})}, pending_revocation={},
                            assignment_epochs={(T1, 0): 2, (T1, 2): 4})
    want = (b"\x00\x00" + struct.pack(">iib", 4, 3, 1)
            + b"\x02" + T1.bytes + b"\x03" + struct.pack(">ii", 0, 2)          # one topic: id, [0, 2],
            + b"\x01\x00\x09\x03" + struct.pack(">ii", 2, 4)                     # tag 0: AssignmentEpochs [2, 4]
            + b"\x01"                                                          # no partitions pending
            + b"\x00")                                                         # no tagged fields
    assert CR.current_value(m) == want
    assert CR.target_member_value({T1: frozenset({1})}) == \
        b"\x00\x00" + b"\x02" + T1.bytes + b"\x02" + struct.pack(">i", 1) + b"\x00" + b"\x00"
