"""Deterministic simulation of kwire's replication with the metadata quorum (no sockets, no
Trio, no real clock): one seeded scheduler drives the REAL replica managers, partition logs
(files in a temp dir, tmpfs when there is one) and follower functions
(kwire.replication.follower), and the REAL controller decisions
(kwire.metadata.replication_control over a kwire MetadataImage, called the way
kwire.metadata.controller calls them).

What is modelled (one :class:`Sim` per seed):

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
  leader (acknowledged = ``acks_all_error`` NONE once its waiter completes, as
  handlers/produce.py); consumers reading below the high watermark from the leader.
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

Known bug, kept out of the random runs (``Knobs.fast_restart_after_power_loss``; reproduced
by the strict xfail tests in test_replication_sim.py) - BUG A: a broker that restarts before
its session times out does not register anew (kwire.broker.Broker.open registers only when
the image shows it fenced, in controlled shutdown or unknown), and the controller does
nothing on a RegisterBrokerRecord of a known broker either, so the restarted broker keeps
its leaderships and ISR memberships in the same leader epoch. After a power loss its log is
shorter than what it acknowledged: as leader, the followers truncate to it (diverging epoch)
and acknowledged records are gone although only one replica lost them; as follower, it can
be elected from the ISR over a replica that holds them. Kafka refuses a new incarnation's
registration while the old session lives (DUPLICATE_BROKER_REGISTRATION), so the broker is
fenced (out of every ISR and leadership) first; KIP-966 removes a broker that shut down
uncleanly from the ISRs when it registers again.

Not modelled: the Raft quorum itself (one linearizable controller; tests/raft/sim.py
simulates Raft), the controller's own broker (the controller is a separate node here),
fetch sessions and long polls (a follower fetches every 40 ms and at once after data),
partial writes inside a batch (a power loss keeps whole batches: the loader's torn-tail
recovery has its own tests), idempotent producers and transactions, partition
reassignment, unclean elections, log retention and DeleteRecords (retention runs, but
nothing is old enough to go).

Run one seed with its trace: ``python -m tests.replication.sim --seed 7 [--trace]``;
``--count N`` runs N seeds from ``--seed``.
"""
from __future__ import annotations

import heapq
import os
import random
import shutil
import tempfile
import uuid
from dataclasses import dataclass

from kwire.codec.records import build_batch, iter_batches
from kwire.errors import ErrorCode, KafkaError
from kwire.log.config import LogConfig
from kwire.log.manager import LogManager
from kwire.log.validator import CLIENT
from kwire.metadata import records as R
from kwire.metadata import replication_control as RC
from kwire.metadata.image import MetadataImage
from kwire.metadata.placement import UsableBroker, place
from kwire.replication import ReplicaManager
from kwire.replication import follower as F

CONTROLLER = 0
CLIENT_NODE = -1
TOPIC = "sim"
T0 = 1_700_000_000_000


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
    fast_restart_after_power_loss: bool = False
    session_timeout_ms: int = 1000
    lag_ms: int = 800                # replica.lag.time.max.ms
    fault_every_ms: int = 500
    max_down: int = 1

    @classmethod
    def draw(cls, seed: int) -> "Knobs":
        rng = random.Random(seed ^ 0x5EED)
        five = seed % 5 == 4
        return cls(brokers=5 if five else 3, partitions=rng.choice([1, 2, 3]),
                   duration_ms=rng.choice([4000, 6000, 8000]), loss=rng.choice([0.0, 0.02, 0.1]),
                   power_loss=rng.choice([0.0, 0.5, 1.0]), fsync_per_append=rng.random() < 0.3,
                   fault_every_ms=rng.choice([300, 500, 900]), max_down=2 if five else rng.choice([1, 1, 2]))


class Clock:
    def __init__(self, sim: "Sim"):
        self.sim = sim

    def now_ms(self) -> int:
        return self.sim.now


# ---------------------------------------------------------------------- the controller
class ControllerModel:
    """The active controller as one linearizable state machine: the metadata log and image;
    decisions by kwire.metadata.replication_control, as kwire.metadata.controller makes them."""

    def __init__(self, sim: "Sim"):
        self.sim = sim
        self.log: list[tuple] = []
        self.image = MetadataImage()
        self.last_heard: dict[int, int] = {}
        self.swept = -1
        self.shutdown_offsets: dict = {}

    def commit(self, recs: list) -> int:
        for m, o in recs:
            self.log.append((m, o))
            self.image.offset = len(self.log) - 1
            self.image.apply(m, o)
        if recs:
            self.sim.excuse_lost()
            self.sim.trace(f"ctl commit {len(recs)} -> {len(self.log)}: " + "; ".join(_rec_str(m, o) for m, o in recs))
        return len(self.log)

    def tick(self) -> None:
        """Controller.run: fence / unfence, then leaders for leaderless partitions."""
        sim = self.sim
        now = sim.now
        grace_over = now - T0 > sim.k.session_timeout_ms
        for b in sorted(self.image.brokers.values(), key=lambda b: b.node_id):
            last = self.last_heard.get(b.node_id)
            alive = last is not None and now - last < sim.k.session_timeout_ms
            if not b.fenced and not alive and grace_over:
                self.commit(RC.fence_broker(self.image, b.node_id, RC.NEVER))
            elif b.fenced and alive:
                self.commit(RC.unfence_broker(self.image, b.node_id, RC.NEVER))
        if self.image.offset != self.swept:
            self.commit(RC.elect_leaderless(self.image, RC.NEVER))
            self.swept = self.image.offset
        sim.at(100, self.tick)

    # requests from brokers (delivered by the network)
    def on_meta_fetch(self, bid: int, inc: int, applied: int) -> None:
        self.last_heard[bid] = self.sim.now
        recs = self.log[applied:applied + 50]
        self.sim.send(CONTROLLER, bid, "on_metadata", inc, applied, recs)

    def on_register(self, bid: int, inc: int, rec) -> None:
        self.last_heard[bid] = self.sim.now
        self.commit([(R.REGISTER_BROKER, rec)])

    def _stale_epoch(self, bid: int, epoch: int) -> bool:
        b = self.image.brokers.get(bid)
        return b is None or (epoch != -1 and b.epoch != epoch)

    def on_alter_partition(self, bid, inc, rid, broker_epoch, topic_id, index, leader_epoch, partition_epoch,
                           new_isr) -> None:
        if self._stale_epoch(bid, broker_epoch):
            code, offset = ErrorCode.STALE_BROKER_EPOCH, -1
        else:
            res, recs = RC.alter_partition(self.image, bid, topic_id, index, leader_epoch, partition_epoch,
                                           list(new_isr), unclean=RC.NEVER)
            offset = self.commit(recs)
            code = res.code
        self.sim.send(CONTROLLER, bid, "on_alter_partition_reply", inc, rid, code, offset)

    def on_heartbeat_shutdown(self, bid, inc, broker_epoch, applied) -> None:
        """Controller.broker_heartbeat with want_shut_down."""
        self.last_heard[bid] = self.sim.now
        if self._stale_epoch(bid, broker_epoch):
            return
        b = self.image.brokers[bid]
        key = (bid, b.epoch)
        recs = RC.controlled_shutdown(self.image, bid, RC.NEVER)
        if recs:
            self.shutdown_offsets[key] = self.commit(recs)
        done = b.in_controlled_shutdown and not RC.has_leaderships(self.image, bid) \
            and applied >= self.shutdown_offsets.get(key, -1)
        self.sim.send(CONTROLLER, bid, "on_shutdown_reply", inc, done)


def _rec_str(m, o) -> str:
    if m is R.PARTITION_CHANGE:
        parts = [f"p{o.partition_id}"]
        if o.leader != -2:
            parts.append(f"leader={o.leader}")
        if o.isr is not None:
            parts.append(f"isr={list(o.isr)}")
        return "change " + " ".join(parts)
    if m is R.BROKER_REGISTRATION_CHANGE:
        return f"broker {o.broker_id}/{o.broker_epoch} fenced={o.fenced} cs={o.in_controlled_shutdown}"
    if m is R.REGISTER_BROKER:
        return f"register {o.broker_id}/{o.broker_epoch}"
    if m is R.PARTITION:
        return f"partition p{o.partition_id} {list(o.replicas)} leader={o.leader}"
    return m.name


# ---------------------------------------------------------------------- a broker
class Broker:
    def __init__(self, sim: "Sim", bid: int):
        self.sim = sim
        self.id = bid
        self.dir = os.path.join(sim.root, f"b{bid}")
        self.up = False          # the process runs
        self.open = False        # it has replayed the metadata and opened its logs
        self.inc = 0             # incarnation: a crash makes the messages of the old one moot
        self.image: MetadataImage | None = None
        self.applied = 0
        self.lm = None
        self.rm = None
        self.durable: dict = {}  # tp -> offset below which fdatasync made the log durable
        self.disk_view: dict = {}   # while down: tp -> {offset: value} its disk holds
        self.fetching: dict = {}    # leader -> (request id, sent at, asked)
        self.altering: dict = {}    # request id -> (part, new isr, deadline, commit offset or None)
        self.waiters: list = []     # acks=all produces waiting for the high watermark
        self.shutting_down = False
        self.lost_tail = False      # down after a power loss
        self.next_id = 0

    # --- life ----------------------------------------------------------------------
    def start(self) -> None:
        if self.up:
            return
        self.up, self.open, self.inc = True, False, self.inc + 1
        self.lost_tail = False
        self.sim.trace(f"b{self.id} starts (incarnation {self.inc})")
        self._try_open(self.inc)

    def _try_open(self, inc: int) -> None:
        """Broker.open: replay the committed metadata (needs the controller), open the logs,
        take up the roles, register when the image says so."""
        sim = self.sim
        if inc != self.inc or not self.up:
            return
        if not sim.link_ok(self.id, CONTROLLER):
            sim.at(100, self._try_open, inc)
            return
        ctl = sim.ctl
        self.image = MetadataImage()
        for i, (m, o) in enumerate(ctl.log):
            self.image.offset = i
            self.image.apply(m, o)
        self.applied = len(ctl.log)
        ctl.last_heard[self.id] = sim.now
        self.lm = LogManager(self.dir, LogConfig(min_insync_replicas=2, segment_bytes=4096,
                                                 fsync_per_append=sim.k.fsync_per_append),
                             clock=Clock(sim), now_ms=sim.now)
        self.rm = ReplicaManager(self.id, self.lm, lambda: self.image, producer_id_expiration_ms=lambda: 86_400_000,
                                 now_ms=lambda: sim.now)
        self.rm.on_isr_change = self.request_isr
        self.disk_view = {}
        self.durable = {tp: plog.log_end_offset for tp, plog in self.lm}
        self.open = True
        sim.trace(f"b{self.id} open: " + ", ".join(f"p{tp[1]} leo={plog.log_end_offset} hw={plog.high_watermark}"
                                                   for tp, plog in sorted(self.lm)))
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if p.leader == self.id or self.id in p.replicas:
                    self.apply_partition(t.name, p.index)
        b = self.image.brokers.get(self.id)
        if b is None or b.fenced or b.in_controlled_shutdown:
            rec = R.REGISTER_BROKER.cls(broker_id=self.id, incarnation_id=uuid.UUID(int=sim.rng.getrandbits(128)),
                                        broker_epoch=(b.epoch + 1) if b else 1, end_points=[], rack=None,
                                        fenced=False)
            self._register(inc, rec)
        for fn, every in ((self._meta_tick, 60), (self._fetch_tick, 40), (self._isr_tick, sim.k.lag_ms // 2),
                          (self._retention_tick, 700)):
            sim.at(sim.rng.randint(1, every), fn, inc, every)

    def _register(self, inc: int, rec) -> None:
        """submit_metadata until the registration is in this broker's image."""
        if inc != self.inc or not self.up:
            return
        b = self.image.brokers.get(self.id)
        if b is not None and b.epoch == rec.broker_epoch:
            return
        self.sim.send(self.id, CONTROLLER, "on_register", self.id, inc, rec)
        self.sim.at(400, self._register, inc, rec)

    def crash(self, power_loss: bool, *, keep_only_durable: bool = False) -> None:
        sim = self.sim
        sim.trace(f"b{self.id} CRASH ({'power loss' if power_loss else 'process kill'})")
        sim.stats["crashes"] += 1
        sim.stats["power_losses"] += power_loss
        if self.open:
            for tp, plog in list(self.lm):
                if plog.closed:
                    continue
                if power_loss:
                    before = dict(sim.contents(self, tp))
                    durable = max(plog.recovery_point, self.durable.get(tp, 0))
                    leo = plog.log_end_offset
                    keep = durable if keep_only_durable or sim.rng.random() < 0.5 else sim.rng.randint(min(durable, leo), leo)
                    if keep < leo:
                        sim.trace(f"b{self.id} p{tp[1]} loses its tail {keep}..{leo}")
                        plog.truncate_to(keep)
                self.disk_view[tp] = sim.contents(self, tp)
                if power_loss:
                    sim.lost_in_power_loss(self, tp, before, self.disk_view[tp])
                for seg in plog.segments:   # no flush, no checkpoint, no clean-shutdown marker
                    seg.close()
                plog.closed = True
        self.up = self.open = False
        self.inc += 1
        self.lm = self.rm = None
        self.waiters = []
        self.fetching = {}
        self.altering = {}
        self.shutting_down = False
        self.lost_tail = power_loss
        if power_loss:
            sim.excuse_lost()

    def clean_stop(self) -> None:
        self.sim.trace(f"b{self.id} stops cleanly")
        self.disk_view = {tp: self.sim.contents(self, tp) for tp, _ in self.lm}
        self.lm.close()
        self.up = self.open = False
        self.inc += 1
        self.lm = self.rm = None
        self.waiters, self.fetching, self.altering = [], {}, {}
        self.shutting_down = False
        self.sim.at(self.sim.rng.randint(200, 1500), self.start)

    def controlled_shutdown(self) -> None:
        self.shutting_down = True
        self.sim.trace(f"b{self.id} asks for controlled shutdown")
        self._shutdown_tick(self.inc)

    def _shutdown_tick(self, inc: int) -> None:
        if inc != self.inc or not self.open:
            return
        b = self.image.brokers.get(self.id)
        self.sim.send(self.id, CONTROLLER, "on_heartbeat_shutdown", self.id, inc, b.epoch if b else -1,
                      self.applied)
        self.sim.at(100, self._shutdown_tick, inc)

    def on_shutdown_reply(self, inc: int, done: bool) -> None:
        if done and self.open and self.shutting_down:
            self.clean_stop()

    # --- metadata ------------------------------------------------------------------
    def _meta_tick(self, inc: int, every: int) -> None:
        if inc != self.inc or not self.open:
            return
        self.sim.send(self.id, CONTROLLER, "on_meta_fetch", self.id, inc, self.applied)
        self.sim.at(every, self._meta_tick, inc, every)

    def on_metadata(self, inc: int, start: int, recs: list) -> None:
        if not self.open or start > self.applied:
            return
        for m, o in recs[self.applied - start:]:
            self.image.offset = self.applied
            self.image.apply(m, o)
            self.applied += 1
            if m is R.PARTITION or m is R.PARTITION_CHANGE:
                t = self.image.topics_by_id.get(o.topic_id)
                if t is not None:
                    self.apply_partition(t.name, o.partition_id)
        for rid, (part, isr, deadline, offset) in list(self.altering.items()):
            if offset is not None and self.applied >= offset:
                self._alter_done(rid)

    def apply_partition(self, topic: str, index: int) -> None:
        tr = self.rm.apply_partition(topic, index)
        if tr is None:
            return
        p = self.image.topics[topic].partitions[index]
        if tr.leader and tr.new_epoch:
            self.sim.stats["elections"] += p.leader_epoch > 0
            self.sim.trace(f"b{self.id} leads p{index} in epoch {p.leader_epoch} (leo={tr.partition.log.log_end_offset}"
                           f" hw={tr.partition.log.high_watermark})")
            self.sim.check_leader(self, (topic, index), p.leader_epoch, below_epoch=True)
        elif tr.new_epoch:
            self.sim.trace(f"b{self.id} follows {p.leader} on p{index} in epoch {p.leader_epoch}")

    def _retention_tick(self, inc: int, every: int) -> None:
        """server.py's periodic duty: retention, flush of rolled segments, the checkpoints
        (recovery points, high watermarks, log start offsets)."""
        if inc != self.inc or not self.open:
            return
        self.lm.run_retention(self.sim.now)
        self.sim.at(every, self._retention_tick, inc, every)

    # --- ISR changes (kwire.replication.isr) ---------------------------------------
    def request_isr(self, part, new_isr: list[int]) -> None:
        if part.pending_isr is not None or not part.is_leader or not self.open:
            return
        t = self.image.topics.get(part.topic)
        if t is None:
            return
        part.pending_isr = list(new_isr)
        rid = self.next_id = self.next_id + 1
        self.altering[rid] = (part, list(new_isr), self.sim.now + 3000, None)
        b = self.image.brokers.get(self.id)
        self.sim.trace(f"b{self.id} asks p{part.index} isr {part.isr} -> {new_isr}")
        self.sim.send(self.id, CONTROLLER, "on_alter_partition", self.id, self.inc, rid, b.epoch if b else -1,
                      t.topic_id, part.index, part.leader_epoch, part.partition_epoch, list(new_isr))

    def on_alter_partition_reply(self, inc: int, rid: int, code, offset: int) -> None:
        got = self.altering.get(rid)
        if got is None:
            return
        if code in (ErrorCode.NONE, ErrorCode.NEW_LEADER_ELECTED) and self.applied < offset:
            self.altering[rid] = got[:3] + (offset,)   # done once this broker applied the change
            return
        self._alter_done(rid)

    def _alter_done(self, rid: int) -> None:
        part, isr, _, _ = self.altering.pop(rid)
        if part.pending_isr == isr:
            part.pending_isr = None

    def _isr_tick(self, inc: int, every: int) -> None:
        if inc != self.inc or not self.open:
            return
        for rid, (_, _, deadline, _) in list(self.altering.items()):
            if self.sim.now > deadline:
                self._alter_done(rid)
        for part, new_isr in self.rm.isr_shrinks(self.sim.k.lag_ms, self.sim.now):
            self.request_isr(part, new_isr)
        self.sim.at(every, self._isr_tick, inc, every)

    # --- follower fetches (kwire.replication.fetcher) ------------------------------
    def _fetch_tick(self, inc: int, every: int) -> None:
        if inc != self.inc or not self.open:
            return
        self.fetch_now()
        self.sim.at(every, self._fetch_tick, inc, every)

    def fetch_now(self, only: int | None = None) -> None:
        by_leader: dict[int, list] = {}
        for tp, part in sorted(self.rm.partitions.items()):
            if part.is_leader or part.leader < 0 or part.leader == self.id or part.log.closed:
                continue
            by_leader.setdefault(part.leader, []).append((tp, part, F.fetch_position(part)))
        for leader, asked in by_leader.items():
            if only is not None and leader != only:
                continue
            inflight = self.fetching.get(leader)
            if inflight is not None and self.sim.now - inflight[1] < 300:
                continue   # one fetch in flight per leader (a new connection after a timeout)
            rid = self.next_id = self.next_id + 1
            self.fetching[leader] = (rid, self.sim.now, asked)
            self.sim.send(self.id, leader, "on_fetch", self.id, rid, self.inc,
                          [(tp, pos) for tp, _, pos in asked])

    def on_fetch(self, replica_id: int, rid: int, replica_inc: int, items) -> None:
        """The leader's side: ReplicaManager.read_for_follower per partition."""
        if not self.open:
            return
        out = []
        for tp, pos in items:
            res = self.rm.read_for_follower(tp[0], tp[1], replica_id, pos.fetch_offset, pos.last_fetched_epoch,
                                            2048, current_leader_epoch=pos.current_leader_epoch,
                                            now_ms=self.sim.now)
            out.append((tp, res.error, bytes(res.records) if res.size else b"", res.high_watermark,
                        res.log_start_offset, res.diverging_epoch, res.diverging_end_offset))
        self.sim.send(self.id, replica_id, "on_fetch_response", replica_inc, self.id, rid, out)

    def on_fetch_response(self, inc: int, leader: int, rid: int, out) -> None:
        got = self.fetching.get(leader)
        if not self.open or got is None or got[0] != rid:
            return   # an answer on a connection given up
        del self.fetching[leader]
        asked = {tp: (part, pos) for tp, part, pos in got[2]}
        more = False
        for tp, err, records, hw, lso, de, deo in out:
            part, pos = asked[tp]
            if self.rm.partitions.get(tp) is not part or part.is_leader or part.leader_epoch != pos.current_leader_epoch \
                    or part.log.log_end_offset != pos.fetch_offset:
                continue   # moved or changed while the fetch was out
            if err == ErrorCode.NONE:
                if de >= 0 or deo >= 0:
                    to = F.truncation_offset(part, de, deo)
                    if to < part.log.log_end_offset:
                        self.sim.trace(f"b{self.id} p{tp[1]} truncates {part.log.log_end_offset} -> {to} "
                                       f"(diverging epoch {de} ends at {deo} on b{leader})")
                    F.truncate(part, to, "sim")
                    more = True
                    continue
                n = F.append_as_follower(self.rm, part, records, hw, lso, self.sim.now)
                more = more or n > 0
            elif err == ErrorCode.OFFSET_OUT_OF_RANGE:
                before = part.log.log_end_offset
                F.out_of_range(part, lso, hw)
                self.sim.trace(f"b{self.id} p{tp[1]} out of range on b{leader}: {before} -> {part.log.log_end_offset}")
                more = True
        if more:
            self.fetch_now(only=leader)

    # --- clients ---------------------------------------------------------------------
    def on_produce(self, req: dict) -> None:
        if not self.open or self.shutting_down:
            return
        tp = req["tp"]
        now = self.sim.now
        batch = build_batch([(None, v, [], now) for v in req["values"]])
        try:
            res = self.rm.append_records(tp[0], tp[1], bytearray(batch), now, origin=CLIENT,
                                         required_acks=req["acks"])
        except KafkaError as exc:
            self.sim.trace(f"b{self.id} p{tp[1]} produce {req['id']} refused: {ErrorCode(exc.code).name}")
            return
        plog = self.lm.get(*tp)
        if self.sim.k.fsync_per_append:
            self.durable[tp] = plog.log_end_offset   # LogSync: fdatasync before the answer
        self.sim.appended(self, tp, res.base_offset, res.last_offset, req)
        if req["acks"] == -1:
            offset = res.last_offset + 1
            epoch = self.rm.leader_epoch(*tp)
            ev = self.rm.wait_for_high_watermark(tp[0], tp[1], offset)
            self.waiters.append((req, tp, res.base_offset, offset, epoch, ev, now + 2000))

    def poll_waiters(self) -> None:
        """handlers/produce.py _wait_for_replication: the waiter, then acks_all_error."""
        if not self.waiters:
            return
        still = []
        for w in self.waiters:
            req, tp, base, offset, epoch, ev, deadline = w
            if ev is not None and not ev.is_set() and self.sim.now < deadline:
                still.append(w)
                continue
            err = self.rm.acks_all_error(tp[0], tp[1], offset, epoch)
            if err == ErrorCode.NONE:
                self.sim.acknowledged(self, tp, base, req, epoch)
            else:
                self.sim.trace(f"b{self.id} p{tp[1]} acks=all {req['id']} @{base}: {err.name}")
        self.waiters = still


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
        self.last_append: dict = {}  # (broker, incarnation, tp) -> last offset appended
        self.consumers: dict = {}    # tp -> next offset
        self.stats = {"acked": 0, "appended": 0, "consumed": 0, "crashes": 0, "power_losses": 0, "excused": 0,
                      "steps": 0, "elections": 0}
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
        sim = Sim(seed, keep_trace=args.trace)
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
