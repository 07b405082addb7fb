"""AddOffsetsToTxn (key 25), versions 0-4: add the ``__consumer_offsets`` partition of a group
to a producer's transaction (before TxnOffsetCommit sends the offsets)."""
from kwire.codec.schema import F, Message

REQUEST = Message("AddOffsetsToTxnRequest", api_key=25, kind="request", valid="0-4", flexible="3+", fields=[
    F("transactional_id", "string", "0+"),
    F("producer_id", "int64", "0+"),
    F("producer_epoch", "int16", "0+"),
    F("group_id", "string", "0+"),
])

RESPONSE = Message("AddOffsetsToTxnResponse", api_key=25, kind="response", valid="0-4", flexible="3+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
])
