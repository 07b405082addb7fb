"""The share coordinator's side of KIP-932's share-partition durability (Kafka's
ShareCoordinatorShard, for the ``__share_group_state`` partitions this broker leads): the
last state of each share partition "group:topicId:partition" whose state partition is led
here, replayed from that partition's log (snapshots, updates, tombstones) the first time it
is served at a leader epoch; ReadShareGroupState / WriteShareGroupState /
DeleteShareGroupState answered from it (``read`` / ``write`` / ``delete``: called by the
persister in kwire.share.state_store on the same broker, by kwire.handlers.share_state for
the others). A write appends a ShareSnapshot record (a delete a tombstone) as the leader with
acks=all and answers once it is replicated (share.coordinator.write.timeout.ms).

State epoch (Kafka's): each key's state carries one; DeleteShareGroupState (``delete``)
replaces the state by an empty one (start offset -1, read back as "no state") at the next
state epoch, InitializeShareGroupState (``initialize``, AlterShareGroupOffsets) sets a new
start offset at the state epoch it names (older than the stored one: FENCED_STATE_EPOCH); a
write with a state epoch older than the stored one answers FENCED_STATE_EPOCH, and the
share partition's leader then drops its in-memory state and reads it again. The empty state
is kept (a snapshot, not a tombstone) so that the fence survives a coordinator move.

Fencing: a read or write with a leader epoch of the share partition older than the newest
one seen for the key answers FENCED_LEADER_EPOCH (kept in memory: after a coordinator moves,
the first reader or writer sets it again). A partition not led here: NOT_COORDINATOR; its log
not readable here: COORDINATOR_LOAD_IN_PROGRESS. The replay runs on the event loop (a
compacted topic of small records).
"""
from __future__ import annotations

import logging
from uuid import UUID

import trio

from kwire.codec.records import build_batch, iter_batches
from kwire.errors import ErrorCode, KafkaError
from kwire.share import records as SR

log = logging.getLogger("kwire.share")
Key = tuple[str, UUID, int]


class ShareCoordinator:
    def __init__(self, broker):
        self.broker = broker
        self.states: dict[Key, SR.ShareState] = {}   # the last state of each key
        self.replayed: dict[int, int] = {}           # state partition -> leader epoch replayed at
        self.leader_epochs: dict[Key, int] = {}      # the newest share-partition leader epoch seen

    def _coordinating(self, group_id: str, topic_id: UUID, partition: int) -> tuple[ErrorCode, int]:
        """NOT_COORDINATOR unless this broker leads the key's state partition; replays the
        partition's log the first time it serves it at its leader epoch."""
        t = self.broker.image.topics.get(SR.STATE_TOPIC)
        if t is None:
            return ErrorCode.NOT_COORDINATOR, -1
        n = len(t.partitions)
        sp_idx = SR.state_partition(group_id, topic_id, partition, n)
        part = t.partitions.get(sp_idx)
        if part is None or part.leader != self.broker.node_id:
            return ErrorCode.NOT_COORDINATOR, sp_idx
        if self.replayed.get(sp_idx) != part.leader_epoch:
            states: dict[Key, SR.ShareState] = {}
            if not self.replay_partition(sp_idx, states):
                return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, sp_idx
            for k in [k for k in self.states if SR.state_partition(*k, n) == sp_idx]:
                del self.states[k]
            self.states.update(states)
            self.replayed[sp_idx] = part.leader_epoch
        return ErrorCode.NONE, sp_idx

    def read(self, group_id: str, topic_id: UUID, partition: int,
             leader_epoch: int) -> tuple[ErrorCode, SR.ShareState | None]:
        """ReadShareGroupState on the coordinator: the key's state (None: never written)."""
        err, _ = self._coordinating(group_id, topic_id, partition)
        if err != ErrorCode.NONE:
            return err, None
        key = (group_id, topic_id, partition)
        if leader_epoch >= 0:
            if leader_epoch < self.leader_epochs.get(key, -1):
                return ErrorCode.FENCED_LEADER_EPOCH, None
            self.leader_epochs[key] = leader_epoch
        return ErrorCode.NONE, self.states.get(key)

    async def write(self, group_id: str, topic_id: UUID, partition: int, state_epoch: int,
                    leader_epoch: int, start_offset: int, batches) -> ErrorCode:
        """WriteShareGroupState on the coordinator: a ShareSnapshot record appended and
        replicated (acks=all), or the error."""
        err, sp_idx = self._coordinating(group_id, topic_id, partition)
        if err != ErrorCode.NONE:
            return err
        key = (group_id, topic_id, partition)
        if leader_epoch < self.leader_epochs.get(key, -1):
            return ErrorCode.FENCED_LEADER_EPOCH
        old = self.states.get(key)
        if old is not None and state_epoch < old.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH   # deleted or initialized since the leader read it
        self.leader_epochs[key] = leader_epoch
        now = self.broker.clock.now_ms()
        if start_offset < 0:   # "not being written": keep the one stored
            start_offset = old.start_offset if old is not None else 0
        st = SR.ShareState(group_id, topic_id, partition, (old.snapshot_epoch + 1) if old else 0,
                           max(state_epoch, old.state_epoch if old else 0), leader_epoch, start_offset,
                           old.create_timestamp if old else now, now, tuple(batches))
        self.states[key] = st
        return await self.append(sp_idx, [(SR.key(SR.SNAPSHOT, group_id, topic_id, partition),
                                            SR.snapshot_value(st))])

    async def delete(self, group_id: str, topic_id: UUID, partition: int) -> ErrorCode:
        """DeleteShareGroupState on the coordinator: the key's state replaced by an empty
        one (start offset -1: "no state") at the next state epoch, replicated; a leader
        still holding the old state is fenced by it (FENCED_STATE_EPOCH) and reads again."""
        err, sp_idx = self._coordinating(group_id, topic_id, partition)
        if err != ErrorCode.NONE:
            return err
        key = (group_id, topic_id, partition)
        old = self.states.get(key)
        if old is None:
            return ErrorCode.NONE   # nothing to delete, nothing to fence
        now = self.broker.clock.now_ms()
        st = SR.ShareState(group_id, topic_id, partition, old.snapshot_epoch + 1, old.state_epoch + 1,
                           old.leader_epoch, -1, old.create_timestamp, now, ())
        self.states[key] = st
        return await self.append(sp_idx, [(SR.key(SR.SNAPSHOT, group_id, topic_id, partition),
                                            SR.snapshot_value(st))])

    async def initialize(self, group_id: str, topic_id: UUID, partition: int, state_epoch: int,
                         start_offset: int) -> ErrorCode:
        """InitializeShareGroupState on the coordinator: the key's state set to start at
        ``start_offset`` with nothing in flight, at ``state_epoch`` (older than the stored
        one: FENCED_STATE_EPOCH), replicated; a leader holding an older state epoch is
        fenced by it on its next write and reads the new state."""
        err, sp_idx = self._coordinating(group_id, topic_id, partition)
        if err != ErrorCode.NONE:
            return err
        key = (group_id, topic_id, partition)
        old = self.states.get(key)
        if old is not None and state_epoch < old.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        if start_offset < 0:   # "not being initialized": the stored one (none: no state)
            start_offset = old.start_offset if old is not None else -1
        now = self.broker.clock.now_ms()
        st = SR.ShareState(group_id, topic_id, partition, (old.snapshot_epoch + 1) if old else 0, state_epoch,
                           old.leader_epoch if old else -1, start_offset,
                           old.create_timestamp if old else now, now, ())
        self.states[key] = st
        return await self.append(sp_idx, [(SR.key(SR.SNAPSHOT, group_id, topic_id, partition),
                                            SR.snapshot_value(st))])

    def replay_partition(self, p: int, states: dict) -> bool:
        plog = self.broker.replica_manager.local_log(SR.STATE_TOPIC, p)
        if plog is None or plog.offline:
            return False
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
        return True

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

    async def append(self, partition: int, recs: list) -> ErrorCode:
        """Append records to a state partition this broker leads (acks=all) and wait until
        they are replicated (share.coordinator.write.timeout.ms)."""
        b = self.broker
        rm = b.replica_manager
        now = b.clock.now_ms()
        try:
            batch = build_batch([(k, v, None, now) for k, v in recs])
            res = rm.append_records(SR.STATE_TOPIC, partition, bytearray(batch), now, required_acks=-1)
        except KafkaError as exc:
            log.warning("share state: cannot append to %s-%d here: %s", SR.STATE_TOPIC, partition, exc)
            return ErrorCode(exc.code) if hasattr(exc, "code") else ErrorCode.UNKNOWN_SERVER_ERROR
        except OSError as exc:
            log.warning("share state: cannot append to %s-%d here: %s", SR.STATE_TOPIC, partition, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        ev = rm.wait_for_high_watermark(SR.STATE_TOPIC, partition, res.last_offset + 1)
        if ev is not None:
            timeout = int(b.config.get("share.coordinator.write.timeout.ms")) / 1000
            with trio.move_on_after(timeout) as scope:
                await ev.wait()
            if scope.cancelled_caught:
                log.warning("share state: write to %s-%d not replicated in time", SR.STATE_TOPIC, partition)
                return ErrorCode.REQUEST_TIMED_OUT
            check = getattr(rm, "acks_all_error", None)
            if check is not None:
                return check(SR.STATE_TOPIC, partition, res.last_offset + 1, getattr(res, "leader_epoch", -1))
        return ErrorCode.NONE
