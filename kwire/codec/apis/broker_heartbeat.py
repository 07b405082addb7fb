"""BrokerHeartbeat (key 63), versions 0-1: a broker's heartbeat to the active controller, on
the controller listener. kwire sends it for controlled shutdown (``want_shut_down``); liveness
itself rides on the metadata log fetches.

Kafka's BrokerHeartbeat JSON is not shipped in kafka-python's resources; this schema is
transcribed from Kafka's definition (v1 adds the offline log dirs tagged field; v2's cordoned
log dirs are left out with that version).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("BrokerHeartbeatRequest", api_key=63, kind="request", valid="0-1", flexible="0+", fields=[
    F("broker_id", "int32", "0+"),
    F("broker_epoch", "int64", "0+", default=-1),
    F("current_metadata_offset", "int64", "0+"),
    F("want_fence", "bool", "0+"),
    F("want_shut_down", "bool", "0+"),
    F("offline_log_dirs", "[]uuid", "1+", tag=0, tagged="1+"),
])

RESPONSE = Message("BrokerHeartbeatResponse", api_key=63, kind="response", valid="0-1", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("is_caught_up", "bool", "0+", default=False),
    F("is_fenced", "bool", "0+", default=True),
    F("should_shut_down", "bool", "0+"),
])
