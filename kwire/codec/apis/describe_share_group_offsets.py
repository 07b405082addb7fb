"""DescribeShareGroupOffsets (key 90), versions 0-1 (KIP-932; v1 adds the lag, KIP-1226)."""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeShareGroupOffsetsRequest", api_key=90, kind="request", valid="0-1", flexible="0+", fields=[
    F("groups", "[]DescribeShareGroupOffsetsRequestGroup", "0+", fields=[
        F("group_id", "string", "0+"),
        F("topics", "[]DescribeShareGroupOffsetsRequestTopic", "0+", nullable="0+", fields=[
            F("topic_name", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("DescribeShareGroupOffsetsResponse", api_key=90, kind="response", valid="0-1", flexible="0+",
                   fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("groups", "[]DescribeShareGroupOffsetsResponseGroup", "0+", fields=[
        F("group_id", "string", "0+"),
        F("topics", "[]DescribeShareGroupOffsetsResponseTopic", "0+", fields=[
            F("topic_name", "string", "0+"),
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]DescribeShareGroupOffsetsResponsePartition", "0+", fields=[
                F("partition_index", "int32", "0+"),
                F("start_offset", "int64", "0+"),
                F("leader_epoch", "int32", "0+"),
                F("lag", "int64", "1+", default=-1, ignorable=True),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ]),
        ]),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])
