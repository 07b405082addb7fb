"""EndQuorumEpoch (key 54), versions 0-1: a KRaft leader resigns gracefully.

Not in kafka-python's resources; transcribed from Kafka 4.0's EndQuorumEpochRequest.json /
EndQuorumEpochResponse.json (v1: flexible, preferred candidates with directory ids replace
preferred successors, leader endpoints, KIP-853).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("EndQuorumEpochRequest", api_key=54, kind="request", valid="0-1", flexible="1+", fields=[
    F("cluster_id", "string", "0+", nullable="0+", default=None),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
            F("preferred_successors", "[]int32", "0", ignorable=True),
            F("preferred_candidates", "[]ReplicaInfo", "1+", ignorable=True, fields=[
                F("candidate_id", "int32", "1+"),
                F("candidate_directory_id", "uuid", "1+"),
            ]),
        ]),
    ]),
    F("leader_endpoints", "[]LeaderEndpoint", "1+", ignorable=True, fields=[
        F("name", "string", "1+", map_key=True),
        F("host", "string", "1+"),
        F("port", "uint16", "1+"),
    ]),
])

RESPONSE = Message("EndQuorumEpochResponse", api_key=54, kind="response", valid="0-1", flexible="1+", fields=[
    F("error_code", "int16", "0+"),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
        ]),
    ]),
    F("node_endpoints", "[]NodeEndpoint", "1+", tag=0, tagged="1+", fields=[
        F("node_id", "int32", "1+", map_key=True),
        F("host", "string", "1+"),
        F("port", "uint16", "1+"),
    ]),
])
