"""JoinGroup (key 11), versions 0-9.

v4+: a member without an id gets MEMBER_ID_REQUIRED and must rejoin with the id it was given.
v5+ static membership (``group_instance_id``); v8+ ``reason``; v9 ``skip_assignment``.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("JoinGroupRequest", api_key=11, kind="request", valid="0-9", flexible="6+", fields=[
    F("group_id", "string", "0+"),
    F("session_timeout_ms", "int32", "0+"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "5+", nullable="5+", default=None),
    F("protocol_type", "string", "0+"),
    F("protocols", "[]JoinGroupRequestProtocol", "0+", fields=[
        F("name", "string", "0+", map_key=True),
        F("metadata", "bytes", "0+"),
    ]),
    F("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
])

RESPONSE = Message("JoinGroupResponse", api_key=11, kind="response", valid="0-9", flexible="6+", fields=[
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("generation_id", "int32", "0+", default=-1),
    F("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
    F("protocol_name", "string", "0+", nullable="7+"),
    F("leader", "string", "0+"),
    F("skip_assignment", "bool", "9+", default=False),
    F("member_id", "string", "0+"),
    F("members", "[]JoinGroupResponseMember", "0+", fields=[
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("metadata", "bytes", "0+"),
    ]),
])
