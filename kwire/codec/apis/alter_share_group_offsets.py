"""AlterShareGroupOffsets (key 91), version 0 (KIP-932)."""
from kwire.codec.schema import F, Message

REQUEST = Message("AlterShareGroupOffsetsRequest", api_key=91, kind="request", valid="0", flexible="0+", fields=[
    F("group_id", "string", "0+"),
    F("topics", "[]AlterShareGroupOffsetsRequestTopic", "0+", fields=[
        F("topic_name", "string", "0+", map_key=True),
        F("partitions", "[]AlterShareGroupOffsetsRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("start_offset", "int64", "0+"),
        ]),
    ]),
])

RESPONSE = Message("AlterShareGroupOffsetsResponse", api_key=91, kind="response", valid="0", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("responses", "[]AlterShareGroupOffsetsResponseTopic", "0+", fields=[
        F("topic_name", "string", "0+", map_key=True),
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]AlterShareGroupOffsetsResponsePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ]),
])
