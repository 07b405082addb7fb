"""ListOffsets (key 2), versions 0-11 (v0: ``max_num_offsets`` in, ``old_style_offsets`` out, Kafka 3.x
and older only; v10: ``timeout_ms`` for remote-storage lookups, KIP-1075;
kwire has no remote storage and answers at once; v11: timestamp -6, earliest pending upload,
KIP-1023)."""
from kwire.codec.schema import F, Message

REQUEST = Message("ListOffsetsRequest", api_key=2, kind="request", valid="0-11", flexible="6+", fields=[
    F("replica_id", "int32", "0+"),
    F("isolation_level", "int8", "2+"),
    F("topics", "[]ListOffsetsTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ListOffsetsPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
            F("timestamp", "int64", "0+"),
            F("max_num_offsets", "int32", "0", default=1),
        ]),
    ]),
    F("timeout_ms", "int32", "10+", ignorable=True),
])

RESPONSE = Message("ListOffsetsResponse", api_key=2, kind="response", valid="0-11", flexible="6+", fields=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]ListOffsetsTopicResponse", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ListOffsetsPartitionResponse", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("old_style_offsets", "[]int64", "0", ignorable=True),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
            F("leader_epoch", "int32", "4+", default=-1),
        ]),
    ]),
])
