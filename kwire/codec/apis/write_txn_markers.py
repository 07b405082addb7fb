"""WriteTxnMarkers (key 27), versions 0-2 (v2 adds each marker's TransactionVersion, KIP-1228)."""
from kwire.codec.schema import F, Message

REQUEST = Message("WriteTxnMarkersRequest", api_key=27, kind="request", valid="0-2", flexible="1+", fields=[
    F("markers", "[]WritableTxnMarker", "0+", fields=[
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("transaction_result", "bool", "0+"),
        F("topics", "[]WritableTxnMarkerTopic", "0+", fields=[
            F("name", "string", "0+"),
            F("partition_indexes", "[]int32", "0+"),
        ]),
        F("coordinator_epoch", "int32", "0+"),
        F("transaction_version", "int8", "2+", default=0, ignorable=True),
    ]),
])

RESPONSE = Message("WriteTxnMarkersResponse", api_key=27, kind="response", valid="0-2", flexible="1+", fields=[
    F("markers", "[]WritableTxnMarkerResult", "0+", fields=[
        F("producer_id", "int64", "0+"),
        F("topics", "[]WritableTxnMarkerTopicResult", "0+", fields=[
            F("name", "string", "0+"),
            F("partitions", "[]WritableTxnMarkerPartitionResult", "0+", fields=[
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ]),
        ]),
    ]),
])
