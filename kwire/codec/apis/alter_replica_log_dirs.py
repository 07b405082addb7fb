"""AlterReplicaLogDirs (key 34), versions 0-2 (v0 = v1): move replicas of this broker to another
of its log dirs. Kafka 4.0 removed v0 (KIP-896); 3.x served it. Follows the AlterReplicaLogDirs
JSON shipped in kafka-python's resources.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("AlterReplicaLogDirsRequest", api_key=34, kind="request", valid="0-2", flexible="2+", fields=[
    F("dirs", "[]AlterReplicaLogDir", "0+", fields=[
        F("path", "string", "0+", map_key=True),
        F("topics", "[]AlterReplicaLogDirTopic", "0+", fields=[
            F("name", "string", "0+", map_key=True),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
])

RESPONSE = Message("AlterReplicaLogDirsResponse", api_key=34, kind="response", valid="0-2", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]AlterReplicaLogDirTopicResult", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("partitions", "[]AlterReplicaLogDirPartitionResult", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])
