"""ShareFetch (key 78), versions 1-2 (KIP-932). v2 adds the acquire mode and renew
acknowledgements (KIP-1222)."""
from kwire.codec.schema import F, Message


def _ack_batches() -> F:
    return F("acknowledgement_batches", "[]AcknowledgementBatch", "0+", fields=[
        F("first_offset", "int64", "0+"),
        F("last_offset", "int64", "0+"),
        F("acknowledge_types", "[]int8", "0+"),
    ])


REQUEST = Message("ShareFetchRequest", api_key=78, kind="request", valid="1-2", flexible="0+", fields=[
    F("group_id", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+", nullable="0+"),
    F("share_session_epoch", "int32", "0+"),
    F("max_wait_ms", "int32", "0+"),
    F("min_bytes", "int32", "0+"),
    F("max_bytes", "int32", "0+", default=0x7FFFFFFF),
    F("max_records", "int32", "1+"),
    F("batch_size", "int32", "1+"),
    F("share_acquire_mode", "int8", "2+", default=0, ignorable=True),
    F("is_renew_ack", "bool", "2+", default=False),
    F("topics", "[]FetchTopic", "0+", fields=[
        F("topic_id", "uuid", "0+", map_key=True),
        F("partitions", "[]FetchPartition", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            _ack_batches(),
        ]),
    ]),
    F("forgotten_topics_data", "[]ForgottenTopic", "0+", fields=[
        F("topic_id", "uuid", "0+"),
        F("partitions", "[]int32", "0+"),
    ]),
])


def leader_and_endpoints():
    return (F("current_leader", "LeaderIdAndEpoch", "0+", fields=[
        F("leader_id", "int32", "0+"),
        F("leader_epoch", "int32", "0+"),
    ]), F("node_endpoints", "[]NodeEndpoint", "0+", fields=[
        F("node_id", "int32", "0+", map_key=True),
        F("host", "string", "0+"),
        F("port", "int32", "0+"),
        F("rack", "string", "0+", nullable="0+", default=None),
    ]))


_LEADER, _ENDPOINTS = leader_and_endpoints()

RESPONSE = Message("ShareFetchResponse", api_key=78, kind="response", valid="1-2", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("acquisition_lock_timeout_ms", "int32", "1+"),
    F("responses", "[]ShareFetchableTopicResponse", "0+", fields=[
        F("topic_id", "uuid", "0+", map_key=True),
        F("partitions", "[]PartitionData", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+", default=None),
            F("acknowledge_error_code", "int16", "0+"),
            F("acknowledge_error_message", "string", "0+", nullable="0+", default=None),
            _LEADER,
            F("records", "records", "0+", nullable="0"),
            F("acquired_records", "[]AcquiredRecords", "0+", fields=[
                F("first_offset", "int64", "0+"),
                F("last_offset", "int64", "0+"),
                F("delivery_count", "int16", "0+"),
            ]),
        ]),
    ]),
    _ENDPOINTS,
])
