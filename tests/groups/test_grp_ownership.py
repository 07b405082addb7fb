"""The coordinator follows leadership of __consumer_offsets partitions, without I/O: a new
leader loads a partition's groups from its records (COORDINATOR_LOAD_IN_PROGRESS meanwhile),
a resigning one unloads them (NOT_COORDINATOR to whatever waits, timers stopped)."""
from __future__ import annotations

import itertools

from kwire.groups import GroupConfig, GroupCoordinator, GroupState
from kwire.groups.records import partition_for

from groups_harness import E, Harness, LogWriter

PARTITIONS = 4


def group_on(partition: int, prefix: str = "g") -> str:
    for i in itertools.count():
        g = f"{prefix}{i}"
        if partition_for(g, PARTITIONS) == partition:
            return g
    raise AssertionError


G0, G1 = group_on(0), group_on(1)


def harness(**kw) -> Harness:
    kw.setdefault("group_initial_rebalance_delay_ms", 1_000)   # members join one generation
    return Harness(offsets_topic_num_partitions=PARTITIONS, **kw)


def fresh_coordinator(h: Harness, owned=()) -> GroupCoordinator:
    """Another broker's coordinator over the same (replicated) log, owning ``owned``."""
    counter = itertools.count(100)
    return GroupCoordinator(GroupConfig(**{**h.config.__dict__}), h.clock, LogWriter(),
                            new_uuid=lambda: f"n{next(counter)}", owned_partitions=owned)


def load(coord: GroupCoordinator, h: Harness, partition: int) -> bool:
    ld = coord.begin_load(partition)
    for p, k, v in h.writer.log:
        if p == partition:
            ld.replay(k, v)
    return coord.complete_load(ld)


def stable_group(h: Harness, group: str, members: int = 2) -> tuple[int, list[str]]:
    """A Stable consumer group with ``members`` members and a commit; (generation, ids)."""
    joins = [h.join_new(group, client_id=f"c{i}") for i in range(members)]
    for _ in range(10):
        if all(p.done for p in joins):
            break
        h.advance(1_000)
    assert all(p.done and p.result.error == E.NONE for p in joins), joins
    gen = joins[0].result.generation_id
    ids = [p.result.member_id for p in joins]
    leader = joins[0].result.leader
    syncs = [h.sync(group, gen, m, [(x, x.encode()) for x in ids] if m == leader else ())
             for m in ids]
    assert all(s.done and s.result.error == E.NONE for s in syncs)
    c = h.coord.commit_offsets(group, gen, ids[0], [("t", 0, 42, 3, "meta")])
    assert c.done and c.result.errors[("t", 0)] == E.NONE
    return gen, ids


def test_ownership_answers():
    h = harness()
    coord = fresh_coordinator(h)
    assert coord.coordinator_error(G0) == E.NOT_COORDINATOR
    ld = coord.begin_load(0)
    assert coord.coordinator_error(G0) == E.COORDINATOR_LOAD_IN_PROGRESS
    assert coord.coordinator_error(G1) == E.NOT_COORDINATOR
    assert coord.is_loading(0) and not coord.owns(0)
    assert coord.complete_load(ld)
    assert coord.coordinator_error(G0) is None and coord.owns(0)
    assert coord.coordinator_error(G1) == E.NOT_COORDINATOR
    # a coordinator of its own (owned_partitions None) serves every partition
    assert h.coord.coordinator_error(G0) is None and h.coord.coordinator_error(G1) is None


def test_new_leader_loads_members_assignments_and_offsets():
    h = harness()
    gen, ids = stable_group(h, G0)
    stable_group(h, G1)
    coord = fresh_coordinator(h)
    assert load(coord, h, 0)
    assert set(coord.groups) == {G0}   # only the groups of the partition it leads
    g = coord.groups[G0]
    assert g.state is GroupState.STABLE and g.generation_id == gen
    assert list(g.members) == ids and g.members[ids[1]].assignment == ids[1].encode()
    assert coord.fetch_offsets(G0, [("t", 0)]).offsets[("t", 0)].offset == 42
    # members carry on with the generation they had: heartbeats, a rejoin without change
    assert coord.heartbeat(G0, gen, ids[0]) == E.NONE
    assert coord.heartbeat(G0, gen, "stranger") == E.UNKNOWN_MEMBER_ID
    c = coord.commit_offsets(G0, gen, ids[1], [("t", 1, 7, -1, None)])
    assert c.done and c.result.errors[("t", 1)] == E.NONE


def test_loaded_members_get_session_timers():
    """A member that never comes back to the new coordinator is removed after its session
    timeout (Kafka's onGroupLoaded schedules every member's heartbeat expiration)."""
    h = harness()
    gen, ids = stable_group(h, G0)
    coord = fresh_coordinator(h)
    load(coord, h, 0)
    h.clock.advance(6_000)
    coord.tick()
    assert coord.heartbeat(G0, gen, ids[0]) == E.NONE   # only the first keeps heartbeating
    h.clock.advance(6_000)
    coord.tick()
    g = coord.groups[G0]
    assert list(g.members) == [ids[0]]
    assert g.state is GroupState.PREPARING_REBALANCE
    assert coord.heartbeat(G0, gen, ids[0]) == E.REBALANCE_IN_PROGRESS


def test_resign_answers_waiting_joins_not_coordinator_and_stops_timers():
    h = harness()
    gen, ids = stable_group(h, G0)
    other_gen, other_ids = stable_group(h, G1)
    # a rebalance in progress on G0: the leader rejoined, the follower has not yet
    rejoin = h.join(G0, ids[0], client_id="c0")
    assert not rejoin.done
    assert h.coord.groups[G0].state is GroupState.PREPARING_REBALANCE
    assert h.coord.unload(0) == 1
    assert rejoin.done and rejoin.result.error == E.NOT_COORDINATOR
    assert rejoin.result.member_id == ids[0]
    assert G0 not in h.coord.groups and h.coord.coordinator_error(G0) == E.NOT_COORDINATOR
    # no timer of G0 is left (heartbeats, join); G1 keeps its own
    keys = {k for k in h.coord.timers._live}
    assert not [k for k in keys if len(k) > 1 and k[1] == G0], keys
    assert {("heartbeat", G1, m) for m in other_ids} <= keys
    h.advance(60_000)
    assert h.coord.heartbeat(G0, gen, ids[1]) == E.UNKNOWN_MEMBER_ID   # (the handler answers NOT_COORDINATOR first)
    assert G1 in h.coord.groups and h.coord.coordinator_error(G1) is None


def test_resign_answers_waiting_syncs_not_coordinator():
    h = harness()
    joins = [h.join_new(G0, client_id=f"c{i}") for i in range(2)]
    while not all(p.done for p in joins):
        h.advance(1_000)
    gen = joins[0].result.generation_id
    follower = next(p.result.member_id for p in joins if p.result.member_id != p.result.leader)
    sync = h.sync(G0, gen, follower)
    assert not sync.done   # waits for the leader's assignment
    h.coord.unload(0)
    assert sync.done and sync.result.error == E.NOT_COORDINATOR
    assert ("sync", G0, gen) not in h.coord.timers


def test_resign_answers_writes_in_flight_and_ignores_their_late_acknowledgement():
    h = harness()
    gen, ids = stable_group(h, G0)
    h.writer.hold = True   # the next writes wait for replication
    commit = h.coord.commit_offsets(G0, gen, ids[0], [("t", 0, 99, -1, None)])
    standalone = h.coord.commit_offsets(G1, -1, "", [("t", 0, 5, -1, None)])
    assert not commit.done and not standalone.done
    h.coord.unload(0)
    assert commit.done and commit.result.errors[("t", 0)] == E.NOT_COORDINATOR
    assert not standalone.done   # another partition: still waiting
    h.writer.release()          # the late acknowledgements
    assert standalone.done and standalone.result.errors[("t", 0)] == E.NONE
    assert commit.result.errors[("t", 0)] == E.NOT_COORDINATOR
    assert G0 not in h.coord.groups


def test_become_leader_drops_what_it_held_and_serves_the_log():
    """A broker that led the partition before (its state from then is stale) reloads it."""
    h = harness()
    gen, ids = stable_group(h, G0)
    coord = fresh_coordinator(h)
    load(coord, h, 0)
    coord.unload(0)
    # meanwhile the other leader moved the group on: the second member left
    left = h.coord.leave_group(G0, [(ids[1], None)])
    assert left.members[0].error == E.NONE
    h.advance(0)
    rejoin = h.join(G0, ids[0])
    h.advance(0)
    assert rejoin.result.error == E.NONE
    new_gen = rejoin.result.generation_id
    sync = h.sync(G0, new_gen, ids[0], [(ids[0], b"all")])
    assert sync.result.error == E.NONE
    assert load(coord, h, 0)
    g = coord.groups[G0]
    assert g.generation_id == new_gen and list(g.members) == [ids[0]]
    assert g.members[ids[0]].assignment == b"all"
    assert coord.heartbeat(G0, gen, ids[0]) == E.ILLEGAL_GENERATION


def test_a_superseded_load_is_ignored():
    h = harness()
    stable_group(h, G0)
    coord = fresh_coordinator(h)
    first = coord.begin_load(0)
    coord.unload(0)   # resigned while loading
    assert not coord.complete_load(first)
    assert coord.coordinator_error(G0) == E.NOT_COORDINATOR and G0 not in coord.groups
    a = coord.begin_load(0)
    b = coord.begin_load(0)   # loading again (a newer election)
    assert not coord.complete_load(a)
    for p, k, v in h.writer.log:
        if p == 0:
            b.replay(k, v)
    assert coord.complete_load(b) and G0 in coord.groups


def test_tombstones_in_the_log_leave_nothing_behind():
    h = harness()
    gen, ids = stable_group(h, G0, members=1)
    left = h.coord.leave_group(G0, [(ids[0], None)])
    assert left.members[0].error == E.NONE
    h.advance(0)
    deleted = h.coord.delete_offsets(G0, [("t", 0)])
    assert deleted.done and deleted.result.error == E.NONE
    assert G0 not in h.coord.groups
    coord = fresh_coordinator(h)
    load(coord, h, 0)
    assert G0 not in coord.groups
    assert coord.describe_groups([G0])[0].error == E.GROUP_ID_NOT_FOUND


def test_list_groups_lists_only_what_is_owned():
    h = harness()
    stable_group(h, G0)
    stable_group(h, G1)
    coord = fresh_coordinator(h)
    load(coord, h, 1)
    assert [x.group_id for x in coord.list_groups()] == [G1]
    coord.begin_load(0)
    assert coord.loading   # the handler answers COORDINATOR_LOAD_IN_PROGRESS meanwhile
    assert [x.group_id for x in coord.list_groups()] == [G1]


def test_a_record_that_does_not_decode_is_skipped_not_fatal():
    from kwire.groups import records as R   # noqa: PLC0415

    h = harness()
    gen, ids = stable_group(h, G0)
    coord = fresh_coordinator(h)
    ld = coord.begin_load(0)
    ld.replay(R.offset_key(G0, "t", 9), b"\x00\x03\xff")        # truncated offset value
    ld.replay(R.group_key(G0 + "-other"), b"\x00\x09garbage")   # unknown value version
    ld.replay(b"\x00\x63junk", b"whatever")                      # unknown key version
    for p, k, v in h.writer.log:
        if p == 0:
            ld.replay(k, v)
    assert coord.complete_load(ld)
    assert set(coord.groups) == {G0} and coord.groups[G0].generation_id == gen
    assert coord.fetch_offsets(G0, [("t", 9)]).offsets[("t", 9)].offset == -1
