"""ListGroups (key 16), versions 0-5.

v4 adds ``states_filter`` / ``group_state``; v5 ``types_filter`` / ``group_type``.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("ListGroupsRequest", api_key=16, kind="request", valid="0-5", flexible="3+", fields=[
    F("states_filter", "[]string", "4+"),
    F("types_filter", "[]string", "5+"),
])

RESPONSE = Message("ListGroupsResponse", api_key=16, kind="response", valid="0-5", flexible="3+", fields=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("groups", "[]ListedGroup", "0+", fields=[
        F("group_id", "string", "0+"),
        F("protocol_type", "string", "0+"),
        F("group_state", "string", "4+", ignorable=True),
        F("group_type", "string", "5+", ignorable=True),
    ]),
])
