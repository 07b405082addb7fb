"""The share coordinator's side of KIP-932's share-partition durability (Kafka's
ShareCoordinatorShard, for the ``__share_group_state`` partitions this broker leads): the
last state of each share partition "group:topicId:partition" whose state partition is led
here, replayed from that partition's log (snapshots, updates, tombstones) the first time it
is served at a leader epoch; ReadShareGroupState / WriteShareGroupState /
DeleteShareGroupState answered from it (``read`` / ``write`` / ``delete``: called by the
persister in kwire.share.state_store on the same broker, by kwire.handlers.share_state for
the others). A write appends a ShareSnapshot record (a delete an empty one) as the leader with
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
not readable here: COORDINATOR_LOAD_IN_PROGRESS.

Loading (Kafka's CoordinatorRuntime scheduleLoadOperation + CoordinatorLoaderImpl, done
lazily: the first request for a state partition at a leader epoch starts it): one load per
state partition at a time; requests for it meanwhile wait for that load
(``load_partition``), the others go on. Kafka answers COORDINATOR_LOAD_IN_PROGRESS meanwhile
and its callers retry; waiting spares those round trips (and the first request after a
restart its failure) and costs the loop nothing, the load running off it. The load takes the
file regions of the whole log [log start, log end) at once on the loop
(``PartitionLog.read_range``, under the log's lock: a consistent view of the segment list;
each region keeps its file open), then reads and decodes them in a worker thread, in chunks
of share.coordinator.load.buffer.size (``decode_states``). Not chunked reads on the loop
with checkpoints between them: the log cleaner may swap the compacted segments between two
chunks (the regions taken at once read the log as it was, even once swapped out), and
decoding a large partition on the loop would stall every connection of the broker.
Leadership and leader epoch are checked again before the states are installed (moved
meanwhile: loaded again at the new epoch, or NOT_COORDINATOR). Nothing is appended to the
partition by this coordinator during its load (every write waits for it), so the states
read are the last ones.

DeleteShareGroupState (``delete_many``) writes one batch per state partition per request (as
Kafka's ShareCoordinatorShard writes one record list per shard): one append and one
replication wait per state partition.
"""
from __future__ import annotations

import logging
from uuid import UUID

import trio

from kwire.codec.records import iter_batches
from kwire.coordinator.runtime import CoordinatorRuntime
from kwire.errors import ErrorCode
from kwire.log.regions import FileRegion
from kwire.share import records as SR

log = logging.getLogger("kwire.share")
Key = tuple[str, UUID, int]
#: what a caller of the coordinator retries: it moving, not knowing yet that it leads, or its
#: state partition's log not readable here yet
RETRIABLE = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


class ShareCoordinator:
    def __init__(self, broker):
        self.broker = broker
        self.states: dict[Key, SR.ShareState] = {}   # the last state of each key
        self.loaded: dict[int, int] = {}             # state partition -> leader epoch loaded at
        self.loading: dict[int, trio.Event] = {}     # state partitions being loaded, set when done
        self.leader_epochs: dict[Key, int] = {}      # the newest share-partition leader epoch seen
        # its writes go through the runtime's append (its loads are its own: see the module doc)
        self.runtime = CoordinatorRuntime(broker, SR.STATE_TOPIC, name="share states",
                                          load_buffer_key="share.coordinator.load.buffer.size",
                                          write_timeout_key="share.coordinator.write.timeout.ms", logger=log)

    def _state_partition(self, group_id: str, topic_id: UUID, partition: int):
        """(state partition or -1, its partition record in the image or None)."""
        t = self.broker.image.topics.get(SR.STATE_TOPIC)
        if t is None:
            return -1, None
        sp_idx = SR.state_partition(group_id, topic_id, partition, len(t.partitions))
        return sp_idx, t.partitions.get(sp_idx)

    def _led_epoch(self, sp_idx: int) -> int | None:
        """The leader epoch of the state partition when this broker leads it, else None."""
        t = self.broker.image.topics.get(SR.STATE_TOPIC)
        part = t.partitions.get(sp_idx) if t is not None else None
        if part is None or part.leader != self.broker.node_id:
            return None
        return part.leader_epoch

    async def _coordinating(self, group_id: str, topic_id: UUID, partition: int) -> tuple[ErrorCode, int]:
        """NOT_COORDINATOR unless this broker leads the key's state partition; loads the
        partition the first time it serves it at its leader epoch (``load_partition``). Returns
        with no await after the check, so the caller acts on the state it checked."""
        sp_idx, _ = self._state_partition(group_id, topic_id, partition)
        if sp_idx < 0:
            return ErrorCode.NOT_COORDINATOR, -1
        return await self.load_partition(sp_idx), sp_idx

    async def load_partition(self, sp_idx: int) -> ErrorCode:
        """NONE once the state partition is loaded at its current leader epoch: waits for
        a load in progress, or runs one (one at a time per partition; a load cut short, its
        requester cancelled or leadership moved, is started again by the next waiter)."""
        while True:
            epoch = self._led_epoch(sp_idx)
            if epoch is None:
                return ErrorCode.NOT_COORDINATOR
            if self.loaded.get(sp_idx) == epoch:
                return ErrorCode.NONE
            loading = self.loading.get(sp_idx)
            if loading is not None:
                await loading.wait()
                continue
            self.loading[sp_idx] = done = trio.Event()
            try:
                err = await self._load(sp_idx, epoch)
            finally:
                del self.loading[sp_idx]
                done.set()
            if err != ErrorCode.NONE:
                return err

    async def _load(self, sp_idx: int, epoch: int) -> ErrorCode:
        """Load the state partition at ``epoch`` (see the module doc): NONE (installed, or
        leadership moved meanwhile: the caller checks again), or
        COORDINATOR_LOAD_IN_PROGRESS when its log is not readable here."""
        # the keys held now whose state partition this is, found in the thread too: they
        # stay the same meanwhile (every write to this partition waits for the load)
        n = len(self.broker.image.topics[SR.STATE_TOPIC].partitions)
        held = list(self.states)
        states = await self.read_partition(sp_idx, stale_of=(held, n))
        if states is None:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        states, stale = states
        if self._led_epoch(sp_idx) != epoch:
            return ErrorCode.NONE   # moved while loading: not installed
        for k in stale:
            self.states.pop(k, None)
        self.states.update(states)
        self.loaded[sp_idx] = epoch
        if states:
            log.info("share state: %d share partition states loaded from %s-%d", len(states), SR.STATE_TOPIC, sp_idx)
        return ErrorCode.NONE

    async def read_partition(self, sp_idx: int, stale_of=None):
        """The last state of each key in the local log of a state partition (None: not
        readable here): its file regions taken at once here, read and decoded in a worker
        thread (see the module doc). ``stale_of`` (keys, number of state partitions): with
        the keys among those whose state partition this is, found in the thread too."""
        rm = self.broker.replica_manager
        await rm.wait_log_open(SR.STATE_TOPIC, sp_idx)   # opened off the loop after a delta
        plog = rm.local_log(SR.STATE_TOPIC, sp_idx)
        if plog is None or plog.offline:
            return None
        try:
            data = plog.read_range(plog.log_start_offset, plog.log_end_offset)
            chunk = int(self.broker.config.get("share.coordinator.load.buffer.size"))
            if stale_of is None:
                return await trio.to_thread.run_sync(decode_states, data.regions, chunk)
            keys, n = stale_of

            def work():
                return decode_states(data.regions, chunk), [k for k in keys if SR.state_partition(*k, n) == sp_idx]

            return await trio.to_thread.run_sync(work)
        except Exception:  # noqa: BLE001 - a storage error, a corrupt batch: not served, the broker goes on
            log.exception("share state: loading %s-%d failed", SR.STATE_TOPIC, sp_idx)
            return None

    async def read(self, group_id: str, topic_id: UUID, partition: int,
                   leader_epoch: int) -> tuple[ErrorCode, SR.ShareState | None]:
        """ReadShareGroupState on the coordinator: the key's state (None: never written)."""
        err, _ = await self._coordinating(group_id, topic_id, partition)
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
        err, sp_idx = await self._coordinating(group_id, topic_id, partition)
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
        """DeleteShareGroupState of one share partition (``delete_many``)."""
        return (await self.delete_many(group_id, [(topic_id, partition)]))[(topic_id, partition)]

    async def delete_many(self, group_id: str, tps) -> dict[tuple[UUID, int], ErrorCode]:
        """DeleteShareGroupState on the coordinator, {(topic id, partition): error}: each
        key's state replaced by an empty one (start offset -1: "no state") at the next state
        epoch; one batch per state partition, appended and replicated (the state partitions
        concurrently). A leader still holding the old state is fenced by it
        (FENCED_STATE_EPOCH) and reads again."""
        out: dict[tuple[UUID, int], ErrorCode] = {}
        by_sp: dict[int, list] = {}
        for tid, p in tps:
            sp_idx, _ = self._state_partition(group_id, tid, p)
            if sp_idx < 0:
                out[(tid, p)] = ErrorCode.NOT_COORDINATOR
            else:
                by_sp.setdefault(sp_idx, []).append((tid, p))

        async def one(sp_idx: int, parts: list) -> None:
            err = await self.load_partition(sp_idx)
            recs, written = [], []
            if err == ErrorCode.NONE:   # no await from here to the append
                now = self.broker.clock.now_ms()
                for tid, p in parts:
                    old = self.states.get((group_id, tid, p))
                    if old is None:
                        continue   # nothing to delete, nothing to fence
                    st = SR.ShareState(group_id, tid, p, old.snapshot_epoch + 1, old.state_epoch + 1,
                                       old.leader_epoch, -1, old.create_timestamp, now, ())
                    self.states[(group_id, tid, p)] = st
                    recs.append((SR.key(SR.SNAPSHOT, group_id, tid, p), SR.snapshot_value(st)))
                    written.append((tid, p))
                if recs:
                    err = await self.append(sp_idx, recs)
            for tp in parts:
                out[tp] = err if tp in written or err != ErrorCode.NONE else ErrorCode.NONE

        async with trio.open_nursery() as n:
            for sp_idx, parts in by_sp.items():
                n.start_soon(one, sp_idx, parts)
        return out

    async def initialize(self, group_id: str, topic_id: UUID, partition: int, state_epoch: int,
                         start_offset: int) -> ErrorCode:
        """InitializeShareGroupState on the coordinator: the key's state set to start at
        ``start_offset`` with nothing in flight, at ``state_epoch`` (older than the stored
        one: FENCED_STATE_EPOCH), replicated; a leader holding an older state epoch is
        fenced by it on its next write and reads the new state."""
        err, sp_idx = await self._coordinating(group_id, topic_id, partition)
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

    async def append(self, partition: int, recs: list) -> ErrorCode:
        """Append records to a state partition this broker leads through the runtime's append
        (the replica manager's one append path, acks=all) and wait until the outcome
        completed (share.coordinator.write.timeout.ms): replicated with the leader epoch of
        the append and min.insync.replicas met."""
        return (await self.runtime.append_wait(partition, recs)).error


def decode_states(regions, chunk_bytes: int) -> dict[Key, SR.ShareState]:
    """The last state of each key in a state partition's batches (file regions or bytes,
    ``PartitionLog.read_range``), read ``chunk_bytes`` at a time: the load's work off the
    loop (in a worker thread; pure, no broker state touched)."""
    states: dict[Key, SR.ShareState] = {}
    for region in regions:
        if not isinstance(region, FileRegion):
            _replay_buffer(states, bytes(region))
            continue
        pos, stop, tail = region.position, region.position + region.length, b""
        while pos < stop:
            n = min(max(chunk_bytes, 1), stop - pos)
            buf = tail + bytes(FileRegion(region.file, pos, n))
            pos += n
            tail = buf[_replay_buffer(states, buf):]   # a batch cut by the chunk: read on with the next
        if tail:
            log.warning("share state: %d bytes of a partial batch at the end of a segment skipped", len(tail))
    return states


def _replay_buffer(states: dict, buf: bytes) -> int:
    """Replay the whole batches in ``buf``; the bytes they take."""
    end = 0
    for batch in iter_batches(buf, allow_partial_tail=True):
        end = batch.end
        if batch.is_control:
            continue
        for r in batch.records():
            _replay(states, r.key, r.value)
    return end


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
