"""AlterConfigs (key 33), versions 0-2."""
from kwire.codec.schema import F, Message

REQUEST = Message("AlterConfigsRequest", api_key=33, kind="request", valid="0-2", flexible="2+", fields=[
    F("resources", "[]AlterConfigsResource", "0+", fields=[
        F("resource_type", "int8", "0+", map_key=True),
        F("resource_name", "string", "0+", map_key=True),
        F("configs", "[]AlterableConfig", "0+", fields=[
            F("name", "string", "0+", map_key=True),
            F("value", "string", "0+", nullable="0+"),
        ]),
    ]),
    F("validate_only", "bool", "0+"),
])

RESPONSE = Message("AlterConfigsResponse", api_key=33, kind="response", valid="0-2", flexible="2+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("responses", "[]AlterConfigsResourceResponse", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
    ]),
])
