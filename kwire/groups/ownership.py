"""Which ``__consumer_offsets`` partitions a group coordinator serves (Kafka's
GroupMetadataManager ownedPartitions / loadingPartitions), as a part of GroupCoordinator.

A group is coordinated by the leader of its ``__consumer_offsets`` partition, so the
coordinator of a broker serves the partitions that broker leads, and follows leadership:

- ``begin_load(p)`` when the broker becomes the partition's leader: whatever was held for the
  partition's groups is dropped (as on unload), and a ``PartitionLoad`` is handed out for the
  edge to feed with the partition's records; meanwhile the partition's groups answer
  COORDINATOR_LOAD_IN_PROGRESS (``coordinator_error``);
- ``complete_load(load)`` installs the loaded groups (with the transactional offsets still
  pending, and the outcome of transactions whose marker was written while the partition
  loaded) and starts their members' session timers (Kafka's onGroupLoaded); a load that
  was superseded (the partition resigned or began loading again meanwhile) is ignored;
- ``unload(p)`` when it resigns (Kafka's onGroupUnloaded): each group of the partition goes
  Dead and is forgotten, members waiting in a JoinGroup or SyncGroup are answered
  NOT_COORDINATOR, their timers stop, and writes still in flight for the partition are
  completed with NOT_LEADER_OR_FOLLOWER (which OffsetCommit, DeleteGroups and the rest
  answer as NOT_COORDINATOR): clients then rediscover the coordinator with FindCoordinator.

``owned_partitions`` None means every partition (a coordinator on its own, as in tests); the
edge starts with none and loads those its broker leads. Nothing here does I/O.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable

from kwire.errors import ErrorCode
from kwire.groups.group import Group, GroupState
from kwire.groups.loader import PartitionLoad
from kwire.groups.membership import Record
from kwire.groups.results import JoinResult, SyncResult

E = ErrorCode
S = GroupState
log = logging.getLogger("kwire.groups")


def _ignore(_error: ErrorCode, *_offset: int) -> None:
    pass


class PartitionOwnership:
    """Mixed into GroupCoordinator (which has ``groups``, ``timers``, ``writer``,
    ``partition_for``, ``_forget``, ``_schedule_heartbeat`` and ``_txn_groups``, the groups
    with open transactions by producer id: kwire.groups.txn_offsets)."""

    def _init_ownership(self, owned: Iterable[int] | None) -> None:
        self.owned_partitions: set[int] | None = None if owned is None else set(owned)
        #: partitions being loaded, by partition
        self.loading: dict[int, PartitionLoad] = {}
        # writes not yet acknowledged, by partition: token -> the caller's done
        self._in_flight: dict[int, dict[int, Callable[[ErrorCode, int], None]]] = {}
        self._write_seq = 0

    # ------------------------------------------------------------------ queries
    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        """None when this coordinator serves ``group_id`` now; COORDINATOR_LOAD_IN_PROGRESS
        while its partition loads; NOT_COORDINATOR when it does not own the partition."""
        p = self.partition_for(group_id)
        if p in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if self.owned_partitions is not None and p not in self.owned_partitions:
            return E.NOT_COORDINATOR
        return None

    def owns(self, partition: int) -> bool:
        """True when the partition is loaded and served here."""
        return partition not in self.loading and \
            (self.owned_partitions is None or partition in self.owned_partitions)

    def is_loading(self, partition: int) -> bool:
        return partition in self.loading

    def groups_of(self, partition: int) -> list[Group]:
        return [g for g in self.groups.values() if self.partition_for(g.group_id) == partition]

    # ------------------------------------------------------------------ transitions
    def begin_load(self, partition: int, epoch: int = -1) -> PartitionLoad:
        """This broker became the partition's leader: drop what is held for its groups and
        return the load to feed (``PartitionLoad.replay``) and then ``complete_load``.
        ``epoch``: the partition's leader epoch, as the coordinator runtime hands it to every
        shard; the groups keep none (Kafka's group shard neither)."""
        self.unload(partition)
        load = PartitionLoad(partition)
        self.loading[partition] = load
        return load

    def complete_load(self, load: PartitionLoad) -> bool:
        """Serve the loaded groups; False (nothing changes) when the load was superseded."""
        p = load.partition
        if self.loading.get(p) is not load:
            return False
        del self.loading[p]
        if self.owned_partitions is not None:
            self.owned_partitions.add(p)
        load.apply_late_markers()   # transactions that ended while the partition loaded
        install_share = getattr(self, "_install_share_groups", None)
        if install_share is not None:
            install_share(load.share_groups)   # KIP-932
        for gid, g in load.groups.items():
            old = self.groups.get(gid)
            if old is not None:   # made by a direct call while loading: the log wins
                self._unload_group(old)
            self.groups[gid] = g
            for m in g.members.values():
                self._schedule_heartbeat(g, m)
            self._start_consumer_timers(g)
            for producer_id in g.offsets.open_producers():
                self._txn_groups.setdefault(producer_id, set()).add(gid)
        # an empty partition (50 of them on a first start, most on a small cluster) is not news
        log.log(logging.INFO if load.records else logging.DEBUG, "loaded %d groups of __consumer_offsets-%d "
                "(%d records)", len(load.groups), p, load.records)
        return True

    def unload(self, partition: int) -> int:
        """This broker no longer leads the partition: unload its groups (see the module
        docstring). Returns how many groups were unloaded."""
        self.loading.pop(partition, None)
        if self.owned_partitions is None:
            self.owned_partitions = set(range(self.config.offsets_topic_num_partitions))
        self.owned_partitions.discard(partition)
        doomed = self.groups_of(partition)
        for g in doomed:
            self._unload_group(g)
        unload_share = getattr(self, "_unload_share_groups", None)
        if unload_share is not None:
            unload_share(partition)
        for producer_id, gids in list(self._txn_groups.items()):
            gids.difference_update([gid for gid in gids if self.partition_for(gid) == partition])
            if not gids:
                del self._txn_groups[producer_id]
        in_flight = self._in_flight.pop(partition, None)
        if in_flight:
            callbacks = list(in_flight.values())
            in_flight.clear()   # a late acknowledgement of these writes finds nothing to call
            for done in callbacks:
                done(E.NOT_LEADER_OR_FOLLOWER, -1)
        if doomed:
            log.info("unloaded %d groups of __consumer_offsets-%d", len(doomed), partition)
        return len(doomed)

    def _unload_group(self, g: Group) -> None:
        answers = []
        for m in g.members.values():
            self.timers.cancel(("heartbeat", g.group_id, m.member_id))
            join, m.join_pending = m.join_pending, None
            if join is not None:
                answers.append((join, JoinResult(E.NOT_COORDINATOR, m.member_id)))
            sync, m.sync_pending = m.sync_pending, None
            if sync is not None:
                answers.append((sync, SyncResult(E.NOT_COORDINATOR)))
        self.timers.cancel(("sync", g.group_id, g.generation_id))
        g.transition_to(S.DEAD)
        self._forget(g)   # out of ``groups``; its join and pending-member timers stop
        for p, r in answers:
            p.set_result(r)

    # ------------------------------------------------------------------ writes
    def _write(self, group_id: str, records: list[Record],
               done: Callable[..., None] | None = None, *,
               transaction: tuple | None = None, with_offset: bool = False) -> None:
        """Hand records to the writer, remembering the write until it is acknowledged, so
        that an unload answers what still waits for it. ``transaction``: (producer id,
        producer epoch[, verification guard]) of a transactional write (TxnOffsetCommit). ``with_offset``: call
        ``done(error, base_offset)`` (the offset of the first record, -1 when the writer
        does not say) instead of ``done(error)``."""
        partition = self.partition_for(group_id)
        self._write_seq += 1
        token = self._write_seq
        in_flight = self._in_flight.setdefault(partition, {})
        cb = done or _ignore
        in_flight[token] = cb if with_offset else (lambda error, _offset: cb(error))

        def finish(error: ErrorCode, base_offset: int = -1) -> None:
            callback = in_flight.pop(token, None)
            if callback is not None:
                callback(error, base_offset)

        if transaction is None:
            self.writer(partition, records, finish)
        else:
            self.writer(partition, records, finish, transaction=transaction)
