"""The metadata quorum of one node: the Raft driver over the metadata log, the controller
listener, forwarding to the active controller, and the controller's duties.

Every node of a cluster is broker and controller at once (Kafka's
``process.roles=broker,controller``). Metadata changes go through :meth:`MetadataQuorum.commit`:
on the active controller (the Raft leader) they are checked against the image (and the
changes still in flight), proposed, and answered once committed and applied; elsewhere they
are forwarded to the leader's controller listener, and answered once this node has applied
them too. A plain ``kwire serve`` is a quorum of one voter that elects itself at once.

Broker liveness: in combined mode every node fetches the metadata log from the leader all
the time, so the leader's fetch bookkeeping is the heartbeat; the active controller fences
(FenceBrokerRecord) a registered broker it has not heard from for
``broker.session.timeout.ms`` and unfences it when it is back.
"""
from __future__ import annotations

import logging
import os

import trio

from kwire.errors import ErrorCode, KafkaError
from kwire.metadata import records as R
from kwire.raft.core import RaftConfig
from kwire.raft.driver import CommitFailed, RaftDriver
from kwire.raft.storage import RaftStorage

log = logging.getLogger("kwire.quorum")

DEFAULT_SESSION_TIMEOUT_MS = 9000
DEFAULT_SNAPSHOT_INTERVAL = 10000   # committed entries between metadata snapshots


class MetadataError(KafkaError):
    pass


class MetadataQuorum:
    def __init__(self, broker, voters: dict[int, tuple[str, int] | None], *, controller_listeners=None,
                 raft_config: RaftConfig | None = None):
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
        self.transport = None
        if len(self.voters) > 1:
            from kwire.raft.transport import RaftTransport  # noqa: PLC0415
            self.transport = RaftTransport(self.driver, {n: a for n, a in self.voters.items() if a},
                                           cluster_id=broker.cluster_id, forward_handler=self._on_forward)
        self._pending_topics: set[str] = set()
        try:
            self.session_timeout_ms = int(broker.config.get("broker.session.timeout.ms"))
        except (KeyError, TypeError, ValueError):
            self.session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS
        self._leader_since: float | None = None

    @property
    def single(self) -> bool:
        return len(self.voters) == 1

    async def start(self, nursery) -> None:
        await nursery.start(self.driver.run)
        if self.transport is not None:
            await nursery.start(self.transport.run, self.listeners)
        nursery.start_soon(self._controller_loop)  # alone too: fences brokers registered before

    async def wait_caught_up(self) -> None:
        """Until a leader is known and this node applied what the quorum committed."""
        d = self.driver
        while not (d.leader_id >= 0 and d.high_watermark > 0 and d.applied_offset >= d.high_watermark
                   and (not d.is_leader or d.high_watermark > d.core._epoch_start_offset)):
            with trio.move_on_after(0.05):
                await d.wait_changed()

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
                    code, offset = await self.transport.forward(leader, values, min(remaining, 10.0))
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
        return None

    async def _controller_commit(self, values: list[bytes], timeout: float) -> tuple[int, int, str | None]:
        d = self.driver
        err = self._check(values)
        if err:
            return err[0], d.applied_offset - 1, err[1]
        names = {obj.name for msg, obj in map(R.decode_record, values) if msg is R.TOPIC}
        self._pending_topics |= names
        try:
            offset = await d.propose_and_wait(tuple(values), timeout)
        except CommitFailed as exc:
            log.info("metadata proposal failed: %s", exc)
            return ErrorCode.NOT_CONTROLLER, -1, None
        finally:
            self._pending_topics -= names
        return ErrorCode.NONE, offset, None

    async def _on_forward(self, values: list[bytes]) -> tuple[int, int]:
        if not self.driver.is_leader:
            return ErrorCode.NOT_CONTROLLER, -1
        code, offset, _ = await self._controller_commit(values, 10.0)
        return code, offset

    # ------------------------------------------------------------------ controller duties
    async def _controller_loop(self) -> None:
        """On the active controller: fence brokers that stopped heartbeating, unfence returners."""
        while True:
            await trio.sleep(0.5)
            d = self.driver
            if not d.is_leader:
                self._leader_since = None
                continue
            now = trio.current_time()
            if self._leader_since is None:
                self._leader_since = now
            recs = []
            for b in list(self.broker.image.brokers.values()):
                if b.node_id == self.node_id:
                    continue
                ago = d.last_fetch_ms(b.node_id)
                alive = ago is not None and ago < self.session_timeout_ms
                if not b.fenced and not alive and (now - self._leader_since) * 1000 > self.session_timeout_ms:
                    recs.append((R.FENCE_BROKER, R.FENCE_BROKER.cls(id=b.node_id, epoch=b.epoch)))
                elif b.fenced and alive:
                    recs.append((R.UNFENCE_BROKER, R.UNFENCE_BROKER.cls(id=b.node_id, epoch=b.epoch)))
            if recs:
                log.info("controller %d: %s", self.node_id,
                         ", ".join(f"{'fence' if m is R.FENCE_BROKER else 'unfence'} broker {o.id}" for m, o in recs))
                try:
                    await d.propose_and_wait(tuple(R.encode_record(m, o) for m, o in recs), 5.0)
                except CommitFailed as exc:
                    log.info("fencing not committed: %s", exc)
