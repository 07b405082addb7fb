"""DeleteTopics (key 20), versions 1-6."""
from kwire.codec.schema import F, Message

REQUEST = Message("DeleteTopicsRequest", api_key=20, kind="request", valid="1-6", flexible="4+", fields=[
    F("topics", "[]DeleteTopicState", "6+", fields=[
        F("name", "string", "6+", nullable="6+", default=None),
        F("topic_id", "uuid", "6+"),
    ]),
    F("topic_names", "[]string", "0-5", ignorable=True),
    F("timeout_ms", "int32", "0+"),
])

RESPONSE = Message("DeleteTopicsResponse", api_key=20, kind="response", valid="1-6", flexible="4+", fields=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("responses", "[]DeletableTopicResult", "0+", fields=[
        F("name", "string", "0+", nullable="6+", map_key=True),
        F("topic_id", "uuid", "6+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])
