"""AlterPartitionReassignments (key 45), versions 0-1 (v1: allow_replication_factor_change),
as in Kafka's AlterPartitionReassignmentsRequest/Response.json."""
from kwire.codec.schema import F, Message

REQUEST = Message("AlterPartitionReassignmentsRequest", api_key=45, kind="request", valid="0-1", flexible="0+",
                  fields=[
    F("timeout_ms", "int32", "0+", default=60000),
    F("allow_replication_factor_change", "bool", "1+", default=True),
    F("topics", "[]ReassignableTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ReassignablePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("replicas", "[]int32", "0+", nullable="0+", default=None),
        ]),
    ]),
])

RESPONSE = Message("AlterPartitionReassignmentsResponse", api_key=45, kind="response", valid="0-1", flexible="0+",
                   fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("allow_replication_factor_change", "bool", "1+", default=True, ignorable=True),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+"),
    F("responses", "[]ReassignableTopicResponse", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]ReassignablePartitionResponse", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ]),
    ]),
])
