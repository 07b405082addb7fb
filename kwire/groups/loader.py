"""Rebuild groups from ``__consumer_offsets`` records (Kafka's GroupMetadataManager loading a
partition), without I/O: the edge reads the partition's log and feeds each record here.

``replay_record(groups, key, value, forget)`` applies one record, in log order, to a dict of
groups: an offset commit or its tombstone, a group's metadata (generation, protocol, leader,
members with their assignments) or its tombstone. Records whose key or value does not
decode (CodecError: an unknown version, corrupt bytes) are skipped, as Kafka skips unknown
keys, so one bad record cannot keep a partition's groups from loading.

Transactions (Kafka's CoordinatorLoaderImpl / OffsetMetadataManager.replay): an offset commit
in a transactional batch (TxnOffsetCommit) waits, by producer id, for its transaction's
marker; a commit marker makes it the committed offset (unless a later record committed the
partition), an abort marker drops it, and one without a marker yet stays pending. A
tombstone of a partition drops its pending offsets too.

``PartitionLoad`` is one partition being loaded: the coordinator hands it out when this
broker becomes the partition's leader (``GroupCoordinator.begin_load``), the edge feeds it
the partition's batches below the log end offset (``replay_batch``), and
``GroupCoordinator.complete_load`` installs its groups (their members' session timers start
then) and serves them. A marker written while the partition loads (``late_marker``) is
applied at the end unless the load read it from the log.
"""
from __future__ import annotations

from typing import Callable

import logging

from kwire.codec.records import CONTROL_ABORT, CONTROL_COMMIT, parse_control_record
from kwire.errors import CodecError
from kwire.groups import consumer_records as CR
from kwire.groups import share_records as SHR
from kwire.groups import records as R
from kwire.groups.consumer_group import ConsumerGroup, ConsumerGroupMember
from kwire.groups.group import Group, GroupState, Member
from kwire.groups.offsets import OffsetAndMetadata

S = GroupState
log = logging.getLogger("kwire.groups")


def replay_record(groups: dict[str, Group], key: bytes, value: bytes | None,
                  forget: Callable[[Group], None], *, record_offset: int = -1,
                  producer_id: int = -1) -> Group | None:
    """Apply one ``__consumer_offsets`` record to ``groups``; ``forget(g)`` drops a group (and
    whatever waits on it). ``record_offset``: the record's offset in the log;
    ``producer_id``: the producer of the transactional batch holding it (-1: not
    transactional). Returns the group a group-metadata record rebuilt (its members need
    session timers when the groups are live), else None."""
    key = bytes(key)
    if len(key) >= 2 and int.from_bytes(key[:2], "big", signed=True) in CR.TYPES:
        try:
            replay_consumer_record(groups, key, value, forget)
        except CodecError:
            pass   # skipped like an unknown key
        return None
    try:
        k = R.decode_key(key)
    except CodecError:
        return None
    if isinstance(k, R.OffsetKey):
        tp = (k.topic, k.partition)
        g = groups.get(k.group)
        if value is None:
            if g is not None:
                g.offsets.remove(tp)
                g.offsets.remove_pending(tp)
                if g.is_(S.EMPTY) and not g.protocol_type and g.offsets.empty and g.consumer is None:
                    forget(g)
            return None
        try:
            v = R.decode_offset_value(bytes(value))
        except CodecError:
            return None   # a value this version cannot read: skipped like an unknown key
        if g is None:
            g = groups[k.group] = Group(k.group)
        om = OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                               v.expire_timestamp, record_offset)
        if producer_id >= 0:
            g.offsets.put_pending(producer_id, tp, om)
        else:
            g.offsets.put(tp, om)
        return None
    g = groups.get(k.group)
    if value is None:
        if g is not None:
            if not g.offsets.empty:  # keep its offsets, forget its membership
                fresh = Group(k.group)
                fresh.offsets = g.offsets
                forget(g)
                groups[k.group] = fresh
            else:
                forget(g)
        return None
    try:
        gv = R.decode_group_value(bytes(value))
    except CodecError:
        return None
    fresh = Group(k.group)
    if g is not None:
        fresh.offsets = g.offsets
        forget(g)
    fresh.protocol_type = gv.protocol_type or None
    fresh.generation_id = gv.generation
    fresh.protocol_name = gv.protocol
    fresh.current_state_timestamp = None if gv.current_state_timestamp < 0 \
        else gv.current_state_timestamp
    for mv in gv.members:
        m = Member(mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host,
                   mv.rebalance_timeout_ms, mv.session_timeout_ms, gv.protocol_type,
                   [(gv.protocol or "", mv.subscription)], assignment=mv.assignment)
        fresh.add(m)
    fresh.leader_id = gv.leader if gv.leader in fresh.members else fresh.leader_id
    fresh.state = S.STABLE if fresh.members else S.EMPTY
    fresh.subscribed_topics = fresh.compute_subscribed_topics()
    groups[k.group] = fresh
    return fresh


def replay_consumer_record(groups: dict[str, Group], key: bytes, value: bytes | None,
                           forget: Callable[[Group], None]) -> None:
    """One KIP-848 consumer group record (kwire.groups.consumer_records), in log order."""
    k = CR.decode_key(key)
    g = groups.get(k.group_id)
    if value is None:   # tombstones
        cg = None if g is None else g.consumer
        if cg is None:
            return
        if k.kind == CR.GROUP_METADATA:
            g.consumer = None
            if g.offsets.empty and not g.members:
                forget(g)
        elif k.kind == CR.MEMBER_METADATA:
            cg.remove_member(k.member_id)
        elif k.kind == CR.TARGET_MEMBER:
            cg.target.pop(k.member_id, None)
        return
    if k.kind == CR.PARTITION_METADATA:
        return   # recomputed from the metadata image
    if g is None:
        g = groups[k.group_id] = Group(k.group_id)
    if g.consumer is None:
        g.consumer = ConsumerGroup(k.group_id)
        g.protocol_type = None
    cg = g.consumer
    if k.kind == CR.GROUP_METADATA:
        cg.group_epoch = CR.decode_metadata_value(value)
    elif k.kind == CR.TARGET_METADATA:
        cg.assignment_epoch = CR.decode_target_metadata_value(value)
    elif k.kind == CR.TARGET_MEMBER:
        cg.target[k.member_id] = CR.decode_target_member_value(value)
    else:
        m = cg.members.get(k.member_id) or ConsumerGroupMember(k.member_id)
        m = CR.apply_member_value(m, value) if k.kind == CR.MEMBER_METADATA else CR.apply_current_value(m, value)
        cg.update_member(m)


class PartitionLoad:
    """The groups of one ``__consumer_offsets`` partition, rebuilt record by record before
    they are served (nothing is live here: no timers, no waiting requests)."""

    __slots__ = ("partition", "groups", "records", "next_offset", "_txn_groups", "_late", "share_groups")

    def __init__(self, partition: int):
        self.partition = partition
        self.groups: dict[str, Group] = {}
        self.records = 0
        #: the offset after the last batch replayed
        self.next_offset = 0
        #: producer id -> groups with offsets pending in its open transaction
        self._txn_groups: dict[int, set[str]] = {}
        #: markers written while loading: (producer id, committed, marker offset)
        self._late: list[tuple[int, bool, int]] = []
        #: KIP-932 share groups (kwire.groups.share_records), kept apart from the others
        self.share_groups: dict = {}

    def replay(self, key: bytes, value: bytes | None, *, record_offset: int = -1,
               producer_id: int = -1) -> None:
        """One record of a data batch (``producer_id`` >= 0 for a transactional one)."""
        self.records += 1
        if SHR.is_share_key(bytes(key)):
            try:
                SHR.replay(self.share_groups, bytes(key), value)
            except CodecError:
                pass   # skipped like an unknown key
            return
        replay_record(self.groups, key, value, self._forget, record_offset=record_offset,
                      producer_id=producer_id)
        if producer_id >= 0 and value is not None:
            try:
                k = R.decode_key(bytes(key))
            except CodecError:
                return
            self._txn_groups.setdefault(producer_id, set()).add(k.group)

    def replay_batch(self, batch) -> None:
        """One record batch (kwire.codec.records.RecordBatch) read from the partition: its
        records, or the transaction marker it holds when it is a control batch."""
        self.next_offset = max(self.next_offset, batch.next_offset)
        if batch.is_control:
            for rec in batch.records():
                try:
                    ctype, _epoch = parse_control_record(rec)
                except CodecError:
                    return
                if ctype in (CONTROL_COMMIT, CONTROL_ABORT):
                    self.replay_marker(batch.producer_id, ctype == CONTROL_COMMIT, rec.offset)
                return   # one control record per batch
            return
        producer_id = batch.producer_id if batch.is_transactional else -1
        for rec in batch.records():
            if rec.key is None:
                continue
            self.replay(bytes(rec.key), None if rec.value is None else bytes(rec.value),
                        record_offset=rec.offset, producer_id=producer_id)

    def replay_marker(self, producer_id: int, committed: bool, offset: int = -1) -> int:
        """A transaction marker: the producer's pending offsets become committed or vanish.
        Returns how many offsets were committed."""
        n = 0
        for gid in self._txn_groups.pop(producer_id, ()):
            g = self.groups.get(gid)
            if g is not None:
                n += len(g.offsets.complete(producer_id, committed, offset)[0])
                if producer_id in g.offsets.open_producers():   # offsets after the marker
                    self._txn_groups.setdefault(producer_id, set()).add(gid)
        return n

    def late_marker(self, producer_id: int, committed: bool, offset: int) -> None:
        """A marker appended while the partition loads; applied by ``apply_late_markers``
        unless the load replays it from the log (it lies below ``next_offset`` then)."""
        self._late.append((producer_id, committed, offset))

    def apply_late_markers(self) -> None:
        late, self._late = self._late, []
        for producer_id, committed, offset in late:
            if offset < 0 or offset >= self.next_offset:
                n = self.replay_marker(producer_id, committed, offset)
                log.info("__consumer_offsets-%d: a transaction of producer %d %s while loading "
                         "(%d offsets committed)", self.partition, producer_id,
                         "committed" if committed else "aborted", n)

    def _forget(self, g: Group) -> None:
        if self.groups.get(g.group_id) is g:
            del self.groups[g.group_id]

    def __repr__(self) -> str:
        return f"PartitionLoad({self.partition}, {self.records} records, {len(self.groups)} groups)"
