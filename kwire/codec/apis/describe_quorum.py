"""DescribeQuorum (key 55), versions 0-2: leader, epoch, high watermark, voters and observers
of the KRaft quorum (``__cluster_metadata`` partition 0). Follows the DescribeQuorum JSON
shipped in kafka-python's resources.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeQuorumRequest", api_key=55, kind="request", valid="0-2", flexible="0+", fields=[
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
        ]),
    ]),
])

_REPLICA_STATE = [
    F("replica_id", "int32", "0+"),
    F("replica_directory_id", "uuid", "2+"),
    F("log_end_offset", "int64", "0+"),
    F("last_fetch_timestamp", "int64", "1+", default=-1, ignorable=True),
    F("last_caught_up_timestamp", "int64", "1+", default=-1, ignorable=True),
]

RESPONSE = Message("DescribeQuorumResponse", api_key=55, kind="response", valid="0-2", flexible="0+", fields=[
    F("error_code", "int16", "0+"),
    F("error_message", "string", "2+", nullable="2+", default="", ignorable=True),
    F("topics", "[]TopicData", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "2+", nullable="2+", default="", ignorable=True),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "0+"),
            F("high_watermark", "int64", "0+"),
            F("current_voters", "[]ReplicaState", "0+", fields=_REPLICA_STATE),
            F("observers", "[]ReplicaState", "0+", fields=_REPLICA_STATE),
        ]),
    ]),
    F("nodes", "[]Node", "2+", fields=[
        F("node_id", "int32", "2+", map_key=True),
        F("listeners", "[]Listener", "2+", fields=[
            F("name", "string", "2+", map_key=True),
            F("host", "string", "2+"),
            F("port", "uint16", "2+"),
        ]),
    ]),
])
