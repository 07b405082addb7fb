"""AlterPartition (key 56), versions 2-3: a partition leader asks the active controller to
change the partition's ISR (and leader recovery state), on the controller listener.

Kafka's AlterPartitionRequest.json is not shipped in kafka-python's resources; this schema is
transcribed from Kafka 4.0's definition, which keeps versions 2-3 (topic ids, KIP-841; v3
names the ISR with broker epochs, KIP-903). The response's v0-1 topic name is left out with
the versions that carried it.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("AlterPartitionRequest", api_key=56, kind="request", valid="2-3", flexible="0+", fields=[
    F("broker_id", "int32", "0+"),
    F("broker_epoch", "int64", "0+", default=-1),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_id", "uuid", "2+", ignorable=True),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
            F("new_isr", "[]int32", "0-2"),
            F("new_isr_with_epochs", "[]BrokerState", "3+", fields=[
                F("broker_id", "int32", "3+"),
                F("broker_epoch", "int64", "3+", default=-1),
            ]),
            F("leader_recovery_state", "int8", "1+", default=0),
            F("partition_epoch", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("AlterPartitionResponse", api_key=56, kind="response", valid="2-3", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_id", "uuid", "2+", ignorable=True),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
            F("isr", "[]int32", "0+"),
            F("leader_recovery_state", "int8", "1+", default=0, ignorable=True),
            F("partition_epoch", "int32", "0+"),
        ]),
    ]),
])
