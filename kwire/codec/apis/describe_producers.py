"""DescribeProducers (key 61), version 0 (KIP-664): the active producers of each partition asked
for, as its leader's producer state holds them."""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeProducersRequest", api_key=61, kind="request", valid="0", flexible="0+", fields=[
    F("topics", "[]TopicRequest", "0+", fields=[
        F("name", "string", "0+"),
        F("partition_indexes", "[]int32", "0+"),
    ]),
])

RESPONSE = Message("DescribeProducersResponse", api_key=61, kind="response", valid="0", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("topics", "[]TopicResponse", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]PartitionResponse", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("active_producers", "[]ProducerState", "0+", fields=[
                F("producer_id", "int64", "0+"),
                F("producer_epoch", "int32", "0+"),
                F("last_sequence", "int32", "0+", default=-1),
                F("last_timestamp", "int64", "0+", default=-1),
                F("coordinator_epoch", "int32", "0+"),
                F("current_txn_start_offset", "int64", "0+", default=-1),
            ]),
        ]),
    ]),
])
