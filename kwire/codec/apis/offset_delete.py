"""OffsetDelete (key 47), version 0."""
from kwire.codec.schema import F, Message

REQUEST = Message("OffsetDeleteRequest", api_key=47, kind="request", valid="0", fields=[
    F("group_id", "string", "0+"),
    F("topics", "[]OffsetDeleteRequestTopic", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("partitions", "[]OffsetDeleteRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("OffsetDeleteResponse", api_key=47, kind="response", valid="0", fields=[
    F("error_code", "int16", "0+"),
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("topics", "[]OffsetDeleteResponseTopic", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("partitions", "[]OffsetDeleteResponsePartition", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])
