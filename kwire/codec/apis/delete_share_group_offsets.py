"""DeleteShareGroupOffsets (key 92), version 0 (KIP-932)."""
from kwire.codec.schema import F, Message

REQUEST = Message("DeleteShareGroupOffsetsRequest", api_key=92, kind="request", valid="0", flexible="0+", fields=[
    F("group_id", "string", "0+"),
    F("topics", "[]DeleteShareGroupOffsetsRequestTopic", "0+", fields=[
        F("topic_name", "string", "0+"),
    ]),
])

RESPONSE = Message("DeleteShareGroupOffsetsResponse", api_key=92, kind="response", valid="0", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("responses", "[]DeleteShareGroupOffsetsResponseTopic", "0+", fields=[
        F("topic_name", "string", "0+"),
        F("topic_id", "uuid", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])
