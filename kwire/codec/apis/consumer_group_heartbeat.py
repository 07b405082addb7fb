"""ConsumerGroupHeartbeat (key 68), versions 0-1 (KIP-848).

v1 adds ``subscribed_topic_regex`` and has the consumer generate its own member id (KIP-1082).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("ConsumerGroupHeartbeatRequest", api_key=68, kind="request", valid="0-1", flexible="0+", fields=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0+"),
    F("member_epoch", "int32", "0+"),
    F("instance_id", "string", "0+", nullable="0+", default=None),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("rebalance_timeout_ms", "int32", "0+", default=-1),
    F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
    F("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
    F("server_assignor", "string", "0+", nullable="0+", default=None),
    F("topic_partitions", "[]TopicPartitions", "0+", nullable="0+", default=None, fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]int32", "0+"),
    ]),
])

RESPONSE = Message("ConsumerGroupHeartbeatResponse", api_key=68, kind="response", valid="0-1", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+", nullable="0+", default=None),
    F("member_epoch", "int32", "0+"),
    F("heartbeat_interval_ms", "int32", "0+"),
    F("assignment", "Assignment", "0+", nullable="0+", default=None, fields=[
        F("topic_partitions", "[]TopicPartitions", "0+", fields=[
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
])
