"""EndTxn (key 26), versions 0-5: commit or abort a producer's transaction.

v5 (transactions version 2, KIP-890 part 2) answers the producer's new id and epoch: the
coordinator bumps the epoch at every transaction's end.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("EndTxnRequest", api_key=26, kind="request", valid="0-5", flexible="3+", fields=[
    F("transactional_id", "string", "0+"),
    F("producer_id", "int64", "0+"),
    F("producer_epoch", "int16", "0+"),
    F("committed", "bool", "0+"),
])

RESPONSE = Message("EndTxnResponse", api_key=26, kind="response", valid="0-5", flexible="3+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("producer_id", "int64", "5+", default=-1, ignorable=True),
    F("producer_epoch", "int16", "5+", default=-1, ignorable=True),
])
