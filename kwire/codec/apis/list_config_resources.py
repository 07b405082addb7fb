"""ListConfigResources (key 74), versions 0-1 (Kafka 4.1, KIP-1142).

v0 was ListClientMetricsResources (client metrics resources only); v1 adds the resource type
filter and each resource's type.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("ListConfigResourcesRequest", api_key=74, kind="request", valid="0-1", flexible="0+", fields=[
    F("resource_types", "[]int8", "1+"),
])

RESPONSE = Message("ListConfigResourcesResponse", api_key=74, kind="response", valid="0-1", flexible="0+",
                   fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("config_resources", "[]ConfigResource", "0+", fields=[
        F("resource_name", "string", "0+"),
        F("resource_type", "int8", "1+", default=16, ignorable=True),
    ]),
])
