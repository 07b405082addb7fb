"""The active controller's partition and broker duties (the Trio side of Kafka's
ReplicationControlManager / BrokerHeartbeatManager), run by every node and acting only while
it is the Raft leader and has applied everything committed.

- Liveness: in combined mode every node fetches the metadata log from the leader all the
  time, so the leader's fetch bookkeeping is the heartbeat. A registered broker not heard from
  for ``broker.session.timeout.ms`` is fenced: it leaves every ISR (with ELR off, not the last
  member), every partition it led gets a new leader from the ISR (leader -1 when none is
  left, or an unclean election where the topic allows it), then a
  BrokerRegistrationChangeRecord fences it - one broker per proposal, so each decision sees
  the one before applied. A fenced broker heard from again is unfenced, and leaderless
  partitions whose ISR holds it (with the ISR empty, their ELR) get it as leader.
- Leaderless partitions get a leader as soon as an ISR member is active again (a broker that
  registered anew after a controlled shutdown, say).
- AlterPartition (from partition leaders), controlled shutdown (BrokerHeartbeat with
  want_shut_down), ElectLeaders and AlterPartitionReassignments are decided by
  kwire.metadata.replication_control and committed here.
- Failed log dirs: a broker reports them in its BrokerHeartbeat (offline_log_dirs, with the
  partitions it hosts there, kwire_offline_partitions), at once and then with every
  heartbeat while they stay offline; it leaves those partitions' ISRs and leaderships (Kafka's
  ReplicationControlManager.handleDirectoriesOffline), and its replicas there are never
  elected again until it registers anew (a restart on a healthy disk). The report is kept
  here, by the active controller, for the broker's epoch; a new controller learns it from
  the next heartbeat.
- auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds, each partition
  whose preferred leader (first replica) is an active ISR member again is led by it again.
  leader.imbalance.per.broker.percentage is not used, as in Kafka's KRaft controller.

Decisions that change partitions take one lock, so each one reads an image that holds every
decision before it (Kafka's controller is a single thread for the same reason).
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

import trio

from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata import replication_control as RC
from kwire.metadata.partition_change import RECOVERED, AlterPartitionResult, Election
from kwire.raft.driver import CommitFailed

log = logging.getLogger("kwire.controller")

LOOP_INTERVAL = 0.5


@dataclass
class HeartbeatReply:
    """The controller's answer to a BrokerHeartbeat (Kafka's BrokerHeartbeatReply)."""
    code: ErrorCode
    is_caught_up: bool = False
    is_fenced: bool = True
    in_controlled_shutdown: bool = False
    should_shut_down: bool = False


class Controller:
    def __init__(self, quorum):
        self.quorum = quorum
        self.broker = quorum.broker
        self.driver = quorum.driver
        self.node_id = quorum.node_id
        self.lock = trio.Lock()
        self._leader_since: float | None = None
        self._swept_offset = -1            # the image offset the last leaderless sweep saw
        self._next_rebalance: float | None = None
        self._shutdown_offsets: dict[tuple[int, int], int] = {}   # (broker, epoch) -> offset of its records
        self._wake = trio.Event()
        # broker id -> (broker epoch, {(topic id, partition)}): its replicas in failed log dirs
        self._offline_replicas: dict[int, tuple[int, set]] = {}
        # a registration or a config change may let a leaderless partition be led at once
        self.broker.publishers.install(self)

    name = "ControllerWakeUp"

    def on_metadata_update(self, delta, image) -> None:
        """A metadata publisher: a batch that registered a broker or changed a config wakes
        the controller's loop (a leaderless partition may be led at once)."""
        if delta.registered_brokers or delta.configs_changed or delta.is_snapshot:
            self._wake.set()

    # ------------------------------------------------------------------ helpers
    @property
    def image(self):
        return self.broker.image

    def unclean(self, topic) -> bool:
        """unclean.leader.election.enable of ``topic`` (else the broker's default)."""
        return bool(self.broker.topic_config(topic, "unclean.leader.election.enable"))

    def ready(self) -> bool:
        """The active controller, with everything committed applied to its image."""
        d = self.driver
        return d.is_leader and d.high_watermark > d.core._epoch_start_offset and d.applied_offset >= d.high_watermark

    async def commit(self, recs: list, timeout: float = 10.0) -> tuple[ErrorCode, int]:
        """Propose ``recs``; (NONE, offset) once committed and applied here."""
        try:
            offset = await self.driver.propose_and_wait(tuple(R.encode_record(m, o) for m, o in recs), timeout)
        except CommitFailed as exc:
            log.info("controller %d: proposal failed: %s", self.node_id, exc)
            return ErrorCode.NOT_CONTROLLER, -1
        except trio.TooSlowError:
            return ErrorCode.REQUEST_TIMED_OUT, -1
        return ErrorCode.NONE, offset

    def _cfg(self, name: str, default):
        try:
            v = self.broker.config.get(name)
        except KeyError:
            return default
        return default if v is None else v

    # ------------------------------------------------------------------ the loop
    async def run(self) -> None:
        while True:
            # a tenth of the session timeout (at most LOOP_INTERVAL): a fence comes that soon after it
            with trio.move_on_after(min(LOOP_INTERVAL, self.quorum.session_timeout_ms / 10_000)):
                await self._wake.wait()
            self._wake = trio.Event()
            if not self.driver.is_leader:
                self._leader_since = None
                self._next_rebalance = None
                continue
            now = trio.current_time()
            if self._leader_since is None:
                self._leader_since = now
            if not self.ready():
                continue
            async with self.lock:
                await self._fence_and_unfence(now)
                await self._elect_leaderless()
                await self._maybe_rebalance(now)

    def offline_replicas(self) -> dict:
        """(topic id, partition) -> brokers whose replica there is in a failed log dir, for
        the brokers' current epochs (a broker that registered again starts clean)."""
        out: dict = {}
        for broker_id, (epoch, parts) in list(self._offline_replicas.items()):
            b = self.image.brokers.get(broker_id)
            if b is None or b.epoch != epoch:
                del self._offline_replicas[broker_id]
                continue
            for tp in parts:
                out.setdefault(tp, set()).add(broker_id)
        return out

    async def _fence_and_unfence(self, now: float) -> None:
        d = self.driver
        timeout_ms = self.quorum.session_timeout_ms
        grace_over = (now - self._leader_since) * 1000 > timeout_ms   # a new leader has not heard anyone yet
        for b in sorted(self.image.brokers.values(), key=lambda b: b.node_id):
            if b.node_id == self.node_id or not self.ready():
                continue
            ago = d.last_fetch_ms(b.node_id)
            alive = ago is not None and ago < timeout_ms
            if not b.fenced and not alive and grace_over:
                recs = RC.fence_broker(self.image, b.node_id, self.unclean)
                what = "fence"
            elif b.fenced and alive:
                recs = RC.unfence_broker(self.image, b.node_id, self.unclean, self.offline_replicas())
                what = "unfence"
            else:
                continue
            log.info("controller %d: %s broker %d (%d partition change(s))", self.node_id, what, b.node_id,
                     len(recs) - 1)
            code, _ = await self.commit(recs, 5.0)
            if code != ErrorCode.NONE:
                log.info("controller %d: %s of broker %d not committed: %s", self.node_id, what, b.node_id,
                         code.name)
                return

    async def _elect_leaderless(self) -> None:
        if self.image.offset == self._swept_offset:
            return
        recs = RC.elect_leaderless(self.image, self.unclean, self.offline_replicas())
        if recs:
            log.info("controller %d: leaders for %d leaderless partition(s)", self.node_id, len(recs))
            code, _ = await self.commit(recs, 5.0)
            if code != ErrorCode.NONE:
                return
        self._swept_offset = self.image.offset

    async def _maybe_rebalance(self, now: float) -> None:
        if not self._cfg("auto.leader.rebalance.enable", True):
            return
        interval = float(self._cfg("leader.imbalance.check.interval.seconds", 300))
        if self._next_rebalance is None:
            self._next_rebalance = now + interval
        if now < self._next_rebalance:
            return
        self._next_rebalance = now + interval
        recs = RC.rebalance_preferred_leaders(self.image)
        if recs:
            log.info("controller %d: preferred leaders back for %d partition(s)", self.node_id, len(recs))
            await self.commit(recs, 5.0)

    # ------------------------------------------------------------------ requests
    def _stale_epoch(self, broker_id: int, broker_epoch: int) -> bool:
        b = self.image.brokers.get(broker_id)
        return b is None or (broker_epoch != -1 and b.epoch != broker_epoch)

    async def alter_partition(self, broker_id: int, broker_epoch: int, topic_id: uuid.UUID, partition: int,
                              leader_epoch: int, partition_epoch: int, new_isr: list[int], *,
                              leader_recovery_state: int = RECOVERED,
                              broker_epochs: list[int] | None = None) -> AlterPartitionResult:
        """One partition of an AlterPartition from ``broker_id`` (checked, committed, answered)."""
        async with self.lock:
            if not self.ready():
                return AlterPartitionResult(ErrorCode.NOT_CONTROLLER)
            if self._stale_epoch(broker_id, broker_epoch):
                return AlterPartitionResult(ErrorCode.STALE_BROKER_EPOCH)
            res, recs = RC.alter_partition(self.image, broker_id, topic_id, partition, leader_epoch, partition_epoch,
                                           list(new_isr), leader_recovery_state=leader_recovery_state,
                                           broker_epochs=broker_epochs, unclean=self.unclean)
            if recs:
                code, _ = await self.commit(recs)
                if code != ErrorCode.NONE:
                    return AlterPartitionResult(code)
        return res

    async def broker_heartbeat(self, broker_id: int, broker_epoch: int, current_metadata_offset: int,
                               want_shut_down: bool, offline_log_dirs=(), offline_partitions=()) -> HeartbeatReply:
        """A BrokerHeartbeat: with ``want_shut_down``, the broker enters controlled shutdown
        (leaderships moved, ISRs left); it should shut down once it leads nothing and has
        applied those records (``current_metadata_offset``). ``offline_partitions`` ((topic
        id, partition) in the ``offline_log_dirs`` the broker reports): it leaves their ISRs
        and leaderships at once."""
        async with self.lock:
            if not self.ready():
                return HeartbeatReply(ErrorCode.NOT_CONTROLLER)
            if self._stale_epoch(broker_id, broker_epoch):
                return HeartbeatReply(ErrorCode.STALE_BROKER_EPOCH)
            b = self.image.brokers[broker_id]
            key = (broker_id, b.epoch)
            if offline_log_dirs:
                code = await self._dirs_offline(b, list(offline_log_dirs), set(offline_partitions))
                if code != ErrorCode.NONE:
                    return HeartbeatReply(code)
            if want_shut_down:
                recs = RC.controlled_shutdown(self.image, broker_id, self.unclean)
                if recs:
                    log.info("controller %d: broker %d in controlled shutdown (%d partition change(s))",
                             self.node_id, broker_id, sum(m is R.PARTITION_CHANGE for m, _ in recs))
                    code, offset = await self.commit(recs)
                    if code != ErrorCode.NONE:
                        return HeartbeatReply(code)
                    self._shutdown_offsets[key] = offset
            b = self.image.brokers.get(broker_id, b)   # images are immutable: the one after the commits
            done = (want_shut_down and b.in_controlled_shutdown and not RC.has_leaderships(self.image, broker_id)
                    and current_metadata_offset >= self._shutdown_offsets.get(key, -1))
            return HeartbeatReply(ErrorCode.NONE, True, b.fenced, b.in_controlled_shutdown, done)

    async def _dirs_offline(self, b, dirs: list, partitions: set) -> ErrorCode:
        """Kafka's handleDirectoriesOffline, under the lock: remember the broker's replicas in
        failed dirs (for its epoch) and commit the ISR and leadership changes they need."""
        epoch, known = self._offline_replicas.get(b.node_id, (b.epoch, set()))
        if epoch != b.epoch:
            known = set()
        new = partitions - known
        self._offline_replicas[b.node_id] = (b.epoch, known | partitions)
        recs = RC.offline_dir_updates(self.image, b.node_id, partitions, self.unclean, self.offline_replicas())
        if new or recs:
            log.warning("controller %d: broker %d reports log dir(s) %s offline; %d partition(s) there, "
                        "%d leadership/ISR change(s)", self.node_id, b.node_id,
                        ", ".join(str(d) for d in dirs), len(partitions), len(recs))
        if recs:
            code, _ = await self.commit(recs)
            return code
        return ErrorCode.NONE

    async def elect_leaders(self, election: Election, topic_partitions: dict[str, list[int]] | None
                            ) -> tuple[ErrorCode, dict[str, list[tuple[int, ErrorCode, str | None]]]]:
        """ElectLeaders: (top-level code, per-topic partition results)."""
        async with self.lock:
            if not self.ready():
                return ErrorCode.NOT_CONTROLLER, {}
            results, recs = RC.elect_leaders(self.image, election, topic_partitions)
            if recs:
                log.info("controller %d: %s election for %d partition(s)", self.node_id, election.value, len(recs))
                code, _ = await self.commit(recs)
                if code != ErrorCode.NONE:
                    return code, {}
        return ErrorCode.NONE, results

    async def alter_reassignments(self, topics: dict[str, list[tuple[int, list[int] | None]]],
                                  allow_rf_change: bool = True
                                  ) -> tuple[ErrorCode, dict[str, list[tuple[int, ErrorCode, str | None]]]]:
        """AlterPartitionReassignments: start (target replicas) or cancel (None) reassignments;
        (top-level code, per-topic partition results). One proposal for the whole request."""
        async with self.lock:
            if not self.ready():
                return ErrorCode.NOT_CONTROLLER, {}
            results: dict[str, list] = {}
            recs: list = []
            for name, parts in topics.items():
                rows = results.setdefault(name, [])
                for pid, target in parts:
                    code, msg, r = RC.alter_reassignment(self.image, name, pid, target,
                                                         allow_rf_change=allow_rf_change, unclean=self.unclean)
                    rows.append((pid, code, msg))
                    recs += r
            if recs:
                log.info("controller %d: reassignment of %d partition(s)", self.node_id, len(recs))
                code, _ = await self.commit(recs)
                if code != ErrorCode.NONE:
                    return code, {}
        return ErrorCode.NONE, results
