"""The group coordinator's host on the coordinator runtime (kwire.coordinator.runtime,
Kafka's GroupCoordinatorService over its CoordinatorRuntime): builds the coordinator from the
broker's config, hosts it on a runtime for ``__consumer_offsets`` (which loads, writes and
drives its timers), follows this broker's leadership of that topic's partitions, and
creates the topic.

The broker's composition root builds one ``GroupEdge`` (``broker.group_edge``);
``await start_groups(broker, nursery)`` (from ``KafkaServer.start_background``) does the
synchronous part at once, before the listeners serve: replay every record of the
``__consumer_offsets`` partitions this broker leads into a fresh ``GroupCoordinator``
(``broker.groups`` from then on), whose timer task it starts; a broker without that topic
builds its coordinator on first use (``GroupEdge.coordinator``). ``__consumer_offsets`` is
created the first time a client looks for a group coordinator (``ensure_topic``, as Kafka
creates it on the first FindCoordinator of a group): compacted, ``offsets.topic.num.partitions``
partitions, replication factor min(offsets.topic.replication.factor, live brokers). Until
then a broker's data dir holds none of its partitions (a first start writes 50 fewer logs).

Leadership (Kafka's GroupCoordinator.onElection / onResignation): the broker calls
``on_become_leader(p)`` / ``on_resign(p)`` (or ``follow_image()``, which works them out from
the metadata image) from the Trio thread after a metadata record changed who leads
``__consumer_offsets-<p>``: the runtime's ``schedule_load`` / ``schedule_unload`` (its groups
answer COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_COORDINATOR once unloaded). The loads
replay data batches and the transaction markers of control batches (kwire.groups.loader).

The coordinator's writer is the runtime's ``write`` (one batch per call: a transactional
batch of the producer for a TxnOffsetCommit; acks=all, offsets.commit.timeout.ms), answered
with the batch's base offset once the append outcome completed.
"""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import trio

from kwire.coordinator.runtime import CoordinatorRuntime, topic_replication_factor
from kwire.loop_thread import run_on_loop
from kwire.internal_topics import OFFSETS_TOPIC

if TYPE_CHECKING:   # the coordinator's modules load when it is built (see GroupEdge.coordinator)
    from kwire.groups.coordinator import GroupCoordinator
    from kwire.groups.membership import GroupConfig, Record

log = logging.getLogger("kwire.groups")


def group_config(broker) -> GroupConfig:
    from kwire.groups.membership import GroupConfig  # noqa: PLC0415 - start-up time: built on first use

    c = broker.config
    return GroupConfig(
        group_min_session_timeout_ms=int(c.get("group.min.session.timeout.ms")),
        group_max_session_timeout_ms=int(c.get("group.max.session.timeout.ms")),
        group_initial_rebalance_delay_ms=int(c.get("group.initial.rebalance.delay.ms")),
        group_max_size=int(c.get("group.max.size")),
        offsets_topic_num_partitions=int(c.get("offsets.topic.num.partitions")),
        offsets_retention_ms=int(c.get("offsets.retention.minutes")) * 60_000,
        offsets_retention_check_interval_ms=int(c.get("offsets.retention.check.interval.ms")),
        consumer_session_timeout_ms=int(c.get("group.consumer.session.timeout.ms")),
        consumer_heartbeat_interval_ms=int(c.get("group.consumer.heartbeat.interval.ms")),
        consumer_max_size=int(c.get("group.consumer.max.size")),
        consumer_assignors=_assignor_names(c.get("group.consumer.assignors")),
        consumer_migration_policy=str(c.get("group.consumer.migration.policy")).lower(),
        share_session_timeout_ms=int(c.get("group.share.session.timeout.ms")),
        share_heartbeat_interval_ms=int(c.get("group.share.heartbeat.interval.ms")),
        share_max_size=int(c.get("group.share.max.size")),
    )


def _assignor_names(value) -> list[str]:
    from kwire.groups.assignors import assignor_name  # noqa: PLC0415 - start-up time: built on first use

    items = value.split(",") if isinstance(value, str) else list(value or ())
    return assignor_name([str(x).strip() for x in items if str(x).strip()])


def offsets_topic_replication_factor(broker) -> int:
    """The replication factor ``__consumer_offsets`` is created with:
    offsets.topic.replication.factor (Kafka's default 3), at most the live brokers."""
    return topic_replication_factor(broker, OFFSETS_TOPIC, "offsets.topic.replication.factor")


class GroupEdge:
    """Hosts the group coordinator of one broker on its runtime (loads, writes, timers) and
    follows the leadership of ``__consumer_offsets``."""

    def __init__(self, broker):
        self.broker = broker
        self.config: GroupConfig | None = None   # from the broker's config when the coordinator is built
        # loads, writes and timers of __consumer_offsets (kwire.coordinator.runtime)
        self.runtime = CoordinatorRuntime(broker, OFFSETS_TOPIC, name="groups",
                                          load_buffer_key="offsets.load.buffer.size",
                                          write_timeout_key="offsets.commit.timeout.ms", logger=log)
        self._coordinator: GroupCoordinator | None = None
        self._nursery = None   # the broker's nursery, from open(): the timer task runs there
        self._loop_thread: int | None = None   # the broker's Trio thread, and its token
        self._trio_token = None

    @property
    def coordinator(self) -> GroupCoordinator | None:
        """The group coordinator; None before open(). A broker with no ``__consumer_offsets``
        at open builds it on first use (a group request, the topic appearing, a scrape): until
        then it would hold nothing, and its modules (~15 ms of imports) stay off the start."""
        if self._coordinator is None and self._nursery is not None:
            run_on_loop(self._loop_thread, self._trio_token, self._build_on_use)
        return self._coordinator

    @coordinator.setter
    def coordinator(self, coord: GroupCoordinator | None) -> None:   # tests: a coordinator of their own
        self._coordinator = self.runtime.shard = coord

    def _build_on_use(self) -> None:
        if self._coordinator is None:
            self._build()
            self.follow_image()   # partitions of a topic made meanwhile (by another node) load now

    # ------------------------------------------------------------------ startup
    async def open(self, nursery) -> GroupCoordinator | None:
        b = self.broker
        t = b.image.topics.get(OFFSETS_TOPIC)
        if t is None:   # (its config is read when it is built)
            self._nursery = nursery
            self._loop_thread = threading.get_ident()
            self._trio_token = trio.lowlevel.current_trio_token()
            log.info("group coordinator: %s is created on the first FindCoordinator of a group",
                     OFFSETS_TOPIC)
            return None
        self.config = group_config(b)   # after the metadata replay: dynamic configs apply
        # The partition of a group follows the topic as it is, whatever the config says now
        # (until it exists: offsets.topic.num.partitions, which it is created with).
        self.config.offsets_topic_num_partitions = len(t.partitions)
        coord = self._build(nursery)
        # before serving, at once: the partitions this node leads (the others load when it
        # becomes their leader, in a task: on_become_leader)
        led = [p for p in sorted(t.partitions) if t.partitions[p].leader == b.node_id]
        n = 0
        for p in led:
            n += await self.runtime.load_now(p, self._leader_epoch(p))
        log.info("group coordinator open: %d records replayed from the %d of %d %s partitions "
                 "led here, %d groups", n, len(led), len(t.partitions), OFFSETS_TOPIC,
                 len(coord.groups))
        return coord

    def _build(self, nursery=None) -> GroupCoordinator:
        """Make the coordinator (owning no partition yet), host it on the runtime and start
        the runtime's timer task."""
        from kwire.groups.coordinator import GroupCoordinator  # noqa: PLC0415 - start-up time: built on first use

        self._nursery = nursery or self._nursery
        if self.config is None:
            self.config = group_config(self.broker)
        coord = GroupCoordinator(self.config, self.broker.clock, self._write, owned_partitions=())
        coord.wakeup = self.runtime.wakeup
        coord.topic_metadata = self._topic_metadata
        coord.partition_racks = self._partition_racks
        coord.group_overrides = lambda gid: self.broker.image.group_configs.get(gid, {})
        coord.share_group_deleted = self._share_group_deleted
        self._coordinator = self.runtime.shard = coord
        self._nursery.start_soon(self.runtime.run)
        return coord

    def _share_group_deleted(self, group_id: str) -> None:
        """A share group was deleted: its share partitions' state goes too (tombstones in
        __share_group_state, written from a task)."""
        b = self.broker
        if not getattr(b, "share_built", True):
            return   # no share partition here, none read or written since the start: nothing to drop
        mgr = getattr(b, "share_partitions", None)
        if mgr is not None:
            mgr.drop_group(group_id)
            if b.share_state.deleted and self._nursery is not None:
                self._nursery.start_soon(b.share_state.flush)

    def _topic_metadata(self) -> dict:
        """name -> (topic id, partition count) of the topics consumer groups may subscribe to
        (internal topics left out, as Kafka's regex subscriptions leave them out)."""
        return {name: (t.topic_id, len(t.partitions)) for name, t in self.broker.image.topics.items()
                if not t.is_internal}

    def _partition_racks(self, topic_id, partition: int) -> frozenset:
        """The racks of the brokers holding a partition's replicas (rack-aware assignors)."""
        image = self.broker.image
        t = image.topics_by_id.get(topic_id)
        p = t.partitions.get(partition) if t is not None else None
        if p is None:
            return frozenset()
        return frozenset(b.rack for r in p.replicas if (b := image.brokers.get(r)) is not None and b.rack)

    async def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` unless it exists, and wait until it does (a first
        FindCoordinator of a group, as Kafka creates it; once at a time, in a task: the
        runtime's ``ensure_topic``)."""
        await self.runtime.ensure_topic(self._create_topic)

    async def _create_topic(self) -> None:
        b = self.broker
        if len(getattr(b, "voters", None) or ()) > 1:
            # First use in a cluster: give the other voters a moment to register, so the
            # offsets partitions (and with them the group coordinators) spread over them all.
            with trio.move_on_after(5):
                while not set(b.voters) <= {x.node_id for x in b.image.live_brokers()}:
                    await trio.sleep(0.05)
        if OFFSETS_TOPIC in b.image.topics:
            return
        # Kafka's offsets topic configs: compact, compression as produced, and segments of
        # offsets.topic.segment.bytes (below segment.bytes' 1 MiB floor through Kafka 4's
        # internal.segment.bytes, so tests can roll them quickly)
        seg = int(b.config.get("offsets.topic.segment.bytes"))
        configs = {"cleanup.policy": "compact", "compression.type": "producer",
                   "segment.bytes" if seg >= 1 << 20 else "internal.segment.bytes": str(seg)}
        config = self.config or group_config(b)
        if not await self.runtime.create_topic(config.offsets_topic_num_partitions,
                                               offsets_topic_replication_factor(b), configs):
            return
        t = b.image.topics.get(OFFSETS_TOPIC)
        coord = self._coordinator
        if t is not None and coord is not None and not coord.groups:
            # whole now (created here or, just before, by another node): groups map to its partitions
            coord.config.offsets_topic_num_partitions = len(t.partitions)
        self.follow_image()

    def _leader_epoch(self, partition: int) -> int:
        """The partition's leader epoch in the image: the epoch of its context in the runtime."""
        t = self.broker.image.topics.get(OFFSETS_TOPIC)
        p = t.partitions.get(partition) if t is not None else None
        return max(0, p.leader_epoch) if p is not None else 0

    # ------------------------------------------------------------------ leadership
    def on_become_leader(self, partition: int) -> None:
        """This node became the leader of ``__consumer_offsets-<partition>`` (called from the
        Trio thread once the metadata record applied): the runtime loads its groups from the
        local log in a task; meanwhile they answer COORDINATOR_LOAD_IN_PROGRESS. Nothing to
        do while the coordinator is not open (open() loads what this node leads) or when the
        partition is loaded or loading already (a newer leader epoch only takes the
        context's epoch up, as Kafka's runtime does)."""
        if self.coordinator is not None:
            self.runtime.schedule_load(partition, self._leader_epoch(partition))

    def on_resign(self, partition: int) -> None:
        """This node no longer leads ``__consumer_offsets-<partition>``: unload its groups
        (waiting members and writes are answered NOT_COORDINATOR, their timers stop; a load
        in progress is abandoned)."""
        if self.coordinator is not None:
            self.runtime.schedule_unload(partition)

    def follow_image(self) -> None:
        """Load the ``__consumer_offsets`` partitions the metadata image says this node leads
        and unload the others (after a leader change or a snapshot; idempotent)."""
        if self.coordinator is None:
            return
        b = self.broker
        t = b.image.topics.get(OFFSETS_TOPIC)
        parts = t.partitions if t is not None else {}
        held = self.runtime.held()
        for p in sorted(held | set(parts)):
            if p in parts and parts[p].leader == b.node_id:
                self.on_become_leader(p)
            elif p in held:
                self.on_resign(p)

    # ------------------------------------------------------------------ writer
    def _write(self, partition: int, records: list[Record], done, *,
               transaction: tuple | None = None) -> None:
        """The coordinator's writer: one batch through the runtime (acks=all, as Kafka's
        coordinator appends offsets and group metadata; offsets.commit.timeout.ms), then
        ``done(error, base_offset)``. ``transaction``: see CoordinatorRuntime.write."""
        self.runtime.write(partition, records, transaction=transaction).add_done_callback(
            lambda p: done(p.result.error, p.result.base_offset))


async def start_groups(broker, nursery) -> GroupEdge:
    """Open the broker's coordinator (replay before serving; its timer task runs in
    ``nursery``), or, without __consumer_offsets, have it built on first use."""
    edge = broker.group_edge
    await edge.open(nursery)
    return edge
