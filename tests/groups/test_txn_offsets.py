"""Transactional offset commits in the group coordinator, without I/O: pending until the
transaction's marker, committed or dropped by it, UNSTABLE_OFFSET_COMMIT for OffsetFetch
with require_stable meanwhile, Kafka's generation checks, and the loader's replay of
transactional batches and markers (a real log built with kwire's record batch codec)."""
from __future__ import annotations

import itertools

from groups_harness import E, Harness, LogWriter
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_membership import stable_group

from kwire.groups import GroupConfig, GroupCoordinator, GroupState
from kwire.coordinator.runtime import replay_chunk

S = GroupState
PID, PID2 = 4000, 4001
DAY = 24 * 3600 * 1000


def txn_commit(h, group, offsets, pid=PID, epoch=0, **kw):
    return h.coord.commit_txn_offsets(group, pid, epoch, offsets, **kw)


def fetch(coord, group, tps, stable=False):
    r = coord.fetch_offsets(group, tps, require_stable=stable)
    return {tp: (fo.offset, fo.error) for tp, fo in r.offsets.items()}


def fetch_all(coord, group, stable=False):
    r = coord.fetch_offsets(group, None, require_stable=stable)
    return {tp: (fo.offset, fo.error) for tp, fo in r.offsets.items()}


def marker(h, committed, pid=PID, partition=0):
    """Append a marker to the (one-partition) log and tell the coordinator, as
    WriteTxnMarkers does."""
    offset = h.writer.marker(partition, pid, committed)
    return h.coord.transaction_completed(partition, pid, 0, committed, offset)


def test_offsets_are_visible_only_once_the_transaction_commits():
    h = Harness()
    r = txn_commit(h, "app", [("t", 0, 42, 3, "m"), ("t", 1, 7, -1, None)])
    assert r.done and r.result.errors == {("t", 0): E.NONE, ("t", 1): E.NONE}
    # written as one transactional batch of the producer
    assert h.writer.batches[-1][2] == PID and len(h.writer.batches[-1][3]) == 2
    tps = [("t", 0), ("t", 1)]
    assert fetch(h.coord, "app", tps) == {("t", 0): (-1, E.NONE), ("t", 1): (-1, E.NONE)}
    assert fetch(h.coord, "app", tps, stable=True) == {
        ("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert marker(h, True) == 2
    assert fetch(h.coord, "app", tps, stable=True) == {("t", 0): (42, E.NONE), ("t", 1): (7, E.NONE)}
    f = h.coord.fetch_offsets("app", [("t", 0)]).offsets[("t", 0)]
    assert (f.leader_epoch, f.metadata) == (3, "m")
    # a second marker for the same producer finds nothing pending
    assert marker(h, True) == 0


def test_offsets_of_an_aborted_transaction_vanish():
    h = Harness()
    h.coord.commit_offsets("app", -1, "", [("t", 0, 5, -1, "")])
    txn_commit(h, "app", [("t", 0, 9, -1, ""), ("t", 1, 3, -1, "")])
    assert fetch_all(h.coord, "app", stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert fetch_all(h.coord, "app") == {("t", 0): (5, E.NONE)}
    assert marker(h, False) == 0
    assert fetch_all(h.coord, "app", stable=True) == {("t", 0): (5, E.NONE)}
    assert fetch(h.coord, "app", [("t", 1)], stable=True) == {("t", 1): (-1, E.NONE)}


def test_producers_are_independent_and_markers_only_touch_their_partition():
    h = Harness(offsets_topic_num_partitions=4)
    groups = [f"g{i}" for i in range(40)]
    part = h.coord.partition_for
    g0 = next(g for g in groups if part(g) == 0)
    g1 = next(g for g in groups if part(g) == 1)
    txn_commit(h, g0, [("t", 0, 1, -1, "")])
    txn_commit(h, g1, [("t", 0, 2, -1, "")])
    txn_commit(h, g0, [("t", 1, 3, -1, "")], pid=PID2)
    assert h.coord.transaction_completed(1, PID, 0, True, -1) == 1      # g1 only
    assert fetch_all(h.coord, g1) == {("t", 0): (2, E.NONE)}
    assert fetch(h.coord, g0, [("t", 0), ("t", 1)], stable=True) == {
        ("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert h.coord.transaction_completed(0, PID2, 0, True, -1) == 1
    assert fetch(h.coord, g0, [("t", 0), ("t", 1)], stable=True) == {
        ("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("t", 1): (3, E.NONE)}
    assert h.coord.transaction_completed(0, PID, 0, True, -1) == 1
    assert fetch_all(h.coord, g0, stable=True) == {("t", 0): (1, E.NONE), ("t", 1): (3, E.NONE)}


def test_the_later_record_wins_between_regular_and_transactional_commits():
    h = Harness()
    # the transaction's record first, then a regular commit, then the commit marker:
    # the regular commit (the later record) stays, as in Kafka
    txn_commit(h, "app", [("t", 0, 10, -1, "")])
    h.coord.commit_offsets("app", -1, "", [("t", 0, 20, -1, "")])
    assert marker(h, True) == 0
    assert fetch_all(h.coord, "app", stable=True) == {("t", 0): (20, E.NONE)}
    # a regular commit, then the transaction's record: the transaction's offset wins
    h.coord.commit_offsets("app", -1, "", [("t", 0, 30, -1, "")])
    txn_commit(h, "app", [("t", 0, 40, -1, "")])
    assert marker(h, True) == 1
    assert fetch_all(h.coord, "app") == {("t", 0): (40, E.NONE)}


def test_generation_and_member_checks_of_v3_and_none_for_older_versions():
    h = Harness()
    ids, gen, leader = stable_group(h, 2)
    a = ids[0]

    def err(**kw):
        return txn_commit(h, "g", [("t", 0, 1, -1, "")], **kw).result.errors[("t", 0)]
    # v0-2 carry no member id nor generation: accepted although the group has members
    assert err() == E.NONE
    assert err(generation_id=gen, member_id=a) == E.NONE
    assert err(generation_id=gen - 1, member_id=a) == E.ILLEGAL_GENERATION
    assert err(generation_id=gen, member_id="stranger") == E.UNKNOWN_MEMBER_ID
    assert err(generation_id=gen, member_id="", group_instance_id="nobody") == E.UNKNOWN_MEMBER_ID
    # an unknown group with a generation: ILLEGAL_GENERATION, and no group is made
    r = txn_commit(h, "unknown", [("t", 0, 1, -1, "")], generation_id=2, member_id="m")
    assert r.result.errors == {("t", 0): E.ILLEGAL_GENERATION} and "unknown" not in h.coord.groups
    # a rebalance in progress is no error for a transactional commit (Kafka)
    h.join("g", a)
    assert h.coord.groups["g"].is_(S.PREPARING_REBALANCE)
    assert err(generation_id=gen, member_id=a) == E.NONE
    # too large metadata fails that partition only
    r = txn_commit(h, "g", [("t", 0, 5, -1, "x" * 4097), ("t", 1, 9, -1, "")])
    assert r.result.errors == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.NONE}


def test_a_static_member_of_an_old_incarnation_is_fenced():
    h = Harness()
    pa = h.join("g", client_id="ca", instance="ia")
    assert pa.done and pa.result.error == E.NONE
    old = pa.result.member_id
    pa2 = h.join("g", client_id="ca", instance="ia")   # the same instance restarted
    new = pa2.result.member_id
    assert new != old
    gen = h.coord.groups["g"].generation_id
    r = txn_commit(h, "g", [("t", 0, 1, -1, "")], generation_id=gen, member_id=old,
                   group_instance_id="ia")
    assert r.result.errors == {("t", 0): E.FENCED_INSTANCE_ID}


def test_a_failed_write_answers_the_error_and_leaves_nothing_pending():
    h = Harness()
    h.writer.hold = True
    r = txn_commit(h, "app", [("t", 0, 1, -1, "")])
    assert not r.done
    # pending from the moment of the request (as Kafka's prepareTxnOffsetCommit)
    assert fetch(h.coord, "app", [("t", 0)], stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    h.writer.fail_with = E.NOT_LEADER_OR_FOLLOWER
    h.writer.release()
    assert r.done and r.result.errors == {("t", 0): E.NOT_COORDINATOR}
    assert fetch(h.coord, "app", [("t", 0)], stable=True) == {("t", 0): (-1, E.NONE)}
    assert "app" not in h.coord.groups   # the group the commit made goes with it
    h.writer.hold = False
    h.writer.fail_with = E.MESSAGE_TOO_LARGE
    r = txn_commit(h, "app", [("t", 0, 1, -1, "")])
    assert r.result.errors == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}
    h.writer.fail_with = E.INVALID_PRODUCER_EPOCH   # the log fenced the producer's epoch
    r = txn_commit(h, "app", [("t", 0, 1, -1, "")])
    assert r.result.errors == {("t", 0): E.INVALID_PRODUCER_EPOCH}


def test_offsets_after_the_marker_stay_for_the_next_transaction_and_in_flight_ones_drop():
    h = Harness()
    txn_commit(h, "app", [("t", 0, 1, -1, "")])
    m = h.writer.marker(0, PID, True)
    txn_commit(h, "app", [("t", 1, 2, -1, "")])           # recorded after the marker
    assert h.coord.transaction_completed(0, PID, 0, True, m) == 1
    assert fetch(h.coord, "app", [("t", 0), ("t", 1)], stable=True) == {
        ("t", 0): (1, E.NONE), ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert marker(h, True) == 1
    assert fetch_all(h.coord, "app", stable=True) == {("t", 0): (1, E.NONE), ("t", 1): (2, E.NONE)}
    # a transaction that ends before the append of its offsets does: they are dropped
    h.writer.hold = True
    r = txn_commit(h, "app", [("t", 0, 99, -1, "")])
    assert h.coord.transaction_completed(0, PID, 0, True, -1) == 0
    h.writer.release()
    assert r.result.errors == {("t", 0): E.NONE}
    assert fetch_all(h.coord, "app", stable=True) == {("t", 0): (1, E.NONE), ("t", 1): (2, E.NONE)}


def test_pending_offsets_neither_expire_nor_let_their_group_go():
    h = Harness(offsets_retention_ms=DAY)
    h.coord.commit_offsets("solo", -1, "", [("t", 0, 1, -1, "")])
    txn_commit(h, "solo", [("t", 0, 2, -1, "")])
    txn_commit(h, "only-txn", [("t", 0, 3, -1, "")])
    h.clock.advance(2 * DAY)
    assert h.coord.expire_offsets() == 0
    assert "solo" in h.coord.groups and "only-txn" in h.coord.groups
    assert marker(h, False) == 0
    assert h.coord.expire_offsets() == 1
    assert "solo" not in h.coord.groups and "only-txn" not in h.coord.groups


def test_deleting_a_group_or_its_offsets_drops_pending_ones_with_tombstones():
    h = Harness()
    txn_commit(h, "app", [("t", 0, 2, -1, ""), ("t", 1, 3, -1, "")])
    r = h.coord.delete_offsets("app", [("t", 0)])
    assert r.result.partitions == {("t", 0): E.NONE}
    assert h.writer.log[-1][2] is None               # a tombstone of ("t", 0)
    assert fetch(h.coord, "app", [("t", 0), ("t", 1)], stable=True) == {
        ("t", 0): (-1, E.NONE), ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert h.coord.delete_groups(["app"]).result == {"app": E.NONE}
    assert marker(h, True) == 0
    assert "app" not in h.coord.groups


# ------------------------------------------------------------------ the loader
def coordinator(h, owned=()):
    counter = itertools.count(100)
    return GroupCoordinator(GroupConfig(**{**h.config.__dict__}), h.clock, LogWriter(),
                            new_uuid=lambda: f"n{next(counter)}", owned_partitions=owned)


def load(coord, h, partition=0, *, complete=True):
    ld = coord.begin_load(partition)
    buf = h.writer.log_bytes(partition)
    assert replay_chunk(ld, buf, 0) == h.writer.next_offset
    if complete:
        assert coord.complete_load(ld)
    return ld


def test_a_new_leader_replays_transactions_and_their_markers():
    h = Harness()
    h.coord.commit_offsets("app", -1, "", [("t", 0, 1, -1, "")])
    txn_commit(h, "app", [("t", 0, 10, -1, ""), ("t", 1, 11, -1, "")])           # committed
    txn_commit(h, "app", [("t", 2, 12, -1, "")], pid=PID2)                        # aborted
    marker(h, True)
    marker(h, False, pid=PID2)
    txn_commit(h, "app", [("t", 0, 20, -1, "")])                                  # later regular?
    h.coord.commit_offsets("app", -1, "", [("t", 0, 21, -1, "")])                 # ... yes: wins
    marker(h, True)
    txn_commit(h, "app", [("t", 3, 30, -1, "")], pid=PID2)                        # still open
    expect = {("t", 0): (21, E.NONE), ("t", 1): (11, E.NONE)}
    assert fetch_all(h.coord, "app") == expect
    c = coordinator(h)
    load(c, h)
    assert fetch_all(c, "app") == expect
    assert fetch(c, "app", [("t", 2), ("t", 3)], stable=True) == {
        ("t", 2): (-1, E.NONE), ("t", 3): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    # the open transaction ends on the new leader
    assert c.transaction_completed(0, PID2, 0, True, h.writer.marker(0, PID2, True)) == 1
    assert fetch(c, "app", [("t", 3)], stable=True) == {("t", 3): (30, E.NONE)}


def test_a_tombstone_in_the_log_drops_pending_offsets_of_its_partition():
    h = Harness()
    txn_commit(h, "app", [("t", 0, 1, -1, ""), ("t", 1, 2, -1, "")])
    h.coord.delete_offsets("app", [("t", 0)])
    marker(h, True)
    c = coordinator(h)
    load(c, h)
    assert fetch_all(c, "app") == {("t", 1): (2, E.NONE)}
    assert fetch_all(c, "app") == fetch_all(h.coord, "app")


def test_a_marker_written_while_the_partition_loads_applies_once_loaded():
    h = Harness()
    txn_commit(h, "app", [("t", 0, 5, -1, "")])
    txn_commit(h, "app", [("t", 1, 6, -1, "")], pid=PID2)
    marker(h, False, pid=PID2)         # in the log the load reads
    c = coordinator(h)
    ld = load(c, h, complete=False)
    assert c.coordinator_error("app") == E.COORDINATOR_LOAD_IN_PROGRESS
    # the marker lands after the load's end: kept until the load completes
    assert c.transaction_completed(0, PID, 0, True, h.writer.marker(0, PID, True)) == 0
    # the abort marker the load read already is announced late too: applied once only
    assert c.transaction_completed(0, PID2, 0, False, 2) == 0
    assert c.complete_load(ld)
    assert fetch_all(c, "app", stable=True) == {("t", 0): (5, E.NONE)}


def test_a_partition_not_served_here_ignores_markers():
    h = Harness(offsets_topic_num_partitions=1)
    txn_commit(h, "app", [("t", 0, 5, -1, "")])
    h.coord.unload(0)
    assert h.coord._txn_groups == {}   # what it knew of the partition's transactions went too
    assert h.coord.transaction_completed(0, PID, 0, True, -1) == 0
    assert h.coord.coordinator_error("app") == E.NOT_COORDINATOR
    # leading it again, it learns the open transaction from the log
    load(h.coord, h)
    assert fetch_all(h.coord, "app", stable=True) == {}
    assert fetch(h.coord, "app", [("t", 0)], stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert h.coord.transaction_completed(0, PID, 0, True, h.writer.marker(0, PID, True)) == 1
    assert fetch_all(h.coord, "app", stable=True) == {("t", 0): (5, E.NONE)}


# ------------------------------------------------------------------ property
TPS = [("t", 0), ("t", 1), ("u", 0)]
OPS = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(TPS), st.integers(0, 99)),
    st.tuples(st.just("txn"), st.sampled_from([PID, PID2]), st.sampled_from(TPS), st.integers(0, 99)),
    st.tuples(st.just("marker"), st.sampled_from([PID, PID2]), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(TPS)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(OPS, max_size=25))
@example([("txn", PID2, ("t", 1), 1), ("txn", PID, ("t", 1), 0), ("marker", PID, True), ("marker", PID2, True)])
def test_what_a_new_leader_loads_is_what_the_old_one_served(ops):
    """After any mix of regular commits, transactional commits, markers and offset deletions:
    a coordinator that loads the log serves the same offsets, with UNSTABLE_OFFSET_COMMIT
    for the same partitions; those are exactly the ones an open transaction holds; and each
    committed offset is the last one committed (regular, or by a committed transaction)
    before it, in log order."""
    h = Harness()
    model: dict = {}                                   # tp -> (offset, position of the record that set it)
    open_txns: dict[int, dict] = {PID: {}, PID2: {}}   # pid -> tp -> (offset, position)
    for i, op in enumerate(ops):                       # i orders the records as the log does
        if op[0] == "commit":
            _, tp, off = op
            h.coord.commit_offsets("app", -1, "", [(tp[0], tp[1], off, -1, "")])
            model[tp] = (off, i)
        elif op[0] == "txn":
            _, pid, tp, off = op
            txn_commit(h, "app", [(tp[0], tp[1], off, -1, "")], pid=pid)
            open_txns[pid][tp] = (off, i)
        elif op[0] == "marker":
            _, pid, committed = op
            marker(h, committed, pid=pid)
            if committed:   # as Kafka: a committed offset replaces one only if its record is later in the log
                model.update({tp: (off, pos) for tp, (off, pos) in open_txns[pid].items()
                              if tp not in model or model[tp][1] < pos})
            open_txns[pid] = {}
        else:
            _, tp = op
            if "app" in h.coord.groups:
                h.coord.delete_offsets("app", [tp])
                model.pop(tp, None)
                for pending in open_txns.values():
                    pending.pop(tp, None)
    model = {tp: off for tp, (off, _) in model.items()}
    served = {tp: fetch(h.coord, "app", [tp], stable=True)[tp] for tp in TPS}
    unstable = {tp for txn in open_txns.values() for tp in txn}
    assert served == {tp: (-1, E.UNSTABLE_OFFSET_COMMIT) if tp in unstable
                      else (model.get(tp, -1), E.NONE) for tp in TPS}
    c = coordinator(h)
    load(c, h)
    assert {tp: fetch(c, "app", [tp], stable=True)[tp] for tp in TPS} == served
    assert fetch_all(c, "app") == fetch_all(h.coord, "app")

