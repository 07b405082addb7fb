"""The Trio edge of share-partition durability (KIP-932): Kafka's share persister (on the
share partition's leader) and share coordinator (on the leader of the ``__share_group_state``
partition of the key "group:topicId:partition", kwire.share.records.state_partition), talking
Kafka's inter-broker RPCs ReadShareGroupState (84), WriteShareGroupState (85) and
DeleteShareGroupState (86) over the
inter-broker channel (kwire.coordinator.channel.BrokerChannel), or calling the coordinator
side directly when both roles are on this broker (the local fast path).

The persister:
- ``ensure_loaded()``: the ShareFetch / ShareAcknowledge handlers call it for the partitions
  this broker leads before touching them. The first time a share partition is served at a
  leader epoch (a new leader, or this broker leading it again), its state is read from the
  share coordinator (ReadShareGroupState with the leader epoch, which fences writes of older
  leaders) and the share partition starts from it (acquired records come back available: a
  lock does not survive its leader, the delivery count does, so the next delivery counts one
  more); no state: share.auto.offset.reset. Until a read succeeds (no coordinator yet, it
  died and its partition has no new leader) the partition is not served: ``ready()`` is false
  and the fetch answers it with no records (the client fetches again). A fetch opening a
  share session reads the served ones again too (``recheck``) and starts over from a state
  of a newer state epoch (offsets altered or deleted while this leader sat idle).
- ``flush()``: before answering, the ShareFetch / ShareAcknowledge handlers flush every share
  partition changed since the last flush: WriteShareGroupState (state epoch, leader epoch,
  start offset, state batches) to the coordinator, which appends a ShareSnapshot record with
  acks=all and answers once it is replicated, so an acknowledgement answered is durable. A
  failed write (no coordinator, it moving, NOT_COORDINATOR while it learns it leads) is
  retried with a backoff until share.coordinator.write.timeout.ms; then it stays dirty for
  the next flush, and the acknowledgements of that partition in the request answer the
  write's error (the state in memory keeps them). One flush at a time (writes in order; a
  request answers only after the writes of what it changed). The topic is created on the
  first write (share.coordinator.state.topic.*: partitions, replication factor at most the
  live brokers, compacted, segment bytes).

The coordinator's side is kwire.share.coordinator (``self.coordinator``; served to other
brokers by kwire.handlers.share_state); FindCoordinator key type 2 names it
(``coordinator_node``).

``load()`` loads the local ``__share_group_state`` partitions at start, before the
listeners serve (the ``recovered`` table of the share partition manager, a share partition
made before any read answers; the ones led here straight into the coordinator), each read
and decoded in a worker thread as the coordinator's loads are (kwire.share.coordinator), so
the raft and replication tasks already running on the loop are not stalled by it.

DeleteShareGroupOffsets deletes a share partition's state with DeleteShareGroupState (86;
the coordinator stores an empty state at the next state epoch): one request per coordinator
and group for the share partitions deleted since the last flush (one batch per state
partition there), retried on the coordinator's retriable errors (moving, not knowing yet it
leads, COORDINATOR_LOAD_IN_PROGRESS) until share.coordinator.write.timeout.ms.

State epoch: the persister keeps the state epoch it read and sends it with each write; a
write answered
FENCED_STATE_EPOCH (the state was deleted or initialized at the coordinator since: a
DeleteShareGroupOffsets / AlterShareGroupOffsets on a group coordinator elsewhere) is not
retried: ``fence()`` drops the in-memory share partition, the acknowledgements of that
request answer FENCED_STATE_EPOCH, and the next ShareFetch / ShareAcknowledge reads the
state again.

InitializeShareGroupState (83) and ReadShareGroupStateSummary (87), sent by the group
coordinator for the offsets admin APIs: kwire.share.state_admin.

Left out: Kafka's group coordinator initializes a share partition's state when the group
first gets it assigned; here the leader's first write does.
ShareUpdate deltas are read but not written (a full snapshot each time; the compacted topic
keeps the last). Kafka rolls the in-memory state back when a write fails; here it stays.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from uuid import UUID

import trio

from kwire.codec.apis import api
from kwire.coordinator.runtime import topic_replication_factor
from kwire.errors import ErrorCode
from kwire.share import records as SR
from kwire.share.coordinator import RETRIABLE, Key, ShareCoordinator
from kwire.share.partition import SharePartition, StateBatch

if TYPE_CHECKING:
    from kwire.share.manager import SharePartitionManager

log = logging.getLogger("kwire.share")


class ShareStateStore:
    def __init__(self, broker, manager: SharePartitionManager):
        self.broker = broker
        self.manager = manager
        self.dirty: dict[Key, SharePartition] = {}
        self.deleted: set[Key] = set()
        #: persister: the leader epoch at which each share partition was read (served since)
        self.served: dict[Key, int] = {}
        #: persister: the state epoch of each share partition's state as read (sent with its writes)
        self.state_epochs: dict[Key, int] = {}
        self.coordinator = ShareCoordinator(broker)   # the coordinator's side, for the keys led here
        #: share partitions whose state is being read (ensure_loaded), set when done
        self._loading: dict[Key, trio.Event] = {}
        self._flushing = trio.Lock()   # one flush at a time: writes in order, answers after them
        self._channel = None
        manager.on_change = self._on_change
        manager.on_remove = self._on_remove

    def _on_change(self, group_id: str, topic_id: UUID, partition: int, sp: SharePartition) -> None:
        self.dirty[(group_id, topic_id, partition)] = sp
        self.deleted.discard((group_id, topic_id, partition))

    def _on_remove(self, group_id: str, topic_id: UUID, partition: int) -> None:
        self.mark_deleted(group_id, topic_id, partition)

    def mark_deleted(self, group_id: str, topic_id: UUID, partition: int) -> None:
        """Delete the share partition's state at its share coordinator on the next flush
        (DeleteShareGroupOffsets; also for a partition another broker leads, which this
        broker holds no state of)."""
        self.dirty.pop((group_id, topic_id, partition), None)
        self.deleted.add((group_id, topic_id, partition))

    @property
    def channel(self):
        if self._channel is None:
            from kwire.coordinator.channel import BrokerChannel  # noqa: PLC0415 - start-up time: remote share state only

            b = self.broker
            self._channel = BrokerChannel(b, int(b.config.get("request.timeout.ms")) / 1000,
                                          f"kwire-share-persister-{b.node_id}", link=b.peer_security.inter_broker)
        return self._channel

    async def aclose(self) -> None:
        if self._channel is not None:
            await self._channel.aclose()

    # ------------------------------------------------------------------ where
    def coordinator_node(self, group_id: str, topic_id: UUID, partition: int) -> tuple[int, int | None]:
        """(state partition, the broker leading it or None) for a share partition."""
        t = self.broker.image.topics.get(SR.STATE_TOPIC)
        if t is None:
            return -1, None
        sp_idx = SR.state_partition(group_id, topic_id, partition, len(t.partitions))
        part = t.partitions.get(sp_idx)
        if part is None or part.leader is None or part.leader < 0:
            return sp_idx, None
        node = self.broker.image.brokers.get(part.leader)
        if node is None or getattr(node, "fenced", False):
            return sp_idx, None
        return sp_idx, part.leader

    def _leader_epoch(self, topic_id: UUID, partition: int) -> int | None:
        """The leader epoch of a partition this broker leads, else None."""
        t = self.broker.image.topics_by_id.get(topic_id)
        part = t.partitions.get(partition) if t is not None else None
        if part is None or part.leader != self.broker.node_id:
            return None
        return part.leader_epoch

    # ------------------------------------------------------------------ persister: read
    def ready(self, group_id: str, topic_id: UUID, partition: int) -> bool:
        """Whether the share partition's state was read at the current leader epoch."""
        epoch = self._leader_epoch(topic_id, partition)
        return epoch is None or self.served.get((group_id, topic_id, partition)) == epoch

    async def ensure_loaded(self, group_id: str, tps, recheck: bool = False) -> None:
        """Read the state of each (topic id, partition) this broker leads and has not served
        at its current leader epoch (see the module doc). ``recheck`` (a share session
        opening): read the served ones too, and start over from the state read when its
        state epoch is newer than the one held (deleted or altered while the group was
        empty and this leader idle, with no write to be fenced).

        One load per share partition at a time (Kafka's SharePartition initializes once,
        the fetches arriving meanwhile wait for it): the read is a network call when the
        share coordinator is on another broker, and a second load finishing after a fetch
        acquired records from the first would drop them, handing the same records to two
        members. A fetch that waited for another's load does not read again: that state is
        as new as its request."""
        for tid, p in tps:
            key = (group_id, tid, p)
            waited = False
            while (loading := self._loading.get(key)) is not None:
                await loading.wait()
                waited = True
            epoch = self._leader_epoch(tid, p)
            held = self.served.get(key) == epoch
            if epoch is None or (held and (not recheck or waited)):
                continue
            self._loading[key] = done = trio.Event()
            try:
                await self._load(key, epoch, held)
            finally:
                del self._loading[key]
                done.set()

    async def _load(self, key: Key, epoch: int, held: bool) -> None:
        group_id, tid, p = key
        err, state, state_epoch = await self.read_state(group_id, tid, p, epoch)
        if err != ErrorCode.NONE:
            if not held:
                log.info("share state: reading the state of %s %s-%d failed (%s); not served yet",
                         group_id, tid, p, ErrorCode(err).name)
            return
        if self._leader_epoch(tid, p) != epoch:
            return
        # again after the read: fence() or a deletion may have dropped what was held meanwhile
        if self.served.get(key) == epoch:
            if state_epoch <= self.state_epochs.get(key, 0):
                return
            log.info("share state: %s %s-%d has a newer state epoch (%d) at its share coordinator; "
                     "started over from it", group_id, tid, p, state_epoch)
        self.manager.partitions.pop(key, None)   # what an earlier leadership here left
        self.dirty.pop(key, None)
        if state is not None and state[0] >= 0:
            self.manager.recovered[key] = state
        else:
            self.manager.recovered.pop(key, None)
        self.served[key] = epoch
        self.state_epochs[key] = state_epoch

    def fence(self, key: Key, state_epoch: int) -> None:
        """FENCED_STATE_EPOCH on a write at ``state_epoch``: the state was deleted or
        initialized at the share coordinator since it was read; the in-memory share partition
        is dropped and the next ShareFetch / ShareAcknowledge reads the state again
        (``ensure_loaded``). Unless it was read again at a newer state epoch while the write
        was on its way: that share partition is the current one (records may be acquired
        from it already) and is kept."""
        if self.state_epochs.get(key, 0) != state_epoch:
            return
        log.info("share state: %s %s-%d fenced by a newer state epoch; its state is read again", *key)
        self.manager.partitions.pop(key, None)
        self.manager.recovered.pop(key, None)
        self.dirty.pop(key, None)
        self.served.pop(key, None)
        self.state_epochs.pop(key, None)

    async def read_state(self, group_id: str, topic_id: UUID, partition: int, leader_epoch: int):
        """(error, (start offset, state batches) or None, state epoch) from the share coordinator."""
        if SR.STATE_TOPIC not in self.broker.image.topics:
            return ErrorCode.NONE, None, 0   # nothing was ever written
        _, node = self.coordinator_node(group_id, topic_id, partition)
        if node is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, 0
        if node == self.broker.node_id:
            err, st = await self.coordinator.read(group_id, topic_id, partition, leader_epoch)
            if st is None:
                return err, None, 0
            return err, ((st.start_offset, st.batches) if st.start_offset >= 0 else None), st.state_epoch
        R = api("ReadShareGroupState").request
        req = R.cls(group_id=group_id, topics=[R.struct("ReadStateData")(topic_id=topic_id, partitions=[
            R.struct("PartitionData")(partition=partition, leader_epoch=leader_epoch)])])
        try:
            resp = await self.channel.request(node, "ReadShareGroupState", 0, req)
        except Exception as exc:  # noqa: BLE001 - unreachable, timed out, a bad answer
            log.info("share state: ReadShareGroupState to broker %d failed: %s", node, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, 0
        for r in resp.results:
            for pr in r.partitions:
                if r.topic_id == topic_id and pr.partition == partition:
                    if pr.error_code:
                        return ErrorCode(pr.error_code), None, 0
                    batches = tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                                    for b in pr.state_batches)
                    return (ErrorCode.NONE, ((pr.start_offset, batches) if pr.start_offset >= 0 else None),
                            pr.state_epoch)
        return ErrorCode.UNKNOWN_SERVER_ERROR, None, 0

    # ------------------------------------------------------------------ persister: write
    async def flush(self) -> dict[Key, ErrorCode]:
        """Write the share partitions changed; the ones not written (kept dirty) and why."""
        async with self._flushing:
            return await self._flush()

    async def _flush(self) -> dict[Key, ErrorCode]:
        if not self.dirty and not self.deleted:
            return {}
        b = self.broker
        if SR.STATE_TOPIC not in b.image.topics:
            await self._ensure_topic()
            if b.image.topics.get(SR.STATE_TOPIC) is None:   # not created (logged): kept dirty
                return {k: ErrorCode.COORDINATOR_NOT_AVAILABLE for k in self.dirty}
        dirty, self.dirty = self.dirty, {}
        deleted, self.deleted = self.deleted, set()
        for key in deleted:
            self.served.pop(key, None)
        if deleted:   # DeleteShareGroupOffsets, DeleteGroups: the states replaced by empty ones
            await self._delete_all(deleted)
        failed = await self._write_all(dict(dirty))
        for key in failed:   # kept for the next flush
            if key not in self.dirty and (sp := self.manager.partitions.get(key)) is not None:
                self.dirty[key] = sp
        return failed

    async def _write_all(self, pending: dict) -> dict[Key, ErrorCode]:
        """Write the states, retrying (the coordinator may be moving, or not know yet that it
        leads its partition) with a backoff until share.coordinator.write.timeout.ms; the keys
        not written and why."""
        b = self.broker
        deadline = trio.current_time() + int(b.config.get("share.coordinator.write.timeout.ms")) / 1000
        backoff = 0.05
        fenced: dict[Key, ErrorCode] = {}
        while True:
            writes: dict[tuple[int | None, str], list] = {}
            for key, sp in pending.items():
                gid, tid, p = key
                epoch = self._leader_epoch(tid, p)
                if epoch is None or self.served.get(key, epoch) != epoch:
                    continue   # no longer the leader: the state is not this broker's to write
                _, node = self.coordinator_node(gid, tid, p)
                writes.setdefault((node, gid), []).append((tid, p, epoch, self.state_epochs.get(key, 0),
                                                           sp.start_offset, tuple(sp.state_batches())))
            failed: dict[Key, ErrorCode] = {}
            for (node, gid), parts in writes.items():
                written = {(tid, p): state_epoch for tid, p, _, state_epoch, *_ in parts}
                for (tid, p), err in (await self._write(node, gid, parts)).items():
                    if err == ErrorCode.FENCED_STATE_EPOCH:   # not retried: read again
                        self.fence((gid, tid, p), written[(tid, p)])
                        fenced[(gid, tid, p)] = err
                    else:
                        failed[(gid, tid, p)] = err
            if not failed or trio.current_time() + backoff >= deadline:
                if failed:
                    log.warning("share state: %d share partition states not written: %s", len(failed),
                                sorted({e.name for e in failed.values()}))
                return failed | fenced
            await trio.sleep(backoff)
            backoff = min(backoff * 2, 0.5)
            pending = {k: sp for k in failed if (sp := self.manager.partitions.get(k)) is not None}

    async def _write(self, node: int | None, group_id: str, parts: list) -> list:
        """Write the states of one group's share partitions to one coordinator; the
        (topic id, partition) not written and why."""
        if node is None:
            return {(tid, p): ErrorCode.COORDINATOR_NOT_AVAILABLE for tid, p, *_ in parts}
        if node == self.broker.node_id:
            failed = {}
            for tid, p, epoch, state_epoch, start, batches in parts:
                err = await self.coordinator.write(group_id, tid, p, state_epoch, epoch, start, batches)
                if err != ErrorCode.NONE:
                    log.info("share state: write of %s %s-%d failed: %s", group_id, tid, p, ErrorCode(err).name)
                    if err != ErrorCode.FENCED_LEADER_EPOCH:
                        failed[(tid, p)] = ErrorCode(err)
            return failed
        R = api("WriteShareGroupState").request
        by_topic: dict[UUID, list] = {}
        for tid, p, epoch, state_epoch, start, batches in parts:
            by_topic.setdefault(tid, []).append(R.struct("PartitionData")(
                partition=p, state_epoch=state_epoch, leader_epoch=epoch, start_offset=start,
                state_batches=[R.struct("StateBatch")(first_offset=x.first_offset, last_offset=x.last_offset,
                                                      delivery_state=x.delivery_state,
                                                      delivery_count=x.delivery_count) for x in batches]))
        req = R.cls(group_id=group_id, topics=[R.struct("WriteStateData")(topic_id=t, partitions=ps)
                                              for t, ps in by_topic.items()])
        try:
            resp = await self.channel.request(node, "WriteShareGroupState", 0, req)
        except Exception as exc:  # noqa: BLE001 - unreachable, timed out, a bad answer
            log.info("share state: WriteShareGroupState to broker %d failed: %s", node, exc)
            return {(tid, p): ErrorCode.COORDINATOR_NOT_AVAILABLE for tid, p, *_ in parts}
        errors = {}
        for r in resp.results:
            for pr in r.partitions:
                errors[(r.topic_id, pr.partition)] = ErrorCode(pr.error_code)
                if pr.error_code:
                    log.info("share state: broker %d answered the write of %s %s-%d with %s", node,
                             group_id, r.topic_id, pr.partition, ErrorCode(pr.error_code).name)
        out = {}
        for tid, p, *_ in parts:
            err = errors.get((tid, p), ErrorCode.UNKNOWN_SERVER_ERROR)
            if err not in (ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH):
                out[(tid, p)] = err
        return out

    async def _delete_all(self, pending: set[Key]) -> None:
        """Delete the states at their coordinators: one DeleteShareGroupState per coordinator
        and group (one batch per state partition there), retried like the writes (a
        coordinator moving, learning it leads, loading its partition: RETRIABLE) until
        share.coordinator.write.timeout.ms; what still failed then is logged (not kept: a
        flush must not wait on it again)."""
        deadline = trio.current_time() + int(self.broker.config.get("share.coordinator.write.timeout.ms")) / 1000
        backoff = 0.05
        while True:
            by_node: dict[tuple[int | None, str], list] = {}
            for gid, tid, p in pending:
                by_node.setdefault((self.coordinator_node(gid, tid, p)[1], gid), []).append((tid, p))
            failed: dict[Key, ErrorCode] = {}
            for (node, gid), tps in by_node.items():
                for (tid, p), err in (await self._delete(node, gid, tps)).items():
                    if err != ErrorCode.NONE:
                        failed[(gid, tid, p)] = err
            retry = {k for k, e in failed.items() if e in RETRIABLE and k not in self.dirty}
            if not retry or trio.current_time() + backoff >= deadline:
                retry = set()
            given_up = {e.name for k, e in failed.items() if k not in retry}
            if given_up:
                log.warning("share state: %d share partition states not deleted: %s",
                            len(failed) - len(retry), sorted(given_up))
            if not retry:
                return
            await trio.sleep(backoff)
            backoff = min(backoff * 2, 0.5)
            pending = retry

    async def _delete(self, node: int | None, group_id: str, tps: list) -> dict[tuple[UUID, int], ErrorCode]:
        """DeleteShareGroupState of one group's share partitions at one coordinator."""
        if node is None:
            return {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in tps}
        if node == self.broker.node_id:
            return await self.coordinator.delete_many(group_id, tps)
        R = api("DeleteShareGroupState").request
        by_topic: dict[UUID, list] = {}
        for tid, p in tps:
            by_topic.setdefault(tid, []).append(R.struct("PartitionData")(partition=p))
        req = R.cls(group_id=group_id, topics=[R.struct("DeleteStateData")(topic_id=t, partitions=ps)
                                              for t, ps in by_topic.items()])
        try:
            resp = await self.channel.request(node, "DeleteShareGroupState", 0, req)
        except Exception as exc:  # noqa: BLE001 - unreachable, timed out, a bad answer
            log.info("share state: DeleteShareGroupState to broker %d failed: %s", node, exc)
            return {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in tps}
        errors = {(r.topic_id, pr.partition): ErrorCode(pr.error_code) for r in resp.results for pr in r.partitions}
        return {tp: errors.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in tps}

    async def at_coordinator(self, group_id: str, topic_id: UUID, partition: int, local, api_name: str,
                             topic_struct: str, **fields) -> ErrorCode:
        """One share partition's state RPC at its share coordinator, answered by its error:
        ``await local()`` when that is this broker, else ``api_name`` v0 over the broker
        channel (the partition's ``fields`` in a PartitionData under a ``topic_struct``)."""
        _, node = self.coordinator_node(group_id, topic_id, partition)
        if node is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if node == self.broker.node_id:
            return await local()
        R = api(api_name).request
        req = R.cls(group_id=group_id, topics=[R.struct(topic_struct)(
            topic_id=topic_id, partitions=[R.struct("PartitionData")(partition=partition, **fields)])])
        try:
            resp = await self.channel.request(node, api_name, 0, req)
        except Exception as exc:  # noqa: BLE001 - unreachable, timed out, a bad answer
            log.info("share state: %s to broker %d failed: %s", api_name, node, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        for r in resp.results:
            for pr in r.partitions:
                if r.topic_id == topic_id and pr.partition == partition:
                    return ErrorCode(pr.error_code)
        return ErrorCode.UNKNOWN_SERVER_ERROR

    # ------------------------------------------------------------------ load
    async def load(self) -> int:
        """Load the local ``__share_group_state`` partitions at start (before the listeners
        serve; the reads and decoding in a worker thread, kwire.share.coordinator): the ones
        led here into the coordinator at their leader epoch (not loaded again by the first
        request), all into the ``recovered`` table. Returns the number of share partitions
        recovered."""
        t = self.broker.image.topics.get(SR.STATE_TOPIC)
        if t is None:
            return 0
        coord = self.coordinator
        n = len(t.partitions)
        states: dict[Key, SR.ShareState] = {}
        for p in sorted(t.partitions):
            if await coord.load_partition(p) == ErrorCode.NONE:
                states.update({k: s for k, s in coord.states.items() if SR.state_partition(*k, n) == p})
            else:   # not led here (or not readable): what the local log holds
                states.update(await coord.read_partition(p) or {})
        coord.states.update({k: s for k, s in states.items() if k not in coord.states})
        self.manager.recovered = {k: (s.start_offset, s.batches) for k, s in states.items() if s.start_offset >= 0}
        if states:
            log.info("share state: %d share partitions recovered from %s", len(states), SR.STATE_TOPIC)
        return len(states)

    async def _ensure_topic(self) -> None:
        """Create ``__share_group_state`` unless it exists (once at a time, in a task: the
        runtime's ``ensure_topic``): share.coordinator.state.topic.* partitions, replication
        factor at most the live brokers, compacted."""
        await self.coordinator.runtime.ensure_topic(self._create_topic)

    async def _create_topic(self) -> None:
        c = self.broker.config
        seg = int(c.get("share.coordinator.state.topic.segment.bytes"))
        configs = {"cleanup.policy": "compact",
                   "segment.bytes" if seg >= 1 << 20 else "internal.segment.bytes": str(seg)}
        await self.coordinator.runtime.create_topic(
            int(c.get("share.coordinator.state.topic.num.partitions")),
            topic_replication_factor(self.broker, SR.STATE_TOPIC, "share.coordinator.state.topic.replication.factor"),
            configs)
