"""The metadata quorum of one node: the Raft driver over the metadata log and its transport
(kwire.raft), the controller listener (kwire.metadata.controller_server), forwarding to the
active controller (kwire.metadata.controller_apis), and the controller's duties.

Every node of a cluster is broker and controller at once (Kafka's
``process.roles=broker,controller``). Metadata changes go through :meth:`MetadataQuorum.commit`:
on the active controller (the Raft leader) they are checked against the image (and the
changes still in flight), proposed, and answered once committed and applied; elsewhere they
are forwarded to the leader's controller listener, and answered once this node has applied
them too. A plain ``kwire serve`` is a quorum of one voter that elects itself at once.

Topic changes (CreateTopics, CreatePartitions) travel as intents, not records: a node sends
what the client asked to the active controller (a CreateTopics / CreatePartitions request on
the controller listener, as a KRaft broker's forwarding reaches ControllerApis), and the
controller checks it against ITS image, places the replicas (kwire.metadata.placement),
makes the logs of the partitions it will lead itself, and commits the records, one topic
change at a time (Kafka's controller is single-threaded too). The asking node answers once it
has applied them. Partitions another node leads are opened by that node as the records apply;
a failure there marks the partition offline on that node (KAFKA_STORAGE_ERROR).

Partitions and brokers (fencing, elections, AlterPartition, controlled shutdown,
ElectLeaders, preferred leader rebalancing) are the active controller's duties in
kwire.metadata.controller; ``alter_partition``, ``controlled_shutdown`` and ``elect_leaders``
here reach them from any node (kwire.metadata.controller_apis on the controller listener).
"""
from __future__ import annotations

import collections
import logging
import os
import time
import uuid

import trio

from kwire import link_faults
from kwire.errors import ErrorCode, KafkaError
from kwire.metadata import controller_apis as CA
from kwire.metadata.config_control import elr_enabled, elr_feature_records, elr_safety_records
from kwire.metadata import records as R
from kwire.metadata import replication_control as RC
from kwire.metadata import topic_changes as TC
from kwire.metadata.topic_changes import TopicOutcome
from kwire.metadata.controller import Controller
from kwire.metadata.controller_server import ControllerServer
from kwire.metadata.partition_change import RECOVERED, AlterPartitionResult, Election
from kwire.raft.core import RaftConfig
from kwire.raft.driver import CommitFailed, RaftDriver
from kwire.raft.storage import RaftStorage
from kwire.raft.transport import RaftTransport

log = logging.getLogger("kwire.quorum")

DEFAULT_SESSION_TIMEOUT_MS = 9000
DEFAULT_SNAPSHOT_INTERVAL = 10000   # committed entries between metadata snapshots


class MetadataError(KafkaError):
    pass


def raft_config_of(config) -> RaftConfig:
    """The quorum's timing from the broker's controller.quorum.* keys (Kafka's QuorumConfig)."""
    return RaftConfig(election_timeout_ms=config.get("controller.quorum.election.timeout.ms"),
                      fetch_timeout_ms=config.get("controller.quorum.fetch.timeout.ms"),
                      election_backoff_max_ms=config.get("controller.quorum.election.backoff.max.ms"),
                      request_timeout_ms=config.get("controller.quorum.request.timeout.ms"),
                      retry_backoff_ms=config.get("controller.quorum.retry.backoff.ms"))


class MetadataQuorum:
    def __init__(self, broker, voters: dict[int, tuple[str, int] | None], *, controller_listeners=None,
                 raft_config: RaftConfig | None = None):
        if raft_config is None:
            raft_config = raft_config_of(broker.config)
        self.broker = broker
        self.node_id = broker.node_id
        self.voters = dict(voters)
        self.storage = RaftStorage(os.path.join(broker.data_dir, "__cluster_metadata-0"))
        self.driver = RaftDriver(self.node_id, self.voters.keys(), self.storage, apply=broker._apply_entry,
                                 install_snapshot=broker._install_snapshot, config=raft_config,
                                 snapshot=broker._snapshot,
                                 snapshot_interval=int(broker.config.get("metadata.snapshot.interval.entries")
                                                       or DEFAULT_SNAPSHOT_INTERVAL))
        self.listeners = controller_listeners
        self.controller = Controller(self)   # the active controller's partition and broker duties
        self.transport = None   # the Raft messages to and from the other voters (kwire.raft.transport)
        self.server = None      # the controller listener (kwire.metadata.controller_server)
        if len(self.voters) > 1:
            unreachable = link_faults.from_config(broker.config, self.node_id)
            self.transport = RaftTransport(self.driver, {n: a for n, a in self.voters.items() if a},
                                           cluster_id=broker.cluster_id, unreachable=unreachable,
                                           link=broker.peer_security.controller)
            self.server = ControllerServer(
                self.transport, {**CA.handlers(self.controller),
                                 **CA.forwarding_handlers(self._on_forward, self._on_controller_request)},
                unreachable=unreachable, listener_security=broker.peer_security.controller_listener,
                authorizer=broker.authorizer)
        self._pending_topics: set[str] = set()
        # (dir ids, [(topic id, partition)]) of this broker's failed log dirs, sent with every heartbeat
        self.offline_report: tuple[list, list] = ([], [])
        # (monotonic time, ms) of recent commits on this node as active controller (kwire.metrics)
        self.commit_latencies: collections.deque = collections.deque(maxlen=1024)
        self._pending_producer_ids: list[int] = []   # next_producer_id of ProducerIdsRecords in flight
        try:
            self.session_timeout_ms = int(broker.config.get("broker.session.timeout.ms"))
        except (KeyError, TypeError, ValueError):
            self.session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS

    @property
    def single(self) -> bool:
        return len(self.voters) == 1

    async def start(self, nursery) -> None:
        await nursery.start(self.driver.run)
        if self.transport is not None:
            await nursery.start(self.transport.run)
            await nursery.start(self.server.run, self.listeners)
        nursery.start_soon(self.controller.run)  # alone too: fences brokers registered before

    async def wait_caught_up(self, first_report: float = 2.0, every: float = 10.0) -> None:
        """Until a leader is known and this node applied what the quorum committed. A wait
        longer than ``first_report`` seconds is logged then every ``every`` seconds, naming
        what is missing (a leader, unreachable voters, how far the log is applied)."""
        d = self.driver
        start = trio.current_time()
        next_report = start + first_report
        while not (d.leader_id >= 0 and d.high_watermark > 0 and d.applied_offset >= d.high_watermark
                   and (not d.is_leader or d.high_watermark > d.core._epoch_start_offset)):
            with trio.move_on_after(0.05):
                await d.wait_changed()
            now = trio.current_time()
            if now >= next_report:
                next_report = now + every
                log.info("node %d waiting for the metadata quorum (%.0f s): %s", self.node_id, now - start,
                         self.wait_reason())
        if trio.current_time() - start >= first_report:
            log.info("node %d caught up with the metadata quorum after %.1f s: leader %d, epoch %d",
                     self.node_id, trio.current_time() - start, d.leader_id, d.epoch)

    def wait_reason(self) -> str:
        """What a starting node still waits for, in words (start-up logs)."""
        d = self.driver
        missing = self.transport.unreachable_peers() if self.transport is not None else {}
        need = len(self.voters) // 2 + 1
        if d.leader_id < 0:
            what = f"no leader elected yet (epoch {d.epoch}; a leader needs {need} of {len(self.voters)} voters)"
        else:
            what = (f"leader {d.leader_id} in epoch {d.epoch}; applied the metadata log up to "
                    f"{d.applied_offset} of {d.high_watermark}")
        if missing:
            what += "; cannot reach " + ", ".join(f"voter {n} at {why}" for n, why in missing.items())
        return what

    # ------------------------------------------------------------------ committing
    async def commit(self, values: list[bytes], timeout: float = 15.0) -> int:
        """Commit metadata records (on the controller, forwarded if need be); their offset once
        applied here. Raises MetadataError with the controller's error code."""
        d = self.driver
        deadline = trio.current_time() + timeout
        while True:
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                raise MetadataError("no active controller answered in time", ErrorCode.REQUEST_TIMED_OUT)
            leader = d.leader_id
            if d.is_leader:
                code, offset, msg = await self._controller_commit(values, remaining)
            elif leader >= 0 and self.transport is not None:
                try:
                    code, offset = await CA.send_metadata_records(self.transport, leader, values, min(remaining, 10.0))
                    msg = None
                except (ConnectionError, OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
                    log.debug("forwarding to controller %d failed: %s", leader, exc)
                    code, offset, msg = ErrorCode.NOT_CONTROLLER, -1, None
                if offset >= 0:   # wait until this node has applied as far as the controller
                    await d.wait_applied(offset + 1, max(0.1, deadline - trio.current_time()))
            else:
                code, offset, msg = ErrorCode.NOT_CONTROLLER, -1, None
            if code == ErrorCode.NONE:
                return offset
            if code != ErrorCode.NOT_CONTROLLER:
                raise MetadataError(msg or ErrorCode(code).name, ErrorCode(code))
            with trio.move_on_after(min(0.05, max(0.0, deadline - trio.current_time()))):
                await d.wait_changed()

    def _check(self, values: list[bytes]) -> tuple[ErrorCode, str] | None:
        """What the controller refuses against its image (and the changes in flight)."""
        image = self.broker.image
        for v in values:
            msg, obj = R.decode_record(v)
            if msg is R.TOPIC and (obj.name in image.topics or obj.name in self._pending_topics):
                return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{obj.name}' already exists."
            if msg is R.REMOVE_TOPIC and obj.topic_id not in image.topics_by_id:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
            if msg is R.UNREGISTER_BROKER and obj.broker_id not in image.brokers:
                return ErrorCode.BROKER_ID_NOT_REGISTERED, f"Broker ID {obj.broker_id} is not currently registered"
            if msg is R.PRODUCER_IDS:
                taken = max([image.next_producer_id, *self._pending_producer_ids])
                if obj.next_producer_id <= taken:
                    # a block read from a stale image would overlap one already given out: refused,
                    # so two brokers never hand out the same ids (the broker retries from a newer image)
                    return (ErrorCode.INVALID_REQUEST,
                            f"producer id block ending at {obj.next_producer_id} is not past {taken}")
        return None

    def _registration_effects(self, values: list[bytes]) -> list[bytes]:
        """Before a broker's new registration (it restarted), the partition changes that take
        it out of the ISRs it shares (kwire.metadata.replication_control.register_again); with
        the first registration of a new cluster, the cluster-level min.insync.replicas a
        freshly formatted Kafka 4.1+ cluster holds (kwire.metadata.config_control)."""
        image = self.broker.image
        static_min_isr = self.broker.config.values.get("min.insync.replicas", 1)
        emulated = self.broker.config.values.get("kwire.emulate.kafka.version")
        feature = elr_feature_records(image, emulated)
        # the safety records come with ELR only (Kafka writes them when the feature turns on): a
        # cluster emulating a release before 4.1 keeps broker-level min.insync.replicas as it had
        elr_on = any(o.feature_level >= 1 for _, o in feature) or elr_enabled(image)
        extra: list[bytes] = [R.encode_record(m, o) for m, o in
                              feature + (elr_safety_records(image, static_min_isr) if elr_on else [])]
        for v in values:
            msg, obj = R.decode_record(v)
            if msg is R.REGISTER_BROKER:
                # a restart after a completed controlled shutdown (kwire's clean stop) counts as
                # clean: Kafka's PreviousBrokerEpoch has no place in a RegisterBrokerRecord
                old = image.brokers.get(obj.broker_id)
                clean = old is not None and old.in_controlled_shutdown
                recs = RC.register_again(image, obj.broker_id, obj.broker_epoch, self.controller.unclean,
                                         clean_shutdown=clean)
                if recs:
                    log.info("controller %d: broker %d registers again (epoch %d): out of %d ISR(s) until it "
                             "catches up", self.node_id, obj.broker_id, obj.broker_epoch, len(recs))
                extra += [R.encode_record(m, o) for m, o in recs]
        return extra + list(values) if extra else values

    async def _controller_commit(self, values: list[bytes], timeout: float) -> tuple[int, int, str | None]:
        kinds = {R.decode_record(v)[0] for v in values}
        if R.PRODUCER_IDS in kinds and R.REGISTER_BROKER not in kinds:
            # A producer-id block is checked against the image (_check): a controller that has
            # just taken over, and not yet applied its predecessor's last blocks, would let an
            # overlapping one through, so it decides only once its image holds all that is
            # committed (Kafka's active controller owns the next block: AllocateProducerIds)
            if not self.controller.ready():
                return ErrorCode.NOT_CONTROLLER, -1, None
            return await self._commit_checked(values, timeout)
        if R.REGISTER_BROKER in kinds:
            # partition changes are decided one at a time against the applied image (a
            # concurrent rebalance must not pick a leader this registration takes out)
            async with self.controller.lock:
                if not self.controller.ready():   # decide only on an image holding all that is committed
                    return ErrorCode.NOT_CONTROLLER, -1, None
                return await self._commit_checked(self._registration_effects(values), timeout)
        return await self._commit_checked(values, timeout)

    async def _commit_checked(self, values: list[bytes], timeout: float) -> tuple[int, int, str | None]:
        d = self.driver
        err = self._check(values)
        if err:
            return err[0], d.applied_offset - 1, err[1]
        decoded = [R.decode_record(v) for v in values]
        names = {obj.name for msg, obj in decoded if msg is R.TOPIC}
        pids = [obj.next_producer_id for msg, obj in decoded if msg is R.PRODUCER_IDS]
        self._pending_topics |= names
        self._pending_producer_ids += pids
        t0 = trio.current_time()
        try:
            offset = await d.propose_and_wait(tuple(values), timeout)
            self.commit_latencies.append((time.monotonic(), (trio.current_time() - t0) * 1000))
        except CommitFailed as exc:
            log.info("metadata proposal failed: %s", exc)
            return ErrorCode.NOT_CONTROLLER, -1, None
        finally:
            self._pending_topics -= names
            for pid in pids:
                self._pending_producer_ids.remove(pid)
        return ErrorCode.NONE, offset, None

    async def _on_forward(self, values: list[bytes]) -> tuple[int, int]:
        if not self.driver.is_leader:
            return ErrorCode.NOT_CONTROLLER, -1
        code, offset, _ = await self._controller_commit(values, 10.0)
        return code, offset

    # ------------------------------------------------------------------ topic changes
    async def create_topic(self, req: TC.CreateTopic, timeout: float = 15.0) -> TopicOutcome:
        """CreateTopics for one topic, decided by the active controller (this node or the one
        it forwards to); answered once applied here."""
        return await self._topic_change(req, timeout)

    async def create_partitions(self, req: TC.CreatePartitions, timeout: float = 15.0) -> TopicOutcome:
        return await self._topic_change(req, timeout)

    async def _topic_change(self, req, timeout: float) -> TopicOutcome:
        d = self.driver
        deadline = trio.current_time() + timeout
        while True:
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                return TopicOutcome(ErrorCode.REQUEST_TIMED_OUT, "no active controller answered in time")
            leader = d.leader_id
            if d.is_leader:
                out = await self._controller_topic_change(req, remaining)
            elif leader >= 0 and self.transport is not None:
                try:
                    out = await CA.send_topic_change(self.transport, leader, req, min(remaining, 10.0))
                except (ConnectionError, OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
                    log.debug("forwarding to controller %d failed: %s", leader, exc)
                    out = TopicOutcome(ErrorCode.NOT_CONTROLLER)
                if out.code == ErrorCode.NONE and not req.validate_only:
                    await self._wait_applied_here(req, out, deadline)
            else:
                out = TopicOutcome(ErrorCode.NOT_CONTROLLER)
            if out.code != ErrorCode.NOT_CONTROLLER:
                return out
            with trio.move_on_after(min(0.05, max(0.0, deadline - trio.current_time()))):
                await d.wait_changed()

    async def _wait_applied_here(self, req, out: TopicOutcome, deadline: float) -> None:
        """Until this node's image shows what the controller committed."""
        def done() -> bool:
            t = self.broker.image.topics.get(req.name)
            if isinstance(req, TC.CreateTopic):
                return t is not None and (out.topic_id is None or t.topic_id == out.topic_id)
            return t is not None and len(t.partitions) >= req.count
        while not done() and trio.current_time() < deadline:
            with trio.move_on_after(min(0.05, max(0.0, deadline - trio.current_time()))):
                await self.driver.wait_changed()

    async def _controller_topic_change(self, req, timeout: float) -> TopicOutcome:
        """On the active controller: check, place, make own logs, commit."""
        b = self.broker
        async with self.controller.lock:   # one decision at a time: topics and partitions alike
            d = self.driver
            if not d.is_leader:
                return TopicOutcome(ErrorCode.NOT_CONTROLLER)
            if d.high_watermark <= d.core._epoch_start_offset or d.applied_offset < d.high_watermark:
                # a new controller decides only once its image holds everything committed
                return TopicOutcome(ErrorCode.NOT_CONTROLLER)
            try:
                if isinstance(req, TC.CreateTopic):
                    plan = TC.plan_create_topic(
                        b.image, req, default_partitions=int(b.config.get("num.partitions")),
                        default_replication_factor=int(b.config.get("default.replication.factor")),
                        in_flight=self._pending_topics)
                else:
                    plan = TC.plan_create_partitions(b.image, req)
            except TC.TopicRefused as exc:
                return TopicOutcome(exc.code, exc.message)
            out = TopicOutcome(ErrorCode.NONE, None, None if req.validate_only else plan.topic_id,
                               len(plan.replicas), plan.replication_factor)
            if req.validate_only:
                return out
            mine = sorted(p for p, r in plan.replicas.items() if r[0] == self.node_id)
            try:
                staged = await b._make_logs(req.name, mine)
            except KafkaError as exc:
                log.error("controller %d: %s of %s refused: %s", self.node_id, type(req).__name__, req.name, exc)
                return TopicOutcome(exc.code, str(exc))
            try:
                code, _, msg = await self._controller_commit([R.encode_record(m, o) for m, o in plan.records],
                                                             timeout)
            finally:
                await b._drop_staged(staged)
            if code != ErrorCode.NONE:
                return TopicOutcome(ErrorCode(code), msg)
        log.info("controller %d placed %s %s: %s", self.node_id,
                 "topic" if isinstance(req, TC.CreateTopic) else "new partitions of", req.name,
                 " ".join(f"{p}:{','.join(map(str, r))}" for p, r in sorted(plan.replicas.items())))
        return out

    async def _on_controller_request(self, req) -> TopicOutcome:
        """A topic change forwarded to this node's controller listener."""
        if not self.driver.is_leader:
            return TopicOutcome(ErrorCode.NOT_CONTROLLER)
        return await self._controller_topic_change(req, 10.0)

    # ------------------------------------------------------------------ controller duties
    async def _to_controller(self, local, remote, timeout: float, code_of=lambda out: out.code):
        """Ask the active controller: ``local()`` when this node is it, else
        ``remote(controller id, timeout)`` (a request on its controller listener); again while
        the answer is NOT_CONTROLLER or nobody answers. None when ``timeout`` runs out."""
        d = self.driver
        deadline = trio.current_time() + timeout
        while True:
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                return None
            out = None
            if d.is_leader:
                out = await local()
            elif d.leader_id >= 0 and self.transport is not None:
                try:
                    out = await remote(d.leader_id, min(remaining, 10.0))
                except (ConnectionError, OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
                    log.debug("controller %d did not answer: %s", d.leader_id, exc)
            if out is not None and code_of(out) != ErrorCode.NOT_CONTROLLER:
                return out
            with trio.move_on_after(min(0.05, max(0.0, deadline - trio.current_time()))):
                await d.wait_changed()

    async def _wait_image(self, done, deadline: float) -> None:
        while not done() and trio.current_time() < deadline:
            with trio.move_on_after(min(0.05, max(0.0, deadline - trio.current_time()))):
                await self.driver.wait_changed()

    def _my_epoch(self) -> int:
        b = self.broker.image.brokers.get(self.node_id)
        return b.epoch if b is not None else -1

    async def alter_partition(self, topic_id: uuid.UUID, partition: int, leader_epoch: int, partition_epoch: int,
                              new_isr: list[int], timeout: float = 10.0, *,
                              leader_recovery_state: int = RECOVERED,
                              broker_epochs: list[int] | None = None) -> AlterPartitionResult:
        """AlterPartition for one partition this node leads: the active controller checks it
        (Kafka's codes: FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA,
        INVALID_REQUEST, ...) and commits the new ISR. ``broker_epochs`` (one per ISR member,
        -1 for unknown; AlterPartition v3's NewIsrWithEpochs) make a member that registered anew
        since it fetched INELIGIBLE_REPLICA. On success this node has applied the change when
        this returns. REQUEST_TIMED_OUT when no controller answered in time."""
        deadline = trio.current_time() + timeout
        epoch = self._my_epoch()
        out = await self._to_controller(
            lambda: self.controller.alter_partition(self.node_id, epoch, topic_id, partition, leader_epoch,
                                                    partition_epoch, list(new_isr),
                                                    leader_recovery_state=leader_recovery_state,
                                                    broker_epochs=broker_epochs),
            lambda dest, t: CA.send_alter_partition(self.transport, dest, self.node_id, epoch, topic_id, partition,
                                                    leader_epoch, partition_epoch, list(new_isr),
                                                    leader_recovery_state, t, broker_epochs),
            timeout)
        if out is None:
            return AlterPartitionResult(ErrorCode.REQUEST_TIMED_OUT)
        if out.code in (ErrorCode.NONE, ErrorCode.NEW_LEADER_ELECTED):
            def applied() -> bool:
                t = self.broker.image.topics_by_id.get(topic_id)
                p = t.partitions.get(partition) if t else None
                return p is None or p.partition_epoch >= out.partition_epoch
            await self._wait_image(applied, deadline)
        return out

    async def report_offline_dirs(self, dir_ids: list[uuid.UUID], partitions: list[tuple[uuid.UUID, int]],
                                  timeout: float = 10.0) -> bool:
        """Tell the active controller that log dirs failed (Kafka's BrokerLifecycleManager
        propagateDirectoryFailure: a heartbeat at once, the dirs in every later one), with the
        partitions this broker hosts in them; the controller takes this broker out of their
        ISRs and leaderships. Kept for the controlled-shutdown heartbeats too. True once the
        controller answered and this node has applied what it committed."""
        self.offline_report = (list(dir_ids), list(partitions))
        deadline = trio.current_time() + timeout
        epoch = self._my_epoch()
        out = await self._to_controller(
            lambda: self.controller.broker_heartbeat(self.node_id, epoch, self.broker.image.offset, False,
                                                     dir_ids, partitions),
            lambda dest, t: CA.send_broker_heartbeat(self.transport, dest, self.node_id, epoch,
                                                     self.broker.image.offset, False, t, dir_ids, partitions),
            timeout)
        if out is None or out.code != ErrorCode.NONE:
            log.info("broker %d: offline log dirs not reported yet: %s", self.node_id,
                     "no controller answered" if out is None else out.code.name)
            return False

        def applied() -> bool:   # the ISR and leadership changes the controller committed
            image = self.broker.image
            for topic_id, index in partitions:
                t = image.topics_by_id.get(topic_id)
                p = t.partitions.get(index) if t is not None else None
                if p is not None and p.leader == self.node_id and len(p.isr) > 1:
                    return False
            return True
        await self._wait_image(applied, deadline)
        return True

    async def controlled_shutdown(self, timeout: float = 30.0) -> bool:
        """Ask the active controller to move every leadership off this broker and take it out
        of every ISR (BrokerHeartbeat want_shut_down); it stays ineligible until it registers
        again. True once the controller says done and this node has applied the change; False
        on timeout or refusal. A broker with no other active broker to hand over to is done."""
        image = self.broker.image
        if self.node_id not in image.brokers or not any(
                b.active for i, b in image.brokers.items() if i != self.node_id):
            return True
        deadline = trio.current_time() + timeout
        while True:
            epoch = self._my_epoch()
            dirs, parts = self.offline_report
            out = await self._to_controller(
                lambda: self.controller.broker_heartbeat(self.node_id, epoch, self.broker.image.offset, True,
                                                         dirs, parts),
                lambda dest, t: CA.send_broker_heartbeat(self.transport, dest, self.node_id, epoch,
                                                         self.broker.image.offset, True, t, dirs, parts),
                deadline - trio.current_time())
            if out is None or out.code != ErrorCode.NONE:
                log.info("broker %d: controlled shutdown not done: %s", self.node_id,
                         "no controller answered" if out is None else out.code.name)
                return False
            if out.should_shut_down:
                log.info("broker %d: controlled shutdown done", self.node_id)
                return True
            if trio.current_time() >= deadline:
                return False
            await self._wait_image(lambda: False, min(deadline, trio.current_time() + 0.1))

    async def elect_leaders(self, election: Election, topic_partitions: dict[str, list[int]] | None,
                            timeout: float = 30.0) -> tuple[ErrorCode, dict[str, list[tuple[int, ErrorCode, str | None]]]]:
        """ElectLeaders through the active controller: (top-level code, {topic: [(partition,
        code, message)]}); the elected leaders are applied here on return."""
        deadline = trio.current_time() + timeout
        image = self.broker.image
        before = {(t.name, p.index): p.leader_epoch for t in image.topics.values() for p in t.partitions.values()}
        out = await self._to_controller(
            lambda: self.controller.elect_leaders(election, topic_partitions),
            lambda dest, t: CA.send_elect_leaders(self.transport, dest, election, topic_partitions, t),
            timeout, code_of=lambda o: o[0])
        if out is None:
            return ErrorCode.REQUEST_TIMED_OUT, {}
        code, results = out
        elected = [(name, pid) for name, rows in results.items() for pid, c, _ in rows if c == ErrorCode.NONE]

        def applied() -> bool:
            topics = self.broker.image.topics
            return all(name not in topics or pid not in topics[name].partitions
                       or topics[name].partitions[pid].leader_epoch > before.get((name, pid), -1)
                       for name, pid in elected)
        await self._wait_image(applied, deadline)
        return code, results

    async def alter_reassignments(self, topics: dict[str, list[tuple[int, list[int] | None]]],
                                  allow_rf_change: bool = True, timeout: float = 30.0
                                  ) -> tuple[ErrorCode, dict[str, list[tuple[int, ErrorCode, str | None]]]]:
        """AlterPartitionReassignments through the active controller: {topic: [(partition,
        target replicas or None to cancel)]} -> (top-level code, {topic: [(partition, code,
        message)]}); what was started or cancelled is applied here on return."""
        deadline = trio.current_time() + timeout
        out = await self._to_controller(
            lambda: self.controller.alter_reassignments(topics, allow_rf_change),
            lambda dest, t: CA.send_alter_reassignments(self.transport, dest, topics, allow_rf_change, t),
            timeout, code_of=lambda o: o[0])
        if out is None:
            return ErrorCode.REQUEST_TIMED_OUT, {}
        code, results = out
        done = {(name, pid) for name, rows in results.items() for pid, c, _ in rows if c == ErrorCode.NONE}
        asked = [(name, pid, target) for name, parts in topics.items() for pid, target in parts if (name, pid) in done]

        def applied() -> bool:
            image_topics = self.broker.image.topics
            for name, pid, target in asked:
                p = image_topics[name].partitions.get(pid) if name in image_topics else None
                if p is None:
                    continue
                if target is None and (p.adding_replicas or p.removing_replicas):
                    return False
                if target is not None and p.replicas[:len(target)] != list(target):
                    return False
            return True
        await self._wait_image(applied, deadline)
        return code, results
