"""The durable form of KIP-848 consumer groups in ``__consumer_offsets``: Kafka's coordinator
records (group-coordinator/src/main/resources/common/message), key version = record type:

- 3 ConsumerGroupMetadataKey (group) -> ConsumerGroupMetadataValue v0 (group epoch)
- 5 ConsumerGroupMemberMetadataKey (group, member) -> ConsumerGroupMemberMetadataValue v0
- 6 ConsumerGroupTargetAssignmentMetadataKey (group) -> ...TargetAssignmentMetadataValue v0
- 7 ConsumerGroupTargetAssignmentMemberKey (group, member) -> ...TargetAssignmentMemberValue v0
- 8 ConsumerGroupCurrentMemberAssignmentKey (group, member) -> ...CurrentMemberAssignmentValue v0

Keys are not flexible, values are (v0+, tagged fields: written only when set - the member's
ClassicMemberMetadata, tag 0, for a member using the classic protocol - unknown ones
skipped on read). A removed member or group is a tombstone of each of its keys.
ConsumerGroupPartitionMetadata (type 4) is not written, as Kafka 4.1+ no longer writes it
(the subscribed topics' metadata is recomputed from the metadata image); a type-4 record
read from a log is skipped.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from kwire.codec.schema import F, Message
from kwire.errors import CodecError
from kwire.groups.consumer_group import Assignment, ClassicMemberMetadata, ConsumerGroupMember, MemberState

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
TYPES = (GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER,
         CURRENT_ASSIGNMENT)

_I16 = struct.Struct(">h")

GROUP_KEY = Message("ConsumerGroupKey", valid="3-8", fields=[F("group_id", "string", "3+")])
MEMBER_KEY = Message("ConsumerGroupMemberKey", valid="3-8", fields=[
    F("group_id", "string", "3+"), F("member_id", "string", "3+")])

METADATA_VALUE = Message("ConsumerGroupMetadataValue", valid="0", flexible="0+", fields=[
    F("epoch", "int32", "0+"),
])
MEMBER_VALUE = Message("ConsumerGroupMemberMetadataValue", valid="0", flexible="0+", fields=[
    F("instance_id", "string", "0+", nullable="0+"),
    F("rack_id", "string", "0+", nullable="0+"),
    F("client_id", "string", "0+"),
    F("client_host", "string", "0+"),
    F("subscribed_topic_names", "[]string", "0+"),
    F("subscribed_topic_regex", "string", "0+", nullable="0+"),
    F("rebalance_timeout_ms", "int32", "0+", default=-1),
    F("server_assignor", "string", "0+", nullable="0+"),
    F("classic_member_metadata", "ClassicMemberMetadata", "0+", nullable="0+", default=None, tag=0,
      tagged="0+", fields=[
          F("session_timeout_ms", "int32", "0+"),
          F("supported_protocols", "[]ClassicProtocol", "0+", fields=[
              F("name", "string", "0+"), F("metadata", "bytes", "0+")]),
      ]),
])
_CLASSIC = MEMBER_VALUE.struct("ClassicMemberMetadata")
_PROTOCOL = MEMBER_VALUE.struct("ClassicProtocol")
TARGET_METADATA_VALUE = Message("ConsumerGroupTargetAssignmentMetadataValue", valid="0", flexible="0+",
                                fields=[F("assignment_epoch", "int32", "0+")])
TARGET_MEMBER_VALUE = Message("ConsumerGroupTargetAssignmentMemberValue", valid="0", flexible="0+", fields=[
    F("topic_partitions", "[]TopicPartition", "0+", fields=[
        F("topic_id", "uuid", "0+"), F("partitions", "[]int32", "0+")]),
])
# KIP-1251 (Kafka 4.3): each partition's assignment epoch, aligned with partitions; a record
# without them (older writers) reads as assigned at the member epoch, as Kafka's
# Utils.assignmentFromTopicPartitions
_CURRENT_TPS = [F("topic_id", "uuid", "0+"), F("partitions", "[]int32", "0+"),
                F("assignment_epochs", "[]int32", "0+", nullable="0+", default=None, tag=0, tagged="0+")]
CURRENT_VALUE = Message("ConsumerGroupCurrentMemberAssignmentValue", valid="0", flexible="0+", fields=[
    F("member_epoch", "int32", "0+"),
    F("previous_member_epoch", "int32", "0+"),
    F("state", "int8", "0+"),
    F("assigned_partitions", "[]TopicPartitions", "0+", fields=_CURRENT_TPS),
    F("partitions_pending_revocation", "[]TopicPartitions", "0+", fields=_CURRENT_TPS),
])
_TP = TARGET_MEMBER_VALUE.struct("TopicPartition")
_CTP = CURRENT_VALUE.struct("TopicPartitions")


# --- keys ---------------------------------------------------------------------------------
def group_key(kind: int, group_id: str) -> bytes:
    return _I16.pack(kind) + GROUP_KEY.encode(GROUP_KEY(group_id=group_id), kind)


def member_key(kind: int, group_id: str, member_id: str) -> bytes:
    return _I16.pack(kind) + MEMBER_KEY.encode(MEMBER_KEY(group_id=group_id, member_id=member_id), kind)


@dataclass(slots=True)
class ConsumerKey:
    kind: int
    group_id: str
    member_id: str | None = None


def decode_key(buf: bytes) -> ConsumerKey:
    kind = _I16.unpack_from(buf, 0)[0]
    if kind in (GROUP_METADATA, PARTITION_METADATA, TARGET_METADATA):
        return ConsumerKey(kind, GROUP_KEY.decode(buf, kind, 2).group_id)
    if kind in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT):
        k = MEMBER_KEY.decode(buf, kind, 2)
        return ConsumerKey(kind, k.group_id, k.member_id)
    raise CodecError(f"not a consumer group record key: {kind}")


def _value(msg: Message, obj) -> bytes:
    return _I16.pack(0) + msg.encode(obj, 0)


def _read(msg: Message, buf: bytes):
    version = _I16.unpack_from(buf, 0)[0]
    if version != 0:
        raise CodecError(f"unknown {msg.name} version {version}")
    return msg.decode(buf, 0, 2, exact=False)


# --- values -------------------------------------------------------------------------------
def metadata_value(epoch: int) -> bytes:
    return _value(METADATA_VALUE, METADATA_VALUE(epoch=epoch))


def decode_metadata_value(buf: bytes) -> int:
    return _read(METADATA_VALUE, buf).epoch


def member_value(m: ConsumerGroupMember) -> bytes:
    return _value(MEMBER_VALUE, MEMBER_VALUE(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex, rebalance_timeout_ms=m.rebalance_timeout_ms,
        server_assignor=m.server_assignor,
        classic_member_metadata=None if m.classic is None else _CLASSIC(
            session_timeout_ms=m.classic.session_timeout_ms,
            supported_protocols=[_PROTOCOL(name=n, metadata=md) for n, md in m.classic.protocols])))


def apply_member_value(m: ConsumerGroupMember, buf: bytes) -> ConsumerGroupMember:
    v = _read(MEMBER_VALUE, buf)
    return replace(m, instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
                   client_host=v.client_host, subscribed_topic_names=tuple(v.subscribed_topic_names),
                   subscribed_topic_regex=v.subscribed_topic_regex,
                   rebalance_timeout_ms=v.rebalance_timeout_ms, server_assignor=v.server_assignor,
                   classic=None if v.classic_member_metadata is None else ClassicMemberMetadata(
                       v.classic_member_metadata.session_timeout_ms,
                       tuple((x.name, bytes(x.metadata)) for x in v.classic_member_metadata.supported_protocols)))


def target_metadata_value(epoch: int) -> bytes:
    return _value(TARGET_METADATA_VALUE, TARGET_METADATA_VALUE(assignment_epoch=epoch))


def decode_target_metadata_value(buf: bytes) -> int:
    return _read(TARGET_METADATA_VALUE, buf).assignment_epoch


def _tps(cls, a: Assignment) -> list:
    return [cls(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])) if ps]


def _assignment(tps) -> Assignment:
    out: Assignment = {}
    for tp in tps:
        if tp.partitions:
            out[tp.topic_id] = frozenset(tp.partitions)
    return out


def target_member_value(a: Assignment) -> bytes:
    return _value(TARGET_MEMBER_VALUE, TARGET_MEMBER_VALUE(topic_partitions=_tps(_TP, a)))


def decode_target_member_value(buf: bytes) -> Assignment:
    return _assignment(_read(TARGET_MEMBER_VALUE, buf).topic_partitions)


def _current_tps(m: ConsumerGroupMember, a: Assignment) -> list:
    out = []
    for tp in _tps(_CTP, a):
        tp.assignment_epochs = [m.assignment_epoch(tp.topic_id, p) for p in tp.partitions]
        out.append(tp)
    return out


def current_value(m: ConsumerGroupMember) -> bytes:
    return _value(CURRENT_VALUE, CURRENT_VALUE(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=int(m.state),
        assigned_partitions=_current_tps(m, m.assigned),
        partitions_pending_revocation=_current_tps(m, m.pending_revocation)))


def _current_epochs(tps, member_epoch: int) -> dict:
    out = {}
    for tp in tps:
        epochs = tp.assignment_epochs
        if epochs is None or len(epochs) != len(tp.partitions):
            epochs = [member_epoch] * len(tp.partitions)
        out.update(((tp.topic_id, p), e) for p, e in zip(tp.partitions, epochs))
    return out


def apply_current_value(m: ConsumerGroupMember, buf: bytes) -> ConsumerGroupMember:
    v = _read(CURRENT_VALUE, buf)
    try:
        state = MemberState(v.state)
    except ValueError:
        state = MemberState.UNKNOWN
    return replace(m, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch,
                   state=state, assigned=_assignment(v.assigned_partitions),
                   pending_revocation=_assignment(v.partitions_pending_revocation),
                   assignment_epochs={**_current_epochs(v.assigned_partitions, v.member_epoch),
                                      **_current_epochs(v.partitions_pending_revocation, v.member_epoch)})
