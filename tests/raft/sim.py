"""Deterministic simulation harness for kwire.raft cores (no sockets, no clock, no Trio).

A :class:`Cluster` holds N voters (and optional observers), each a ``RaftCore`` plus what a
real driver would keep: a *disk* (quorum state, snapshot, log entries - only what the core
asked to persist and the driver flushed) and a state machine (a running digest of applied
entries). Two ways to drive it:

* :class:`Chaos` - one seeded scheduler: a timed event queue, a network that drops, delays,
  duplicates, reorders and partitions messages, crashes and restarts (unflushed data is lost),
  proposals flowing in, snapshots taken as logs grow.
* step by step (the golden scripts): per-node clocks, FIFO queues per (src, dst) that the
  script delivers or drops explicitly, and flushes done at once.

Invariants (:meth:`Cluster.check`): at most one leader per epoch; every node's log agrees
with the global committed history below its high watermark; committed entries are never
changed (each applied entry, and each installed snapshot, is compared to the history) and
never lost (a majority of voters' disks hold every committed entry).
"""
from __future__ import annotations

import heapq
import json
import random
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kwire.raft import messages as M
from kwire.raft.core import NotLeader, RaftConfig, RaftCore, Ready, Role
from kwire.raft.log import Entry, OffsetAndEpoch, RaftLog
from kwire.raft.quorum_state import QuorumState
from kwire.raft.snapshot import Snapshot


class InvariantViolation(AssertionError):
    pass


def _digest(prev: int, e: Entry) -> int:
    return zlib.crc32(f"{e.offset}/{e.epoch}/{e.records!r}".encode(), prev)


@dataclass
class Disk:
    """What survives a crash: exactly what the driver flushed."""
    quorum_state: bytes | None = None
    snapshot: Snapshot | None = None
    entries: list[Entry] = field(default_factory=list)
    log_start: int = 0

    def persist(self, rd: Ready) -> None:
        if rd.quorum_state is not None:
            self.quorum_state = rd.quorum_state.encode()
        if rd.snapshot is not None:
            self.snapshot = rd.snapshot
            if rd.install_snapshot:
                self.entries = []
                self.log_start = rd.snapshot.snapshot_id.offset
        if rd.truncate_to is not None:
            del self.entries[max(0, rd.truncate_to - self.log_start):]
        for e in rd.entries:
            if e.offset != self.log_start + len(self.entries):
                raise InvariantViolation(f"non-contiguous append at {e.offset}, disk ends at "
                                         f"{self.log_start + len(self.entries)}")
            self.entries.append(e)
        if rd.log_start_offset is not None and rd.log_start_offset > self.log_start:
            del self.entries[:rd.log_start_offset - self.log_start]
            self.log_start = rd.log_start_offset

    def entry(self, offset: int) -> Entry | None:
        i = offset - self.log_start
        return self.entries[i] if 0 <= i < len(self.entries) else None


class Node:
    def __init__(self, cluster: "Cluster", node_id: int, now: int):
        self.cluster = cluster
        self.id = node_id
        self.disk = Disk()
        self.alive = True
        self.core: RaftCore | None = None
        self.boot(now)

    def boot(self, now: int) -> None:
        c = self.cluster
        d = self.disk
        sid = d.snapshot.snapshot_id if d.snapshot is not None and d.log_start > 0 else None
        log = RaftLog(list(d.entries), sid)
        qs = QuorumState.decode(d.quorum_state) if d.quorum_state else None
        rng = random.Random(c.seed * 1000 + self.id * 7 + c.boots)
        c.boots += 1
        self.core = RaftCore(self.id, c.voters, rng=rng, config=c.config, log=log, quorum_state=qs,
                             snapshot=d.snapshot if sid else None, now_ms=now)
        # state machine: (applied offset, digest) restored from the snapshot
        if sid is not None:
            img = json.loads(d.snapshot.data)
            self.sm_offset, self.sm_digest = img["offset"], img["digest"]
        else:
            self.sm_offset, self.sm_digest = 0, 0
        self.verified = self.core.log.start_offset
        self.alive = True
        self.truncations: list[int] = []      # Ready.truncate_to values, as persisted
        self.installs: list[OffsetAndEpoch] = []  # snapshots received from a leader

    # what a driver does with a Ready ---------------------------------------------------------
    def flush(self) -> list[tuple[int, Any]]:
        core = self.core
        out: list[tuple[int, Any]] = []
        while core.has_ready():
            rd = core.ready()
            self.disk.persist(rd)
            out.extend(rd.messages)
            if rd.truncate_to is not None:
                self.truncations.append(rd.truncate_to)
            if rd.snapshot is not None and rd.install_snapshot:
                self.installs.append(rd.snapshot.snapshot_id)
                self.cluster.check_snapshot(self, rd.snapshot)
                img = json.loads(rd.snapshot.data)
                self.sm_offset, self.sm_digest = img["offset"], img["digest"]
            for e in rd.committed:
                self.apply(e)
            core.advance(rd)
            self.maybe_snapshot()
        return out

    def apply(self, e: Entry) -> None:
        if e.offset != self.sm_offset:
            raise InvariantViolation(f"node {self.id} applies offset {e.offset}, expected {self.sm_offset}")
        self.cluster.record_commit(self, e)
        self.sm_digest = _digest(self.sm_digest, e)
        self.sm_offset = e.offset + 1
        if self.cluster.history_digest[e.offset + 1] != self.sm_digest:
            raise InvariantViolation(f"node {self.id} state machine digest differs at {e.offset}")

    def maybe_snapshot(self) -> None:
        every = self.cluster.snapshot_every
        core = self.core
        if every and self.sm_offset - core.log.start_offset >= every and self.sm_offset <= core.high_watermark:
            data = json.dumps({"offset": self.sm_offset, "digest": self.sm_digest,
                               "pad": "x" * self.cluster.snapshot_pad}).encode()
            core.create_snapshot(self.sm_offset, data)
            # the snapshot is written by the next flush (Ready.snapshot + log_start_offset)


class Cluster:
    def __init__(self, seed: int, voters: int = 3, observers: int = 0, config: RaftConfig | None = None,
                 snapshot_every: int = 0, snapshot_pad: int = 0):
        self.seed = seed
        self.voters = list(range(1, voters + 1))
        self.ids = self.voters + list(range(voters + 1, voters + observers + 1))
        self.config = config or RaftConfig()
        self.snapshot_every = snapshot_every
        self.snapshot_pad = snapshot_pad
        self.boots = 0
        self.history: list[tuple[int, Any]] = []     # committed (epoch, records) by offset
        self.history_digest: list[int] = [0]         # digest after applying offsets < i
        self.leaders: dict[int, int] = {}            # epoch -> leader
        self.nodes = {i: Node(self, i, 0) for i in self.ids}
        self.majority = len(self.voters) // 2 + 1

    # invariants -----------------------------------------------------------------------------
    def record_commit(self, node: Node, e: Entry) -> None:
        if e.offset < len(self.history):
            if self.history[e.offset] != (e.epoch, e.records):
                raise InvariantViolation(f"node {node.id} committed {(e.epoch, e.records)} at {e.offset}, "
                                         f"history has {self.history[e.offset]}")
        elif e.offset == len(self.history):
            self.history.append((e.epoch, e.records))
            self.history_digest.append(_digest(self.history_digest[-1], e))
        else:
            raise InvariantViolation(f"node {node.id} committed offset {e.offset} beyond history "
                                     f"{len(self.history)}")

    def check_snapshot(self, node: Node, snap: Snapshot) -> None:
        img = json.loads(snap.data)
        off = img["offset"]
        if off != snap.snapshot_id.offset or off >= len(self.history_digest) \
                or self.history_digest[off] != img["digest"]:
            raise InvariantViolation(f"node {node.id} installed a snapshot at {off} that is not the committed image")
        if snap.snapshot_id.epoch != self.history[off - 1][0]:
            raise InvariantViolation(f"snapshot id {snap.snapshot_id} has the wrong epoch")

    def check(self, full: bool = False) -> None:
        """Invariants after a step; ``full`` rescans whole logs instead of what changed."""
        for n in self.nodes.values():
            if not n.alive:
                continue
            core = n.core
            if core.role == Role.LEADER:
                prev = self.leaders.setdefault(core.epoch, n.id)
                if prev != n.id:
                    raise InvariantViolation(f"two leaders in epoch {core.epoch}: {prev} and {n.id}")
            hw = core.high_watermark
            log = core.log
            if hw > log.end_offset:
                raise InvariantViolation(f"node {n.id} HW {hw} beyond log end {log.end_offset}")
            start = log.start_offset if full else max(log.start_offset, min(n.verified, hw - 4))
            top = min(hw, len(self.history))
            for off in range(start, top):
                e = log.entry(off)
                if (e.epoch, e.records) != self.history[off]:
                    raise InvariantViolation(f"node {n.id} log differs from committed history at {off} "
                                             f"(below its HW {hw})")
            n.verified = max(n.verified, top)

    def check_durable(self) -> None:
        """Every committed entry is on the disk (log or snapshot) of a majority of voters."""
        for off in range(len(self.history)):
            count = 0
            for v in self.voters:
                d = self.nodes[v].disk
                if d.snapshot is not None and off < d.snapshot.snapshot_id.offset:
                    count += 1
                    continue
                e = d.entry(off)
                if e is not None and (e.epoch, e.records) == self.history[off]:
                    count += 1
            if count < self.majority:
                raise InvariantViolation(f"committed offset {off} is durable on only {count} voters")

    def leader(self) -> Node | None:
        best = None
        for n in self.nodes.values():
            if n.alive and n.core.role == Role.LEADER and (best is None or n.core.epoch > best.core.epoch):
                best = n
        return best


# =========================================================================================
# the seeded chaos scheduler
# =========================================================================================
@dataclass
class ChaosParams:
    voters: int = 3
    observers: int = 0
    drop: float = 0.05
    duplicate: float = 0.03
    min_delay_ms: int = 1
    max_delay_ms: int = 15
    slow: float = 0.05           # share of messages that straggle (reordering across rounds)
    slow_delay_ms: int = 400
    disk_delay_ms: int = 3
    chaos_ms: int = 20_000
    liveness_ms: int = 30_000
    propose_every_ms: int = 100
    fault_every_ms: int = 800
    snapshot_every: int = 25
    snapshot_pad: int = 300


class Chaos:
    def __init__(self, seed: int, params: ChaosParams | None = None, config: RaftConfig | None = None):
        self.p = p = params or ChaosParams()
        self.rng = random.Random(seed)
        cfg = config or RaftConfig(snapshot_chunk_bytes=128)
        self.cluster = Cluster(seed, p.voters, p.observers, cfg, snapshot_every=p.snapshot_every,
                               snapshot_pad=p.snapshot_pad)
        self.now = 0
        self.q: list = []
        self.seq = 0
        self.groups: dict[int, int] | None = None    # node -> partition group
        self.lossy = True
        self.flush_pending: set[int] = set()
        self.tick_at: dict[int, int] = {}
        self.proposed = 0
        self.events = 0
        for n in self.cluster.nodes.values():
            self._after(n)

    # scheduling -------------------------------------------------------------------------------
    def _push(self, t: int, kind: str, *data) -> None:
        self.seq += 1
        heapq.heappush(self.q, (t, self.seq, kind, data))

    def _after(self, n: Node) -> None:
        """After a node's core was touched: schedule its flush and its next timer."""
        if not n.alive:
            return
        if n.core.has_ready() and n.id not in self.flush_pending:
            self.flush_pending.add(n.id)
            self._push(self.now + self.rng.randint(0, self.p.disk_delay_ms), "flush", n.id, n.core)
        d = n.core.next_deadline()
        if d is not None:
            d = max(d, self.now)
            if self.tick_at.get(n.id, -1) <= self.now or d < self.tick_at[n.id]:
                self.tick_at[n.id] = d
                self._push(d, "tick", n.id, n.core)

    def _connected(self, a: int, b: int) -> bool:
        return self.groups is None or self.groups.get(a) == self.groups.get(b)

    def _send(self, src: int, dst: int, msg: Any) -> None:
        if not self._connected(src, dst):
            return
        copies = 1
        if self.lossy:
            if self.rng.random() < self.p.drop:
                return
            if self.rng.random() < self.p.duplicate:
                copies = 2
        for _ in range(copies):
            delay = self.rng.randint(self.p.min_delay_ms, self.p.max_delay_ms)
            if self.lossy and self.rng.random() < self.p.slow:
                delay = self.rng.randint(self.p.max_delay_ms, self.p.slow_delay_ms)   # a straggler
            self._push(self.now + delay, "deliver", src, dst, msg)

    # events -----------------------------------------------------------------------------------
    def _handle(self, kind: str, data: tuple) -> None:
        c = self.cluster
        if kind == "deliver":
            src, dst, msg = data
            n = c.nodes[dst]
            if not n.alive or not self._connected(src, dst):
                return
            n.core.tick(self.now)
            n.core.step(src, msg)
            self._after(n)
        elif kind == "tick":
            nid, core = data
            n = c.nodes[nid]
            if n.alive and n.core is core:
                n.core.tick(self.now)
                self._after(n)
        elif kind == "flush":
            nid, core = data
            n = c.nodes[nid]
            self.flush_pending.discard(nid)
            if n.alive and n.core is core:
                for dst, msg in n.flush():
                    self._send(nid, dst, msg)
                self._after(n)
        elif kind == "propose":
            ldr = c.leader()
            if ldr is not None:
                self.proposed += 1
                ldr.core.tick(self.now)
                try:
                    ldr.core.propose(f"p{self.proposed}")
                except NotLeader:
                    pass                  # the tick made it resign (check quorum)
                self._after(ldr)
        elif kind == "crash":
            (nid,) = data
            n = c.nodes[nid]
            if n.alive:
                n.alive = False
                n.core = None
                self.flush_pending.discard(nid)
                self.tick_at.pop(nid, None)
                c.check_durable()
        elif kind == "restart":
            (nid,) = data
            n = c.nodes[nid]
            if not n.alive:
                n.boot(self.now)
                self.tick_at.pop(nid, None)
                self._after(n)
        elif kind == "partition":
            ids = list(c.ids)
            self.rng.shuffle(ids)
            cut = self.rng.randint(1, len(ids) - 1)
            self.groups = {i: (0 if k < cut else 1) for k, i in enumerate(ids)}
        elif kind == "heal":
            self.groups = None

    def run_until(self, t_end: int, stop=None) -> bool:
        c = self.cluster
        while self.q and self.q[0][0] <= t_end:
            t, _, kind, data = heapq.heappop(self.q)
            self.now = max(self.now, t)
            self._handle(kind, data)
            self.events += 1
            c.check()
            if stop is not None and stop():
                return True
        self.now = max(self.now, t_end)
        return False

    def run(self) -> dict:
        """Chaos, then heal everything and require a leader that commits new proposals."""
        p, c, rng = self.p, self.cluster, self.rng
        t = 0
        while t < p.chaos_ms:
            t += rng.randint(1, 2 * p.propose_every_ms)
            self._push(t, "propose")
        t = 0
        while t < p.chaos_ms:
            t += rng.randint(p.fault_every_ms // 2, p.fault_every_ms * 3 // 2)
            r = rng.random()
            nid = rng.choice(c.ids)
            if r < 0.4:
                self._push(t, "crash", nid)
                self._push(t + rng.randint(100, 3000), "restart", nid)
            elif r < 0.7:
                self._push(t, "partition")
                self._push(t + rng.randint(500, 5000), "heal")
        self.run_until(p.chaos_ms)
        # heal: no more faults or losses, every node up
        self.q = [ev for ev in self.q if ev[2] in ("deliver", "tick", "flush")]
        heapq.heapify(self.q)
        self.groups = None
        self.lossy = False
        for n in c.nodes.values():
            if not n.alive:
                n.boot(self.now)
                self.tick_at.pop(n.id, None)
                self._after(n)
        healed = self.now
        # liveness: a leader must commit a fresh proposal on every node within the bound
        committed_before = len(c.history)
        marker = {"value": None}

        def progress() -> bool:
            ldr = c.leader()
            if (marker["value"] is not None and ldr is not None and ldr.core.epoch > marker["value"][1]
                    and len(c.history) <= marker["value"][0]):
                marker["value"] = None            # its leader is gone: propose to the new one
            if marker["value"] is None and ldr is not None:
                try:
                    off = ldr.core.propose("liveness")
                    marker["value"] = (off, ldr.core.epoch)
                    self._after(ldr)
                except NotLeader:
                    pass
            if marker["value"] is None:
                return False
            off, epoch = marker["value"]
            if len(c.history) > off:
                if c.history[off] != (epoch, "liveness"):
                    marker["value"] = None        # lost to a newer leader: propose again
                    return False
                return all(n.sm_offset > off for n in c.nodes.values())
            return False

        ok = self.run_until(healed + p.liveness_ms, progress)
        if not ok:
            raise InvariantViolation(f"no leader committed a proposal within {p.liveness_ms} ms after healing "
                                     f"(roles: {[(n.id, n.core.role.value, n.core.epoch) for n in c.nodes.values()]})")
        c.check(full=True)
        c.check_durable()
        return {"seed": c.seed, "events": self.events, "committed": len(c.history),
                "committed_before_heal": committed_before, "recovery_ms": self.now - healed,
                "epochs": max(c.leaders) if c.leaders else 0}


# =========================================================================================
# step-by-step control (golden scripts)
# =========================================================================================
class Manual:
    """Per-node clocks, explicit FIFO message queues, immediate flushes."""

    def __init__(self, voters: int = 3, observers: int = 0, seed: int = 0, config: RaftConfig | None = None,
                 snapshot_every: int = 0):
        self.cluster = Cluster(seed, voters, observers, config or RaftConfig(snapshot_chunk_bytes=64),
                               snapshot_every=snapshot_every, snapshot_pad=200)
        self.clock = {i: 0 for i in self.cluster.ids}
        self.queues: dict[tuple[int, int], deque] = {}
        self.groups: dict[int, int] | None = None
        for n in self.cluster.nodes.values():
            self._flush(n)

    def _flush(self, n: Node) -> None:
        for dst, msg in n.flush():
            if self.groups is None or self.groups.get(n.id) == self.groups.get(dst):
                self.queues.setdefault((n.id, dst), deque()).append(msg)
        self.cluster.check()

    def tick(self, nid: int, ms: int) -> None:
        n = self.cluster.nodes[nid]
        self.clock[nid] += ms
        if n.alive:
            n.core.tick(self.clock[nid])
            self._flush(n)

    def deliver(self, src: int, dst: int, count: int | None = None) -> int:
        q = self.queues.get((src, dst))
        done = 0
        while q and (count is None or done < count):
            msg = q.popleft()
            done += 1
            n = self.cluster.nodes[dst]
            if n.alive:
                n.core.tick(self.clock[dst])
                n.core.step(src, msg)
                self._flush(n)
        return done

    def drop(self, src: int, dst: int) -> int:
        q = self.queues.pop((src, dst), deque())
        return len(q)

    def pending(self) -> list[tuple[int, int, Any]]:
        return [(s, d, m) for (s, d), q in sorted(self.queues.items()) for m in q]

    def stabilize(self, limit: int = 10_000) -> None:
        for _ in range(limit):
            keys = [k for k, q in sorted(self.queues.items()) if q]
            if not keys:
                return
            for s, d in keys:
                self.deliver(s, d, 1)
        raise InvariantViolation("messages still flowing after stabilize")

    def partition(self, groups: list[list[int]]) -> None:
        self.groups = {i: g for g, members in enumerate(groups) for i in members}
        for (s, d), q in self.queues.items():
            if self.groups.get(s) != self.groups.get(d):
                q.clear()

    def heal(self) -> None:
        self.groups = None

    def crash(self, nid: int) -> None:
        n = self.cluster.nodes[nid]
        n.alive = False
        n.core = None
        for (s, d), q in self.queues.items():
            if nid in (s, d):
                q.clear()
        self.cluster.check_durable()

    def restart(self, nid: int) -> None:
        n = self.cluster.nodes[nid]
        n.boot(self.clock[nid])
        self._flush(n)

    def run(self, ms: int, step: int = 10) -> None:
        """Advance every node's clock by ``ms`` in ``step`` increments, delivering all
        messages (zero latency) after each increment."""
        for _ in range(0, ms, step):
            for nid in self.cluster.ids:
                self.tick(nid, step)
            self.stabilize()

    def snapshot(self, nid: int) -> OffsetAndEpoch:
        n = self.cluster.nodes[nid]
        data = json.dumps({"offset": n.sm_offset, "digest": n.sm_digest, "pad": "x" * self.cluster.snapshot_pad})
        sid = n.core.create_snapshot(n.sm_offset, data.encode())
        self._flush(n)
        return sid

    def propose(self, nid: int, records: Any) -> int:
        n = self.cluster.nodes[nid]
        off = n.core.propose(records)
        self._flush(n)
        return off
