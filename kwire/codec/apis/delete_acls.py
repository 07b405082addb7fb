"""DeleteAcls (key 31), versions 1-3 (Kafka 4 dropped v0, which lacked the pattern type)."""
from kwire.codec.schema import F, Message

REQUEST = Message("DeleteAclsRequest", api_key=31, kind="request", valid="0-3", flexible="2+", fields=[
    F("filters", "[]DeleteAclsFilter", "0+", fields=[
        F("resource_type_filter", "int8", "0+"),
        F("resource_name_filter", "string", "0+", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", "0+", nullable="0+"),
        F("host_filter", "string", "0+", nullable="0+"),
        F("operation", "int8", "0+"),
        F("permission_type", "int8", "0+"),
    ]),
])

RESPONSE = Message("DeleteAclsResponse", api_key=31, kind="response", valid="0-3", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("filter_results", "[]DeleteAclsFilterResult", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("matching_acls", "[]DeleteAclsMatchingAcl", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("pattern_type", "int8", "1+", default=3),
            F("principal", "string", "0+"),
            F("host", "string", "0+"),
            F("operation", "int8", "0+"),
            F("permission_type", "int8", "0+"),
        ]),
    ]),
])
