"""OffsetFetch (key 9), versions 0-10.

v0 (offsets in ZooKeeper) was removed from Kafka 4; Kafka 3.x KRaft brokers answer it
UNSUPPORTED_VERSION on every partition (no ZooKeeper), and so does kwire. v1-7 ask for one group
(``group_id`` + ``topics``, null topics = all, v2+); v8+ batch several ``groups``, and the
response moves to per-group results. v9 adds ``member_id`` / ``member_epoch`` (KIP-848).
v10 names topics by id (KIP-848).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("OffsetFetchRequest", api_key=9, kind="request", valid="0-10", flexible="6+", fields=[
    F("group_id", "string", "0-7"),
    F("topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
        F("name", "string", "0-7"),
        F("partition_indexes", "[]int32", "0-7"),
    ]),
    F("groups", "[]OffsetFetchRequestGroup", "8+", fields=[
        F("group_id", "string", "8+"),
        F("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),
        F("member_epoch", "int32", "9+", default=-1, ignorable=True),
        F("topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", fields=[
            F("name", "string", "8-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partition_indexes", "[]int32", "8+"),
        ]),
    ]),
    F("require_stable", "bool", "7+", default=False),
])

RESPONSE = Message("OffsetFetchResponse", api_key=9, kind="response", valid="0-10", flexible="6+", fields=[
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
        F("name", "string", "0-7"),
        F("partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
            F("partition_index", "int32", "0-7"),
            F("committed_offset", "int64", "0-7"),
            F("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
            F("metadata", "string", "0-7", nullable="0-7"),
            F("error_code", "int16", "0-7"),
        ]),
    ]),
    F("error_code", "int16", "2-7", default=0, ignorable=True),
    F("groups", "[]OffsetFetchResponseGroup", "8+", fields=[
        F("group_id", "string", "8+"),
        F("topics", "[]OffsetFetchResponseTopics", "8+", fields=[
            F("name", "string", "8-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                F("partition_index", "int32", "8+"),
                F("committed_offset", "int64", "8+"),
                F("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
                F("metadata", "string", "8+", nullable="8+"),
                F("error_code", "int16", "8+"),
            ]),
        ]),
        F("error_code", "int16", "8+", default=0),
    ]),
])
