"""Vote (key 52), versions 0-2: KRaft leader election (KIP-595), with pre-vote (KIP-996, v2).

Kafka's VoteRequest.json is not shipped in kafka-python's resources; this schema is
transcribed from Kafka 4.0's definition (v1 adds the voter key and directory ids of
KIP-853, v2 adds ``pre_vote``; the partition's candidate fields are called replica_* since
KIP-996 - names do not reach the wire).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("VoteRequest", api_key=52, kind="request", valid="0-2", flexible="0+", fields=[
    F("cluster_id", "string", "0+", nullable="0+", default=None),
    F("voter_id", "int32", "1+", default=-1, ignorable=True),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("replica_epoch", "int32", "0+"),
            F("replica_id", "int32", "0+"),
            F("replica_directory_id", "uuid", "1+", ignorable=True),
            F("voter_directory_id", "uuid", "1+", ignorable=True),
            F("last_offset_epoch", "int32", "0+"),
            F("last_offset", "int64", "0+"),
            F("pre_vote", "bool", "2+", default=False),
        ]),
    ]),
])

RESPONSE = Message("VoteResponse", api_key=52, kind="response", valid="0-2", flexible="0+", fields=[
    F("error_code", "int16", "0+"),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
            F("vote_granted", "bool", "0+"),
        ]),
    ]),
    F("node_endpoints", "[]NodeEndpoint", "1+", tag=0, tagged="1+", fields=[
        F("node_id", "int32", "1+", map_key=True),
        F("host", "string", "1+"),
        F("port", "uint16", "1+"),
    ]),
])
