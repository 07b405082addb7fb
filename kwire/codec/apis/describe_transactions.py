"""DescribeTransactions (key 65), version 0: the coordinator's state of transactional ids."""
from kwire.codec.schema import F, Message

REQUEST = Message("DescribeTransactionsRequest", api_key=65, kind="request", valid="0", flexible="0+", fields=[
    F("transactional_ids", "[]string", "0+"),
])

RESPONSE = Message("DescribeTransactionsResponse", api_key=65, kind="response", valid="0", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("transaction_states", "[]TransactionState", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("transactional_id", "string", "0+"),
        F("transaction_state", "string", "0+"),
        F("transaction_timeout_ms", "int32", "0+"),
        F("transaction_start_time_ms", "int64", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("topics", "[]TopicData", "0+", fields=[
            F("topic", "string", "0+", map_key=True),
            F("partitions", "[]int32", "0+"),
        ]),
    ]),
])
