"""InitializeShareGroupState (key 83), version 0 (KIP-932; an inter-broker request: the group
coordinator sets a share partition's state at the share coordinator, e.g. for
AlterShareGroupOffsets)."""
# Checked field by field against Kafka 4.3's JSON (kafka-clients 4.3.0; kafka-python ships none).
from kwire.codec.schema import F, Message

REQUEST = Message("InitializeShareGroupStateRequest", api_key=83, kind="request", valid="0", flexible="0+", fields=[
    F("group_id", "string", "0+"),
    F("topics", "[]InitializeStateData", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition", "int32", "0+"),
            F("state_epoch", "int32", "0+"),
            F("start_offset", "int64", "0+"),
        ]),
    ]),
])

RESPONSE = Message("InitializeShareGroupStateResponse", api_key=83, kind="response", valid="0", flexible="0+",
                   fields=[
    F("results", "[]InitializeStateResult", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionResult", "0+", fields=[
            F("partition", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ]),
])
