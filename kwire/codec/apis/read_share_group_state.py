"""ReadShareGroupState (key 84), version 0 (KIP-932; an inter-broker request: a share
partition's leader reads its state from the share coordinator)."""
# Checked field by field against Kafka 4.3's JSON (kafka-clients 4.3.0; kafka-python ships none).
from kwire.codec.schema import F, Message

REQUEST = Message("ReadShareGroupStateRequest", api_key=84, kind="request", valid="0", flexible="0+", fields=[
    F("group_id", "string", "0+"),
    F("topics", "[]ReadStateData", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("ReadShareGroupStateResponse", api_key=84, kind="response", valid="0", flexible="0+", fields=[
    F("results", "[]ReadStateResult", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionResult", "0+", fields=[
            F("partition", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("state_epoch", "int32", "0+"),
            F("start_offset", "int64", "0+"),
            F("state_batches", "[]StateBatch", "0+", fields=[
                F("first_offset", "int64", "0+"),
                F("last_offset", "int64", "0+"),
                F("delivery_state", "int8", "0+"),
                F("delivery_count", "int16", "0+"),
            ]),
        ]),
    ]),
])
