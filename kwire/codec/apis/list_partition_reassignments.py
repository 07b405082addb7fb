"""ListPartitionReassignments (key 46), version 0, as in Kafka's
ListPartitionReassignmentsRequest/Response.json."""
from kwire.codec.schema import F, Message

REQUEST = Message("ListPartitionReassignmentsRequest", api_key=46, kind="request", valid="0", flexible="0+", fields=[
    F("timeout_ms", "int32", "0+", default=60000),
    F("topics", "[]ListPartitionReassignmentsTopics", "0+", nullable="0+", default=None, fields=[
        F("name", "string", "0+"),
        F("partition_indexes", "[]int32", "0+"),
    ]),
])

RESPONSE = Message("ListPartitionReassignmentsResponse", api_key=46, kind="response", valid="0", flexible="0+",
                   fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+"),
    F("topics", "[]OngoingTopicReassignment", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]OngoingPartitionReassignment", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("replicas", "[]int32", "0+"),
            F("adding_replicas", "[]int32", "0+"),
            F("removing_replicas", "[]int32", "0+"),
        ]),
    ]),
])
