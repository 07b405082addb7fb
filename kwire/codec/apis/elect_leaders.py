"""ElectLeaders (key 43), versions 0-2 (v1: election type, KIP-460, and a top-level error
code; v2 flexible), as in Kafka's ElectLeadersRequest/Response.json."""
from kwire.codec.schema import F, Message

REQUEST = Message("ElectLeadersRequest", api_key=43, kind="request", valid="0-2", flexible="2+", fields=[
    F("election_type", "int8", "1+"),
    F("topic_partitions", "[]TopicPartitions", "0+", nullable="0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]int32", "0+"),
    ]),
    F("timeout_ms", "int32", "0+", default=60000),
])

RESPONSE = Message("ElectLeadersResponse", api_key=43, kind="response", valid="0-2", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "1+"),
    F("replica_election_results", "[]ReplicaElectionResult", "0+", fields=[
        F("topic", "string", "0+"),
        F("partition_result", "[]PartitionResult", "0+", fields=[
            F("partition_id", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ]),
    ]),
])
