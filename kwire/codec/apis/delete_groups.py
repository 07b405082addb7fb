"""DeleteGroups (key 42), versions 0-2."""
from kwire.codec.schema import F, Message

REQUEST = Message("DeleteGroupsRequest", api_key=42, kind="request", valid="0-2", flexible="2+", fields=[
    F("groups_names", "[]string", "0+"),
])

RESPONSE = Message("DeleteGroupsResponse", api_key=42, kind="response", valid="0-2", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]DeletableGroupResult", "0+", fields=[
        F("group_id", "string", "0+", map_key=True),
        F("error_code", "int16", "0+"),
    ]),
])
