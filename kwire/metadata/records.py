"""Metadata records in KRaft's shape (RegisterBrokerRecord, TopicRecord, PartitionRecord,
ConfigRecord, RemoveTopicRecord, PartitionChangeRecord, UserScramCredentialRecord, ...).

Serialised like Kafka's MetadataRecordSerde: unsigned varint frame version (1), unsigned varint
record type, unsigned varint record version, then the record body in the flexible encoding.
"""
from __future__ import annotations

from kwire.codec import primitives as P
from kwire.codec.schema import F, Message
from kwire.errors import CodecError


def _rec(name: str, type_id: int, fields: list[F], valid: str = "0") -> Message:
    m = Message(name, kind="metadata", valid=valid, flexible="0+", fields=fields)
    m.type_id = type_id  # type: ignore[attr-defined]
    return m


REGISTER_BROKER = _rec("RegisterBrokerRecord", 0, [
    F("broker_id", "int32"),
    F("incarnation_id", "uuid"),
    F("broker_epoch", "int64"),
    F("end_points", "[]BrokerEndpoint", fields=[
        F("name", "string"),
        F("host", "string"),
        F("port", "uint16"),
        F("security_protocol", "int16"),
    ]),
    F("rack", "string", nullable="0+", default=None),
    F("fenced", "bool", default=True),
])
UNREGISTER_BROKER = _rec("UnregisterBrokerRecord", 1, [
    F("broker_id", "int32"),
    F("broker_epoch", "int64"),
])
TOPIC = _rec("TopicRecord", 2, [
    F("name", "string"),
    F("topic_id", "uuid"),
])
PARTITION = _rec("PartitionRecord", 3, [
    F("partition_id", "int32", default=-1),
    F("topic_id", "uuid"),
    F("replicas", "[]int32"),
    F("isr", "[]int32"),
    F("removing_replicas", "[]int32"),
    F("adding_replicas", "[]int32"),
    F("leader", "int32", default=-1),
    F("leader_recovery_state", "int8", tag=0, tagged="0+", default=0),
    F("leader_epoch", "int32", default=-1),
    F("partition_epoch", "int32", default=-1),
    # v1 (KIP-858): each replica's log directory; kwire assigns none (written empty)
    F("directories", "[]uuid", "1+"),
    # v2 (KIP-966): the eligible leader replicas and the last known leader (LastKnownElr)
    F("eligible_leader_replicas", "[]int32", "2+", nullable="2+", tag=1, tagged="2+", default=None),
    F("last_known_elr", "[]int32", "2+", nullable="2+", tag=2, tagged="2+", default=None),
], valid="0-2")
CONFIG = _rec("ConfigRecord", 4, [
    F("resource_type", "int8"),
    F("resource_name", "string"),
    F("name", "string"),
    F("value", "string", nullable="0+"),
])
PARTITION_CHANGE = _rec("PartitionChangeRecord", 5, [
    F("partition_id", "int32", default=-1),
    F("topic_id", "uuid"),
    F("isr", "[]int32", nullable="0+", tag=0, tagged="0+", default=None),
    F("leader", "int32", tag=1, tagged="0+", default=-2),
    F("replicas", "[]int32", nullable="0+", tag=2, tagged="0+", default=None),
    F("removing_replicas", "[]int32", nullable="0+", tag=3, tagged="0+", default=None),
    F("adding_replicas", "[]int32", nullable="0+", tag=4, tagged="0+", default=None),
    # -1 no change; 0 RECOVERED (elected from the ISR); 1 RECOVERING (after an unclean election)
    F("leader_recovery_state", "int8", tag=5, tagged="0+", default=-1),
    # v2 (KIP-966): null when unchanged
    F("eligible_leader_replicas", "[]int32", "2+", nullable="2+", tag=6, tagged="2+", default=None),
    F("last_known_elr", "[]int32", "2+", nullable="2+", tag=7, tagged="2+", default=None),
    # v1 (KIP-858): null when unchanged; kwire assigns no directories
    F("directories", "[]uuid", "1+", nullable="1+", tag=8, tagged="1+", default=None),
], valid="0-2")
FENCE_BROKER = _rec("FenceBrokerRecord", 7, [F("id", "int32"), F("epoch", "int64")])
UNFENCE_BROKER = _rec("UnfenceBrokerRecord", 8, [F("id", "int32"), F("epoch", "int64")])
REMOVE_TOPIC = _rec("RemoveTopicRecord", 9, [F("topic_id", "uuid")])
FEATURE_LEVEL = _rec("FeatureLevelRecord", 12, [F("name", "string"), F("feature_level", "int16")])
# fenced: -1 unfenced, 0 no change, 1 fenced; in_controlled_shutdown (v1+): 1 entered it
BROKER_REGISTRATION_CHANGE = _rec("BrokerRegistrationChangeRecord", 17, [
    F("broker_id", "int32"),
    F("broker_epoch", "int64"),
    F("fenced", "int8", tag=0, tagged="0+", default=0),
    F("in_controlled_shutdown", "int8", "1+", tag=1, tagged="1+", default=0),
], valid="0-1")
NO_OP = _rec("NoOpRecord", 20, [])
# KIP-966: a change of min.insync.replicas empties the ELR and last known ELR of one topic's
# partitions (topic_name), or of every topic's ("": a cluster-level change)
CLEAR_ELR = _rec("ClearElrRecord", 28, [F("topic_name", "string")])
PRODUCER_IDS = _rec("ProducerIdsRecord", 15, [
    F("broker_id", "int32"),
    F("broker_epoch", "int64"),
    F("next_producer_id", "int64"),
])
ACCESS_CONTROL_ENTRY = _rec("AccessControlEntryRecord", 18, [
    F("id", "uuid"),
    F("resource_type", "int8"),
    F("resource_name", "string"),
    F("pattern_type", "int8"),
    F("principal", "string"),
    F("host", "string"),
    F("operation", "int8"),
    F("permission_type", "int8"),
])
REMOVE_ACCESS_CONTROL_ENTRY = _rec("RemoveAccessControlEntryRecord", 19, [F("id", "uuid")])
# one quota key of one entity (user / client-id, name null for the default), set or removed
CLIENT_QUOTA = _rec("ClientQuotaRecord", 14, [
    F("entity", "[]EntityData", fields=[F("entity_type", "string"), F("entity_name", "string", nullable="0+")]),
    F("key", "string"),
    F("value", "float64"),
    F("remove", "bool"),
])
# SCRAM credentials (KIP-554), as Kafka's ScramControlManager writes them: mechanism 1 SCRAM-SHA-256,
# 2 SCRAM-SHA-512; the controller turns the client's salted password into StoredKey and ServerKey
USER_SCRAM_CREDENTIAL = _rec("UserScramCredentialRecord", 11, [
    F("name", "string"),
    F("mechanism", "int8"),
    F("salt", "bytes"),
    F("stored_key", "bytes"),
    F("server_key", "bytes"),
    F("iterations", "int32"),
])
REMOVE_USER_SCRAM_CREDENTIAL = _rec("RemoveUserScramCredentialRecord", 22, [
    F("name", "string"),
    F("mechanism", "int8"),
])

BY_TYPE: dict[int, Message] = {m.type_id: m for m in (  # type: ignore[attr-defined]
    REGISTER_BROKER, UNREGISTER_BROKER, TOPIC, PARTITION, CONFIG, PARTITION_CHANGE, FENCE_BROKER,
    UNFENCE_BROKER, REMOVE_TOPIC, FEATURE_LEVEL, NO_OP, PRODUCER_IDS, BROKER_REGISTRATION_CHANGE,
    ACCESS_CONTROL_ENTRY, REMOVE_ACCESS_CONTROL_ENTRY, USER_SCRAM_CREDENTIAL, REMOVE_USER_SCRAM_CREDENTIAL,
    CLIENT_QUOTA, CLEAR_ELR)}

# ConfigResource types, as in Kafka's ConfigResource.Type
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32


def encode_record(msg: Message, obj) -> bytes:
    out = bytearray()
    P.write_uvarint(out, 1)
    P.write_uvarint(out, msg.type_id)  # type: ignore[attr-defined]
    version = msg.valid.hi   # the newest version we know (Kafka writes what its metadata.version allows)
    P.write_uvarint(out, version)
    return bytes(out) + msg.encode(obj, version)


def decode_record(data) -> tuple[Message, object]:
    frame_version, pos = P.read_uvarint(data, 0)
    if frame_version != 1:
        raise CodecError(f"unknown metadata record frame version {frame_version}")
    type_id, pos = P.read_uvarint(data, pos)
    version, pos = P.read_uvarint(data, pos)
    msg = BY_TYPE.get(type_id)
    if msg is None:
        raise CodecError(f"unknown metadata record type {type_id}")
    if version not in msg.valid:
        raise CodecError(f"unknown version {version} of metadata record {msg.name}")
    return msg, msg.decode(memoryview(data)[pos:], version)
