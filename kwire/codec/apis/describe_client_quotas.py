"""DescribeClientQuotas (key 48), versions 0-1 (flexible from 1)."""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeClientQuotasRequest", api_key=48, kind="request", valid="0-1", flexible="1+", fields=[
    F("components", "[]ComponentData", "0+", fields=[
        F("entity_type", "string", "0+"),
        F("match_type", "int8", "0+"),   # 0 exact name, 1 default, 2 any specified name
        F("match", "string", "0+", nullable="0+"),
    ]),
    F("strict", "bool", "0+"),
])

RESPONSE = Message("DescribeClientQuotasResponse", api_key=48, kind="response", valid="0-1", flexible="1+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+"),
    F("entries", "[]EntryData", "0+", nullable="0+", fields=[
        F("entity", "[]EntityData", "0+", fields=[
            F("entity_type", "string", "0+"),
            F("entity_name", "string", "0+", nullable="0+"),
        ]),
        F("values", "[]ValueData", "0+", fields=[
            F("key", "string", "0+"),
            F("value", "float64", "0+"),
        ]),
    ]),
])
