"""OffsetCommit (key 8), versions 0-10.

v0-1 (ZooKeeper-era commits) were removed from Kafka 4; 3.x served v1 (generation and member,
per-partition ``commit_timestamp``) and answered v0 (stored in ZooKeeper) UNSUPPORTED_VERSION on a
KRaft broker. ``retention_time_ms``
exists in v2-4 only; v7+ carries ``group_instance_id``. v10 names topics by id (KIP-848).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("OffsetCommitRequest", api_key=8, kind="request", valid="0-10", flexible="8+", fields=[
    F("group_id", "string", "0+"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
    F("member_id", "string", "1+", ignorable=True),
    F("group_instance_id", "string", "7+", nullable="7+", default=None),
    F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
    F("topics", "[]OffsetCommitRequestTopic", "0+", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("topic_id", "uuid", "10+", ignorable=True),
        F("partitions", "[]OffsetCommitRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("committed_offset", "int64", "0+"),
            F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
            F("commit_timestamp", "int64", "1", default=-1),
            F("committed_metadata", "string", "0+", nullable="0+"),
        ]),
    ]),
])

RESPONSE = Message("OffsetCommitResponse", api_key=8, kind="response", valid="0-10", flexible="8+", fields=[
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("topics", "[]OffsetCommitResponseTopic", "0+", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("topic_id", "uuid", "10+", ignorable=True),
        F("partitions", "[]OffsetCommitResponsePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])
