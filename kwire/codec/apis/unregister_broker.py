"""UnregisterBroker (key 64), version 0."""
from kwire.codec.schema import F, Message

REQUEST = Message("UnregisterBrokerRequest", api_key=64, kind="request", valid="0", flexible="0+", fields=[
    F("broker_id", "int32", "0+"),
])

RESPONSE = Message("UnregisterBrokerResponse", api_key=64, kind="response", valid="0", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+"),
])
