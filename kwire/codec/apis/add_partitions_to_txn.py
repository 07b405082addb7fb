"""AddPartitionsToTxn (key 24), versions 0-5.

v0-3 carry one transaction (the ``v3_and_below_*`` fields), as a producer sends it; v4+ batch
several transactions (``transactions``) and are sent by brokers only: a partition leader asks
the coordinator, with ``verify_only``, whether a partition is already in a producer's
transaction (KIP-890 part 1). v5 lets the answer carry TRANSACTION_ABORTABLE.
"""
from kwire.codec.schema import F, Message


def _topic(v: str) -> F:
    return F("topics" if v == "4+" else "v3_and_below_topics", "[]AddPartitionsToTxnTopic", v, fields=[
        F("name", "string", "0+", map_key=True),
        F("partitions", "[]int32", "0+"),
    ])


REQUEST = Message("AddPartitionsToTxnRequest", api_key=24, kind="request", valid="0-5", flexible="3+", fields=[
    F("transactions", "[]AddPartitionsToTxnTransaction", "4+", fields=[
        F("transactional_id", "string", "4+", map_key=True),
        F("producer_id", "int64", "4+"),
        F("producer_epoch", "int16", "4+"),
        F("verify_only", "bool", "4+", default=False),
        _topic("4+"),
    ]),
    F("v3_and_below_transactional_id", "string", "0-3"),
    F("v3_and_below_producer_id", "int64", "0-3"),
    F("v3_and_below_producer_epoch", "int16", "0-3"),
    _topic("0-3"),
])


def _topic_results(name: str, v: str) -> F:
    return F(name, "[]AddPartitionsToTxnTopicResult", v, fields=[
        F("name", "string", "0+", map_key=True),
        F("results_by_partition", "[]AddPartitionsToTxnPartitionResult", "0+", fields=[
            F("partition_index", "int32", "0+", map_key=True),
            F("partition_error_code", "int16", "0+"),
        ]),
    ])


RESPONSE = Message("AddPartitionsToTxnResponse", api_key=24, kind="response", valid="0-5", flexible="3+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "4+", ignorable=True),
    F("results_by_transaction", "[]AddPartitionsToTxnResult", "4+", fields=[
        F("transactional_id", "string", "4+", map_key=True),
        _topic_results("topic_results", "4+"),
    ]),
    _topic_results("results_by_topic_v3_and_below", "0-3"),
])
