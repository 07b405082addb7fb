"""Rebuild groups from ``__consumer_offsets`` records (Kafka's GroupMetadataManager loading a
partition), without I/O: the edge reads the partition's log and feeds each record here.

``replay_record(groups, key, value, forget)`` applies one record, in log order, to a dict of
groups: an offset commit or its tombstone, a group's metadata (generation, protocol, leader,
members with their assignments) or its tombstone. Records whose key or value does not
decode (CodecError: an unknown version, corrupt bytes) are skipped, as Kafka skips unknown
keys, so one bad record cannot keep a partition's groups from loading.

``PartitionLoad`` is one partition being loaded: the coordinator hands it out when this
broker becomes the partition's leader (``GroupCoordinator.begin_load``), the edge feeds it
the partition's records below the log end offset, and ``GroupCoordinator.complete_load``
installs its groups (their members' session timers start then) and serves them.
"""
from __future__ import annotations

from typing import Callable

from kwire.errors import CodecError
from kwire.groups import records as R
from kwire.groups.group import Group, GroupState, Member
from kwire.groups.offsets import OffsetAndMetadata

S = GroupState


def replay_record(groups: dict[str, Group], key: bytes, value: bytes | None,
                  forget: Callable[[Group], None]) -> Group | None:
    """Apply one ``__consumer_offsets`` record to ``groups``; ``forget(g)`` drops a group (and
    whatever waits on it). Returns the group a group-metadata record rebuilt (its members
    need session timers when the groups are live), else None."""
    try:
        k = R.decode_key(bytes(key))
    except CodecError:
        return None
    if isinstance(k, R.OffsetKey):
        tp = (k.topic, k.partition)
        g = groups.get(k.group)
        if value is None:
            if g is not None:
                g.offsets.remove(tp)
                if g.is_(S.EMPTY) and not g.protocol_type and not len(g.offsets):
                    forget(g)
            return None
        try:
            v = R.decode_offset_value(bytes(value))
        except CodecError:
            return None   # a value this version cannot read: skipped like an unknown key
        if g is None:
            g = groups[k.group] = Group(k.group)
        g.offsets.put(tp, OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata,
                                            v.commit_timestamp, v.expire_timestamp))
        return None
    g = groups.get(k.group)
    if value is None:
        if g is not None:
            if len(g.offsets):  # keep its offsets, forget its membership
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


class PartitionLoad:
    """The groups of one ``__consumer_offsets`` partition, rebuilt record by record before
    they are served (nothing is live here: no timers, no waiting requests)."""

    __slots__ = ("partition", "groups", "records")

    def __init__(self, partition: int):
        self.partition = partition
        self.groups: dict[str, Group] = {}
        self.records = 0

    def replay(self, key: bytes, value: bytes | None) -> None:
        self.records += 1
        replay_record(self.groups, key, value, self._forget)

    def _forget(self, g: Group) -> None:
        if self.groups.get(g.group_id) is g:
            del self.groups[g.group_id]

    def __repr__(self) -> str:
        return f"PartitionLoad({self.partition}, {self.records} records, {len(self.groups)} groups)"
