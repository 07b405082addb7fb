"""Deterministic simulation of kwire's replication with the metadata quorum (no sockets, no
Trio, no real clock): one seeded scheduler drives the REAL replica managers, partition logs
(files in a temp dir, tmpfs when there is one) and follower functions
(kwire.replication.follower), and the REAL controller decisions
(kwire.metadata.replication_control over a kwire MetadataImage, called the way
kwire.metadata.controller calls them).

What is modelled (one :class:`Sim` per seed; the nodes are in tests/replication/sim_nodes.py):

- a controller: one linearizable state machine (the Raft quorum's own safety is
  tests/raft/sim.py's business) holding the metadata log and its image. Its loop fences
  brokers not heard from for the session timeout and unfences them, elects leaders for
  leaderless partitions, answers AlterPartition and controlled shutdown, commits broker
  registrations - each decision by kwire's code, as controller.py does.
- brokers: each one a LogManager + ReplicaManager over its OWN metadata image, which
  follows the controller's log by fetches that travel the network (delayed, lost): brokers
  act on stale metadata, as real ones do. Those fetches are the heartbeats (kwire's
  combined mode: the Raft fetch is the liveness signal). Followers fetch from the leader
  they believe in (fetch_position / read_for_follower / append_as_follower /
  truncation_offset / out_of_range, with the checks fetcher.py makes), leaders ask for ISR
  changes through AlterPartition (one in flight per partition, as isr.py), shrink after
  replica.lag.time.max.ms.
- clients: producers with acks=all and acks=1 batches, sent to the broker some image names
  leader, through the real ReplicaManager.append (acknowledged = its outcome completes
  NONE once its high watermark event is set, as ReplicaManager.await_appends); consumers
  reading below the high watermark from the leader.
- faults: message loss, delay and reordering between any two nodes; network partitions
  (broker-broker links, a broker from the controller, a broker from everyone); crashes (a
  process kill keeps the page cache; a power loss truncates every log to a point between
  its recovery point (or what fdatasync made durable) and its end, then the log dir is
  reopened and recovered), restarts after a short (before the session times out) or long
  time, clean shutdowns through controlled shutdown.

Invariants, after every step (:meth:`Sim.check`): every acknowledged acks=all record and
every record a consumer read is at its offset, with its value, in the log of the current
leader (the controller's leader, once it knows its epoch) and of any broker the moment it
becomes leader (for records of earlier epochs), unless every ISR member lost it in power
losses (then it is *excused*: the guarantee holds only while replicas do not all lose the
same tail); a leader's high watermark never goes backwards within an epoch (and one
incarnation); offsets only increase in every log, in every append and for every consumer.
At the end, with the network healed and every broker up: every ISR member holds the
leader's log below the high watermark.

Bugs it found and that are fixed (each with its own test): a leader restarting before its
first replication-offset-checkpoint counted its whole log as committed (kwire.log.manager,
tests/replication/test_restart_safety.py); a late answer to an AlterPartition of an earlier
leadership cleared a newer request's pending ISR, so the high watermark passed a replica the
controller had already put in the ISR (kwire.replication.isr, test_isr_changes.py).

Fixed after it found it (BUG A): a broker that restarted before its session timed out did
not register anew and kept its leaderships and ISR memberships in the same leader epoch; after
a power loss its log was shorter than what it had acknowledged (followers truncated to it, or
it was elected over a replica holding the records). Now a broker registers again after an
unclean shutdown and the controller takes it out of every ISR it shares first
(replication_control.register_again); the two tests in test_replication_sim.py that
reproduced it pass, and fast restarts after a power loss are part of the random runs.

Not modelled: the Raft quorum itself (one linearizable controller; tests/raft/sim.py
simulates Raft), the controller's own broker (the controller is a separate node here),
fetch sessions and long polls (a follower fetches every 40 ms and at once after data),
partial writes inside a batch (a power loss keeps whole batches: the loader's torn-tail
recovery has its own tests), idempotent producers and transactions, partition
reassignment, unclean elections, log retention and DeleteRecords (retention runs, but
nothing is old enough to go).

Run one seed with its trace: ``python -m tests.replication.sim --seed 7 [--trace]``;
``--count N`` runs N seeds from ``--seed``; ``--bug-a`` lets brokers restart before they are
fenced after power losses too (about 1 seed in 15 then fails: 10 of 150 seeds).
"""
from __future__ import annotations

import heapq
import os
import random
import shutil
import tempfile
import uuid
from dataclasses import dataclass

from kwire.codec.records import iter_batches
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata.config_control import elr_feature_records
from kwire.metadata.placement import UsableBroker, place

from tests.replication.sim_nodes import CLIENT_NODE, CONTROLLER, T0, TOPIC, Broker, ControllerModel

__all__ = ["CLIENT_NODE", "CONTROLLER", "T0", "TOPIC", "InvariantViolation", "Knobs", "Sim", "run_seed"]


class InvariantViolation(AssertionError):
    pass


@dataclass
class Knobs:
    """One seed's world, drawn from the seed (``Knobs.draw``)."""
    brokers: int = 3
    partitions: int = 2
    duration_ms: int = 6000
    quiet_ms: int = 3000
    loss: float = 0.02
    power_loss: float = 0.5          # share of crashes that lose the unsynced tail
    fsync_per_append: bool = False   # log.flush.per.append: the leader syncs before answering
    fast_restart: float = 0.3        # share of restarts before the session times out
    # a power loss followed by a restart before the session times out: the broker keeps its
    # ISR membership and leaderships with a shorter log (see the module docstring: BUG A)
    fast_restart_after_power_loss: bool = True
    session_timeout_ms: int = 1000
    lag_ms: int = 800                # replica.lag.time.max.ms
    fault_every_ms: int = 500
    max_down: int = 1
    # eligible leader replicas (KIP-966) on: the controller keeps ELRs (min ISR 2, the brokers'
    # too) and leaders hold the high watermark below min ISR, as a 4.3-formatted cluster
    elr: bool = False

    @classmethod
    def draw(cls, seed: int) -> "Knobs":
        rng = random.Random(seed ^ 0x5EED)
        five = seed % 5 == 4
        return cls(brokers=5 if five else 3, partitions=rng.choice([1, 2, 3]),
                   duration_ms=rng.choice([4000, 6000, 8000]), loss=rng.choice([0.0, 0.02, 0.1]),
                   power_loss=rng.choice([0.0, 0.5, 1.0]), fsync_per_append=rng.random() < 0.3,
                   fault_every_ms=rng.choice([300, 500, 900]), max_down=2 if five else rng.choice([1, 1, 2]),
                   elr=rng.random() < 0.5)


# ---------------------------------------------------------------------- the world
class Sim:
    def __init__(self, seed: int, knobs: Knobs | None = None, *, root: str | None = None, keep_trace: bool = False):
        self.seed = seed
        self.k = knobs or Knobs.draw(seed)
        self.rng = random.Random(seed)
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.root = root or tempfile.mkdtemp(prefix="kwire-sim-", dir=base)
        self.now = T0
        self.queue: list = []
        self.seq = 0
        self.cut: set[frozenset] = set()
        self.log_lines: list[str] = []
        self.keep_trace = keep_trace
        self.ctl = ControllerModel(self)
        self.brokers = {i: Broker(self, i) for i in range(1, self.k.brokers + 1)}
        # what the invariants follow
        self.committed: dict = {}    # tp -> {offset: (value, epoch, why)}
        self.commit_order: dict = {}  # tp -> offsets in the order they were committed
        self.excused: set = set()    # (tp, offset) lost by every ISR member (power losses)
        self.lost: dict = {}         # broker -> {(tp, offset)} its power losses took
        self.hw_seen: dict = {}      # (broker, incarnation, tp, epoch) -> high watermark
        self.hw_epoch: dict = {}     # (broker, tp, epoch) -> high watermark
        self.last_append: dict = {}  # (broker, incarnation, tp) -> last offset appended
        self.consumers: dict = {}    # tp -> next offset
        self.stats = {"acked": 0, "appended": 0, "consumed": 0, "crashes": 0, "power_losses": 0, "excused": 0,
                      "steps": 0, "elections": 0, "hw_back_after_restart": 0}
        self._cache: dict = {}
        self._verified: dict = {}
        self.next_value = 0

    # --- scheduling and network -----------------------------------------------------
    def at(self, delay: int, fn, *args) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (self.now + max(0, int(delay)), self.seq, fn, args))

    def trace(self, line: str) -> None:
        self.log_lines.append(f"{self.now - T0:6d} {line}")
        if len(self.log_lines) > 4000 and not self.keep_trace:
            del self.log_lines[:2000]

    def link_ok(self, a: int, b: int) -> bool:
        return frozenset((a, b)) not in self.cut

    def send(self, src: int, dst: int, handler: str, *args) -> None:
        if not self.link_ok(src, dst) or self.rng.random() < self.k.loss:
            return
        delay = self.rng.randint(1, 20) if self.rng.random() < 0.95 else self.rng.randint(20, 500)
        self.at(delay, self._deliver, src, dst, handler, args)

    def _deliver(self, src: int, dst: int, handler: str, args) -> None:
        if not self.link_ok(src, dst):
            return
        if dst == CONTROLLER:
            getattr(self.ctl, handler)(*args)
            return
        b = self.brokers[dst]
        if not b.up or (handler not in ("on_fetch", "on_produce") and args[0] != b.inc):
            return   # a down broker, or an answer to an incarnation that crashed since
        getattr(b, handler)(*args)

    # --- the run -------------------------------------------------------------------------
    def setup(self) -> None:
        k = self.k
        if k.elr:   # kwire's format of a 4.3 cluster (kwire.metadata.config_control)
            self.ctl.commit(elr_feature_records(self.ctl.image, None) + [(R.CONFIG, R.CONFIG.cls(
                resource_type=R.RESOURCE_BROKER, resource_name="", name="min.insync.replicas", value="2"))])
        for bid in self.brokers:
            self.ctl.commit([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
                broker_id=bid, incarnation_id=uuid.UUID(int=bid), broker_epoch=1, end_points=[], rack=None,
                fenced=False))])
        tid = uuid.UUID(int=self.rng.getrandbits(128))
        recs = [(R.TOPIC, R.TOPIC.cls(name=TOPIC, topic_id=tid))]
        usable = [UsableBroker(b) for b in self.brokers]
        for i, replicas in enumerate(place(k.partitions, 3, usable)):
            recs.append((R.PARTITION, R.PARTITION.cls(partition_id=i, topic_id=tid, replicas=replicas,
                                                      isr=list(replicas), removing_replicas=[], adding_replicas=[],
                                                      leader=replicas[0], leader_epoch=0, partition_epoch=0)))
            self.committed[(TOPIC, i)] = {}
            self.commit_order[(TOPIC, i)] = []
            self.consumers[(TOPIC, i)] = 0
        self.ctl.commit(recs)
        for b in self.brokers.values():
            b.start()
        self.at(100, self.ctl.tick)
        self.at(50, self._produce_tick)
        self.at(70, self._consume_tick)
        if k.fault_every_ms:
            self.at(k.fault_every_ms, self._fault_tick)
        self.at(k.duration_ms, self._heal_all)

    def run(self, script=None) -> dict:
        """Run to the end (``script(sim)``, called after the set-up, may schedule its own
        faults with ``sim.at``); the stats, or InvariantViolation with the trace."""
        try:
            self.setup()
            if script is not None:
                script(self)
            end = T0 + self.k.duration_ms + self.k.quiet_ms
            while self.queue and self.queue[0][0] <= end:
                t, _, fn, args = heapq.heappop(self.queue)
                self.now = t
                fn(*args)
                for b in self.brokers.values():
                    if b.open:
                        b.poll_waiters()
                self.stats["steps"] += 1
                self.check()
            self.final_check()
            return self.stats
        except InvariantViolation:
            raise
        except Exception as exc:
            self.fail(f"{type(exc).__name__}: {exc}", exc)
        finally:
            self.close()

    def close(self) -> None:
        for b in self.brokers.values():
            if b.lm is not None:
                for _, plog in b.lm:
                    for seg in plog.segments:
                        seg.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def fail(self, what: str, cause: BaseException | None = None):
        tail = "\n".join(self.log_lines[-80:])
        raise InvariantViolation(f"seed {self.seed} ({self.k}) at t={self.now - T0}ms: {what}\n--- trace (last "
                                 f"lines) ---\n{tail}\n--- reproduce: python -m tests.replication.sim --seed "
                                 f"{self.seed} --trace") from cause

    # --- for scripts -----------------------------------------------------------------------
    def partition_image(self, index: int):
        """The controller's view of partition ``index`` (leader, ISR, epochs)."""
        return self.ctl.image.topics[TOPIC].partitions[index]

    def disconnect(self, a: int, *others: int) -> None:
        """Cut the links between ``a`` and each of ``others`` (CONTROLLER is 0)."""
        self.trace(f"NET cut b{a} from {others}")
        self.cut |= {frozenset((a, o)) for o in others}

    # --- load --------------------------------------------------------------------------
    def _believed_leader(self, tp) -> int:
        views = [b.image for b in self.brokers.values() if b.open] + [self.ctl.image]
        image = self.rng.choice(views)
        t = image.topics.get(tp[0])
        p = t.partitions.get(tp[1]) if t else None
        return p.leader if p is not None else -1

    def _produce_tick(self) -> None:
        if self.now - T0 < self.k.duration_ms:
            tp = (TOPIC, self.rng.randrange(self.k.partitions))
            leader = self._believed_leader(tp)
            if leader > 0:
                n = self.rng.randint(1, 3)
                values = [b"v%d" % (self.next_value + i) for i in range(n)]
                self.next_value += n
                req = {"id": self.next_value, "tp": tp, "values": values, "acks": -1 if self.rng.random() < 0.7 else 1}
                self.send(CLIENT_NODE, leader, "on_produce", req)
        self.at(self.rng.randint(5, 40), self._produce_tick)

    def _consume_tick(self) -> None:
        tp = (TOPIC, self.rng.randrange(self.k.partitions))
        leader = self._believed_leader(tp)
        b = self.brokers.get(leader)
        if b is not None and b.open:
            pos = self.consumers[tp]
            res = b.rm.read(tp[0], tp[1], pos, 4096)
            if res.error:
                if res.error == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self.trace(f"consumer p{tp[1]} at {pos} out of range on b{leader}")
            elif res.size:
                for batch in iter_batches(bytes(res.records)):
                    for r in batch.records():
                        if r.offset < pos:
                            continue
                        if r.offset != pos:
                            self.fail(f"consumer of p{tp[1]} expected offset {pos}, read {r.offset}")
                        self._commit(tp, r.offset, bytes(r.value), res.leader_epoch,
                                     f"consumed from b{leader} in epoch {res.leader_epoch}")
                        self.stats["consumed"] += 1
                        pos += 1
                self.consumers[tp] = pos
        self.at(self.rng.randint(20, 80), self._consume_tick)

    def appended(self, b: Broker, tp, base: int, last: int, req) -> None:
        key = (b.id, b.inc, tp, b.rm.leader_epoch(*tp))
        prev = self.last_append.get(key, -1)
        if base <= prev or last - base + 1 != len(req["values"]):
            self.fail(f"b{b.id} p{tp[1]} appended {req['id']} at {base}..{last} after {prev}")
        self.last_append[key] = last
        self.stats["appended"] += 1

    def acknowledged(self, b: Broker, tp, base: int, req, epoch: int) -> None:
        self.trace(f"b{b.id} p{tp[1]} ACK {req['id']} @{base} epoch {epoch}")
        for i, v in enumerate(req["values"]):
            self._commit(tp, base + i, v, epoch, f"acknowledged by b{b.id}")
        self.stats["acked"] += 1

    def _commit(self, tp, offset: int, value: bytes, epoch: int, why: str) -> None:
        """A record is committed at ``offset``: acknowledged, or read by a consumer, from
        the leader of ``epoch``."""
        got = self.committed[tp].get(offset)
        if got is not None and got[0] != value:
            if (tp, offset) not in self.excused:
                self.fail(f"p{tp[1]} offset {offset}: {why} {value!r}, but {got[2]} {got[0]!r} (epoch {got[1]})")
            self.excused.discard((tp, offset))
        if got is None or got[0] != value:
            self.committed[tp][offset] = (value, epoch, why)
            self.commit_order[tp].append(offset)

    # --- faults ------------------------------------------------------------------------
    def _fault_tick(self) -> None:
        if self.now - T0 >= self.k.duration_ms:
            return
        rng = self.rng
        ids = sorted(self.brokers)
        down = [i for i in ids if not self.brokers[i].up]
        what = rng.random()
        if what < 0.35:
            up = [i for i in ids if self.brokers[i].open and not self.brokers[i].shutting_down]
            if up and len(down) < self.k.max_down:
                b = self.brokers[rng.choice(up)]
                power = rng.random() < self.k.power_loss
                b.crash(power)
                fast = rng.random() < self.k.fast_restart and (not power or self.k.fast_restart_after_power_loss)
                self.at(rng.randint(50, self.k.session_timeout_ms // 2) if fast
                        else rng.randint(self.k.session_timeout_ms * 2, self.k.session_timeout_ms * 4), b.start)
        elif what < 0.45:
            up = [i for i in ids if self.brokers[i].open and not self.brokers[i].shutting_down]
            if up and len(down) < self.k.max_down:
                self.brokers[rng.choice(up)].controlled_shutdown()
        elif what < 0.8:
            nodes = ids + [CONTROLLER]
            kind = rng.random()
            victim = rng.choice(ids)
            if kind < 0.3:
                links = {frozenset((victim, o)) for o in nodes if o != victim}
                label = f"isolate b{victim}"
            elif kind < 0.6:
                links = {frozenset((victim, CONTROLLER))}
                label = f"cut b{victim} from the controller"
            else:
                other = rng.choice([i for i in ids if i != victim])
                links = {frozenset((victim, other))}
                label = f"cut b{victim}-b{other}"
            self.trace(f"NET {label}")
            self.cut |= links
            self.at(rng.randint(200, 3000), self._heal, links, label)
        self.at(rng.randint(self.k.fault_every_ms // 2, self.k.fault_every_ms * 3 // 2), self._fault_tick)

    def _heal(self, links, label: str) -> None:
        self.cut -= links
        self.trace(f"NET heal: {label}")

    def _heal_all(self) -> None:
        self.trace("end of faults: heal the network, start every broker")
        self.cut.clear()
        for b in self.brokers.values():
            if not b.up:
                late = b.lost_tail and not self.k.fast_restart_after_power_loss
                self.at(self.k.session_timeout_ms * 2 if late else 0, b.start)

    # --- invariants --------------------------------------------------------------------
    def contents(self, b: Broker, tp) -> dict:
        """offset -> (value, batch epoch) of broker ``b``'s log (its disk view while down),
        parsed incrementally while the log only grows; checks that offsets only increase."""
        if not b.open:
            return b.disk_view.get(tp, {})
        plog = b.lm.get(*tp)
        if plog is None or plog.closed:
            return b.disk_view.get(tp, {})
        got = self._cache.get((b.id, tp))
        if got is not None and got[0] is plog and got[1] == (plog._truncations, plog.log_start_offset):
            out, pos = got[2], got[3]
            if pos == plog.log_end_offset:
                return out
        else:
            out, pos = {}, plog.log_start_offset
        expect = pos
        while pos < plog.log_end_offset:   # a read stops at the end of a segment
            data = plog.read(pos, 1 << 30, max_offset=plog.log_end_offset)
            if data is None or not data.size:
                break
            for batch in iter_batches(bytes(data)):
                if batch.base_offset < expect:
                    self.fail(f"b{b.id} p{tp[1]}: batch at {batch.base_offset} after offset {expect - 1}")
                expect = pos = batch.last_offset + 1
                for r in batch.records():
                    out[r.offset] = (bytes(r.value), batch.partition_leader_epoch)
        self._cache[(b.id, tp)] = (plog, (plog._truncations, plog.log_start_offset), out, pos)
        return out

    def check_leader(self, b: Broker, tp, epoch: int, *, below_epoch: bool, since: int = 0) -> None:
        """Every committed record is in ``b``'s log (those committed after the ``since``-th
        commit only). With ``below_epoch`` (``b`` becomes leader in ``epoch``, maybe on stale
        metadata): those committed (acknowledged, or read from a leader) in an earlier epoch."""
        have = self.contents(b, tp)
        recs = self.committed[tp]
        for offset in self.commit_order[tp][since:]:
            value, e, why = recs[offset]
            if (below_epoch and e >= epoch) or (tp, offset) in self.excused:
                continue
            got = have.get(offset)
            if got is None or got[0] != value:
                self.fail(f"b{b.id} leads p{tp[1]} in epoch {epoch} and its log has "
                          f"{'nothing' if got is None else repr(got[0])} at offset {offset}, where {why} "
                          f"{value!r} (epoch {e})")

    def check(self) -> None:
        for tp in self.committed:
            p = self.ctl.image.topics[tp[0]].partitions[tp[1]]
            lb = self.brokers.get(p.leader)
            if lb is not None and lb.open:
                part = lb.rm.partitions.get(tp)
                if part is not None and part.is_leader and part.leader_epoch == p.leader_epoch:
                    # the leader the controller elected, once it knows: every committed record
                    key = (lb.id, lb.inc, tp, p.leader_epoch)
                    plog = part.log
                    n = len(self.commit_order[tp])
                    got = self._verified.get(key)
                    since = got[2] if got is not None and got[0] is plog and got[1] == plog._truncations else 0
                    if since < n:
                        self.check_leader(lb, tp, p.leader_epoch, below_epoch=False, since=since)
                    self._verified[key] = (plog, plog._truncations, n)
        for b in self.brokers.values():
            if not b.open:
                continue
            for tp, part in b.rm.partitions.items():
                if not part.is_leader:
                    continue
                key = (b.id, b.inc, tp, part.leader_epoch)
                hw = part.log.high_watermark
                if hw < self.hw_seen.get(key, -1):
                    self.fail(f"b{b.id} p{tp[1]}: high watermark went back from {self.hw_seen[key]} to {hw} "
                              f"in epoch {part.leader_epoch}")
                self.hw_seen[key] = hw
                # across a restart in the same epoch (BUG A's shape: no new epoch after a
                # restart) the high watermark starts over from the checkpoint: counted
                same = (b.id, tp, part.leader_epoch)
                if hw < self.hw_epoch.get(same, -1):
                    self.stats["hw_back_after_restart"] += 1
                self.hw_epoch[same] = hw

    def lost_in_power_loss(self, b: Broker, tp, before: dict, after: dict) -> None:
        """What a power loss took from ``b``'s log (committed or not yet: a leader may count
        a follower's records it had fetched, and lost since, towards its high watermark)."""
        lost = self.lost.setdefault(b.id, set())
        for offset in before.keys() - after.keys():
            lost.add((tp, offset))

    def excuse_lost(self) -> None:
        """After a power loss or an ISR change: a committed record that no ISR member holds,
        because each one lost it in a power loss, is lost for good (every replica the
        controller may elect lost the same tail); the guarantee does not cover it."""
        if not self.lost:
            return
        for tp, recs in self.committed.items():
            p = self.ctl.image.topics[tp[0]].partitions[tp[1]]
            isr = set(p.isr) | ({p.leader} if p.leader > 0 else set())
            holders = [(r, self.contents(self.brokers[r], tp)) for r in isr]
            for offset, (value, _, why) in recs.items():
                if (tp, offset) in self.excused:
                    continue
                if all(h.get(offset, (None,))[0] != value and (tp, offset) in self.lost.get(r, ())
                       for r, h in holders):
                    self.excused.add((tp, offset))
                    self.stats["excused"] += 1
                    self.trace(f"p{tp[1]} offset {offset} ({why}) lost by every ISR member: excused")

    def final_check(self) -> None:
        """Network healed, brokers up, quiet: every ISR member holds the leader's log below
        the high watermark."""
        for tp in self.committed:
            p = self.ctl.image.topics[tp[0]].partitions[tp[1]]
            lb = self.brokers.get(p.leader)
            if lb is None or not lb.open:
                continue
            self.check_leader(lb, tp, p.leader_epoch, below_epoch=False)
            hw = lb.lm.get(*tp).high_watermark
            lead = self.contents(lb, tp)
            for r in p.isr:
                if r == p.leader or not self.brokers[r].open:
                    continue
                mine = self.contents(self.brokers[r], tp)
                for o in range(lb.lm.get(*tp).log_start_offset, hw):
                    if mine.get(o) != lead.get(o):
                        self.fail(f"p{tp[1]}: ISR member b{r} has {mine.get(o)} at {o}, leader b{p.leader} "
                                  f"{lead.get(o)} (high watermark {hw})")


def run_seed(seed: int, knobs: Knobs | None = None, **kw) -> dict:
    return Sim(seed, knobs, **kw).run()


def main(argv=None) -> None:
    import argparse  # noqa: PLC0415
    import time  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--trace", action="store_true", help="print the whole trace of the (one) seed")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    failed = 0
    for seed in range(args.seed, args.seed + args.count):
        knobs = Knobs.draw(seed)
        sim = Sim(seed, knobs, keep_trace=args.trace)
        try:
            stats = sim.run()
            if args.count == 1:
                print(stats)
        except InvariantViolation as exc:
            failed += 1
            print(exc if not args.trace else "\n".join(sim.log_lines) + "\n" + str(exc).splitlines()[0])
        finally:
            if args.trace and args.count == 1 and not failed:
                print("\n".join(sim.log_lines))
    print(f"{args.count} seed(s), {failed} failed, {time.perf_counter() - t:.1f}s")


if __name__ == "__main__":
    main()
