"""One test per rule of (KRaft-flavoured) Raft, driving single RaftCore instances by hand."""
from __future__ import annotations

import random

import pytest

from kwire.raft import messages as M
from kwire.raft.core import LEADER_CHANGE, NotLeader, RaftConfig, RaftCore, Role
from kwire.raft.log import Entry, OffsetAndEpoch, RaftLog
from kwire.raft.quorum_state import QuorumState
from kwire.raft.snapshot import Snapshot

CFG = RaftConfig(snapshot_chunk_bytes=8)
VOTERS = (1, 2, 3)


def mk(node=1, voters=VOTERS, log=None, qs=None, snapshot=None, now=0, seed=0):
    return RaftCore(node, voters, rng=random.Random(seed), config=CFG, log=log, quorum_state=qs,
                    snapshot=snapshot, now_ms=now)


def drain(core):
    """Flush like a driver; returns (messages, readies)."""
    msgs, rds = [], []
    while core.has_ready():
        rd = core.ready()
        rds.append(rd)
        msgs.extend(rd.messages)
        core.advance(rd)
    return msgs, rds


def sent(msgs, typ, dest=None):
    return [m for d, m in msgs if isinstance(m, typ) and (dest is None or d == dest)]


def entries(epochs, start=0):
    return [Entry(start + i, e, f"r{start + i}") for i, e in enumerate(epochs)]


def elect(core, now=2000):
    """Drive ``core`` (node 1 of 3) to leadership through pre-vote and vote."""
    core.tick(now)
    drain(core)
    core.step(2, M.VoteResponse(epoch=core.epoch, leader_id=-1, granted=True, pre_vote=True))
    assert core.role == Role.CANDIDATE
    core.step(2, M.VoteResponse(epoch=core.epoch, leader_id=-1, granted=True))
    assert core.role == Role.LEADER
    return drain(core)[0]


def follower_of(leader=2, epoch=1, node=1, log=None, now=0):
    core = mk(node, log=log, now=now)
    core.step(leader, M.BeginQuorumEpochRequest(epoch=epoch, leader_id=leader))
    assert core.role == Role.FOLLOWER
    return core


# --- elections -----------------------------------------------------------------------------
def test_election_timeout_is_randomized_between_one_and_two_timeouts():
    deadlines = {mk(seed=s).next_deadline() for s in range(20)}
    assert all(1000 <= d < 2000 for d in deadlines) and len(deadlines) > 5


def test_pre_vote_polls_without_bumping_the_epoch_or_voting():
    c = mk()
    c.tick(2000)
    assert c.role == Role.PROSPECTIVE and c.epoch == 0
    msgs, rds = drain(c)
    reqs = sent(msgs, M.VoteRequest)
    assert {d for d, m in msgs} == {2, 3} and all(r.pre_vote and r.epoch == 1 for r in reqs)
    assert all(rd.quorum_state is None for rd in rds)        # nothing to persist for a poll


def test_candidate_bumps_epoch_votes_for_itself_and_persists_before_asking():
    c = mk()
    c.tick(2000)
    drain(c)
    c.step(3, M.VoteResponse(epoch=0, leader_id=-1, granted=True, pre_vote=True))
    assert c.role == Role.CANDIDATE and c.epoch == 1 and c.voted_id == 1
    rd = c.ready()
    assert rd.quorum_state == QuorumState(leader_epoch=1, leader_id=-1, voted_id=1, voters=VOTERS)
    assert {d for d, m in rd.messages if isinstance(m, M.VoteRequest) and not m.pre_vote} == {2, 3}


def test_one_vote_per_epoch():
    c = mk(node=3)
    c.step(1, M.VoteRequest(epoch=1, candidate_id=1, last_epoch=0, last_offset=0))
    c.step(2, M.VoteRequest(epoch=1, candidate_id=2, last_epoch=0, last_offset=0))
    c.step(1, M.VoteRequest(epoch=1, candidate_id=1, last_epoch=0, last_offset=0))   # a retry
    msgs, rds = drain(c)
    assert [(d, m.granted) for d, m in msgs] == [(1, True), (2, False), (1, True)]
    assert c.role == Role.VOTED and c.voted_id == 1 and rds[0].quorum_state.voted_id == 1


def test_vote_refused_to_a_less_up_to_date_log():
    c = mk(node=3, log=RaftLog(entries([1, 1, 2])))
    for last_epoch, last_offset in ((1, 10), (2, 2)):        # older last epoch; same epoch, shorter
        c.step(1, M.VoteRequest(epoch=3, candidate_id=1, last_epoch=last_epoch, last_offset=last_offset))
    c.step(2, M.VoteRequest(epoch=3, candidate_id=2, last_epoch=2, last_offset=3))   # as good: granted
    msgs, _ = drain(c)
    assert [m.granted for _, m in msgs] == [False, False, True]


def test_higher_epoch_in_a_vote_request_makes_a_leader_step_down():
    c = mk()
    elect(c)
    c.step(2, M.VoteRequest(epoch=5, candidate_id=2, last_epoch=1, last_offset=1))
    assert c.role == Role.VOTED and c.epoch == 5 and c.voted_id == 2


def test_stale_epoch_vote_request_is_refused_with_the_current_epoch():
    c = mk(node=3, qs=QuorumState(leader_epoch=4, voters=VOTERS))
    c.step(1, M.VoteRequest(epoch=3, candidate_id=1, last_epoch=0, last_offset=0))
    (m,) = [m for _, m in drain(c)[0]]
    assert not m.granted and m.epoch == 4


def test_follower_refuses_pre_votes_while_its_leader_is_alive():
    c = follower_of(leader=2, epoch=1, node=3)
    pre = M.VoteRequest(epoch=2, candidate_id=1, last_epoch=0, last_offset=0, pre_vote=True)
    c.tick(500)
    c.step(1, pre)
    assert sent(drain(c)[0], M.VoteResponse)[0].granted is False
    c.tick(2001)                                          # fetch timeout: no word from the leader
    assert c.role == Role.PROSPECTIVE                     # it polls too ...
    c.step(1, pre)
    assert sent(drain(c)[0], M.VoteResponse)[0].granted   # ... and grants the poll
    assert c.epoch == 1                                   # a poll never moves the epoch


def test_majority_makes_a_leader_that_announces_itself_and_appends_leader_change():
    c = mk()
    msgs = elect(c)
    assert c.leader_id == 1 and c.epoch == 1
    assert {d for d in (2, 3) if sent(msgs, M.BeginQuorumEpochRequest, d)} == {2, 3}
    first = c.log.entry(0)
    assert first.control and first.epoch == 1 and first.records["type"] == LEADER_CHANGE


def test_begin_quorum_epoch_makes_candidates_and_voters_follow():
    c = mk(node=2)
    c.tick(2000)
    c.step(3, M.VoteResponse(epoch=0, leader_id=-1, granted=True, pre_vote=True))
    assert c.role == Role.CANDIDATE and c.epoch == 1
    c.step(1, M.BeginQuorumEpochRequest(epoch=1, leader_id=1))
    assert c.role == Role.FOLLOWER and c.leader_id == 1
    msgs, rds = drain(c)
    assert sent(msgs, M.FetchRequest, 1)
    assert rds[0].quorum_state == QuorumState(leader_epoch=1, leader_id=1, voted_id=2, voters=VOTERS)


def test_follower_fetch_timeout_starts_an_election():
    c = follower_of()
    drain(c)
    c.tick(1999)
    assert c.role == Role.FOLLOWER
    c.tick(2000)
    assert c.role == Role.PROSPECTIVE


def test_lost_pre_vote_goes_back_to_the_known_leader():
    c = follower_of(leader=2, node=1)
    c.tick(2000)
    assert c.role == Role.PROSPECTIVE
    c.step(3, M.VoteResponse(epoch=1, leader_id=2, granted=False, pre_vote=True))
    c.step(2, M.VoteResponse(epoch=1, leader_id=2, granted=False, pre_vote=True))
    assert c.role == Role.FOLLOWER and c.leader_id == 2 and c.epoch == 1


# --- replication and the high watermark -------------------------------------------------------
def test_high_watermark_needs_a_majority_of_flushed_offsets():
    c = mk()
    elect(c)
    c.propose("a")
    drain(c)
    assert c.high_watermark == 0
    c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=2, last_fetched_epoch=1))
    assert c.high_watermark == 2
    drain(c)


def test_leader_counts_its_own_entries_only_once_flushed():
    c = mk()
    elect(c)
    c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=1, last_fetched_epoch=1))
    c.propose("a")
    c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=2, last_fetched_epoch=1))
    assert c.high_watermark == 1                     # follower has 2, the leader's copy is not flushed
    rd = c.ready()
    assert [e.records for e in rd.entries] == ["a"]
    c.advance(rd)
    assert c.high_watermark == 2


def test_entries_of_older_epochs_commit_only_with_one_of_the_current_epoch():
    # the new leader has 3 entries from epoch 1; a follower has them too, but they are not
    # committed by counting until the leader's own LeaderChange entry (epoch 2) is on a majority
    log = RaftLog(entries([1, 1, 1]))
    c = mk(log=log, qs=QuorumState(leader_epoch=1, leader_id=3, voters=VOTERS))
    c.tick(3000)
    c.step(2, M.VoteResponse(epoch=1, leader_id=-1, granted=True, pre_vote=True))
    c.step(2, M.VoteResponse(epoch=2, leader_id=-1, granted=True))
    assert c.role == Role.LEADER and c.epoch == 2
    drain(c)
    c.step(2, M.FetchRequest(epoch=2, replica_id=2, fetch_offset=3, last_fetched_epoch=1))
    assert c.high_watermark == 0
    c.step(2, M.FetchRequest(epoch=2, replica_id=2, fetch_offset=4, last_fetched_epoch=2))
    assert c.high_watermark == 4


def test_leader_answers_a_diverging_fetch_with_the_end_of_that_epoch():
    c = mk(log=RaftLog(entries([1, 1, 3, 3])), qs=QuorumState(leader_epoch=3, leader_id=2, voters=VOTERS))
    c.tick(5000)
    c.step(2, M.VoteResponse(epoch=3, leader_id=-1, granted=True, pre_vote=True))
    c.step(2, M.VoteResponse(epoch=4, leader_id=-1, granted=True))
    drain(c)
    # follower 3 has epoch-2 entries the leader never had, after [1, 1]
    c.step(3, M.FetchRequest(epoch=4, replica_id=3, fetch_offset=5, last_fetched_epoch=2, fetch_id=9))
    (resp,) = sent(drain(c)[0], M.FetchResponse, 3)
    assert resp.diverging_epoch == OffsetAndEpoch(2, 1) and not resp.entries and resp.fetch_id == 9


def test_follower_truncates_to_the_smaller_of_both_epoch_ends_and_refetches():
    c = follower_of(leader=2, epoch=4, log=RaftLog(entries([1, 1, 2, 2, 2])))
    drain(c)
    fid = c._inflight[0]
    c.step(2, M.FetchResponse(epoch=4, leader_id=2, high_watermark=2, diverging_epoch=OffsetAndEpoch(3, 2),
                              fetch_offset=5, last_fetched_epoch=2, fetch_id=fid))
    assert c.log.end_offset == 3                     # min(leader's end of epoch 2 = 3, ours = 5)
    msgs, rds = drain(c)
    assert rds[0].truncate_to == 3
    (req,) = sent(msgs, M.FetchRequest, 2)
    assert (req.fetch_offset, req.last_fetched_epoch) == (3, 2)
    assert c.high_watermark == 0                     # a diverging answer never moves the HW


def test_stale_or_duplicated_fetch_responses_are_ignored():
    c = follower_of(leader=2, epoch=1)
    drain(c)
    fid = c._inflight[0]
    resp = M.FetchResponse(epoch=1, leader_id=2, high_watermark=1, entries=(Entry(0, 1, "a"),),
                           fetch_offset=0, last_fetched_epoch=0, fetch_id=fid)
    c.step(2, resp)
    c.step(2, resp)                                  # duplicate
    assert c.log.end_offset == 1
    assert len(sent(drain(c)[0], M.FetchRequest)) == 1


def test_leader_parks_an_empty_fetch_until_data_or_max_wait():
    c = mk()
    elect(c)
    c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=1, last_fetched_epoch=1, max_wait_ms=500))
    first, _ = drain(c)
    c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=1, last_fetched_epoch=1, max_wait_ms=500))
    assert not sent(drain(c)[0], M.FetchResponse)    # nothing new: parked
    c.propose("a")
    (resp,) = sent(drain(c)[0], M.FetchResponse, 2)
    assert [e.records for e in resp.entries] == ["a"]
    c.step(3, M.FetchRequest(epoch=1, replica_id=3, fetch_offset=2, last_fetched_epoch=1, max_wait_ms=500))
    drain(c)
    c.step(3, M.FetchRequest(epoch=1, replica_id=3, fetch_offset=2, last_fetched_epoch=1, max_wait_ms=500))
    assert c.next_deadline() <= c.now + 500
    c.tick(c.now + 500)
    assert sent(drain(c)[0], M.FetchResponse, 3)


# --- snapshots -------------------------------------------------------------------------------
def test_fetch_below_log_start_gets_the_snapshot_in_chunks():
    c = mk()
    elect(c)
    for r in "abcd":
        c.propose(r)
    drain(c)
    c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=5, last_fetched_epoch=1))
    drain(c)
    assert c.high_watermark == 5
    sid = c.create_snapshot(4, b"image-of-four-entries")
    assert sid == OffsetAndEpoch(4, 1) and c.log.start_offset == 4
    rd = c.ready()
    assert rd.snapshot.snapshot_id == sid and rd.log_start_offset == 4 and not rd.install_snapshot
    c.step(3, M.FetchRequest(epoch=1, replica_id=3, fetch_offset=0, last_fetched_epoch=0))
    (resp,) = sent(drain(c)[0], M.FetchResponse, 3)
    assert resp.snapshot_id == sid
    # the follower downloads and installs it
    f = follower_of(leader=1, epoch=1, node=3)
    drain(f)
    f.step(1, M.FetchResponse(**{**_fields(resp), "fetch_id": f._inflight[0]}))
    data = b""
    while True:
        (req,) = sent(drain(f)[0], M.FetchSnapshotRequest, 1)
        if f.snapshot is not None:
            break
        c.step(3, req)
        (chunk,) = sent(drain(c)[0], M.FetchSnapshotResponse, 3)
        assert len(chunk.data) <= CFG.snapshot_chunk_bytes
        data += chunk.data
        f.step(1, chunk)
        if f.snapshot is not None:
            break
    rd_msgs, rds = [], []
    while f.has_ready():
        rd = f.ready()
        rds.append(rd)
        f.advance(rd)
    inst = [rd for rd in rds if rd.snapshot is not None]
    assert inst and inst[0].install_snapshot and inst[0].snapshot.data == b"image-of-four-entries"
    assert f.log.start_offset == 4 and f.high_watermark == 4 and f.log.snapshot_id == sid


def _fields(obj):
    return {k: getattr(obj, k) for k in obj.__slots__}


def test_snapshot_cannot_run_ahead_of_what_was_applied():
    c = mk(voters=(1,))
    c.propose("a")
    with pytest.raises(ValueError):
        c.create_snapshot(2, b"x")


# --- leadership changes --------------------------------------------------------------------
def test_check_quorum_leader_resigns_without_majority_fetches():
    c = mk()
    elect(c, now=2000)
    c.tick(2000 + 2999)
    assert c.role == Role.LEADER
    c.tick(2000 + 3000)
    assert c.role == Role.RESIGNED
    assert sent(drain(c)[0], M.EndQuorumEpochRequest)
    with pytest.raises(NotLeader):
        c.propose("x")


def test_check_quorum_one_follower_is_enough_in_three():
    c = mk()
    elect(c, now=2000)
    for t in range(2500, 9000, 500):
        c.tick(t)
        c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=1, last_fetched_epoch=1))
    assert c.role == Role.LEADER


def test_graceful_resign_names_the_most_caught_up_successor_who_runs_at_once():
    c = mk()
    elect(c)
    c.propose("a")
    drain(c)
    c.step(3, M.FetchRequest(epoch=1, replica_id=3, fetch_offset=2, last_fetched_epoch=1))
    c.step(2, M.FetchRequest(epoch=1, replica_id=2, fetch_offset=1, last_fetched_epoch=1))
    c.resign()
    assert c.role == Role.RESIGNED
    (eqe,) = sent(drain(c)[0], M.EndQuorumEpochRequest, 3)
    assert eqe.preferred_successors == (3, 2)
    f = follower_of(leader=1, epoch=1, node=3)
    drain(f)
    f.step(1, eqe)
    f.tick(f.now)
    assert f.role == Role.PROSPECTIVE


def test_observer_follows_but_never_votes_or_stands():
    o = mk(node=9)
    assert not o.is_voter
    o.tick(10_000)
    assert o.role == Role.UNATTACHED                         # never a prospective/candidate
    # it looks for the leader by fetching from a voter ...
    (dest, req), = [(d, m) for d, m in drain(o)[0] if isinstance(m, M.FetchRequest)]
    assert dest in VOTERS and req.replica_id == 9
    o.step(1, M.VoteRequest(epoch=5, candidate_id=1, last_epoch=0, last_offset=0))
    (resp,) = sent(drain(o)[0], M.VoteResponse)
    assert not resp.granted
    # ... and follows the leader named in the answer
    o.step(dest, M.FetchResponse(epoch=3, leader_id=2, error=M.NOT_LEADER_OR_FOLLOWER, fetch_id=req.fetch_id))
    assert o.role == Role.FOLLOWER and o.leader_id == 2 and o.epoch == 3
    # a leader does not count observers for the high watermark
    c = mk()
    elect(c)
    c.step(9, M.FetchRequest(epoch=1, replica_id=9, fetch_offset=1, last_fetched_epoch=1))
    assert c.high_watermark == 0


def test_restart_restores_quorum_state_and_a_former_leader_comes_back_resigned():
    assert mk(qs=QuorumState(leader_epoch=3, leader_id=1, voters=VOTERS)).role == Role.RESIGNED
    v = mk(node=3, qs=QuorumState(leader_epoch=3, voted_id=1, voters=VOTERS))
    assert v.role == Role.VOTED and v.epoch == 3
    v.step(2, M.VoteRequest(epoch=3, candidate_id=2, last_epoch=0, last_offset=0))
    assert not sent(drain(v)[0], M.VoteResponse)[0].granted  # the vote survived the restart
    f = mk(node=3, qs=QuorumState(leader_epoch=3, leader_id=2, voters=VOTERS))
    assert f.role == Role.FOLLOWER and sent(drain(f)[0], M.FetchRequest, 2)


def test_propose_on_a_follower_names_the_leader():
    c = follower_of(leader=2, epoch=1)
    with pytest.raises(NotLeader) as ei:
        c.propose("x")
    assert ei.value.leader_id == 2 and ei.value.epoch == 1


def test_single_voter_quorum_elects_itself_and_commits_after_flush():
    c = mk(voters=(1,))
    assert c.role == Role.LEADER and c.epoch == 1
    off = c.propose("a")
    _, rds = drain(c)
    committed = [e for rd in rds for e in rd.committed]
    assert [e.offset for e in committed] == [0, off] and committed[-1].records == "a"


# --- data types ----------------------------------------------------------------------------
def test_quorum_state_round_trip_uses_kafka_field_names():
    qs = QuorumState(leader_epoch=7, leader_id=2, voted_id=3, voters=(1, 2, 3), cluster_id="abc")
    raw = qs.encode()
    assert b'"leaderEpoch":7' in raw and b'"votedId":3' in raw and b'"currentVoters"' in raw
    assert QuorumState.decode(raw) == qs


def test_log_epoch_lookup_truncate_and_trim():
    log = RaftLog(entries([1, 1, 3, 3, 5]))
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)   # largest epoch <= 2
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(5, 5)
    log.truncate_to(3)
    assert log.end_offset == 3 and log.last_epoch == 3 and log.end_offset_for_epoch(5) == OffsetAndEpoch(3, 3)
    log.trim_prefix(OffsetAndEpoch(2, 1))
    assert log.start_offset == 2 and log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(-1, -1)
    with pytest.raises(Exception):
        log.append([Entry(7, 3, "gap")])


def test_snapshot_chunks_reassemble():
    s = Snapshot(OffsetAndEpoch(4, 1), bytes(range(20)))
    assert b"".join(s.chunk(p, 8) for p in range(0, 20, 8)) == s.data
