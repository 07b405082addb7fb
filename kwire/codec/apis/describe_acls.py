"""DescribeAcls (key 29), versions 0-3 (Kafka 4 dropped v0, which lacks the pattern type:
LITERAL)."""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeAclsRequest", api_key=29, kind="request", valid="0-3", flexible="2+", fields=[
    F("resource_type_filter", "int8", "0+"),
    F("resource_name_filter", "string", "0+", nullable="0+"),
    F("pattern_type_filter", "int8", "1+", default=3),
    F("principal_filter", "string", "0+", nullable="0+"),
    F("host_filter", "string", "0+", nullable="0+"),
    F("operation", "int8", "0+"),
    F("permission_type", "int8", "0+"),
])

RESPONSE = Message("DescribeAclsResponse", api_key=29, kind="response", valid="0-3", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+"),
    F("resources", "[]DescribeAclsResource", "0+", fields=[
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("pattern_type", "int8", "1+", default=3),
        F("acls", "[]AclDescription", "0+", fields=[
            F("principal", "string", "0+"),
            F("host", "string", "0+"),
            F("operation", "int8", "0+"),
            F("permission_type", "int8", "0+"),
        ]),
    ]),
])
