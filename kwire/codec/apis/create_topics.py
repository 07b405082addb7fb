"""CreateTopics (key 19), versions 0-7 (v0-1: Kafka 3.x and older; v0 has no validate_only, v1 adds it
and error messages)."""
from kwire.codec.schema import F, Message

REQUEST = Message("CreateTopicsRequest", api_key=19, kind="request", valid="0-7", flexible="5+", fields=[
    F("topics", "[]CreatableTopic", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("num_partitions", "int32", "0+"),
        F("replication_factor", "int16", "0+"),
        F("assignments", "[]CreatableReplicaAssignment", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("broker_ids", "[]int32", "0+"),
        ]),
        F("configs", "[]CreatableTopicConfig", "0+", fields=[
            F("name", "string", "0+", map_key=True),
            F("value", "string", "0+", nullable="0+"),
        ]),
    ]),
    F("timeout_ms", "int32", "0+", default=60000),
    F("validate_only", "bool", "1+", default=False),
])

RESPONSE = Message("CreateTopicsResponse", api_key=19, kind="response", valid="0-7", flexible="5+", fields=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]CreatableTopicResult", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("topic_id", "uuid", "7+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "1+", nullable="0+", ignorable=True),
        F("topic_config_error_code", "int16", "5+", tag=0, tagged="5+", ignorable=True),
        F("num_partitions", "int32", "5+", default=-1, ignorable=True),
        F("replication_factor", "int16", "5+", default=-1, ignorable=True),
        F("configs", "[]CreatableTopicConfigs", "5+", nullable="5+", ignorable=True, fields=[
            F("name", "string", "5+"),
            F("value", "string", "5+", nullable="5+"),
            F("read_only", "bool", "5+"),
            F("config_source", "int8", "5+", default=-1, ignorable=True),
            F("is_sensitive", "bool", "5+"),
        ]),
    ]),
])
