"""DescribeGroups (key 15), versions 0-6."""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeGroupsRequest", api_key=15, kind="request", valid="0-6", flexible="5+", fields=[
    F("groups", "[]string", "0+"),
    F("include_authorized_operations", "bool", "3+"),
])

RESPONSE = Message("DescribeGroupsResponse", api_key=15, kind="response", valid="0-6", flexible="5+", fields=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("groups", "[]DescribedGroup", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "6+", nullable="6+", default=None),
        F("group_id", "string", "0+"),
        F("group_state", "string", "0+"),
        F("protocol_type", "string", "0+"),
        F("protocol_data", "string", "0+"),
        F("members", "[]DescribedGroupMember", "0+", fields=[
            F("member_id", "string", "0+"),
            F("group_instance_id", "string", "4+", nullable="4+", default=None, ignorable=True),
            F("client_id", "string", "0+"),
            F("client_host", "string", "0+"),
            F("member_metadata", "bytes", "0+"),
            F("member_assignment", "bytes", "0+"),
        ]),
        F("authorized_operations", "int32", "3+", default=-2147483648),
    ]),
])
