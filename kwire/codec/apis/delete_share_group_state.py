"""DeleteShareGroupState (key 86), version 0 (KIP-932; an inter-broker request: the share
partitions' state is deleted at the share coordinator)."""
# Checked field by field against Kafka 4.3's JSON (kafka-clients 4.3.0; kafka-python ships none).
from kwire.codec.schema import F, Message

REQUEST = Message("DeleteShareGroupStateRequest", api_key=86, kind="request", valid="0", flexible="0+", fields=[
    F("group_id", "string", "0+"),
    F("topics", "[]DeleteStateData", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("DeleteShareGroupStateResponse", api_key=86, kind="response", valid="0", flexible="0+", fields=[
    F("results", "[]DeleteStateResult", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]PartitionResult", "0+", fields=[
            F("partition", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
        ]),
    ]),
])
