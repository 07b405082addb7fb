"""LeaveGroup (key 13), versions 0-5.

v0-2 name one ``member_id``; v3+ a batch of ``members`` (static members by instance id),
answered per member.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("LeaveGroupRequest", api_key=13, kind="request", valid="0-5", flexible="4+", fields=[
    F("group_id", "string", "0+"),
    F("member_id", "string", "0-2"),
    F("members", "[]MemberIdentity", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])

RESPONSE = Message("LeaveGroupResponse", api_key=13, kind="response", valid="0-5", flexible="4+", fields=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0+"),
    F("members", "[]MemberResponse", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+"),
        F("error_code", "int16", "3+"),
    ]),
])
