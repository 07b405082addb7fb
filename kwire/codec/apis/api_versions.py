"""ApiVersions (key 18), versions 0-4."""
from kwire.codec.schema import F, Message

REQUEST = Message("ApiVersionsRequest", api_key=18, kind="request", valid="0-4", flexible="3+", fields=[
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
])

RESPONSE = Message("ApiVersionsResponse", api_key=18, kind="response", valid="0-4", flexible="3+", fields=[
    F("error_code", "int16", "0+"),
    F("api_keys", "[]ApiVersion", "0+", fields=[
        F("api_key", "int16", "0+", map_key=True),
        F("min_version", "int16", "0+"),
        F("max_version", "int16", "0+"),
    ]),
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("supported_features", "[]SupportedFeatureKey", "3+", tag=0, tagged="3+", ignorable=True, fields=[
        F("name", "string", "3+", map_key=True),
        F("min_version", "int16", "3+"),
        F("max_version", "int16", "3+"),
    ]),
    F("finalized_features_epoch", "int64", "3+", tag=1, tagged="3+", default=-1, ignorable=True),
    F("finalized_features", "[]FinalizedFeatureKey", "3+", tag=2, tagged="3+", ignorable=True, fields=[
        F("name", "string", "3+", map_key=True),
        F("max_version_level", "int16", "3+"),
        F("min_version_level", "int16", "3+"),
    ]),
    F("zk_migration_ready", "bool", "3+", tag=3, tagged="3+", default=False, ignorable=True),
])
