"""Produce (key 0), versions 0-13.

Kafka 4 declares 3-13; v0-2 stay here because ApiVersions must advertise Produce from v0
(librdkafka turns compression off otherwise). v12 is v11's shape (transaction version 2: the
leader adds the partition to the transaction itself); v13 names topics by id (KIP-516).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("ProduceRequest", api_key=0, kind="request", valid="0-13", flexible="9+", fields=[
    F("transactional_id", "string", "3+", nullable="3+", default=None),
    F("acks", "int16", "0+"),
    F("timeout_ms", "int32", "0+"),
    F("topic_data", "[]TopicProduceData", "0+", fields=[
        F("name", "string", "0-12", ignorable=True, map_key=True),
        F("topic_id", "uuid", "13+", ignorable=True, map_key=True),
        F("partition_data", "[]PartitionProduceData", "0+", fields=[
            F("index", "int32", "0+"),
            F("records", "records", "0+", nullable="0+"),
        ]),
    ]),
])

RESPONSE = Message("ProduceResponse", api_key=0, kind="response", valid="0-13", flexible="9+", fields=[
    F("responses", "[]TopicProduceResponse", "0+", fields=[
        F("name", "string", "0-12", ignorable=True, map_key=True),
        F("topic_id", "uuid", "13+", ignorable=True, map_key=True),
        F("partition_responses", "[]PartitionProduceResponse", "0+", fields=[
            F("index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("base_offset", "int64", "0+"),
            F("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
            F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            F("record_errors", "[]BatchIndexAndErrorMessage", "8+", ignorable=True, fields=[
                F("batch_index", "int32", "8+"),
                F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
            ]),
            F("error_message", "string", "8+", nullable="8+", default=None, ignorable=True),
            F("current_leader", "LeaderIdAndEpoch", "10+", tag=0, tagged="10+", fields=[
                F("leader_id", "int32", "10+", default=-1),
                F("leader_epoch", "int32", "10+", default=-1),
            ]),
        ]),
    ]),
    F("throttle_time_ms", "int32", "1+", default=0, ignorable=True),
    F("node_endpoints", "[]NodeEndpoint", "10+", tag=0, tagged="10+", fields=[
        F("node_id", "int32", "10+", map_key=True),
        F("host", "string", "10+"),
        F("port", "int32", "10+"),
        F("rack", "string", "10+", nullable="10+", default=None),
    ]),
])
