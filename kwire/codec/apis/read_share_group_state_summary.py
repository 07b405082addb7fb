"""ReadShareGroupStateSummary (key 87), versions 0-1 (KIP-932; an inter-broker request: the
group coordinator reads a share partition's start offset for DescribeShareGroupOffsets;
v1: the delivery complete count)."""
# Checked field by field against Kafka 4.3's JSON (kafka-clients 4.3.0; kafka-python ships none).
from kwire.codec.schema import F, Message

REQUEST = Message("ReadShareGroupStateSummaryRequest", api_key=87, kind="request", valid="0-1", flexible="0+",
                  fields=[
    F("group_id", "string", "0+"),
    F("topics", "[]ReadStateSummaryData", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("ReadShareGroupStateSummaryResponse", api_key=87, kind="response", valid="0-1", flexible="0+",
                   fields=[
    F("results", "[]ReadStateSummaryResult", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionResult", "0+", fields=[
            F("partition", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("state_epoch", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
            F("start_offset", "int64", "0+"),
            F("delivery_complete_count", "int32", "1+", ignorable=True, default=-1),
        ]),
    ]),
])
