"""The durable form of group state: Kafka's ``__consumer_offsets`` record formats.

Every key and value starts with an int16 schema version, followed by the struct of that
version (Kafka's ``OffsetCommitKey``/``OffsetCommitValue`` and ``GroupMetadataKey``/
``GroupMetadataValue`` data messages, non-flexible up to the versions we write):

- key version 0 or 1: OffsetCommitKey (group, topic, partition)
- key version 2:      GroupMetadataKey (group)

We write OffsetCommitKey v1 + OffsetCommitValue v3 (v1 when an explicit expire timestamp is
set, as Kafka does for commits with a retention time), and GroupMetadataKey v2 +
GroupMetadataValue v3. A deleted offset or group is a tombstone (value ``None``), so the
compacted topic forgets it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kwire.codec.schema import F, Message
from kwire.coordinator.records import partition_for_key
from kwire.errors import CodecError

from kwire.internal_topics import OFFSETS_TOPIC  # noqa: E402,F401 - named here too

OFFSET_COMMIT_KEY = Message("OffsetCommitKey", valid="0-1", fields=[
    F("group", "string", "0+"),
    F("topic", "string", "0+"),
    F("partition", "int32", "0+"),
])

OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", valid="0-3", fields=[
    F("offset", "int64", "0+"),
    F("leader_epoch", "int32", "3+", default=-1, ignorable=True),
    F("metadata", "string", "0+"),
    F("commit_timestamp", "int64", "0+"),
    F("expire_timestamp", "int64", "1", default=-1, ignorable=True),
])

GROUP_METADATA_KEY = Message("GroupMetadataKey", valid="2", fields=[
    F("group", "string", "2"),
])

GROUP_METADATA_VALUE = Message("GroupMetadataValue", valid="0-3", fields=[
    F("protocol_type", "string", "0+"),
    F("generation", "int32", "0+"),
    F("protocol", "string", "0+", nullable="0+"),
    F("leader", "string", "0+", nullable="0+"),
    F("current_state_timestamp", "int64", "2+", default=-1, ignorable=True),
    F("members", "[]MemberMetadata", "0+", fields=[
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None, ignorable=True),
        F("client_id", "string", "0+"),
        F("client_host", "string", "0+"),
        F("rebalance_timeout", "int32", "1+", ignorable=True),
        F("session_timeout", "int32", "0+"),
        F("subscription", "bytes", "0+"),
        F("assignment", "bytes", "0+"),
    ]),
])
MemberMetadataRecord = GROUP_METADATA_VALUE.struct("MemberMetadata")

OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3

_I16 = struct.Struct(">h")


# --- plain values ------------------------------------------------------------------------
@dataclass(slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(slots=True)
class GroupKey:
    group: str


@dataclass(slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # -1: none (expiry follows offsets.retention.minutes)


@dataclass(slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberValue] = field(default_factory=list)


# --- partitioning ------------------------------------------------------------------------
def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group: Kafka's ``Utils.abs(hash) % n``."""
    return partition_for_key(group_id, num_partitions)


# --- encoding ----------------------------------------------------------------------------
def offset_key(group: str, topic: str, partition: int) -> bytes:
    obj = OFFSET_COMMIT_KEY(group=group, topic=topic, partition=partition)
    return _I16.pack(OFFSET_KEY_VERSION) + OFFSET_COMMIT_KEY.encode(obj, OFFSET_KEY_VERSION)


def offset_value(v: OffsetValue) -> bytes:
    version = OFFSET_VALUE_VERSION if v.expire_timestamp < 0 else OFFSET_VALUE_VERSION_WITH_EXPIRE
    obj = OFFSET_COMMIT_VALUE(offset=v.offset, leader_epoch=v.leader_epoch, metadata=v.metadata,
                              commit_timestamp=v.commit_timestamp,
                              expire_timestamp=v.expire_timestamp)
    return _I16.pack(version) + OFFSET_COMMIT_VALUE.encode(obj, version)


def group_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + GROUP_METADATA_KEY.encode(
        GROUP_METADATA_KEY(group=group), GROUP_KEY_VERSION)


def group_value(v: GroupValue) -> bytes:
    members = [MemberMetadataRecord(
        member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
        session_timeout=m.session_timeout_ms, subscription=m.subscription,
        assignment=m.assignment) for m in v.members]
    obj = GROUP_METADATA_VALUE(protocol_type=v.protocol_type, generation=v.generation,
                               protocol=v.protocol, leader=v.leader,
                               current_state_timestamp=v.current_state_timestamp, members=members)
    return _I16.pack(GROUP_VALUE_VERSION) + GROUP_METADATA_VALUE.encode(obj, GROUP_VALUE_VERSION)


# --- decoding ----------------------------------------------------------------------------
def _version(buf: bytes) -> int:
    if len(buf) < 2:
        raise CodecError("__consumer_offsets record shorter than its version")
    return _I16.unpack_from(buf, 0)[0]


def decode_key(buf: bytes) -> OffsetKey | GroupKey:
    version = _version(buf)
    if version in (0, 1):
        k = OFFSET_COMMIT_KEY.decode(buf, version, 2)
        return OffsetKey(k.group, k.topic, k.partition)
    if version == 2:
        return GroupKey(GROUP_METADATA_KEY.decode(buf, version, 2).group)
    raise CodecError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(buf: bytes) -> OffsetValue:
    version = _version(buf)
    if not 0 <= version <= 3:
        raise CodecError(f"unknown OffsetCommitValue version {version}")
    # Kafka may write later (flexible) versions with trailing tagged fields: ignore extra bytes.
    v = OFFSET_COMMIT_VALUE.decode(buf, version, 2, exact=False)
    return OffsetValue(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                       v.expire_timestamp)


def decode_group_value(buf: bytes) -> GroupValue:
    version = _version(buf)
    if not 0 <= version <= 3:
        raise CodecError(f"unknown GroupMetadataValue version {version}")
    v = GROUP_METADATA_VALUE.decode(buf, version, 2, exact=False)
    members = [MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                           m.rebalance_timeout if version >= 1 else m.session_timeout,
                           m.session_timeout, bytes(m.subscription), bytes(m.assignment))
               for m in v.members]
    return GroupValue(v.protocol_type, v.generation, v.protocol, v.leader,
                      v.current_state_timestamp, members)
