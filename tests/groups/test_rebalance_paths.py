"""Rebalance paths that real clients take, on a fake clock: the leader rejoining a Stable group
after its topic metadata changed (kafka-python's path after an assignment made without partition
metadata), members rejoining together, SyncGroups in either order, repeated SyncGroups, and the
DEBUG trail of the ``kwire.groups`` logger."""
from __future__ import annotations

import logging

import pytest
from groups_harness import E, Harness
from test_membership import stable_group

from kwire.groups import GroupState

S = GroupState


def _rejoin_all_after_leader(h, ids, leader, group="g"):
    """The leader rejoins a Stable group with unchanged metadata; the others learn of the
    rebalance from a heartbeat and rejoin. Returns {member id: join Pending}."""
    g = h.coord.groups[group]
    gen = g.generation_id
    joins = {leader: h.join(group, leader)}
    assert g.is_(S.PREPARING_REBALANCE) and not joins[leader].done
    for mid in ids:
        if mid == leader:
            continue
        assert h.coord.heartbeat(group, gen, mid) == E.REBALANCE_IN_PROGRESS
        joins[mid] = h.join(group, mid)
    return joins


@pytest.mark.parametrize("leader_syncs_first", [True, False])
def test_leader_rejoin_of_a_stable_group_answers_every_join_and_sync(leader_syncs_first):
    h = Harness()
    ids, gen, leader = stable_group(h, n=2)
    joins = _rejoin_all_after_leader(h, ids, leader)
    g = h.coord.groups["g"]
    assert all(p.done and p.result.error == E.NONE for p in joins.values())
    assert {p.result.generation_id for p in joins.values()} == {gen + 1}
    assert joins[leader].result.leader == leader  # the leader that rejoined keeps its place
    assert [m.member_id for m in joins[leader].result.members] == ids
    follower = next(m for m in ids if m != leader)
    assert joins[follower].result.members == []
    assignments = {mid: f"gen2-{mid}".encode() for mid in ids}
    order = [leader, follower] if leader_syncs_first else [follower, leader]
    syncs = {mid: h.sync("g", gen + 1, mid, assignments if mid == leader else ()) for mid in order}
    assert all(p.done for p in syncs.values()), syncs
    assert {mid: (p.result.error, p.result.assignment) for mid, p in syncs.items()} == \
        {mid: (E.NONE, assignments[mid]) for mid in ids}
    assert g.is_(S.STABLE)
    # both keep heartbeating in the new generation; nobody expires
    for _ in range(5):
        h.advance(3_000)
        assert all(h.coord.heartbeat("g", gen + 1, mid) == E.NONE for mid in ids)
    assert set(g.members) == set(ids)


def test_repeated_sync_of_a_follower_answers_the_earlier_one_and_keeps_the_later():
    h = Harness()
    ids, gen, leader = stable_group(h, n=2)
    _rejoin_all_after_leader(h, ids, leader)
    follower = next(m for m in ids if m != leader)
    first = h.sync("g", gen + 1, follower)
    second = h.sync("g", gen + 1, follower)
    assert first.done and first.result.error == E.REBALANCE_IN_PROGRESS
    assert not second.done
    lead = h.sync("g", gen + 1, leader, {leader: b"L", follower: b"F"})
    assert lead.done and lead.result.assignment == b"L"
    assert second.done and second.result.error == E.NONE and second.result.assignment == b"F"


def test_leader_sync_answered_when_the_offsets_write_completes_later():
    """The leader's SyncGroup waits for the group record's append; its answer (and the
    follower's) come when the writer reports done, even if that is after other calls."""
    h = Harness()
    ids, gen, leader = stable_group(h, n=2)
    _rejoin_all_after_leader(h, ids, leader)
    follower = next(m for m in ids if m != leader)
    h.writer.hold = True
    lead = h.sync("g", gen + 1, leader, {leader: b"L", follower: b"F"})
    fol = h.sync("g", gen + 1, follower)
    assert h.coord.heartbeat("g", gen + 1, follower) == E.NONE
    assert not lead.done and not fol.done
    h.writer.hold = False
    h.writer.release()
    assert (lead.result.error, lead.result.assignment) == (E.NONE, b"L")
    assert (fol.result.error, fol.result.assignment) == (E.NONE, b"F")


def test_debug_log_traces_transitions_and_each_answer(caplog):
    caplog.set_level(logging.DEBUG, logger="kwire.groups")
    h = Harness()
    ids, gen, leader = stable_group(h, n=2)
    follower = next(m for m in ids if m != leader)
    assert h.coord.heartbeat("g", gen, follower) == E.NONE
    h.coord.leave_group("g", [(follower, None)])
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "kwire.groups")
    assert "group g: Empty -> PreparingRebalance" in text
    assert "PreparingRebalance -> CompletingRebalance (generation 1" in text
    assert "CompletingRebalance -> Stable" in text
    assert "Stable -> PreparingRebalance" in text
    assert "MEMBER_ID_REQUIRED" in text
    assert f"JoinGroup of '{leader}' -> NONE" in text
    assert f"SyncGroup of {leader} (generation {gen}) -> NONE" in text
    assert f"SyncGroup of {follower} (generation {gen}) -> NONE" in text
    assert f"Heartbeat of {follower} (generation {gen}) -> NONE" in text
    assert f"LeaveGroup -> NONE {follower}: NONE" in text
    assert f"member {follower} removed" in text


def test_session_expiry_is_logged(caplog):
    caplog.set_level(logging.DEBUG, logger="kwire.groups")
    h = Harness()
    ids, gen, leader = stable_group(h, n=2, session=10_000)
    for _ in range(4):
        h.advance(3_000)
        h.coord.heartbeat("g", gen, leader)
    text = "\n".join(r.getMessage() for r in caplog.records)
    quiet = next(m for m in ids if m != leader)
    assert f"member {quiet} missed its session timeout (10000 ms)" in text
