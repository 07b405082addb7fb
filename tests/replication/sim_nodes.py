"""The nodes of the replication simulation (tests/replication/sim.py): the controller as one
linearizable state machine deciding with kwire.metadata.replication_control, and brokers
made of the REAL LogManager + ReplicaManager over their own, lagging, metadata image, with the
follower fetch and ISR-change edges that kwire.replication.fetcher / isr run in Trio, here as
messages through the simulation's network. Nothing here draws randomness or time except
through the simulation (``sim.rng``, ``sim.now``), so a seed replays exactly.
"""
from __future__ import annotations

import os
import uuid

from kwire.metadata.delta import replay
from kwire.codec.records import build_batch
from kwire.errors import ErrorCode
from kwire.log.config import LogConfig
from kwire.log.manager import LogManager
from kwire.log.validator import CLIENT
from kwire.metadata import records as R
from kwire.metadata import replication_control as RC
from kwire.metadata.image import MetadataImage
from kwire.replication import ReplicaManager
from kwire.replication import follower as F

CONTROLLER = 0
CLIENT_NODE = -1
TOPIC = "sim"
T0 = 1_700_000_000_000


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
            self.image = replay(self.image, [(m, o)])
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
        """MetadataQuorum._registration_effects: a broker registering again leaves the ISRs
        it shares first (kwire.metadata.replication_control.register_again)."""
        self.last_heard[bid] = self.sim.now
        old = self.image.brokers.get(bid)
        clean = old is not None and old.in_controlled_shutdown   # as MetadataQuorum decides it
        self.commit(RC.register_again(self.image, rec.broker_id, rec.broker_epoch, clean_shutdown=clean)
                    + [(R.REGISTER_BROKER, rec)])

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
        self.registering = None  # the broker epoch being registered: roles wait for it
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
            self.image = replay(self.image, [(m, o)])
        self.applied = len(ctl.log)
        ctl.last_heard[self.id] = sim.now
        # log.flush.per.append is the simulation's to model (``durable``, what a power loss
        # keeps): a real fdatasync per append would only slow the runs down
        self.lm = LogManager(self.dir, LogConfig(min_insync_replicas=2, segment_bytes=4096),
                             clock=Clock(sim), now_ms=sim.now)
        self.rm = ReplicaManager(self.id, self.lm, lambda: self.image, producer_id_expiration_ms=lambda: 86_400_000,
                                 now_ms=lambda: sim.now)
        self.rm.on_isr_change = self.request_isr
        self.disk_view = {}
        self.durable = {tp: plog.log_end_offset for tp, plog in self.lm}
        self.open = True
        sim.trace(f"b{self.id} open: " + ", ".join(f"p{tp[1]} leo={plog.log_end_offset} hw={plog.high_watermark}"
                                                   for tp, plog in sorted(self.lm)))
        b = self.image.brokers.get(self.id)
        # Broker.open: a new registration after an unclean shutdown too, before the broker
        # takes up its partition roles (it takes them up from the image that holds it)
        if b is None or b.fenced or b.in_controlled_shutdown or not self.lm.was_clean_shutdown:
            rec = R.REGISTER_BROKER.cls(broker_id=self.id, incarnation_id=uuid.UUID(int=sim.rng.getrandbits(128)),
                                        broker_epoch=(b.epoch + 1) if b else 1, end_points=[], rack=None,
                                        fenced=False)
            self.registering = rec.broker_epoch
            self._register(inc, rec)
        else:
            self._take_up_roles()
        for fn, every in ((self._meta_tick, 60), (self._fetch_tick, 40), (self._isr_tick, sim.k.lag_ms // 2),
                          (self._retention_tick, 700)):
            sim.at(sim.rng.randint(1, every), fn, inc, every)

    def _take_up_roles(self) -> None:
        self.registering = None
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if p.leader == self.id or self.id in p.replicas:
                    self.apply_partition(t.name, p.index)

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
            for tp, plog in sorted(self.lm, key=lambda e: e[0]):   # not the directory order
                if plog.closed:
                    continue
                if power_loss:
                    before = dict(sim.contents(self, tp))
                    durable = max(plog.recovery_point, self.durable.get(tp, 0))
                    leo = plog.log_end_offset
                    keep = durable if keep_only_durable or sim.rng.random() < 0.5 \
                        else sim.rng.randint(min(durable, leo), leo)
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
            self.image = replay(self.image, [(m, o)])
            self.applied += 1
            if self.registering is not None:
                b = self.image.brokers.get(self.id)
                if b is not None and b.epoch == self.registering:
                    self._take_up_roles()
                continue
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
        pending = part.pending_isr = list(new_isr)   # isr.py: this request's own list
        rid = self.next_id = self.next_id + 1
        self.altering[rid] = (part, pending, self.sim.now + 3000, None)
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
        if part.pending_isr is isr:
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
            if self.rm.partitions.get(tp) is not part or part.is_leader \
                    or part.leader_epoch != pos.current_leader_epoch or part.log.log_end_offset != pos.fetch_offset:
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
        res = self.rm.append(tp[0], tp[1], bytearray(batch), now, acks=req["acks"], origin=CLIENT)
        if res.error is not None and res.base_offset < 0:
            self.sim.trace(f"b{self.id} p{tp[1]} produce {req['id']} refused: {res.code.name}")
            return
        if self.sim.k.fsync_per_append:   # the outcome's LogSync: fdatasync before the answer
            self.durable[tp] = self.lm.get(*tp).log_end_offset
        self.sim.appended(self, tp, res.base_offset, res.last_offset, req)
        if req["acks"] == -1:
            self.waiters.append((req, tp, res, now + 2000))

    def poll_waiters(self) -> None:
        """The broker's ReplicaManager.await_appends, polled: an acks=all outcome completes
        once its high watermark event is set or its deadline passed."""
        if not self.waiters:
            return
        still = []
        for w in self.waiters:
            req, tp, res, deadline = w
            ev = res.replicated
            if not res.completed and ev is not None and not ev.is_set() and self.sim.now < deadline:
                still.append(w)
                continue
            err = res.complete()
            if err == ErrorCode.NONE:
                self.sim.acknowledged(self, tp, res.base_offset, req, res.leader_epoch)
            else:
                self.sim.trace(f"b{self.id} p{tp[1]} acks=all {req['id']} @{res.base_offset}: {err.name}")
        self.waiters = still
