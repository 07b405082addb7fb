"""A pure Raft state machine in KRaft's shape: no I/O, no clock, no randomness of its own.

A driver (the Trio task, or the deterministic simulator in tests/raft/sim.py) runs it::

    core = RaftCore(node_id, voters, rng=random.Random(seed), log=..., quorum_state=..., now_ms=t)
    loop:
        core.tick(now_ms)                    # time moved on; fire due timers
        core.step(src, message)              # a request or response arrived from node src
        offset = core.propose(records)       # on the leader (raises NotLeader elsewhere)
        while core.has_ready():
            rd = core.ready()
            persist rd.quorum_state (quorum-state file), rd.snapshot, rd.truncate_to,
                    rd.entries, rd.log_start_offset, in that order, and flush
            send rd.messages                 # [(dest node id, message)] -- only after the flush
            apply rd.committed               # after loading rd.snapshot if rd.install_snapshot
            core.advance(rd)
        sleep until core.next_deadline()

Roles follow KRaft: unattached, voted, prospective (KIP-996 pre-vote: polls the voters without
bumping its epoch), candidate, leader, follower, resigned. Replication is pulled: followers
and observers send Fetch(fetch_offset, last_fetched_epoch); the leader answers with entries,
a diverging epoch (the follower truncates and refetches), or a snapshot id (the follower
downloads it with FetchSnapshot). The high watermark is the offset a majority of voters has
flushed, advanced only once an entry of the leader's own epoch (its LeaderChange control
entry) is on a majority. A leader that has not heard from a majority for 1.5 x the fetch
timeout resigns (check quorum); a follower that has not heard from its leader for the fetch
timeout starts an election.
"""
from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field
from typing import Any, Iterable

from kwire.raft import messages as M
from kwire.raft.log import NO_EPOCH, Entry, OffsetAndEpoch, RaftLog
from kwire.raft.quorum_state import QuorumState
from kwire.raft.snapshot import Snapshot, SnapshotAssembler
from kwire.value import Value

LEADER_CHANGE = "LeaderChange"


class Role(str, enum.Enum):
    UNATTACHED = "unattached"
    VOTED = "voted"
    PROSPECTIVE = "prospective"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


class NotLeader(Exception):
    """A proposal reached a node that is not the leader; ``leader_id`` is -1 when unknown."""

    def __init__(self, leader_id: int, epoch: int):
        super().__init__(f"not the leader (leader {leader_id}, epoch {epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


class RaftConfig(Value):   # frozen (kwire.value: no generated code at import)
    election_timeout_ms: int = 1000        # quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000           # quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000    # quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000         # quorum.request.timeout.ms
    retry_backoff_ms: int = 20             # quorum.retry.backoff.ms
    fetch_max_wait_ms: int = 500           # how long the leader parks an empty fetch
    fetch_max_entries: int = 256
    snapshot_chunk_bytes: int = 1 << 20

    @property
    def check_quorum_timeout_ms(self) -> int:
        return self.fetch_timeout_ms * 3 // 2


@dataclass
class Ready:
    """What the driver must do, in order: persist (quorum state, snapshot, truncation, entries,
    trim), then send ``messages``, then apply ``committed``, then call ``advance(ready)``."""
    messages: list[tuple[int, Any]] = field(default_factory=list)
    quorum_state: QuorumState | None = None
    snapshot: Snapshot | None = None       # write this snapshot
    install_snapshot: bool = False         # ... and the log is now just it: load it into the state machine
    truncate_to: int | None = None         # drop log entries at offsets >= this
    entries: list[Entry] = field(default_factory=list)  # then append these
    log_start_offset: int | None = None    # then drop entries below this (covered by ``snapshot``)
    committed: list[Entry] = field(default_factory=list)  # newly committed, in offset order
    high_watermark: int = 0
    end_offset: int = 0                    # log end offset once persisted

    def __bool__(self) -> bool:
        return bool(self.messages or self.quorum_state or self.snapshot or self.truncate_to is not None
                    or self.entries or self.log_start_offset is not None or self.committed)


@dataclass
class ReplicaProgress:
    end_offset: int = -1          # last valid fetch offset in this epoch (the replica's flushed log end)
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    last_hw_sent: int = -1


class RaftCore:
    def __init__(self, node_id: int, voters: Iterable[int], *, rng: random.Random,
                 config: RaftConfig | None = None, log: RaftLog | None = None,
                 quorum_state: QuorumState | None = None, snapshot: Snapshot | None = None,
                 now_ms: int = 0):
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.is_voter = node_id in self.voters
        self.majority = len(self.voters) // 2 + 1
        self.cfg = config or RaftConfig()
        self.rng = rng
        self.now = now_ms
        self.log = log if log is not None else RaftLog()
        self.snapshot = snapshot
        if self.log.start_offset > 0 and (snapshot is None or snapshot.snapshot_id != self.log.snapshot_id):
            raise ValueError("a log that starts above 0 needs the snapshot it starts from")
        qs = quorum_state or QuorumState(voters=tuple(sorted(self.voters)))
        self.epoch = qs.leader_epoch
        self.leader_id: int | None = qs.leader_id if qs.leader_id >= 0 else None
        self.voted_id: int | None = qs.voted_id if qs.voted_id >= 0 else None
        self.high_watermark = self.log.start_offset
        self.applied = self.log.start_offset
        # output bookkeeping
        self._msgs: list[tuple[int, Any]] = []
        self._qs_dirty = False
        self._handed_end = self.log.end_offset     # entries below were handed to the driver
        self._flushed_end = self.log.end_offset    # ... and confirmed persisted
        self._pending_truncate: int | None = None
        self._pending_snapshot: Snapshot | None = None
        self._pending_install = False
        self._pending_log_start: int | None = None
        # timers (absolute ms; None = off)
        self._election_at: int | None = None
        self._fetch_timeout_at: int | None = None
        self._leader_contact = now_ms          # last time the leader answered us (followers)
        # fetching (followers and observers)
        self._fetch_seq = 0
        self._inflight: tuple[int, int] | None = None   # (fetch_id, dest)
        self._fetch_retry_at: int | None = None
        self._next_fetch_at: int | None = None
        self._snap_dl: SnapshotAssembler | None = None
        # elections
        self._granted: set[int] = set()
        self._rejected: set[int] = set()
        # leader
        self._progress: dict[int, ReplicaProgress] = {}
        self._parked: dict[int, tuple[M.FetchRequest, int]] = {}
        self._bqe_pending: set[int] = set()
        self._bqe_at: int | None = None
        self._epoch_start_offset = 0
        self._orphans: list[M.FetchRequest] = []

        if self.leader_id == node_id:
            self.role = Role.RESIGNED            # a restarted leader cannot resume its epoch
            self._election_at = self.now + self._election_timeout()
        elif self.leader_id is not None:
            self.role = Role.FOLLOWER
            self._fetch_timeout_at = self.now + self.cfg.fetch_timeout_ms
            self._send_fetch()
        else:
            self.role = Role.VOTED if self.voted_id is not None else Role.UNATTACHED
            self._election_at = self.now + self._election_timeout()
            if not self.is_voter:
                self._election_at = None
                self._next_fetch_at = self.now
        if self.voters == {node_id} and self.role != Role.LEADER:
            self._become_prospective()           # a quorum of one elects itself at once

    # ======================================================================================
    # driver API
    # ======================================================================================
    @property
    def log_end_offset(self) -> int:
        return self.log.end_offset

    def quorum_state(self) -> QuorumState:
        return QuorumState(leader_epoch=self.epoch, leader_id=self.leader_id if self.leader_id is not None else -1,
                           voted_id=self.voted_id if self.voted_id is not None else -1,
                           voters=tuple(sorted(self.voters)))

    def tick(self, now_ms: int) -> None:
        """Time is now ``now_ms`` (monotonic); fire the timers that are due."""
        if now_ms > self.now:
            self.now = now_ms
        now = self.now
        role = self.role
        if role == Role.LEADER:
            self._leader_tick(now)
            if self._orphans:
                self._flush_orphans()
            return
        if self._election_at is not None and now >= self._election_at:
            self._election_at = None
            if self.is_voter:
                self._become_prospective()
            return
        if role == Role.FOLLOWER and self._fetch_timeout_at is not None and now >= self._fetch_timeout_at:
            if self.is_voter:
                self._become_prospective()
            else:
                self._become_unattached(self.epoch)
            return
        if role in (Role.FOLLOWER, Role.UNATTACHED) and (role == Role.FOLLOWER or not self.is_voter):
            if self._inflight is not None and self._fetch_retry_at is not None and now >= self._fetch_retry_at:
                self._inflight = None
                self._send_fetch()
            elif self._inflight is None and self._next_fetch_at is not None and now >= self._next_fetch_at:
                self._send_fetch()

    def next_deadline(self) -> int | None:
        """The earliest time at which :meth:`tick` has something to do (None: nothing pending)."""
        ds = [self._election_at]
        if self.role == Role.LEADER:
            ds.append(self._bqe_at if self._bqe_pending else None)
            ds.extend(deadline for _, deadline in self._parked.values())
            ds.append(self._quorum_lost_at())
        elif self.role == Role.FOLLOWER or (self.role == Role.UNATTACHED and not self.is_voter):
            if self.role == Role.FOLLOWER:
                ds.append(self._fetch_timeout_at)
            ds.append(self._fetch_retry_at if self._inflight is not None else self._next_fetch_at)
        ds = [d for d in ds if d is not None]
        return min(ds) if ds else None

    def step(self, src: int, msg: Any) -> None:
        """A message from node ``src`` arrived."""
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            raise TypeError(f"not a raft message: {msg!r}")
        handler(self, src, msg)
        if self._orphans:
            self._flush_orphans()

    def _flush_orphans(self) -> None:
        orphans, self._orphans = self._orphans, []
        for req in orphans:
            self._reply_not_leader_fetch(req.replica_id, req)

    def propose(self, records: Any) -> int:
        """Append ``records`` as one entry on the leader; returns its offset. It is committed
        once it shows up in ``Ready.committed`` at that offset with this epoch."""
        if self.role != Role.LEADER:
            raise NotLeader(self._known_leader(), self.epoch)
        return self._leader_append(records, control=False)

    def resign(self) -> None:
        """Graceful hand-over (shutdown): stop leading and send EndQuorumEpoch to the voters,
        naming the most caught-up followers first."""
        if self.role != Role.LEADER:
            return
        others = sorted((v for v in self.voters if v != self.node_id),
                        key=lambda v: (-self._progress[v].end_offset, v))
        self._become_resigned(tuple(others))
        self._flush_orphans()

    def create_snapshot(self, end_offset: int, data: bytes) -> OffsetAndEpoch:
        """The state machine's image after applying every entry below ``end_offset``. The log
        below it is trimmed; the driver persists the snapshot from the next Ready."""
        if end_offset > self.applied or end_offset > self.high_watermark:
            raise ValueError(f"snapshot at {end_offset} beyond applied {self.applied} / HW {self.high_watermark}")
        if end_offset <= self.log.start_offset:
            return self.log.snapshot_id
        sid = OffsetAndEpoch(end_offset, self.log.epoch_at(end_offset - 1))
        snap = Snapshot(sid, bytes(data))
        self.snapshot = snap
        self.log.trim_prefix(sid)
        self._pending_snapshot = snap
        self._pending_log_start = end_offset
        return sid

    def has_ready(self) -> bool:
        return bool(self._msgs or self._qs_dirty or self._pending_snapshot is not None
                    or self._pending_truncate is not None or self._handed_end < self.log.end_offset
                    or self._pending_log_start is not None or self.applied < self.high_watermark)

    def ready(self) -> Ready:
        rd = Ready(messages=self._msgs, high_watermark=self.high_watermark, end_offset=self.log.end_offset)
        self._msgs = []
        if self._qs_dirty:
            rd.quorum_state = self.quorum_state()
            self._qs_dirty = False
        rd.snapshot, rd.install_snapshot = self._pending_snapshot, self._pending_install
        rd.truncate_to, rd.log_start_offset = self._pending_truncate, self._pending_log_start
        self._pending_snapshot, self._pending_install = None, False
        self._pending_truncate = self._pending_log_start = None
        start = max(self._handed_end, self.log.start_offset)
        rd.entries = self.log.entries(start)
        self._handed_end = self.log.end_offset
        if self.applied < self.high_watermark:
            rd.committed = self.log.entries(max(self.applied, self.log.start_offset), self.high_watermark)
            self.applied = self.high_watermark
        return rd

    def advance(self, rd: Ready) -> None:
        """The driver persisted ``rd`` (and sent its messages)."""
        self._flushed_end = max(self._flushed_end, min(rd.end_offset, self._handed_end))
        if self.role == Role.LEADER:
            self._maybe_advance_high_watermark()

    def describe_quorum(self) -> dict:
        """What DescribeQuorum answers (meaningful on the leader)."""
        def state(rid: int) -> dict:
            if rid == self.node_id:
                return {"replica_id": rid, "log_end_offset": self.log.end_offset,
                        "last_fetch_timestamp": self.now, "last_caught_up_timestamp": self.now}
            p = self._progress.get(rid, ReplicaProgress())
            return {"replica_id": rid, "log_end_offset": p.end_offset,
                    "last_fetch_timestamp": p.last_fetch_ms, "last_caught_up_timestamp": p.last_caught_up_ms}
        leader = self.role == Role.LEADER
        return {"leader_id": self.leader_id if self.leader_id is not None else -1, "leader_epoch": self.epoch,
                "high_watermark": self.high_watermark, "role": self.role.value,
                "current_voters": [state(v) for v in sorted(self.voters)] if leader else [],
                "observers": [state(r) for r in sorted(self._progress) if r not in self.voters] if leader else []}

    # ======================================================================================
    # role transitions
    # ======================================================================================
    def _election_timeout(self) -> int:
        t = self.cfg.election_timeout_ms
        return t + self.rng.randrange(t)

    def _backoff(self) -> int:
        return self.rng.randint(1, max(1, self.cfg.election_backoff_max_ms))

    def _leave_role(self) -> None:
        if self._parked:
            # answered once the new role is in place (see _flush_orphans)
            self._orphans.extend(req for _, (req, _) in sorted(self._parked.items()))
            self._parked = {}
        self._progress = {}
        self._bqe_pending = set()
        self._bqe_at = None
        self._inflight = None
        self._fetch_retry_at = self._next_fetch_at = None
        self._fetch_timeout_at = None
        self._election_at = None
        self._snap_dl = None
        self._granted, self._rejected = set(), set()

    def _set_epoch(self, epoch: int, leader: int | None, voted: int | None) -> None:
        if (epoch, leader, voted) != (self.epoch, self.leader_id, self.voted_id):
            if epoch < self.epoch:
                raise AssertionError(f"epoch going backwards {self.epoch} -> {epoch}")
            self.epoch, self.leader_id, self.voted_id = epoch, leader, voted
            self._qs_dirty = True

    def _become_unattached(self, epoch: int) -> None:
        self._leave_role()
        self.role = Role.UNATTACHED
        if epoch > self.epoch:
            self._set_epoch(epoch, None, None)
        else:
            self.leader_id = None      # same epoch, leader lost (observer); nothing new to persist
        if self.is_voter:
            self._election_at = self.now + self._election_timeout()
        else:
            self._next_fetch_at = self.now + self.cfg.retry_backoff_ms

    def _become_follower(self, epoch: int, leader: int) -> None:
        if self.role == Role.FOLLOWER and self.epoch == epoch and self.leader_id == leader:
            return
        self._leave_role()
        self.role = Role.FOLLOWER
        self._set_epoch(epoch, leader, self.voted_id if epoch == self.epoch else None)
        self._fetch_timeout_at = self.now + self.cfg.fetch_timeout_ms
        self._leader_contact = self.now
        self._send_fetch()

    def _become_prospective(self) -> None:
        self._leave_role()
        self.role = Role.PROSPECTIVE
        self._granted = {self.node_id}
        self._election_at = self.now + self._election_timeout()
        req = M.VoteRequest(epoch=self.epoch + 1, candidate_id=self.node_id, last_epoch=self.log.last_epoch,
                            last_offset=self.log.end_offset, pre_vote=True)
        for v in sorted(self.voters):
            if v != self.node_id:
                self._msgs.append((v, req))
        self._check_election()

    def _become_candidate(self) -> None:
        self._leave_role()
        self.role = Role.CANDIDATE
        self._set_epoch(self.epoch + 1, None, self.node_id)
        self._granted = {self.node_id}
        self._election_at = self.now + self._election_timeout()
        req = M.VoteRequest(epoch=self.epoch, candidate_id=self.node_id, last_epoch=self.log.last_epoch,
                            last_offset=self.log.end_offset, pre_vote=False)
        for v in sorted(self.voters):
            if v != self.node_id:
                self._msgs.append((v, req))
        self._check_election()

    def _check_election(self) -> None:
        if len(self._granted & self.voters) >= self.majority:
            if self.role == Role.PROSPECTIVE:
                self._become_candidate()
            elif self.role == Role.CANDIDATE:
                self._become_leader()
        elif len(self._rejected & self.voters) > len(self.voters) - self.majority:
            # lost: back off, then poll again
            if self.role == Role.PROSPECTIVE and self.leader_id is not None and self.leader_id != self.node_id:
                self._become_follower_again()
            else:
                self._election_at = self.now + self._backoff()
                self._granted, self._rejected = {self.node_id}, set()

    def _become_follower_again(self) -> None:
        """A lost pre-vote: keep following the known leader, but without pretending we heard
        from it - poll again after another election timeout unless it answers."""
        leader, contact = self.leader_id, self._leader_contact
        self.role = Role.UNATTACHED   # force the transition below
        self._become_follower(self.epoch, leader)
        self._leader_contact = contact
        self._fetch_timeout_at = self.now + self._election_timeout()

    def _become_leader(self) -> None:
        self._leave_role()
        self.role = Role.LEADER
        self._set_epoch(self.epoch, self.node_id, self.voted_id)
        self._progress = {v: ReplicaProgress(last_fetch_ms=self.now) for v in self.voters if v != self.node_id}
        self._bqe_pending = set(self._progress)
        self._bqe_at = self.now + self.cfg.request_timeout_ms // 2
        bqe = M.BeginQuorumEpochRequest(epoch=self.epoch, leader_id=self.node_id)
        for v in sorted(self._bqe_pending):
            self._msgs.append((v, bqe))
        self._epoch_start_offset = self.log.end_offset
        self._leader_append({"type": LEADER_CHANGE, "leader_id": self.node_id,
                             "voters": sorted(self.voters)}, control=True)

    def _become_resigned(self, successors: tuple[int, ...]) -> None:
        self._leave_role()
        self.role = Role.RESIGNED
        self._election_at = self.now + self._election_timeout()
        eqe = M.EndQuorumEpochRequest(epoch=self.epoch, leader_id=self.node_id, preferred_successors=successors)
        for v in sorted(self.voters):
            if v != self.node_id:
                self._msgs.append((v, eqe))

    def _on_higher_epoch(self, epoch: int, leader_id: int) -> None:
        if leader_id >= 0 and leader_id != self.node_id:
            self._become_follower(epoch, leader_id)
        else:
            self._become_unattached(epoch)

    # ======================================================================================
    # elections
    # ======================================================================================
    def _log_up_to_date(self, m: M.VoteRequest) -> bool:
        return (m.last_epoch, m.last_offset) >= (self.log.last_epoch, self.log.end_offset)

    def _on_vote_request(self, src: int, m: M.VoteRequest) -> None:
        if not self.is_voter or m.candidate_id not in self.voters:
            self._reply_vote(src, m, False)
            return
        if m.pre_vote:
            # a poll: never changes our state. Refuse while we still hear from a live leader.
            ok = (m.epoch > self.epoch and self._log_up_to_date(m) and self.role != Role.LEADER
                  and not (self.role == Role.FOLLOWER
                           and self.now - self._leader_contact < self.cfg.fetch_timeout_ms))
            self._reply_vote(src, m, ok)
            return
        if m.epoch < self.epoch:
            self._reply_vote(src, m, False)
            return
        if m.epoch > self.epoch:
            self._become_unattached(m.epoch)
        ok = (self.leader_id is None and self.voted_id in (None, m.candidate_id)
              and self.role in (Role.UNATTACHED, Role.VOTED, Role.PROSPECTIVE) and self._log_up_to_date(m))
        if ok:
            if self.role != Role.VOTED or self.voted_id != m.candidate_id:
                self._leave_role()
                self.role = Role.VOTED
                self._set_epoch(self.epoch, None, m.candidate_id)
                self._election_at = self.now + self._election_timeout()
        self._reply_vote(src, m, ok)

    def _reply_vote(self, src: int, m: M.VoteRequest, granted: bool) -> None:
        self._msgs.append((src, M.VoteResponse(epoch=self.epoch, leader_id=self._known_leader(), granted=granted,
                                               pre_vote=m.pre_vote)))

    def _known_leader(self) -> int:
        if self.role == Role.LEADER:
            return self.node_id
        if self.role in (Role.FOLLOWER, Role.PROSPECTIVE) and self.leader_id is not None \
                and self.leader_id != self.node_id:
            return self.leader_id
        return -1

    def _on_vote_response(self, src: int, m: M.VoteResponse) -> None:
        if m.epoch > self.epoch:
            self._on_higher_epoch(m.epoch, m.leader_id)
            return
        if m.epoch < self.epoch:
            return
        if (not m.granted and m.leader_id >= 0 and m.leader_id != self.node_id and self.leader_id is None
                and self.role in (Role.PROSPECTIVE, Role.CANDIDATE, Role.UNATTACHED, Role.VOTED)):
            self._become_follower(self.epoch, m.leader_id)    # this epoch has a leader: follow it
            return
        if self.role == Role.PROSPECTIVE and m.pre_vote:
            (self._granted if m.granted else self._rejected).add(src)
            self._check_election()
        elif self.role == Role.CANDIDATE and not m.pre_vote:
            (self._granted if m.granted else self._rejected).add(src)
            self._check_election()

    # ======================================================================================
    # BeginQuorumEpoch / EndQuorumEpoch
    # ======================================================================================
    def _on_begin_quorum_epoch(self, src: int, m: M.BeginQuorumEpochRequest) -> None:
        if m.epoch > self.epoch or (m.epoch == self.epoch and self.role not in (Role.LEADER, Role.RESIGNED)
                                     and m.leader_id != self.node_id):
            self._become_follower(m.epoch, m.leader_id)
        error = M.FENCED_LEADER_EPOCH if m.epoch < self.epoch else M.NONE
        self._msgs.append((src, M.BeginQuorumEpochResponse(epoch=self.epoch, leader_id=self._known_leader(),
                                                           error=error)))

    def _on_begin_quorum_epoch_response(self, src: int, m: M.BeginQuorumEpochResponse) -> None:
        if m.epoch > self.epoch:
            self._on_higher_epoch(m.epoch, m.leader_id)
        elif self.role == Role.LEADER and m.epoch == self.epoch and m.error == M.NONE:
            self._bqe_pending.discard(src)

    def _on_end_quorum_epoch(self, src: int, m: M.EndQuorumEpochRequest) -> None:
        if m.epoch > self.epoch:
            self._become_unattached(m.epoch)
        if (m.epoch == self.epoch and self.is_voter and self.leader_id == m.leader_id
                and self.role in (Role.FOLLOWER, Role.UNATTACHED, Role.VOTED)):
            succ = list(m.preferred_successors)
            if self.node_id in succ and succ.index(self.node_id) == 0:
                delay = 0
            else:
                pos = succ.index(self.node_id) if self.node_id in succ else len(succ)
                delay = min(self.cfg.election_backoff_max_ms, self._backoff() * (pos + 1) // max(1, len(succ)))
                delay = max(1, delay)
            if self.role == Role.FOLLOWER:
                self._fetch_timeout_at = min(self._fetch_timeout_at or self.now, self.now + delay)
            else:
                self._election_at = min(self._election_at or self.now, self.now + delay)
        self._msgs.append((src, M.EndQuorumEpochResponse(epoch=self.epoch, leader_id=self._known_leader())))

    def _on_end_quorum_epoch_response(self, src: int, m: M.EndQuorumEpochResponse) -> None:
        if m.epoch > self.epoch:
            self._on_higher_epoch(m.epoch, m.leader_id)

    # ======================================================================================
    # leader: appends, fetch handling, high watermark, check quorum
    # ======================================================================================
    def _leader_append(self, records: Any, control: bool) -> int:
        offset = self.log.end_offset
        self.log.append([Entry(offset, self.epoch, records, control)])
        self._complete_parked()
        return offset

    def _leader_tick(self, now: int) -> None:
        lost = self._quorum_lost_at()
        if lost is not None and now >= lost:
            self._become_resigned(())
            return
        if self._bqe_pending and self._bqe_at is not None and now >= self._bqe_at:
            bqe = M.BeginQuorumEpochRequest(epoch=self.epoch, leader_id=self.node_id)
            for v in sorted(self._bqe_pending):
                self._msgs.append((v, bqe))
            self._bqe_at = now + self.cfg.request_timeout_ms // 2
        if self._parked:
            due = [src for src, (_, deadline) in self._parked.items() if now >= deadline]
            for src in due:
                req, _ = self._parked.pop(src)
                self._answer_fetch(src, req, may_park=False)

    def _quorum_lost_at(self) -> int | None:
        """When the leader will have gone check_quorum_timeout without a majority fetching."""
        if len(self.voters) == 1 or self.role != Role.LEADER:
            return None
        times = sorted((p.last_fetch_ms for v, p in self._progress.items() if v in self.voters), reverse=True)
        # we need majority - 1 other voters heard from recently
        return times[self.majority - 2] + self.cfg.check_quorum_timeout_ms

    def _validate_fetch(self, fetch_offset: int, last_epoch: int) -> tuple[str, OffsetAndEpoch | None]:
        log = self.log
        if fetch_offset < log.start_offset:
            return "snapshot", log.snapshot_id
        if fetch_offset == log.start_offset and log.start_offset > 0 and last_epoch == log.snapshot_id.epoch:
            return "valid", None
        eo = log.end_offset_for_epoch(last_epoch)
        if eo == NO_EPOCH or eo.offset < log.start_offset:
            return "snapshot", log.snapshot_id
        if eo.epoch != last_epoch or eo.offset < fetch_offset:
            return "diverging", eo
        return "valid", None

    def _answer_fetch(self, src: int, m: M.FetchRequest, may_park: bool) -> None:
        kind, where = self._validate_fetch(m.fetch_offset, m.last_fetched_epoch)
        p = self._progress.get(src)
        if p is None:
            p = self._progress[src] = ReplicaProgress()
        p.last_fetch_ms = self.now
        self._bqe_pending.discard(src)
        common = dict(epoch=self.epoch, leader_id=self.node_id, log_start_offset=self.log.start_offset,
                      fetch_offset=m.fetch_offset, last_fetched_epoch=m.last_fetched_epoch, fetch_id=m.fetch_id)
        if kind == "snapshot":
            self._msgs.append((src, M.FetchResponse(high_watermark=self.high_watermark, snapshot_id=where, **common)))
            return
        if kind == "diverging":
            self._msgs.append((src, M.FetchResponse(high_watermark=self.high_watermark, diverging_epoch=where,
                                                    **common)))
            return
        if m.fetch_offset > p.end_offset:
            p.end_offset = m.fetch_offset
        if m.fetch_offset >= self.log.end_offset:
            p.last_caught_up_ms = self.now
        if src in self.voters:
            self._maybe_advance_high_watermark()
        entries = self.log.entries(m.fetch_offset, m.fetch_offset + self.cfg.fetch_max_entries)
        if (not entries and may_park and m.max_wait_ms > 0 and self.high_watermark <= p.last_hw_sent
                and self.role == Role.LEADER):
            self._parked[src] = (m, self.now + m.max_wait_ms)
            return
        p.last_hw_sent = self.high_watermark
        self._msgs.append((src, M.FetchResponse(high_watermark=self.high_watermark, entries=tuple(entries),
                                                **common)))

    def _complete_parked(self) -> None:
        if self._parked:
            parked, self._parked = self._parked, {}
            for src, (req, _) in parked.items():
                self._answer_fetch(src, req, may_park=False)

    def _maybe_advance_high_watermark(self) -> None:
        ends = sorted((self._flushed_end if v == self.node_id else self._progress[v].end_offset
                       for v in self.voters), reverse=True)
        hw = ends[self.majority - 1]
        if hw > self.high_watermark and hw > self._epoch_start_offset:
            self.high_watermark = hw
            self._complete_parked()

    def _reply_not_leader_fetch(self, src: int, m: M.FetchRequest) -> None:
        error = M.FENCED_LEADER_EPOCH if m.epoch < self.epoch else M.NOT_LEADER_OR_FOLLOWER
        self._msgs.append((src, M.FetchResponse(epoch=self.epoch, leader_id=self._known_leader(), error=error,
                                                fetch_offset=m.fetch_offset, last_fetched_epoch=m.last_fetched_epoch,
                                                fetch_id=m.fetch_id)))

    def _on_fetch(self, src: int, m: M.FetchRequest) -> None:
        if m.epoch > self.epoch:
            self._become_unattached(m.epoch)    # someone has seen a newer epoch: we are stale
        if self.role != Role.LEADER or m.epoch != self.epoch:
            self._reply_not_leader_fetch(src, m)
            return
        self._parked.pop(src, None)
        self._answer_fetch(src, m, may_park=True)

    def _on_fetch_snapshot(self, src: int, m: M.FetchSnapshotRequest) -> None:
        if m.epoch > self.epoch:
            self._become_unattached(m.epoch)
        common = dict(epoch=self.epoch, leader_id=self._known_leader(), snapshot_id=m.snapshot_id,
                      fetch_id=m.fetch_id)
        if self.role != Role.LEADER or m.epoch != self.epoch:
            error = M.FENCED_LEADER_EPOCH if m.epoch < self.epoch else M.NOT_LEADER_OR_FOLLOWER
            self._msgs.append((src, M.FetchSnapshotResponse(error=error, **common)))
            return
        p = self._progress.setdefault(src, ReplicaProgress())
        p.last_fetch_ms = self.now
        self._bqe_pending.discard(src)
        snap = self.snapshot
        if snap is None or snap.snapshot_id != m.snapshot_id:
            self._msgs.append((src, M.FetchSnapshotResponse(error=M.SNAPSHOT_NOT_FOUND, **common)))
            return
        if not 0 <= m.position <= snap.size:
            self._msgs.append((src, M.FetchSnapshotResponse(error=M.POSITION_OUT_OF_RANGE, **common)))
            return
        data = snap.chunk(m.position, min(m.max_bytes, self.cfg.snapshot_chunk_bytes))
        self._msgs.append((src, M.FetchSnapshotResponse(size=snap.size, position=m.position, data=data, **common)))

    # ======================================================================================
    # followers and observers: fetching
    # ======================================================================================
    def _fetch_target(self) -> int | None:
        if self.role == Role.FOLLOWER:
            return self.leader_id
        if not self.is_voter and self.role == Role.UNATTACHED:
            return self.rng.choice(sorted(self.voters))       # observer looking for the leader
        return None

    def _send_fetch(self) -> None:
        dest = self._fetch_target()
        if dest is None:
            return
        self._fetch_seq += 1
        self._inflight = (self._fetch_seq, dest)
        self._fetch_retry_at = self.now + self.cfg.request_timeout_ms
        self._next_fetch_at = None
        if self._snap_dl is not None:
            self._msgs.append((dest, M.FetchSnapshotRequest(
                epoch=self.epoch, replica_id=self.node_id, snapshot_id=self._snap_dl.snapshot_id,
                position=self._snap_dl.position, max_bytes=self.cfg.snapshot_chunk_bytes, fetch_id=self._fetch_seq)))
        else:
            self._msgs.append((dest, M.FetchRequest(
                epoch=self.epoch, replica_id=self.node_id, fetch_offset=self.log.end_offset,
                last_fetched_epoch=self.log.last_epoch, max_wait_ms=self.cfg.fetch_max_wait_ms,
                fetch_id=self._fetch_seq)))

    def _retry_fetch_later(self) -> None:
        self._inflight = None
        self._fetch_retry_at = None
        self._next_fetch_at = self.now + self.cfg.retry_backoff_ms

    def _take_response(self, src: int, fetch_id: int) -> bool:
        if self._inflight is None or self._inflight != (fetch_id, src):
            return False          # stale, duplicated or not ours
        self._inflight = None
        self._fetch_retry_at = None
        return True

    def _accept_reply(self, src: int, m) -> bool:
        """Take the answer to our in-flight (snapshot) fetch; False when it is not ours or
        names a higher epoch (which is stepped into whether the answer is ours or not)."""
        taken = self._take_response(src, m.fetch_id)
        if m.epoch > self.epoch:
            self._on_higher_epoch(m.epoch, m.leader_id)
            return False
        return taken

    def _on_fetch_response(self, src: int, m: M.FetchResponse) -> None:
        if not self._accept_reply(src, m):
            return
        if m.error != M.NONE or m.epoch < self.epoch:
            if (m.epoch == self.epoch and m.leader_id >= 0 and m.leader_id != self.node_id
                    and self.role == Role.UNATTACHED and self.leader_id is None):
                self._become_follower(self.epoch, m.leader_id)
            else:
                self._retry_fetch_later()
            return
        if self.role != Role.FOLLOWER or self.leader_id != src:
            if src != m.leader_id or self.role in (Role.LEADER, Role.RESIGNED, Role.CANDIDATE):
                return
            self._become_follower(self.epoch, src)   # we learned the leader from its answer
            return                                   # (and have sent a fresh fetch)
        self._fetch_timeout_at = self.now + self.cfg.fetch_timeout_ms
        self._leader_contact = self.now
        if m.fetch_offset != self.log.end_offset or m.last_fetched_epoch != self.log.last_epoch:
            self._send_fetch()
            return
        if m.diverging_epoch is not None:
            d = m.diverging_epoch
            local = self.log.end_offset_for_epoch(d.epoch)
            target = d.offset if local == NO_EPOCH else min(d.offset, local.offset)
            self._truncate(max(target, self.log.start_offset))
        elif m.snapshot_id is not None:
            self._snap_dl = SnapshotAssembler(m.snapshot_id)
        else:
            # a valid answer: our log now matches the leader's up to its end, so the leader's
            # high watermark applies to it (never to a log we were just told diverges)
            if m.entries:
                self.log.append(list(m.entries))
            hw = min(m.high_watermark, self.log.end_offset)
            if hw > self.high_watermark:
                self.high_watermark = hw
        self._send_fetch()

    def _truncate(self, offset: int) -> None:
        if offset < self.high_watermark:
            raise AssertionError(f"node {self.node_id}: truncating to {offset} below high watermark "
                                 f"{self.high_watermark}")
        self.log.truncate_to(offset)
        if offset < self._handed_end:
            self._handed_end = offset
            self._pending_truncate = offset if self._pending_truncate is None else min(self._pending_truncate, offset)
        self._flushed_end = min(self._flushed_end, offset)

    def _on_fetch_snapshot_response(self, src: int, m: M.FetchSnapshotResponse) -> None:
        if not self._accept_reply(src, m):
            return
        dl = self._snap_dl
        if self.role != Role.FOLLOWER or self.leader_id != src or dl is None:
            return
        if m.error != M.NONE or m.epoch < self.epoch or m.snapshot_id != dl.snapshot_id:
            self._snap_dl = None                 # start over with a plain fetch
            self._retry_fetch_later()
            return
        self._fetch_timeout_at = self.now + self.cfg.fetch_timeout_ms
        self._leader_contact = self.now
        if dl.add(m.position, m.data, m.size) and dl.complete:
            self._install_snapshot(dl.snapshot())
        self._send_fetch()

    def _install_snapshot(self, snap: Snapshot) -> None:
        sid = snap.snapshot_id
        if sid.offset < self.high_watermark:
            raise AssertionError(f"node {self.node_id}: snapshot at {sid.offset} below HW {self.high_watermark}")
        self._snap_dl = None
        self.snapshot = snap
        self.log.reset_to_snapshot(sid)
        self._pending_snapshot, self._pending_install = snap, True
        self._pending_truncate = self._pending_log_start = None
        self._handed_end = self._flushed_end = sid.offset
        self.high_watermark = self.applied = sid.offset


_HANDLERS = {
    M.VoteRequest: RaftCore._on_vote_request,
    M.VoteResponse: RaftCore._on_vote_response,
    M.BeginQuorumEpochRequest: RaftCore._on_begin_quorum_epoch,
    M.BeginQuorumEpochResponse: RaftCore._on_begin_quorum_epoch_response,
    M.EndQuorumEpochRequest: RaftCore._on_end_quorum_epoch,
    M.EndQuorumEpochResponse: RaftCore._on_end_quorum_epoch_response,
    M.FetchRequest: RaftCore._on_fetch,
    M.FetchResponse: RaftCore._on_fetch_response,
    M.FetchSnapshotRequest: RaftCore._on_fetch_snapshot,
    M.FetchSnapshotResponse: RaftCore._on_fetch_snapshot_response,
}
