"""Heartbeat (key 12), versions 0-4."""
from kwire.codec.schema import F, Message

REQUEST = Message("HeartbeatRequest", api_key=12, kind="request", valid="0-4", flexible="4+", fields=[
    F("group_id", "string", "0+"),
    F("generation_id", "int32", "0+"),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
])

RESPONSE = Message("HeartbeatResponse", api_key=12, kind="response", valid="0-4", flexible="4+", fields=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0+"),
])
