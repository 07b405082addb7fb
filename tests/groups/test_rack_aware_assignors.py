"""Rack-aware server-side assignors (kwire.groups.assignors.Racks), as Kafka's: used only when
member racks exist, overlap the partitions' racks and the partitions' racks differ; balance
first, then rack, then stickiness. Pure functions, and through the coordinator with members'
rack ids from ConsumerGroupHeartbeat."""
from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.clock import FakeClock
from kwire.errors import ErrorCode as E
from kwire.groups import GroupConfig, GroupCoordinator
from kwire.groups.assignors import Racks, range_, uniform

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


def by_partition(rack_of):
    """partition -> its single replica's rack."""
    return lambda t, p: frozenset([rack_of(t, p)])


def counts(out):
    return {m: sum(len(ps) for ps in a.values()) for m, a in out.items()}


def local(out, racks):
    return sum(racks.match(m, t, p) for m, a in out.items() for t, ps in a.items() for p in ps)


def test_uniform_puts_partitions_on_their_racks():
    racks = Racks({"a": "r2", "b": "r0", "c": "r1"}, by_partition(lambda t, p: f"r{p // 3}"))
    subs = {m: frozenset([T1]) for m in "abc"}
    out = uniform(subs, {T1: 9}, {}, racks)
    assert out == {"a": {T1: frozenset({6, 7, 8})}, "b": {T1: frozenset({0, 1, 2})}, "c": {T1: frozenset({3, 4, 5})}}
    # without racks the plain spread is used (and it is not rack-local here)
    plain = uniform(subs, {T1: 9}, {})
    assert local(plain, racks) < 9


def test_uniform_balance_comes_before_racks():
    # every partition lives on r0, but only a is on r0: balance wins, a gets its share only
    racks = Racks({"a": "r0", "b": "r1"}, lambda t, p: frozenset(["r0"] if p < 4 else ["r1"]))
    out = uniform({"a": frozenset([T1]), "b": frozenset([T1])}, {T1: 6}, {}, racks)
    assert counts(out) == {"a": 3, "b": 3}
    assert out["b"][T1] >= {4, 5}


def test_rack_strategy_off_when_racks_do_not_help():
    subs = {"a": frozenset([T1]), "b": frozenset([T1])}
    same = Racks({"a": "r0", "b": "r1"}, lambda t, p: frozenset(["r0", "r1"]))   # every partition everywhere
    assert not same.use(subs, [(T1, p) for p in range(4)])
    none = Racks({"a": None, "b": None}, by_partition(lambda t, p: f"r{p % 2}"))
    assert not none.use(subs, [(T1, p) for p in range(4)])
    disjoint = Racks({"a": "x", "b": "y"}, by_partition(lambda t, p: f"r{p % 2}"))
    assert not disjoint.use(subs, [(T1, p) for p in range(4)])
    # then uniform stays sticky as without racks
    first = uniform(subs, {T1: 4}, {}, same)
    assert uniform(subs, {T1: 4}, first, same) == first


def test_uniform_moves_an_off_rack_partition_back_when_racks_are_used():
    racks = Racks({"a": "r0", "b": "r1"}, by_partition(lambda t, p: f"r{p % 2}"))
    subs = {"a": frozenset([T1]), "b": frozenset([T1])}
    current = {"a": {T1: frozenset({1, 3})}, "b": {T1: frozenset({0, 2})}}   # all off-rack
    out = uniform(subs, {T1: 4}, current, racks)
    assert out == {"a": {T1: frozenset({0, 2})}, "b": {T1: frozenset({1, 3})}}


def test_range_takes_rack_local_partitions_first():
    racks = Racks({"a": "r1", "b": "r0"}, by_partition(lambda t, p: f"r{p % 2}"))
    subs = {"a": frozenset([T1, T2]), "b": frozenset([T1, T2])}
    out = range_(subs, {T1: 4, T2: 3}, {}, racks)
    assert out["a"][T1] == {1, 3} and out["b"][T1] == {0, 2}
    assert counts(out) == {"a": 4, "b": 3}   # T2: a (first) gets the extra one, as range does
    assert range_(subs, {T1: 4}, {}) == {"a": {T1: frozenset({0, 1})}, "b": {T1: frozenset({2, 3})}}


@settings(max_examples=60, deadline=None)
@given(n_members=st.integers(1, 5), n_parts=st.integers(0, 12), n_racks=st.integers(1, 3),
       seed=st.integers(0, 1000))
def test_uniform_with_racks_stays_balanced_and_complete(n_members, n_parts, n_racks, seed):
    import random

    rnd = random.Random(seed)
    members = [f"m{i}" for i in range(n_members)]
    rack_of = {(T1, p): f"r{rnd.randrange(n_racks)}" for p in range(n_parts)}
    racks = Racks({m: f"r{rnd.randrange(n_racks)}" if rnd.random() < 0.8 else None for m in members},
                  lambda t, p: frozenset([rack_of[(t, p)]]))
    subs = {m: frozenset([T1]) for m in members}
    current = {}
    for _ in range(2):
        out = uniform(subs, {T1: n_parts}, current, racks)
        owned = sorted(p for a in out.values() for ps in a.values() for p in ps)
        assert owned == list(range(n_parts))
        c = counts(out)
        assert max(c.values()) - min(c.values()) <= 1
        current = out


def test_coordinator_uses_member_rack_ids():
    clock = FakeClock()
    coord = GroupCoordinator(GroupConfig(consumer_session_timeout_ms=10_000), clock,
                             lambda part, recs, done, **kw: done(E.NONE))
    coord.topic_metadata = lambda: {"t": (T1, 6)}
    coord.partition_racks = lambda t, p: frozenset([f"r{p % 2}"])
    owned = {}
    for m, rack in (("a", "r0"), ("b", "r1")):
        r = coord.consumer_group_heartbeat("g", m, 0, rack_id=rack, rebalance_timeout_ms=5_000,
                                           subscribed_topic_names=["t"]).result
        assert r.error == E.NONE
        owned[m] = r.member_epoch
    cg = coord.consumer_group("g")
    assert cg.target["a"] == {T1: frozenset({0, 2, 4})} and cg.target["b"] == {T1: frozenset({1, 3, 5})}
