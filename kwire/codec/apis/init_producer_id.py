"""InitProducerId (key 22), versions 0-5."""
from kwire.codec.schema import F, Message

REQUEST = Message("InitProducerIdRequest", api_key=22, kind="request", valid="0-5", flexible="2+", fields=[
    F("transactional_id", "string", "0+", nullable="0+"),
    F("transaction_timeout_ms", "int32", "0+"),
    F("producer_id", "int64", "3+", default=-1),
    F("producer_epoch", "int16", "3+", default=-1),
])

RESPONSE = Message("InitProducerIdResponse", api_key=22, kind="response", valid="0-5", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("producer_id", "int64", "0+", default=-1),
    F("producer_epoch", "int16", "0+"),
])
