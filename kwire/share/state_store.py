"""The Trio edge of share-partition durability (Kafka's share coordinator and persister, in
one piece on the share partition's leader): the state of each share partition is written to
``__share_group_state`` (records: kwire.share.records) and read back when the broker starts.

- ``load()``: at start, before anything is served, the records of the local
  ``__share_group_state`` partitions are replayed (snapshots, updates, tombstones) into the
  share partition manager's ``recovered`` table; a share partition made afterwards starts from
  its recovered state (acquired records come back available: locks do not survive a restart,
  delivery counts do) instead of share.auto.offset.reset.
- ``flush()``: the ShareFetch / ShareAcknowledge handlers call it before answering: every
  share partition changed since the last flush gets a ShareSnapshot record, appended as the
  leader with acks=all and awaited (share.coordinator.write.timeout.ms), so an acknowledgement
  answered is durable. The topic is created on the first write (share.coordinator.state.topic.*:
  partitions, replication factor at most the live brokers, compacted, segment bytes).

Left out: the share coordinator as a separate role (Kafka's Read/Write/Initialize/Delete
ShareGroupState RPCs to the leader of the state partition): here the share partition's leader
appends to the state partition itself, which works when it leads that partition too (a single
broker, or where leaderships coincide); otherwise the write is skipped with a warning and
the state stays in memory. A share partition moving to another leader starts from what that
broker recovered at its start. ShareUpdate deltas are read but not written (a full snapshot
each time; the compacted topic keeps the last).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from uuid import UUID

import trio

from kwire.codec.records import build_batch, iter_batches
from kwire.errors import ErrorCode, KafkaError
from kwire.share import records as SR
from kwire.share.partition import SharePartition

if TYPE_CHECKING:
    from kwire.share.manager import SharePartitionManager

log = logging.getLogger("kwire.share")
Key = tuple[str, UUID, int]


class ShareStateStore:
    def __init__(self, broker, manager: SharePartitionManager):
        self.broker = broker
        self.manager = manager
        self.dirty: dict[Key, SharePartition] = {}
        self.states: dict[Key, SR.ShareState] = {}
        self._creating: trio.Event | None = None
        self._warned: set[int] = set()
        self.deleted: set[Key] = set()
        manager.on_change = self._on_change
        manager.on_remove = self._on_remove

    def _on_change(self, group_id: str, topic_id: UUID, partition: int, sp: SharePartition) -> None:
        self.dirty[(group_id, topic_id, partition)] = sp
        self.deleted.discard((group_id, topic_id, partition))

    def _on_remove(self, group_id: str, topic_id: UUID, partition: int) -> None:
        self.dirty.pop((group_id, topic_id, partition), None)
        self.deleted.add((group_id, topic_id, partition))

    # ------------------------------------------------------------------ load
    def load(self) -> int:
        """Replay the local ``__share_group_state`` partitions (blocking reads, at start).
        Returns the number of share partitions recovered."""
        rm = self.broker.replica_manager
        t = self.broker.image.topics.get(SR.STATE_TOPIC)
        if t is None:
            return 0
        states: dict[Key, SR.ShareState] = {}
        for p in sorted(t.partitions):
            plog = rm.local_log(SR.STATE_TOPIC, p)
            if plog is None or plog.offline:
                continue
            offset, end = plog.log_start_offset, plog.log_end_offset
            while offset < end:
                data = plog.read(offset, 1 << 20, max_offset=end)
                if data is None or data.size == 0:
                    break
                advanced = offset
                for batch in iter_batches(bytes(data), allow_partial_tail=True):
                    advanced = batch.next_offset
                    if batch.is_control:
                        continue
                    for r in batch.records():
                        self._replay(states, r.key, r.value)
                if advanced <= offset:
                    break
                offset = advanced
        self.states = states
        self.manager.recovered = {k: (s.start_offset, s.batches) for k, s in states.items()}
        if states:
            log.info("share state: %d share partitions recovered from %s", len(states), SR.STATE_TOPIC)
        return len(states)

    @staticmethod
    def _replay(states: dict, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            kind, gid, tid, p = SR.decode_key(key)
            k = (gid, tid, p)
            if value is None:
                states.pop(k, None)
            elif kind == SR.SNAPSHOT:
                states[k] = SR.decode_snapshot(gid, tid, p, value)
            elif k in states:
                states[k] = SR.apply_update(states[k], value)
        except Exception as exc:  # noqa: BLE001 - one bad record must not stop the load
            log.warning("share state: skipped a record of %s: %s", SR.STATE_TOPIC, exc)

    # ------------------------------------------------------------------ write
    async def flush(self) -> None:
        if not self.dirty and not self.deleted:
            return
        b = self.broker
        if SR.STATE_TOPIC not in b.image.topics:
            await self._ensure_topic()
            t = b.image.topics.get(SR.STATE_TOPIC)
            if t is None:
                return   # not created (logged): the state stays dirty for the next flush
        t = b.image.topics[SR.STATE_TOPIC]
        n = len(t.partitions)
        dirty, self.dirty = self.dirty, {}
        deleted, self.deleted = self.deleted, set()
        now = b.clock.now_ms()
        by_part: dict[int, list] = {}
        for gid, tid, p in deleted:   # tombstones (DeleteShareGroupOffsets)
            self.states.pop((gid, tid, p), None)
            by_part.setdefault(SR.state_partition(gid, tid, p, n), []).append(
                (SR.key(SR.SNAPSHOT, gid, tid, p), None))
        for (gid, tid, p), sp in dirty.items():
            old = self.states.get((gid, tid, p))
            topic = b.image.topics_by_id.get(tid)
            part = topic.partitions.get(p) if topic is not None else None
            st = SR.ShareState(gid, tid, p, (old.snapshot_epoch + 1) if old else 0, old.state_epoch if old else 0,
                               part.leader_epoch if part is not None else 0, sp.start_offset,
                               old.create_timestamp if old else now, now, tuple(sp.state_batches()))
            self.states[(gid, tid, p)] = st
            by_part.setdefault(SR.state_partition(gid, tid, p, n), []).append(
                (SR.key(SR.SNAPSHOT, gid, tid, p), SR.snapshot_value(st)))
        for part, recs in by_part.items():
            await self._append(part, recs)

    async def _append(self, partition: int, recs: list) -> None:
        b = self.broker
        rm = b.replica_manager
        now = b.clock.now_ms()
        try:
            batch = build_batch([(k, v, None, now) for k, v in recs])
            res = rm.append_records(SR.STATE_TOPIC, partition, bytearray(batch), now, required_acks=-1)
        except (KafkaError, OSError) as exc:
            if partition not in self._warned:
                self._warned.add(partition)
                log.warning("share state: cannot append to %s-%d here (%s): the state of its share "
                            "partitions is kept in memory only", SR.STATE_TOPIC, partition, exc)
            return
        ev = rm.wait_for_high_watermark(SR.STATE_TOPIC, partition, res.last_offset + 1)
        if ev is not None:
            timeout = int(b.config.get("share.coordinator.write.timeout.ms")) / 1000
            with trio.move_on_after(timeout) as scope:
                await ev.wait()
            if scope.cancelled_caught:
                log.warning("share state: write to %s-%d not replicated in time", SR.STATE_TOPIC, partition)

    async def _ensure_topic(self) -> None:
        if self._creating is not None:
            await self._creating.wait()
            return
        self._creating = done = trio.Event()
        b = self.broker
        try:
            c = b.config
            rf = min(int(c.get("share.coordinator.state.topic.replication.factor")),
                     max(1, len(b.image.live_brokers())))
            from kwire.metadata import topic_changes  # noqa: PLC0415 - the controller's copies bound
            kept = getattr(topic_changes, "MAX_KEPT_REPLICAS", None)
            if kept is not None:
                rf = min(rf, kept)
            seg = int(c.get("share.coordinator.state.topic.segment.bytes"))
            configs = {"cleanup.policy": "compact",
                       "segment.bytes" if seg >= 1 << 20 else "internal.segment.bytes": str(seg)}
            res = await b.create_topic(SR.STATE_TOPIC, int(c.get("share.coordinator.state.topic.num.partitions")),
                                       rf, configs)
            if res.code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                log.warning("cannot create %s: %s %s", SR.STATE_TOPIC, ErrorCode(res.code).name, res.message)
        except KafkaError as exc:
            log.warning("cannot create %s: %s", SR.STATE_TOPIC, exc)
        finally:
            self._creating = None
            done.set()
