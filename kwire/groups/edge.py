"""The Trio glue of the group coordinator: builds it from the broker's config, keeps its
durable state in ``__consumer_offsets``, replays that topic at startup, and drives its timers.

The broker's composition root builds one ``GroupEdge`` (``broker.group_edge``);
``await start_groups(broker, nursery)`` (from ``KafkaServer.start_background``) does the
synchronous part at once, before the listeners serve: create ``__consumer_offsets`` if it is
missing (compacted, ``offsets.topic.num.partitions`` partitions), replay every record of every
partition into a fresh ``GroupCoordinator`` (``broker.groups`` from then on); then starts the
timer task.

The writer appends synchronously through the replica manager (``append_records``, one batch
per call) and reports ``done(ErrorCode.NONE)`` at once: on one broker the leader's append is
the whole ISR.
"""
from __future__ import annotations

import logging

import trio

from kwire.codec.records import build_batch, iter_batches
from kwire.errors import ErrorCode, KafkaError
from kwire.groups.coordinator import GroupCoordinator
from kwire.groups.membership import GroupConfig, Record
from kwire.groups.records import OFFSETS_TOPIC

log = logging.getLogger("kwire.groups")

READ_CHUNK = 1 << 20


def group_config(broker) -> GroupConfig:
    c = broker.config
    return GroupConfig(
        group_min_session_timeout_ms=int(c.get("group.min.session.timeout.ms")),
        group_max_session_timeout_ms=int(c.get("group.max.session.timeout.ms")),
        group_initial_rebalance_delay_ms=int(c.get("group.initial.rebalance.delay.ms")),
        group_max_size=int(c.get("group.max.size")),
        offsets_topic_num_partitions=int(c.get("offsets.topic.num.partitions")),
        offsets_retention_ms=int(c.get("offsets.retention.minutes")) * 60_000,
        offsets_retention_check_interval_ms=int(c.get("offsets.retention.check.interval.ms")),
    )


class GroupEdge:
    """Owns the coordinator of one broker: its writer, its replay and its timer task."""

    def __init__(self, broker):
        self.broker = broker
        self.config: GroupConfig | None = None   # from the broker's config at open()
        self._wake = trio.Event()
        self.coordinator: GroupCoordinator | None = None

    # ------------------------------------------------------------------ startup
    async def open(self) -> GroupCoordinator:
        b = self.broker
        self.config = group_config(b)   # after the metadata replay: dynamic configs apply
        t = b.image.topics.get(OFFSETS_TOPIC)
        if t is None and len(getattr(b, "voters", None) or ()) > 1:
            # First start of a cluster: give the other voters a moment to register, so the
            # offsets partitions (and with them the group coordinators) spread over them all.
            with trio.move_on_after(5):
                while not set(b.voters) <= {x.node_id for x in b.image.live_brokers()}:
                    await trio.sleep(0.05)
            t = b.image.topics.get(OFFSETS_TOPIC)
        if t is None:
            # Kafka's offsets topic configs: compact, compression as produced, and segments of
            # offsets.topic.segment.bytes (below segment.bytes' 1 MiB floor through Kafka 4's
            # internal.segment.bytes, so tests can roll them quickly)
            seg = int(b.config.get("offsets.topic.segment.bytes"))
            configs = {"cleanup.policy": "compact", "compression.type": "producer",
                       "segment.bytes" if seg >= 1 << 20 else "internal.segment.bytes": str(seg)}
            res = await b.create_topic(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions, -1, configs)
            if res.code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                raise RuntimeError(f"cannot create {OFFSETS_TOPIC}: {res.code!r} {res.message}")
            t = b.image.topics[OFFSETS_TOPIC]
        # The partition of a group follows the topic as it is, whatever the config says now.
        self.config.offsets_topic_num_partitions = len(t.partitions)
        coord = GroupCoordinator(self.config, b.clock, self._write)
        n = 0
        for p in sorted(t.partitions):
            n += self._replay_partition(coord, p)
        coord.wakeup = self._wake.set
        self.coordinator = coord
        log.info("group coordinator open: %d records replayed from %s (%d partitions), %d groups",
                 n, OFFSETS_TOPIC, len(t.partitions), len(coord.groups))
        return coord

    def _replay_partition(self, coord: GroupCoordinator, partition: int) -> int:
        plog = self.broker.replica_manager.local_log(OFFSETS_TOPIC, partition)
        if plog is None:
            return 0
        n = 0
        offset = plog.log_start_offset
        end = plog.log_end_offset
        while offset < end:
            data = plog.read(offset, READ_CHUNK)
            if data.size == 0:
                break
            buf = bytes(data)
            advanced = offset
            for batch in iter_batches(buf, allow_partial_tail=True):
                advanced = batch.next_offset
                if batch.is_control:
                    continue
                for rec in batch.records():
                    if rec.key is None:
                        continue
                    coord.replay(bytes(rec.key), None if rec.value is None else bytes(rec.value))
                    n += 1
            if advanced <= offset:
                break
            offset = advanced
        return n

    # ------------------------------------------------------------------ writer
    def _write(self, partition: int, records: list[Record], done) -> None:
        b = self.broker
        now = b.clock.now_ms()
        try:
            batch = build_batch([(k, v, None, now) for k, v in records])
            b.replica_manager.append_records(OFFSETS_TOPIC, partition, bytearray(batch), now)
        except KafkaError as exc:
            log.warning("append to %s-%d failed: %s", OFFSETS_TOPIC, partition, exc)
            done(getattr(exc, "code", ErrorCode.UNKNOWN_SERVER_ERROR))
            return
        except OSError as exc:
            log.error("append to %s-%d failed: %s", OFFSETS_TOPIC, partition, exc)
            done(ErrorCode.KAFKA_STORAGE_ERROR)
            return
        done(ErrorCode.NONE)

    # ------------------------------------------------------------------ timers
    async def run_timers(self) -> None:
        coord = self.coordinator
        clock = self.broker.clock
        while True:
            self._wake = trio.Event()
            coord.wakeup = self._wake.set
            try:
                deadline = coord.tick()
            except Exception:  # noqa: BLE001 - a failed tick must not stop the broker
                log.exception("group coordinator tick failed")
                deadline = clock.monotonic_ms() + 1000
            if deadline is None:
                await self._wake.wait()
                continue
            delay = max(0, deadline - clock.monotonic_ms()) / 1000
            with trio.move_on_after(delay):
                await self._wake.wait()


async def start_groups(broker, nursery) -> GroupEdge:
    """Open the broker's coordinator (replay before serving) and start its timer task."""
    edge = broker.group_edge
    await edge.open()
    nursery.start_soon(edge.run_timers)
    return edge
