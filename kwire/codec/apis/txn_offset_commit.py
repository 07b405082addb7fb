"""TxnOffsetCommit (key 28), versions 0-5.

v2 adds ``committed_leader_epoch``; v3 (flexible) adds ``generation_id``, ``member_id`` and
``group_instance_id`` (the group's fencing, KIP-447); v4 only allows TRANSACTION_ABORTABLE in
answers (KIP-890). v5 is v4's shape for transaction version 2 (KIP-890 part 2: the commit adds the
offsets partition to the transaction itself).
"""
from kwire.codec.schema import F, Message

REQUEST = Message("TxnOffsetCommitRequest", api_key=28, kind="request", valid="0-5", flexible="3+", fields=[
    F("transactional_id", "string", "0+"),
    F("group_id", "string", "0+"),
    F("producer_id", "int64", "0+"),
    F("producer_epoch", "int16", "0+"),
    F("generation_id", "int32", "3+", default=-1),
    F("member_id", "string", "3+", default=""),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("topics", "[]TxnOffsetCommitRequestTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]TxnOffsetCommitRequestPartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("committed_offset", "int64", "0+"),
            F("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            F("committed_metadata", "string", "0+", nullable="0+"),
        ]),
    ]),
])

RESPONSE = Message("TxnOffsetCommitResponse", api_key=28, kind="response", valid="0-5", flexible="3+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("topics", "[]TxnOffsetCommitResponseTopic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]TxnOffsetCommitResponsePartition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])
