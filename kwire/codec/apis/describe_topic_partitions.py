"""DescribeTopicPartitions (key 75), version 0 (KIP-966)."""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeTopicPartitionsRequest", api_key=75, kind="request", valid="0", flexible="0+", fields=[
    F("topics", "[]TopicRequest", "0+", fields=[
        F("name", "string", "0+"),
    ]),
    F("response_partition_limit", "int32", "0+", default=2000),
    F("cursor", "Cursor", "0+", nullable="0+", default=None, fields=[
        F("topic_name", "string", "0+"),
        F("partition_index", "int32", "0+"),
    ]),
])

RESPONSE = Message("DescribeTopicPartitionsResponse", api_key=75, kind="response", valid="0", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("topics", "[]DescribeTopicPartitionsResponseTopic", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("name", "string", "0+", nullable="0+", map_key=True),
        F("topic_id", "uuid", "0+", ignorable=True),
        F("is_internal", "bool", "0+", default=False, ignorable=True),
        F("partitions", "[]DescribeTopicPartitionsResponsePartition", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("partition_index", "int32", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+", default=-1, ignorable=True),
            F("replica_nodes", "[]int32", "0+"),
            F("isr_nodes", "[]int32", "0+"),
            F("eligible_leader_replicas", "[]int32", "0+", nullable="0+", default=None),
            F("last_known_elr", "[]int32", "0+", nullable="0+", default=None),
            F("offline_replicas", "[]int32", "0+", ignorable=True),
        ]),
        F("topic_authorized_operations", "int32", "0+", default=-2147483648),
    ]),
    F("next_cursor", "Cursor", "0+", nullable="0+", default=None, fields=[
        F("topic_name", "string", "0+"),
        F("partition_index", "int32", "0+"),
    ]),
])
