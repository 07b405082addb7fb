"""OffsetForLeaderEpoch (key 23), versions 0-4 (v0-1: Kafka 3.x and older; v0 answers no leader epoch)."""
from kwire.codec.schema import F, Message

REQUEST = Message("OffsetForLeaderEpochRequest", api_key=23, kind="request", valid="0-4", flexible="4+", fields=[
    F("replica_id", "int32", "3+", default=-2, ignorable=True),
    F("topics", "[]OffsetForLeaderTopic", "0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]OffsetForLeaderPartition", "0+", fields=[
            F("partition", "int32", "0+"),
            F("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            F("leader_epoch", "int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("OffsetForLeaderEpochResponse", api_key=23, kind="response", valid="0-4", flexible="4+", fields=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]OffsetForLeaderTopicResult", "0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]EpochEndOffset", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("partition", "int32", "0+"),
            F("leader_epoch", "int32", "1+", default=-1, ignorable=True),
            F("end_offset", "int64", "0+", default=-1),
        ]),
    ]),
])
