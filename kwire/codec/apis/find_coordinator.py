"""FindCoordinator (key 10), versions 0-6 (v6: share group coordinators, KIP-932, answered INVALID_REQUEST: kwire has no
share groups).

v4+ batches several coordinator keys in one request (``coordinator_keys``) and answers with a
``coordinators`` array; v0-3 carry one ``key`` and a flat answer. ``key_type`` is 0 for a
consumer group, 1 for a transactional id (v1+).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("FindCoordinatorRequest", api_key=10, kind="request", valid="0-6", flexible="3+", fields=[
    F("key", "string", "0-3"),
    F("key_type", "int8", "1+", default=0),
    F("coordinator_keys", "[]string", "4+"),
])

RESPONSE = Message("FindCoordinatorResponse", api_key=10, kind="response", valid="0-6", flexible="3+", fields=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "1-3", nullable="1-3", ignorable=True),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", "[]Coordinator", "4+", fields=[
        F("key", "string", "4+"),
        F("node_id", "int32", "4+"),
        F("host", "string", "4+"),
        F("port", "int32", "4+"),
        F("error_code", "int16", "4+"),
        F("error_message", "string", "4+", nullable="4+", ignorable=True),
    ]),
])
