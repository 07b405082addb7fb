"""FetchSnapshot (key 59), versions 0-1: a KRaft follower whose fetch offset is below the
leader's log start downloads the leader's snapshot in chunks (KIP-630).

Not in kafka-python's resources; transcribed from Kafka 4.0's FetchSnapshotRequest.json /
FetchSnapshotResponse.json (v1: replica directory id in the request, leader endpoints in the
response, both tagged, KIP-853).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("FetchSnapshotRequest", api_key=59, kind="request", valid="0-1", flexible="0+", fields=[
    F("cluster_id", "string", "0+", nullable="0+", tag=0, tagged="0+", default=None),
    F("replica_id", "int32", "0+", default=-1),
    F("max_bytes", "int32", "0+", default=0x7FFFFFFF),
    F("topics", "[]TopicSnapshot", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]PartitionSnapshot", "0+", fields=[
            F("partition", "int32", "0+"),
            F("current_leader_epoch", "int32", "0+"),
            F("snapshot_id", "SnapshotId", "0+", fields=[
                F("end_offset", "int64", "0+"),
                F("epoch", "int32", "0+"),
            ]),
            F("position", "int64", "0+"),
            F("replica_directory_id", "uuid", "1+", tag=0, tagged="1+", ignorable=True),
        ]),
    ]),
])

RESPONSE = Message("FetchSnapshotResponse", api_key=59, kind="response", valid="0-1", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("topics", "[]TopicSnapshot", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]PartitionSnapshot", "0+", fields=[
            F("index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("snapshot_id", "SnapshotId", "0+", fields=[
                F("end_offset", "int64", "0+"),
                F("epoch", "int32", "0+"),
            ]),
            F("current_leader", "LeaderIdAndEpoch", "0+", tag=0, tagged="0+", fields=[
                # Kafka's defaults (0, 0): a tagged struct equal to them is left out of the encoding
                F("leader_id", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
            ]),
            F("size", "int64", "0+"),
            F("position", "int64", "0+"),
            F("unaligned_records", "records", "0+"),
        ]),
    ]),
    F("node_endpoints", "[]NodeEndpoint", "1+", tag=0, tagged="1+", fields=[
        F("node_id", "int32", "1+", map_key=True),
        F("host", "string", "1+"),
        F("port", "uint16", "1+"),
    ]),
])
