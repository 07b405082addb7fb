"""CreateAcls (key 30), versions 1-3 (Kafka 4 dropped v0, which lacked the pattern type)."""
from kwire.codec.schema import F, Message

REQUEST = Message("CreateAclsRequest", api_key=30, kind="request", valid="0-3", flexible="2+", fields=[
    F("creations", "[]AclCreation", "0+", fields=[
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("resource_pattern_type", "int8", "1+", default=3),
        F("principal", "string", "0+"),
        F("host", "string", "0+"),
        F("operation", "int8", "0+"),
        F("permission_type", "int8", "0+"),
    ]),
])

RESPONSE = Message("CreateAclsResponse", api_key=30, kind="response", valid="0-3", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]AclCreationResult", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
    ]),
])
