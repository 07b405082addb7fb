"""OffsetCommit/OffsetFetch, expiry, DescribeGroups/ListGroups/DeleteGroups/OffsetDelete,
and replay of what was written to __consumer_offsets."""
from __future__ import annotations

from groups_harness import E, Harness
from test_membership import stable_group

from kwire.groups import GroupCoordinator, GroupState
from kwire.groups import records as R

S = GroupState
DAY = 24 * 3600 * 1000


def committed(h, group):
    return {tp: (o.offset, o.leader_epoch, o.metadata)
            for tp, o in h.coord.fetch_offsets(group, None).offsets.items()}


def test_commit_and_fetch_with_generation_checks():
    h = Harness()
    (a, b), gen, leader = stable_group(h, 2)
    r = h.coord.commit_offsets("g", gen, a, [("t", 0, 42, 3, "meta"), ("t", 1, 7, -1, None)])
    assert r.done and r.result.errors == {("t", 0): E.NONE, ("t", 1): E.NONE}
    f = h.coord.fetch_offsets("g", [("t", 0), ("t", 1), ("t", 2)])
    assert f.error == E.NONE
    assert (f.offsets[("t", 0)].offset, f.offsets[("t", 0)].leader_epoch,
            f.offsets[("t", 0)].metadata) == (42, 3, "meta")
    assert f.offsets[("t", 1)].metadata == ""
    assert f.offsets[("t", 2)].offset == -1 and f.offsets[("t", 2)].error == E.NONE
    assert committed(h, "g") == {("t", 0): (42, 3, "meta"), ("t", 1): (7, -1, "")}

    def err(gen_, member, **kw):
        return h.coord.commit_offsets("g", gen_, member, [("t", 0, 1, -1, "")],
                                      **kw).result.errors[("t", 0)]
    assert err(gen - 1, a) == E.ILLEGAL_GENERATION
    assert err(gen, "stranger") == E.UNKNOWN_MEMBER_ID
    assert err(-1, "") == E.UNKNOWN_MEMBER_ID  # a group with members takes no anonymous commits
    # during PreparingRebalance members may still commit; during CompletingRebalance not
    h.coord.leave_group("g", [(b, None)])
    assert h.coord.groups["g"].is_(S.PREPARING_REBALANCE)
    assert err(gen, a) == E.NONE
    # a (the only member left) must rejoin: the join completes at once
    ja = h.join("g", a)
    assert ja.done and h.coord.groups["g"].is_(S.COMPLETING_REBALANCE)
    assert err(gen + 1, a) == E.REBALANCE_IN_PROGRESS
    h.sync("g", gen + 1, a, {a: b""})
    assert err(gen + 1, a) == E.NONE
    assert committed(h, "g")[("t", 0)][0] == 1
    # too large metadata fails that partition only
    r = h.coord.commit_offsets("g", gen + 1, a, [("t", 0, 5, -1, "x" * 4097), ("t", 1, 9, -1, "")])
    assert r.result.errors == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.NONE}
    assert committed(h, "g")[("t", 0)][0] == 1 and committed(h, "g")[("t", 1)][0] == 9


def test_standalone_consumers_commit_freely_and_create_the_group():
    h = Harness()
    r = h.coord.commit_offsets("solo", -1, "", [("t", 0, 10, -1, "")])
    assert r.result.errors == {("t", 0): E.NONE}
    g = h.coord.groups["solo"]
    assert g.is_(S.EMPTY) and g.protocol_type is None
    assert committed(h, "solo") == {("t", 0): (10, -1, "")}
    # a non-negative generation for a group that does not exist is refused
    r = h.coord.commit_offsets("gone", 3, "m", [("t", 0, 1, -1, "")])
    assert r.result.errors == {("t", 0): E.ILLEGAL_GENERATION}
    assert "gone" not in h.coord.groups
    # the empty group id is allowed for commits and fetches, as in Kafka
    assert h.coord.commit_offsets("", -1, "", [("t", 0, 1, -1, "")]).result.errors[("t", 0)] == E.NONE
    assert h.coord.fetch_offsets("", [("t", 0)]).offsets[("t", 0)].offset == 1
    # fetching an unknown group: -1 for what was asked, nothing when asked for all
    assert h.coord.fetch_offsets("nope", [("t", 0)]).offsets[("t", 0)].offset == -1
    assert h.coord.fetch_offsets("nope", None).offsets == {}
    assert h.coord.fetch_offsets("solo", None, require_stable=True).error == E.NONE


def test_commit_answers_only_after_the_append_and_maps_write_errors():
    h = Harness()
    h.writer.hold = True
    r = h.coord.commit_offsets("solo", -1, "", [("t", 0, 10, -1, "")])
    assert not r.done and committed(h, "solo") == {}
    h.writer.release()
    assert r.done and r.result.errors == {("t", 0): E.NONE}
    assert committed(h, "solo") == {("t", 0): (10, -1, "")}
    h.writer.hold, h.writer.fail_with = False, E.NOT_LEADER_OR_FOLLOWER
    r = h.coord.commit_offsets("solo", -1, "", [("t", 0, 11, -1, "")])
    assert r.result.errors == {("t", 0): E.NOT_COORDINATOR}
    assert committed(h, "solo") == {("t", 0): (10, -1, "")}
    h.writer.fail_with = E.RECORD_LIST_TOO_LARGE
    r = h.coord.commit_offsets("solo", -1, "", [("t", 0, 11, -1, "")])
    assert r.result.errors == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}


def test_standalone_offsets_expire_after_retention_and_the_group_goes():
    h = Harness()
    h.coord.commit_offsets("solo", -1, "", [("t", 0, 10, -1, "")])
    h.advance(DAY)
    h.coord.commit_offsets("solo", -1, "", [("t", 1, 20, -1, "")])
    h.advance(6 * DAY + 1)  # 7 days since the first commit: it expires, the second stays
    assert set(committed(h, "solo")) == {("t", 1)}
    assert (0, R.offset_key("solo", "t", 0), None) in h.writer.log
    h.advance(DAY)
    assert "solo" not in h.coord.groups
    assert (0, R.group_key("solo"), None) in h.writer.log


def test_consumer_group_offsets_expire_only_once_empty_for_the_retention():
    h = Harness()
    (a,), gen, leader = stable_group(h, 1, topics=("t",))
    h.coord.commit_offsets("g", gen, a, [("t", 0, 5, -1, ""), ("old", 0, 1, -1, "")])
    for _ in range(8 * 24):  # 8 days of heartbeats every hour... in steps below the session
        for _ in range(400):
            h.clock.advance(9_000)
            h.coord.heartbeat("g", gen, a)
            h.coord.tick()
        if ("old", 0) not in committed(h, "g"):
            break
    # a stable consumer group keeps offsets of topics it subscribes to; "old" expired
    assert set(committed(h, "g")) == {("t", 0)}
    h.coord.leave_group("g", [(a, None)])
    assert h.coord.groups["g"].is_(S.EMPTY)
    h.advance(7 * DAY - 1)
    assert set(committed(h, "g")) == {("t", 0)}
    h.advance(h.config.offsets_retention_check_interval_ms)
    assert "g" not in h.coord.groups


def test_explicit_retention_time_of_a_commit():
    h = Harness()
    h.coord.commit_offsets("solo", -1, "", [("t", 0, 10, -1, "")], retention_ms=3_600_000)
    h.advance(3_600_000)
    h.coord.expire_offsets()
    assert committed(h, "solo") == {}


def test_describe_and_list_groups():
    h = Harness()
    (a, b), gen, leader = stable_group(h, 2)
    h.coord.commit_offsets("solo", -1, "", [("t", 0, 1, -1, "")])
    [d, missing] = h.coord.describe_groups(["g", "nope"])
    assert d.error == E.NONE and d.state == "Stable" and d.protocol_type == "consumer"
    assert d.protocol == "range"
    assert {m.member_id for m in d.members} == {a, b}
    m = next(m for m in d.members if m.member_id == a)
    assert m.client_host == "/127.0.0.1" and m.assignment == f"a-{a}".encode()
    assert m.metadata == h.coord.groups["g"].members[a].metadata("range")
    assert missing.error == E.GROUP_ID_NOT_FOUND and missing.state == "Dead"
    # while rebalancing, no protocol and no member metadata are shown
    h.join("g", a, topics=("z",))
    [d] = h.coord.describe_groups(["g"])
    assert d.state == "PreparingRebalance" and d.protocol == ""
    assert all(m.metadata == b"" and m.assignment == b"" for m in d.members)

    listed = {(x.group_id, x.protocol_type, x.state) for x in h.coord.list_groups()}
    assert listed == {("g", "consumer", "PreparingRebalance"), ("solo", "", "Empty")}
    assert [x.group_id for x in h.coord.list_groups(["empty"])] == ["solo"]
    assert [x.group_id for x in h.coord.list_groups(["PreparingRebalance", "Stable"])] == ["g"]
    assert h.coord.list_groups(None, ["consumer"]) == []
    assert len(h.coord.list_groups(None, ["Classic"])) == 2


def test_delete_groups():
    h = Harness()
    (a,), gen, leader = stable_group(h, 1)
    h.coord.commit_offsets("g", gen, a, [("t", 0, 3, -1, "")])
    h.coord.commit_offsets("solo", -1, "", [("t", 0, 1, -1, ""), ("u", 2, 5, -1, "")])
    r = h.coord.delete_groups(["g", "solo", "nope"])
    assert r.done and r.result == {"g": E.NON_EMPTY_GROUP, "solo": E.NONE,
                                   "nope": E.GROUP_ID_NOT_FOUND}
    assert "solo" not in h.coord.groups
    assert h.coord.fetch_offsets("solo", None).offsets == {}
    tail = h.writer.log[-3:]
    assert {(k, v) for _, k, v in tail} == {(R.offset_key("solo", "t", 0), None),
                                           (R.offset_key("solo", "u", 2), None),
                                           (R.group_key("solo"), None)}
    h.writer.hold = True
    h.coord.leave_group("g", [(a, None)])
    r = h.coord.delete_groups(["g"])
    assert not r.done  # answered once the tombstones are written
    h.writer.release()
    assert r.result == {"g": E.NONE}


def test_delete_offsets_refuses_subscribed_topics_of_a_live_consumer_group():
    h = Harness()
    (a,), gen, leader = stable_group(h, 1, topics=("t",))
    h.coord.commit_offsets("g", gen, a, [("t", 0, 3, -1, ""), ("u", 0, 4, -1, "")])
    r = h.coord.delete_offsets("g", [("t", 0), ("u", 0)])
    assert r.result.error == E.NONE
    assert r.result.partitions == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): E.NONE}
    assert set(committed(h, "g")) == {("t", 0)}
    assert h.coord.delete_offsets("nope", [("t", 0)]).result.error == E.GROUP_ID_NOT_FOUND
    assert h.coord.delete_offsets("", [("t", 0)]).result.error == E.INVALID_GROUP_ID
    # a non-consumer group with members: NON_EMPTY_GROUP
    p = h.join("conn", ptype="connect", protocols=[("default", b"x")], require_known=False)
    assert p.result.error == E.NONE
    assert h.coord.delete_offsets("conn", [("t", 0)]).result.error == E.NON_EMPTY_GROUP
    # once empty, everything may go; the group goes with its last offset
    h.coord.leave_group("g", [(a, None)])
    r = h.coord.delete_offsets("g", [("t", 0)])
    assert r.result.partitions == {("t", 0): E.NONE}
    assert "g" not in h.coord.groups


def _snapshot(coord):
    out = {}
    for gid, g in coord.groups.items():
        out[gid] = (g.state, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id,
                    [(m.member_id, m.group_instance_id, m.client_id, m.session_timeout_ms,
                      m.rebalance_timeout_ms, m.assignment,
                      m.metadata(g.protocol_name) if g.protocol_name else None)
                     for m in g.members.values()],
                    {tp: om for tp, om in g.offsets.items()})
    return out


def test_replay_of_written_records_rebuilds_offsets_and_groups():
    h = Harness(offsets_topic_num_partitions=50)
    (a, b), gen, leader = stable_group(h, 2)
    h.coord.commit_offsets("g", gen, a, [("t", 0, 3, 1, "m"), ("t", 1, 4, -1, "")])
    h.coord.commit_offsets("g", gen, b, [("t", 1, 8, -1, "x")])
    h.coord.commit_offsets("solo", -1, "", [("u", 0, 1, -1, "")])
    h.coord.commit_offsets("deleted", -1, "", [("u", 0, 1, -1, "")])
    h.coord.delete_groups(["deleted"])
    (c,), gen2, _ = stable_group(h, 1, group="other")
    h.coord.leave_group("other", [(c, None)])  # written as an empty group
    h.coord.commit_offsets("other", -1, "", [("v", 0, 2, -1, "")])
    # every record of a group lands in its partition
    for partition, key, _ in h.writer.log:
        assert partition == h.coord.partition_for(R.decode_key(key).group)

    before = _snapshot(h.coord)
    assert set(before) == {"g", "solo", "other"}
    fresh = GroupCoordinator(h.config, h.clock)
    for _, key, value in h.writer.log:
        fresh.replay(key, value)
    assert _snapshot(fresh) == before
    # log compaction keeps the last record of each key (tombstones included): same state
    latest = {}
    for _, key, value in h.writer.log:
        latest.pop(key, None)
        latest[key] = value
    compacted = GroupCoordinator(h.config, h.clock)
    for key, value in latest.items():
        compacted.replay(key, value)
    assert _snapshot(compacted) == before
    # a replayed stable group serves its members: heartbeats, syncs, and session expiry
    assert fresh.heartbeat("g", gen, a) == E.NONE
    s = fresh.sync_group("g", gen, b)
    assert s.done and s.result.assignment == f"a-{b}".encode()
    h.clock.advance(10_000)
    fresh.tick()
    g = fresh.groups["g"]  # a and b missed their sessions: the group empties
    assert g.is_(S.EMPTY) and not g.members and g.generation_id == gen + 1
    assert fresh.fetch_offsets("g", [("t", 1)]).offsets[("t", 1)].offset == 8


def test_replay_skips_records_it_cannot_read():
    c = GroupCoordinator(clock=Harness().clock)
    c.replay(b"\x00\x09junk", b"whatever")
    c.replay(b"", None)
    assert c.groups == {}
