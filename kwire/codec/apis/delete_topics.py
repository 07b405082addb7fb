"""DeleteTopics (key 20), versions 0-6 (v0: Kafka 3.x and older, no throttle time)."""
from kwire.codec.schema import F, Message

REQUEST = Message("DeleteTopicsRequest", api_key=20, kind="request", valid="0-6", flexible="4+", fields=[
    F("topics", "[]DeleteTopicState", "6+", fields=[
        F("name", "string", "6+", nullable="6+", default=None),
        F("topic_id", "uuid", "6+"),
    ]),
    F("topic_names", "[]string", "0-5", ignorable=True),
    F("timeout_ms", "int32", "0+"),
])

RESPONSE = Message("DeleteTopicsResponse", api_key=20, kind="response", valid="0-6", flexible="4+", fields=[
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("responses", "[]DeletableTopicResult", "0+", fields=[
        F("name", "string", "0+", nullable="6+", map_key=True),
        F("topic_id", "uuid", "6+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])
