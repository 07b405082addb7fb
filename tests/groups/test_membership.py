"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup on a fake clock: no sockets, no sleeps."""
from __future__ import annotations

from groups_harness import E, Harness

from kwire.groups import GroupState

S = GroupState


def stable_group(h, n=3, group="g", **kw):
    """n members joined (two-step) and synced; returns (member ids, generation, leader)."""
    ps = [h.join_new(group, client_id=f"c{i}", **kw) for i in range(n)]
    g = h.coord.groups[group]
    # with no initial delay, each join rebalances: members rejoin (as after a heartbeat
    # answered REBALANCE_IN_PROGRESS) until one generation holds them all
    while g.is_(S.PREPARING_REBALANCE):
        for i, p in enumerate(ps):
            if p.done and not g.members[p.result.member_id].awaiting_join:
                ps[i] = h.join(group, p.result.member_id, client_id=f"c{i}", **kw)
    g = h.coord.groups[group]
    results = [p.result for p in ps]
    assert all(r.error == E.NONE and r.generation_id == g.generation_id for r in results), results
    leader = results[0].leader
    ids = [r.member_id for r in results]
    assignments = {mid: f"a-{mid}".encode() for mid in ids}
    syncs = [h.sync(group, g.generation_id, mid, assignments if mid == leader else ())
             for mid in ids]
    assert all(s.done and s.result.error == E.NONE for s in syncs)
    assert g.is_(S.STABLE)
    return ids, g.generation_id, leader


def test_three_members_join_vote_leader_gets_members_and_sync_hands_out_assignments():
    h = Harness(group_initial_rebalance_delay_ms=3000)
    a = h.join("g", client_id="a", require_known=False,
               protocols=[("range", b"A-range"), ("roundrobin", b"A-rr")])
    b = h.join("g", client_id="b", require_known=False,
               protocols=[("roundrobin", b"B-rr"), ("range", b"B-range")])
    c = h.join("g", client_id="c", require_known=False,
               protocols=[("roundrobin", b"C-rr"), ("range", b"C-range"), ("sticky", b"C-s")])
    g = h.coord.groups["g"]
    assert g.is_(S.PREPARING_REBALANCE) and not (a.done or b.done or c.done)
    # the initial delay is extended once because members kept arriving during it
    assert h.advance(3000) is not None
    assert not a.done
    h.advance(3000)
    assert a.done and b.done and c.done
    ra, rb, rc = a.result, b.result, c.result
    assert {ra.error, rb.error, rc.error} == {E.NONE}
    assert ra.generation_id == rb.generation_id == rc.generation_id == 1
    assert ra.protocol_name == "roundrobin"  # 2 votes against 1; sticky is not a candidate
    assert ra.protocol_type == "consumer"
    leader = ra.leader
    assert leader == ra.member_id == rb.leader == rc.leader  # first to join leads
    assert [(m.member_id, m.metadata) for m in ra.members] == [
        (ra.member_id, b"A-rr"), (rb.member_id, b"B-rr"), (rc.member_id, b"C-rr")]
    assert rb.members == [] and rc.members == []
    assert g.is_(S.COMPLETING_REBALANCE)

    sb = h.sync("g", 1, rb.member_id)
    assert not sb.done  # followers wait for the leader
    sa = h.sync("g", 1, ra.member_id, {ra.member_id: b"pa", rb.member_id: b"pb"})
    assert sa.done and sb.done
    assert sa.result.assignment == b"pa" and sb.result.assignment == b"pb"
    assert sa.result.protocol_name == "roundrobin"
    assert g.is_(S.STABLE)
    # a follower syncing after the group is stable gets its (here empty: missing) assignment
    sc = h.sync("g", 1, rc.member_id)
    assert sc.done and sc.result.error == E.NONE and sc.result.assignment == b""
    # the completed generation was written as group metadata
    assert any(v is not None for _, _, v in h.writer.log)


def test_initial_delay_completes_after_one_delay_when_nobody_else_arrives():
    h = Harness(group_initial_rebalance_delay_ms=3000)
    p = h.join("g", require_known=False)
    assert h.coord.next_deadline() == h.clock.monotonic_ms() + 3000
    h.advance(2999)
    assert not p.done
    h.advance(1)
    assert p.done and p.result.generation_id == 1


def test_member_id_required_flow():
    h = Harness()
    p = h.join("g", client_id="cli")
    assert p.done and p.result.error == E.MEMBER_ID_REQUIRED
    mid = p.result.member_id
    assert mid == "cli-u1" and p.result.generation_id == -1
    assert mid in h.coord.groups["g"].pending_members
    # an id the coordinator never handed out is unknown
    bad = h.join("g", "someone-else")
    assert bad.result.error == E.UNKNOWN_MEMBER_ID
    ok = h.join("g", mid, client_id="cli")
    assert ok.done and ok.result.error == E.NONE
    assert ok.result.member_id == mid and ok.result.leader == mid and ok.result.generation_id == 1


def test_pending_member_holds_the_rebalance_until_it_joins_or_expires():
    h = Harness()
    ids, gen, leader = stable_group(h, 1)
    p = h.join("g", client_id="late")  # MEMBER_ID_REQUIRED: now pending
    late = p.result.member_id
    rejoin = h.join("g", leader)  # the leader rejoins: rebalance, but "late" is expected
    assert not rejoin.done
    j = h.join("g", late, client_id="late")
    assert rejoin.done and j.done
    assert rejoin.result.generation_id == gen + 1 == j.result.generation_id
    assert {m.member_id for m in rejoin.result.members} == {leader, late}

    # a pending member that never comes back is dropped after its session timeout
    h2 = Harness()
    ids, gen, leader = stable_group(h2, 1)
    h2.join("g", client_id="ghost", session=10_000)
    rejoin = h2.join("g", leader)
    assert not rejoin.done
    h2.advance(10_000)
    assert rejoin.done and rejoin.result.generation_id == gen + 1
    assert [m.member_id for m in rejoin.result.members] == [leader]


def test_leave_triggers_rebalance_and_remaining_members_get_a_new_generation():
    h = Harness()
    (a, b, c), gen, leader = stable_group(h)
    res = h.coord.leave_group("g", [(c, None)])
    assert res.error == E.NONE and [m.error for m in res.members] == [E.NONE]
    g = h.coord.groups["g"]
    assert g.is_(S.PREPARING_REBALANCE)
    assert h.coord.heartbeat("g", gen, a) == E.REBALANCE_IN_PROGRESS
    assert h.coord.heartbeat("g", gen, c) == E.UNKNOWN_MEMBER_ID
    ja, jb = h.join("g", a), h.join("g", b)
    assert ja.done and jb.done
    assert ja.result.generation_id == jb.result.generation_id == gen + 1
    assert set(g.members) == {a, b}
    assert ja.result.leader in (a, b)
    # leaving again with an unknown id is a per-member error
    assert h.coord.leave_group("g", [(c, None)]).members[0].error == E.UNKNOWN_MEMBER_ID
    assert h.coord.leave_group("nope", [(c, None)]).members[0].error == E.UNKNOWN_MEMBER_ID


def test_member_that_stops_heartbeating_is_removed_and_others_rebalance():
    h = Harness()
    (a, b, c), gen, leader = stable_group(h, session=10_000)
    g = h.coord.groups["g"]
    for _ in range(2):
        h.advance(4000)
        assert h.coord.heartbeat("g", gen, a) == E.NONE
        assert h.coord.heartbeat("g", gen, b) == E.NONE
    assert c in g.members
    h.advance(2000)  # c's session timeout since its last sync
    assert c not in g.members and g.is_(S.PREPARING_REBALANCE)
    assert h.coord.heartbeat("g", gen, a) == E.REBALANCE_IN_PROGRESS
    ja, jb = h.join("g", a), h.join("g", b)
    assert ja.result.generation_id == gen + 1 and jb.result.generation_id == gen + 1
    lead = ja.result if ja.result.members else jb.result
    assert {m.member_id for m in lead.members} == {a, b}


def test_members_that_do_not_rejoin_are_removed_at_rebalance_timeout():
    h = Harness()
    (a, b, c), gen, leader = stable_group(h, rebalance=30_000, session=10_000)
    ja = h.join("g", a, topics=("t", "u"))  # new metadata: a rebalance starts
    assert not ja.done
    # b and c neither rejoin nor heartbeat; waiting in JoinGroup keeps a alive
    h.advance(10_000)
    g = h.coord.groups["g"]
    assert b not in g.members and c not in g.members and ja.done  # session expiry of b, c
    assert ja.result.generation_id == gen + 1 and set(g.members) == {a}

    # the same with members that keep heartbeating but never rejoin: rebalance timeout
    h = Harness()
    (a, b, c), gen, leader = stable_group(h, rebalance=30_000, session=10_000)
    ja = h.join("g", a, topics=("x",))
    for _ in range(5):
        h.advance(5_000)
        assert h.coord.heartbeat("g", gen, b) == E.REBALANCE_IN_PROGRESS
        assert h.coord.heartbeat("g", gen, c) == E.REBALANCE_IN_PROGRESS
    assert not ja.done
    h.advance(5_000)
    assert h.coord.heartbeat("g", gen, b) == E.UNKNOWN_MEMBER_ID
    assert ja.done and ja.result.generation_id == gen + 1
    assert set(h.coord.groups["g"].members) == {a}


def test_member_waiting_in_join_does_not_expire():
    h = Harness()
    (a, b), gen, leader = stable_group(h, 2, session=10_000, rebalance=60_000)
    ja = h.join("g", a, topics=("other",))
    for _ in range(5):
        h.advance(9_000)
        h.coord.heartbeat("g", gen, b)
    assert not ja.done and a in h.coord.groups["g"].members
    jb = h.join("g", b)
    assert ja.done and jb.done and ja.result.error == E.NONE


def test_members_that_do_not_sync_are_removed_after_rebalance_timeout():
    h = Harness()
    (a, b), gen, leader = stable_group(h, 2, rebalance=20_000)
    ja = h.join("g", a, topics=("x",), rebalance=20_000)
    jb = h.join("g", b, rebalance=20_000)
    assert ja.done and jb.done
    follower = b if ja.result.leader == a else a
    lead = ja.result.leader
    h.sync("g", gen + 1, lead, {lead: b"1", follower: b"2"})
    assert h.coord.groups["g"].is_(S.STABLE)
    for _ in range(3):
        h.advance(5_000)
        assert h.coord.heartbeat("g", gen + 1, lead) == E.NONE
        assert h.coord.heartbeat("g", gen + 1, follower) == E.NONE
    assert follower in h.coord.groups["g"].members
    h.advance(5_000)  # rebalance timeout since the join: the follower never synced
    g = h.coord.groups["g"]
    assert follower not in g.members and g.is_(S.PREPARING_REBALANCE)


def test_join_and_sync_errors():
    h = Harness()
    assert h.join("", client_id="x").result.error == E.INVALID_GROUP_ID
    assert h.join("g", session=5999).result.error == E.INVALID_SESSION_TIMEOUT
    assert h.join("g", session=1_800_001).result.error == E.INVALID_SESSION_TIMEOUT
    assert "g" not in h.coord.groups
    assert h.join("g", "not-a-member").result.error == E.UNKNOWN_MEMBER_ID
    (a, b), gen, leader = stable_group(h, 2)
    assert h.join("g", ptype="connect").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("g", protocols=[("sticky", b"")]).result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("g", "not-a-member").result.error == E.UNKNOWN_MEMBER_ID
    assert h.sync("g", gen + 5, a).result.error == E.ILLEGAL_GENERATION
    assert h.sync("g", gen, "nobody").result.error == E.UNKNOWN_MEMBER_ID
    assert h.sync("nope", gen, a).result.error == E.UNKNOWN_MEMBER_ID
    assert h.sync("g", gen, a, protocol_type="connect").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync("g", gen, a, protocol_name="rr").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync("g", gen, a, protocol_type="consumer", protocol_name="range")
    assert ok.result.error == E.NONE
    assert h.coord.heartbeat("g", gen - 1, a) == E.ILLEGAL_GENERATION
    assert h.coord.heartbeat("g", gen, "nobody") == E.UNKNOWN_MEMBER_ID
    assert h.coord.heartbeat("nope", gen, a) == E.UNKNOWN_MEMBER_ID
    assert h.coord.heartbeat("g", gen, a) == E.NONE
    h.join("g", a, topics=("changed",))  # rebalance in progress
    assert h.sync("g", gen, b).result.error == E.REBALANCE_IN_PROGRESS


def test_rejoin_in_completing_rebalance_with_same_metadata_returns_current_generation():
    h = Harness()
    (a, b), gen, leader = stable_group(h, 2)
    h.join("g", leader)
    h.join("g", b if leader == a else a)
    assert h.coord.groups["g"].is_(S.COMPLETING_REBALANCE)
    again = h.join("g", leader)  # lost its answer: gets it again, no new rebalance
    assert again.done and again.result.generation_id == gen + 1
    assert len(again.result.members) == 2
    # a follower rejoining a Stable group unchanged gets the current generation at once
    h.sync("g", gen + 1, leader, {a: b"x", b: b"y"})
    follower = b if leader == a else a
    f = h.join("g", follower)
    assert f.done and f.result.generation_id == gen + 1 and f.result.members == []
    assert h.coord.groups["g"].is_(S.STABLE)


def test_group_max_size():
    h = Harness(group_max_size=2)
    stable_group(h, 2)
    p = h.join("g", client_id="third")
    assert p.result.error == E.GROUP_MAX_SIZE_REACHED
    assert len(h.coord.groups["g"].members) == 2
    h2 = Harness(group_max_size=1)
    stable_group(h2, 1)
    assert h2.join("g", client_id="second").result.error == E.GROUP_MAX_SIZE_REACHED


def test_static_member_restarts_without_rebalance_and_fences_the_old_id():
    h = Harness()
    pa = h.join("g", client_id="ca", instance="ia")
    assert pa.done and pa.result.error == E.NONE  # static members skip MEMBER_ID_REQUIRED
    a_old = pa.result.member_id
    assert a_old.startswith("ia-")
    pb = h.join("g", client_id="cb", instance="ib")
    pa = h.join("g", a_old, instance="ia")
    assert pa.done and pb.done
    gen, b = pa.result.generation_id, pb.result.member_id
    h.sync("g", gen, a_old, {a_old: b"A", b: b"B"}, group_instance_id="ia")
    h.sync("g", gen, b, group_instance_id="ib")
    g = h.coord.groups["g"]
    assert g.is_(S.STABLE) and g.leader_id == a_old
    log_len = len(h.writer.log)

    # the leader restarts: unknown member id, same instance id
    p = h.join("g", client_id="ca", instance="ia")
    assert p.done and p.result.error == E.NONE
    a_new = p.result.member_id
    assert a_new != a_old
    assert g.is_(S.STABLE) and g.generation_id == gen  # no rebalance
    assert p.result.leader == a_old and p.result.members == []  # pre-v9: told to not assign
    assert len(h.writer.log) == log_len + 1  # the new member id is persisted
    s = h.sync("g", gen, a_new, group_instance_id="ia")
    assert s.result.error == E.NONE and s.result.assignment == b"A"  # keeps its assignment
    # the old incarnation is fenced
    assert h.coord.heartbeat("g", gen, a_old, "ia") == E.FENCED_INSTANCE_ID
    assert h.sync("g", gen, a_old, group_instance_id="ia").result.error == E.FENCED_INSTANCE_ID
    assert h.join("g", a_old, instance="ia").result.error == E.FENCED_INSTANCE_ID
    assert h.coord.commit_offsets("g", gen, a_old, [("t", 0, 1, -1, "")],
                                  group_instance_id="ia").result.errors[("t", 0)] == E.FENCED_INSTANCE_ID
    assert h.coord.heartbeat("g", gen, a_new, "ia") == E.NONE
    assert h.coord.heartbeat("g", gen, b, "ib") == E.NONE

    # v9: the restarted leader is told it leads but must skip the assignment
    p = h.join("g", client_id="ca", instance="ia", skip_ok=True)
    r = p.result
    assert r.error == E.NONE and r.skip_assignment and r.leader == r.member_id
    assert {m.member_id for m in r.members} == {r.member_id, b}
    assert g.generation_id == gen and g.is_(S.STABLE)


def test_static_member_restart_fences_the_old_pending_join():
    h = Harness()
    a_old = h.join("g", client_id="ca", instance="ia").result.member_id
    h.sync("g", 1, a_old, {a_old: b"A"})
    pc = h.join("g", client_id="cc", require_known=False)  # rebalance: a must rejoin
    waiting = h.join("g", a_old, instance="ia", topics=("x",))
    assert pc.done and waiting.done  # everyone rejoined
    gen = waiting.result.generation_id
    h.sync("g", gen, a_old, {a_old: b"A", pc.result.member_id: b"C"})
    c = pc.result.member_id
    h.sync("g", gen, c)
    # a's old incarnation starts a rebalance, then a restarts while it waits for c
    waiting = h.join("g", a_old, instance="ia", topics=("y",))
    assert not waiting.done
    p = h.join("g", client_id="ca", instance="ia", topics=("y",))
    assert waiting.done and waiting.result.error == E.FENCED_INSTANCE_ID
    assert not p.done
    jc = h.join("g", c)
    assert p.done and jc.done and p.result.error == E.NONE
    assert p.result.member_id != a_old and p.result.generation_id == gen + 1
    assert set(h.coord.groups["g"].members) == {p.result.member_id, c}


def test_static_member_admin_removal_by_instance_id():
    h = Harness()
    pa = h.join("g", client_id="ca", instance="ia")
    res = h.coord.leave_group("g", [("", "ia"), ("", "unknown-instance")])
    assert [m.error for m in res.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    g = h.coord.groups["g"]
    assert pa.result.member_id not in g.members and g.is_(S.EMPTY)


def test_leader_sync_waits_for_the_write_and_write_failure_resets():
    h = Harness()
    (a, b), gen, leader = stable_group(h, 2)
    follower = b if leader == a else a
    ja, jb = h.join("g", leader), h.join("g", follower)
    gen += 1
    h.writer.hold = True
    sf = h.sync("g", gen, follower)
    sl = h.sync("g", gen, leader, {leader: b"L", follower: b"F"})
    assert not sl.done and not sf.done  # not before the group metadata is durable
    h.writer.release()
    assert sl.result.assignment == b"L" and sf.result.assignment == b"F"

    ja, jb = h.join("g", leader), h.join("g", follower)
    gen += 1
    h.writer.hold, h.writer.fail_with = False, E.NOT_ENOUGH_REPLICAS
    sf = h.sync("g", gen, follower)
    sl = h.sync("g", gen, leader, {leader: b"L", follower: b"F"})
    assert sl.result.error == sf.result.error == E.COORDINATOR_NOT_AVAILABLE
    assert h.coord.groups["g"].is_(S.PREPARING_REBALANCE)


def test_tick_returns_next_deadline_and_wakeup_is_called_for_earlier_ones():
    h = Harness()
    calls = []
    h.coord.wakeup = lambda: calls.append(h.coord.next_deadline())
    first = h.coord.tick()
    assert first == h.clock.monotonic_ms() + h.config.offsets_retention_check_interval_ms
    p = h.join("g", require_known=False, session=10_000)
    assert p.done
    assert calls and h.coord.tick() == h.clock.monotonic_ms() + 10_000
    h.advance(10_000)  # session expired: the group empties
    g = h.coord.groups.get("g")
    assert g is None or g.is_(S.EMPTY)


def test_last_member_leaving_empties_the_group_and_writes_it():
    h = Harness()
    (a,), gen, leader = stable_group(h, 1)
    h.coord.leave_group("g", [(a, None)])
    g = h.coord.groups["g"]
    assert g.is_(S.EMPTY) and g.generation_id == gen + 1 and not g.members
    assert g.leader_id is None
