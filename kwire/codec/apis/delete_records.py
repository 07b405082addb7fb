"""DeleteRecords (key 21), versions 0-2."""
from kwire.codec.schema import F, Message

REQUEST = Message("DeleteRecordsRequest", api_key=21, kind="request", valid="0-2", flexible="2+", fields=[
    F("topics", "[]DeleteRecordsTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]DeleteRecordsPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("offset", "int64", "0+"),
        ]),
    ]),
    F("timeout_ms", "int32", "0+"),
])

RESPONSE = Message("DeleteRecordsResponse", api_key=21, kind="response", valid="0-2", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("topics", "[]DeleteRecordsTopicResult", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("partitions", "[]DeleteRecordsPartitionResult", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("low_watermark", "int64", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])
