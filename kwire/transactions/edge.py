"""The transaction coordinator's host on the coordinator runtime (kwire.coordinator.runtime):
builds the coordinator from the broker's config, hosts it on a runtime for
``__transaction_state`` (which loads, writes and drives its timers; the partition's leader
epoch is the coordinator epoch), follows this broker's leadership of that topic's partitions,
creates the topic and sends the coordinator's transaction markers (markers.py).

The broker builds one ``TransactionEdge`` (``broker.txn_edge``); ``await start_transactions
(broker, nursery)`` (from ``KafkaServer.start_background``) opens the coordinator, replaying
the partitions this node leads, and starts the timer task; a broker without
``__transaction_state`` builds its coordinator on first use (``TransactionEdge.coordinator``).
``__transaction_state`` is created the first time a client looks for a transaction
coordinator (``ensure_topic``, as Kafka creates it on the first FindCoordinator of type 1):
compacted, uncompressed, ``transaction.state.log.num.partitions`` partitions, replication
factor min(transaction.state.log.replication.factor, live brokers), min.insync.replicas
min(transaction.state.log.min.isr, that factor), segments of transaction.state.log.segment.bytes.

Leadership: ``follow_image()`` (the broker calls it when a record changed who leads a
``__transaction_state`` partition, and after a snapshot) has the runtime load the partitions
led here (again at a new leader epoch; COORDINATOR_LOAD_IN_PROGRESS meanwhile) and unload
the others (NOT_COORDINATOR from then on). It acts once the whole metadata entry is applied
(a task on the broker's nursery), as Kafka's coordinators act on a whole metadata delta: the
broker calls it per record, and a topic that is being created shows only the partitions
applied so far - taking the id -> partition map from such a partial topic (2 partitions of
3) sent every broker but the creator's ids to the wrong partition, answering NOT_COORDINATOR
for them forever.

The coordinator's writer is the runtime's ``write`` (acks=all, request.timeout.ms).
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import trio

from kwire.coordinator.runtime import CoordinatorRuntime, topic_replication_factor
from kwire.loop_thread import run_on_loop
from kwire.internal_topics import TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:   # the coordinator's modules load when it is built (see TransactionEdge.coordinator)
    from kwire.coordinator.channel import BrokerChannel
    from kwire.transactions.coordinator import TransactionCoordinator
    from kwire.transactions.markers import TxnMarkerSender
    from kwire.transactions.state_manager import TransactionConfig

log = logging.getLogger("kwire.transactions")


def transaction_config(broker) -> TransactionConfig:
    from kwire.transactions.state_manager import TransactionConfig  # noqa: PLC0415 - start-up time: built on first use

    c = broker.config
    return TransactionConfig(
        transactional_id_expiration_ms=int(c.get("transactional.id.expiration.ms")),
        transaction_max_timeout_ms=int(c.get("transaction.max.timeout.ms")),
        transaction_state_log_num_partitions=int(c.get("transaction.state.log.num.partitions")),
        abort_timed_out_transaction_cleanup_interval_ms=int(
            c.get("transaction.abort.timed.out.transaction.cleanup.interval.ms")),
        remove_expired_transaction_cleanup_interval_ms=int(
            c.get("transaction.remove.expired.transaction.cleanup.interval.ms")),
    )


def transaction_topic_replication_factor(broker) -> int:
    """min(transaction.state.log.replication.factor, live brokers)."""
    return topic_replication_factor(broker, TRANSACTION_STATE_TOPIC, "transaction.state.log.replication.factor")


class TransactionEdge:
    def __init__(self, broker):
        self.broker = broker
        self._completions: dict[str, trio.Event] = {}   # id -> set once its transaction completes
        self._coordinator: TransactionCoordinator | None = None
        self.sender: TxnMarkerSender | None = None    # made with the coordinator
        self.channel: BrokerChannel | None = None     # requests to other brokers; likewise
        # loads, writes and timers of __transaction_state (kwire.coordinator.runtime); a new
        # leader epoch is a new coordinator epoch, which every marker carries: loaded again
        self.runtime = CoordinatorRuntime(broker, TRANSACTION_STATE_TOPIC, name="transactions",
                                          load_buffer_key="transaction.state.log.load.buffer.size",
                                          write_timeout_key="request.timeout.ms", reload_on_new_epoch=True,
                                          logger=log)
        self._follow_scheduled = False
        self._nursery = None   # the broker's nursery, from open(): timers and marker sends run there
        self._loop_thread: int | None = None   # the broker's Trio thread, and its token
        self._trio_token = None

    @property
    def coordinator(self) -> TransactionCoordinator | None:
        """The transaction coordinator; None before open(). A broker with no
        ``__transaction_state`` at open builds it (with its marker sender and broker channel)
        on first use: until then it would hold nothing, and its modules stay off the start."""
        if self._coordinator is None and self._nursery is not None:
            run_on_loop(self._loop_thread, self._trio_token, self._build_on_use)
        return self._coordinator

    @coordinator.setter
    def coordinator(self, coord: TransactionCoordinator | None) -> None:   # tests: a coordinator of their own
        self._coordinator = self.runtime.shard = coord

    def _build_on_use(self) -> None:
        if self._coordinator is None:
            self._build(transaction_config(self.broker))
            self.follow_image()   # partitions of a topic made meanwhile (by another node) load then

    # ------------------------------------------------------------------ startup
    async def open(self, nursery) -> TransactionCoordinator | None:
        b = self.broker
        self._nursery = nursery
        t = b.image.topics.get(TRANSACTION_STATE_TOPIC)
        if t is None:
            self._loop_thread = threading.get_ident()
            self._trio_token = trio.lowlevel.current_trio_token()
            log.info("transaction coordinator: %s is created on the first FindCoordinator of a "
                     "transactional id", TRANSACTION_STATE_TOPIC)
            return None
        config = transaction_config(b)
        config.transaction_state_log_num_partitions = len(t.partitions)   # the id -> partition map follows the topic
        coord = self._build(config)
        led = [p for p in sorted(t.partitions) if t.partitions[p].leader == b.node_id]
        n = 0
        for p in led:
            n += await self.runtime.load_now(p, self._leader_epoch(p))
        log.info("transaction coordinator open: %d records replayed from the %s partitions led here",
                 n, TRANSACTION_STATE_TOPIC)
        return coord

    def _build(self, config: TransactionConfig) -> TransactionCoordinator:
        """Make the coordinator (owning no partition yet), its marker sender and broker
        channel, host it on the runtime and start the runtime's timer task."""
        from kwire.coordinator.channel import BrokerChannel  # noqa: PLC0415 - start-up time: built on first use
        from kwire.transactions.coordinator import TransactionCoordinator  # noqa: PLC0415 - start-up time: built on first use
        from kwire.transactions.markers import (  # noqa: PLC0415 - start-up time: built on first use
            TxnMarkerSender, channel_transport, local_writer)

        b = self.broker
        coord = TransactionCoordinator(config, b.clock, self._write, self._new_producer_id,
                                       owned_partitions=())
        self.channel = BrokerChannel(b, int(b.config.get("request.timeout.ms")) / 1000,
                                     f"kwire-txn-coordinator-{b.node_id}", link=b.peer_security.inter_broker)
        self.sender = TxnMarkerSender(coord, lambda: b.image, channel_transport(self.channel), self._nursery,
                                      local_node=b.node_id, write_local=local_writer(b))
        coord.send_markers = self.sender.submit
        coord.on_complete = self._completed
        coord.wakeup = self.runtime.wakeup
        self._coordinator = self.runtime.shard = coord
        self._nursery.start_soon(self.runtime.run)
        return coord

    def _completed(self, transactional_id: str) -> None:
        ev = self._completions.pop(transactional_id, None)
        if ev is not None:
            ev.set()

    async def wait_for_completion(self, transactional_id: str, timeout_s: float) -> None:
        """Until the id's ending transaction is complete (CompleteCommit/CompleteAbort durable),
        at most ``timeout_s``; the caller asks the coordinator again either way."""
        ev = self._completions.get(transactional_id)
        if ev is None:
            ev = self._completions[transactional_id] = trio.Event()
        with trio.move_on_after(timeout_s):
            await ev.wait()
        if not ev.is_set() and self._completions.get(transactional_id) is ev and not ev.statistics().tasks_waiting:
            del self._completions[transactional_id]   # nobody waits any more

    def _new_producer_id(self) -> int:
        return self.broker.producer_ids.generate_producer_id()

    async def ensure_topic(self) -> None:
        """Create ``__transaction_state`` unless it exists, and wait until it does (once at a
        time, in a task: the runtime's ``ensure_topic``)."""
        await self.runtime.ensure_topic(self._create_topic)

    async def _create_topic(self) -> None:
        b = self.broker
        rf = transaction_topic_replication_factor(b)
        cfg = self.coordinator.config if self.coordinator else transaction_config(b)
        min_isr = min(int(b.config.get("transaction.state.log.min.isr")), rf)
        seg = int(b.config.get("transaction.state.log.segment.bytes"))
        configs = {"cleanup.policy": "compact", "compression.type": "uncompressed",
                   "min.insync.replicas": str(min_isr), "unclean.leader.election.enable": "false",
                   "segment.bytes" if seg >= 1 << 20 else "internal.segment.bytes": str(seg)}
        if await self.runtime.create_topic(cfg.transaction_state_log_num_partitions, rf, configs):
            t = b.image.topics.get(TRANSACTION_STATE_TOPIC)
            if t is not None and self.coordinator is not None:
                self.coordinator.config.transaction_state_log_num_partitions = len(t.partitions)
            self.follow_image_now()   # the topic is whole: its creation was applied

    def _leader_epoch(self, partition: int) -> int:
        """The coordinator epoch of a partition: its leader epoch."""
        return max(0, self.broker.replica_manager.leader_epoch(TRANSACTION_STATE_TOPIC, partition))

    # ------------------------------------------------------------------ leadership
    def follow_image(self) -> None:
        """``follow_image_now`` once the metadata entry being applied is applied whole (in a task
        of the broker's nursery; at once where there is none). Calls before it ran coalesce."""
        nursery = getattr(self.broker, "_nursery", None)
        if nursery is None:
            self.follow_image_now()
            return
        if not self._follow_scheduled:
            self._follow_scheduled = True
            nursery.start_soon(self._follow_later)

    async def _follow_later(self) -> None:
        self._follow_scheduled = False
        self.follow_image_now()

    def follow_image_now(self) -> None:
        """Load the partitions the image says this node leads (again when their leader epoch
        changed: a new coordinator epoch), unload the others. Idempotent."""
        coord = self.coordinator
        if coord is None:
            return
        b = self.broker
        t = b.image.topics.get(TRANSACTION_STATE_TOPIC)
        parts = t.partitions if t is not None else {}
        if t is not None and coord.config.transaction_state_log_num_partitions != len(parts) and \
                not self.runtime.held():
            coord.config.transaction_state_log_num_partitions = len(parts)
        held = self.runtime.held()
        for p in sorted(held | set(parts)):
            if p in parts and parts[p].leader == b.node_id:
                self.runtime.schedule_load(p, self._leader_epoch(p))   # again at a new coordinator epoch
            elif p in held:
                self.runtime.schedule_unload(p)

    # ------------------------------------------------------------------ writer
    def _write(self, partition: int, records, done) -> None:
        """The coordinator's writer: one batch through the runtime (acks=all,
        request.timeout.ms), then ``done(error)``."""
        self.runtime.write(partition, records).add_done_callback(lambda p: done(p.result.error))


async def start_transactions(broker, nursery) -> TransactionEdge:
    """Open the coordinator (replay before serving; its timer task runs in ``nursery``), or,
    without __transaction_state, have it built on first use."""
    edge = broker.txn_edge
    await edge.open(nursery)
    return edge
