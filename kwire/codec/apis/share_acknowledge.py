"""ShareAcknowledge (key 79), versions 1-2 (KIP-932). v2 adds renew acknowledgements and the
acquisition lock timeout in the response (KIP-1222)."""
from kwire.codec.apis.share_fetch import leader_and_endpoints
from kwire.codec.schema import F, Message

REQUEST = Message("ShareAcknowledgeRequest", api_key=79, kind="request", valid="1-2", flexible="0+", fields=[
    F("group_id", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+", nullable="0+"),
    F("share_session_epoch", "int32", "0+"),
    F("is_renew_ack", "bool", "2+", default=False),
    F("topics", "[]AcknowledgeTopic", "0+", fields=[
        F("topic_id", "uuid", "0+", map_key=True),
        F("partitions", "[]AcknowledgePartition", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("acknowledgement_batches", "[]AcknowledgementBatch", "0+", fields=[
                F("first_offset", "int64", "0+"),
                F("last_offset", "int64", "0+"),
                F("acknowledge_types", "[]int8", "0+"),
            ]),
        ]),
    ]),
])

_LEADER, _ENDPOINTS = leader_and_endpoints()

RESPONSE = Message("ShareAcknowledgeResponse", api_key=79, kind="response", valid="1-2", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("acquisition_lock_timeout_ms", "int32", "2+", ignorable=True),
    F("responses", "[]ShareAcknowledgeTopicResponse", "0+", fields=[
        F("topic_id", "uuid", "0+", map_key=True),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            _LEADER,
        ]),
    ]),
    _ENDPOINTS,
])
