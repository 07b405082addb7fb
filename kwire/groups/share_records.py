"""The durable form of KIP-932 share groups in ``__consumer_offsets``: Kafka's coordinator
records (group-coordinator/src/main/resources/common/message), key version = record type:

- 10 ShareGroupMemberMetadataKey (group, member) -> ShareGroupMemberMetadataValue v0 (rack id,
  client id, client host, subscribed topic names)
- 11 ShareGroupMetadataKey (group) -> ShareGroupMetadataValue v0 (group epoch)
- 14 ShareGroupCurrentMemberAssignmentKey (group, member) -> ShareGroupCurrentMemberAssignmentValue
  v0 (member epoch, previous member epoch, state, assigned partitions)

Keys are not flexible, values are (tagged fields skipped on read). A member that leaves is a
tombstone of its two keys; a deleted group a tombstone of its metadata key. The target
assignment records (12, 13) and the share-group state partition metadata (15) are not
written and are skipped on read: kwire's simple assignor recomputes the target from the
members at load (it is a function of the sorted members and partitions), and the share
partitions' state lives in ``__share_group_state`` (kwire.share). ShareGroupMetadataValue
is written with the epoch only (the metadata hash of newer Kafka releases is left out).
"""
from __future__ import annotations

import struct
from dataclasses import replace
from uuid import UUID

from kwire.codec.schema import F, Message
from kwire.errors import CodecError
from kwire.groups.share_group import Assignment, ShareGroup, ShareGroupMember

MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, STATE_PARTITIONS = \
    10, 11, 12, 13, 14, 15
TYPES = (MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, STATE_PARTITIONS)

_I16 = struct.Struct(">h")

GROUP_KEY = Message("ShareGroupKey", valid="10-15", fields=[F("group_id", "string", "10+")])
MEMBER_KEY = Message("ShareGroupMemberKey", valid="10-15", fields=[
    F("group_id", "string", "10+"), F("member_id", "string", "10+")])
METADATA_VALUE = Message("ShareGroupMetadataValue", valid="0", flexible="0+", fields=[F("epoch", "int32", "0+")])
MEMBER_VALUE = Message("ShareGroupMemberMetadataValue", valid="0", flexible="0+", fields=[
    F("rack_id", "string", "0+", nullable="0+"),
    F("client_id", "string", "0+"),
    F("client_host", "string", "0+"),
    F("subscribed_topic_names", "[]string", "0+"),
])
CURRENT_VALUE = Message("ShareGroupCurrentMemberAssignmentValue", valid="0", flexible="0+", fields=[
    F("member_epoch", "int32", "0+"),
    F("previous_member_epoch", "int32", "0+"),
    F("state", "int8", "0+"),
    F("assigned_partitions", "[]TopicPartitions", "0+", fields=[
        F("topic_id", "uuid", "0+"), F("partitions", "[]int32", "0+")]),
])
_TP = CURRENT_VALUE.struct("TopicPartitions")


def is_share_key(key: bytes) -> bool:
    return len(key) >= 2 and _I16.unpack_from(key, 0)[0] in TYPES


def group_key(group_id: str) -> bytes:
    return _I16.pack(GROUP_METADATA) + GROUP_KEY.encode(GROUP_KEY(group_id=group_id), GROUP_METADATA)


def member_key(kind: int, group_id: str, member_id: str) -> bytes:
    return _I16.pack(kind) + MEMBER_KEY.encode(MEMBER_KEY(group_id=group_id, member_id=member_id), kind)


def _value(msg: Message, obj) -> bytes:
    return _I16.pack(0) + msg.encode(obj, 0)


def _read(msg: Message, buf: bytes):
    if _I16.unpack_from(buf, 0)[0] != 0:
        raise CodecError(f"unknown {msg.name} version")
    return msg.decode(buf, 0, 2, exact=False)


def metadata_value(epoch: int) -> bytes:
    return _value(METADATA_VALUE, METADATA_VALUE(epoch=epoch))


def member_value(m: ShareGroupMember) -> bytes:
    return _value(MEMBER_VALUE, MEMBER_VALUE(rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
                                             subscribed_topic_names=list(m.subscribed_topic_names)))


def current_value(m: ShareGroupMember) -> bytes:
    return _value(CURRENT_VALUE, CURRENT_VALUE(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=0,
        assigned_partitions=[_TP(topic_id=t, partitions=sorted(ps))
                             for t, ps in sorted(m.assignment.items(), key=lambda kv: str(kv[0])) if ps]))


def member_records(sg: ShareGroup, m: ShareGroupMember) -> list[tuple[bytes, bytes]]:
    return [(member_key(MEMBER_METADATA, sg.group_id, m.member_id), member_value(m)),
            (member_key(CURRENT_ASSIGNMENT, sg.group_id, m.member_id), current_value(m))]


def leave_records(group_id: str, member_id: str) -> list[tuple[bytes, None]]:
    return [(member_key(CURRENT_ASSIGNMENT, group_id, member_id), None),
            (member_key(MEMBER_METADATA, group_id, member_id), None)]


def replay(groups: dict[str, ShareGroup], key: bytes, value: bytes | None) -> None:
    """Apply one share-group record to ``groups`` (a load's share groups)."""
    kind = _I16.unpack_from(key, 0)[0]
    if kind in (TARGET_METADATA, TARGET_MEMBER, STATE_PARTITIONS):
        return
    if kind == GROUP_METADATA:
        gid = GROUP_KEY.decode(key, kind, 2).group_id
        if value is None:
            groups.pop(gid, None)
            return
        sg = groups.setdefault(gid, ShareGroup(gid))
        sg.group_epoch = _read(METADATA_VALUE, value).epoch
        return
    k = MEMBER_KEY.decode(key, kind, 2)
    sg = groups.get(k.group_id)
    if value is None:
        if sg is not None:
            sg.members.pop(k.member_id, None)
        return
    if sg is None:
        sg = groups[k.group_id] = ShareGroup(k.group_id)
    m = sg.members.get(k.member_id) or ShareGroupMember(k.member_id)
    if kind == MEMBER_METADATA:
        v = _read(MEMBER_VALUE, value)
        m = replace(m, rack_id=v.rack_id, client_id=v.client_id, client_host=v.client_host,
                    subscribed_topic_names=tuple(v.subscribed_topic_names))
    else:
        v = _read(CURRENT_VALUE, value)
        a: Assignment = {tp.topic_id: frozenset(tp.partitions) for tp in v.assigned_partitions if tp.partitions}
        m = replace(m, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch, assignment=a)
    sg.members[k.member_id] = m


def finish_load(sg: ShareGroup, topics: dict[str, tuple[UUID, int]]) -> None:
    """After a load: the target recomputed at the group epoch from the members."""
    sg.subscription_metadata = {n: topics[n] for n in sorted(sg.subscribed_topic_names()) if n in topics}
    sg.assignment_epoch = sg.group_epoch
    sg._compute_target()
