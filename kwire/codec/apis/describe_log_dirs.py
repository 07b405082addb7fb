"""DescribeLogDirs (key 35), versions 0-5 (v0 = v1): per log dir of a broker, its path, error, file
system size (v4+) and cordoned flag (v5+), and each hosted partition's size and offset lag.
Kafka 4.0 removed v0 (KIP-896); 3.x served it. Follows the DescribeLogDirs JSON shipped in kafka-python's
resources.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeLogDirsRequest", api_key=35, kind="request", valid="0-5", flexible="2+", fields=[
    F("topics", "[]DescribableLogDirTopic", "0+", nullable="0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]int32", "0+"),
    ]),
])

RESPONSE = Message("DescribeLogDirsResponse", api_key=35, kind="response", valid="0-5", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "3+", ignorable=True),
    F("results", "[]DescribeLogDirsResult", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("log_dir", "string", "0+"),
        F("topics", "[]DescribeLogDirsTopic", "0+", fields=[
            F("name", "string", "0+"),
            F("partitions", "[]DescribeLogDirsPartition", "0+", fields=[
                F("partition_index", "int32", "0+"),
                F("partition_size", "int64", "0+"),
                F("offset_lag", "int64", "0+"),
                F("is_future_key", "bool", "0+"),
            ]),
        ]),
        F("total_bytes", "int64", "4+", ignorable=True, default=-1),
        F("usable_bytes", "int64", "4+", ignorable=True, default=-1),
        F("is_cordoned", "bool", "5+", ignorable=True, default=False),
    ]),
])
