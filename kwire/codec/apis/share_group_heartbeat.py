"""ShareGroupHeartbeat (key 76), version 1 (KIP-932; v0 was the early-access form Kafka 4.0
refused by default and 4.1 dropped)."""
from kwire.codec.schema import F, Message

REQUEST = Message("ShareGroupHeartbeatRequest", api_key=76, kind="request", valid="1", flexible="0+", fields=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0+"),
    F("member_epoch", "int32", "0+"),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
])

RESPONSE = Message("ShareGroupHeartbeatResponse", api_key=76, kind="response", valid="1", flexible="0+", fields=[
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
