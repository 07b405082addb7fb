"""ListTransactions (key 66), versions 0-2: the transactional ids a coordinator holds, filtered
by state, producer id, duration (v1+) and a transactional id pattern (v2+)."""
from kwire.codec.schema import F, Message

REQUEST = Message("ListTransactionsRequest", api_key=66, kind="request", valid="0-2", flexible="0+", fields=[
    F("state_filters", "[]string", "0+"),
    F("producer_id_filters", "[]int64", "0+"),
    F("duration_filter", "int64", "1+", default=-1),
    F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
])

RESPONSE = Message("ListTransactionsResponse", api_key=66, kind="response", valid="0-2", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("unknown_state_filters", "[]string", "0+"),
    F("transaction_states", "[]TransactionState", "0+", fields=[
        F("transactional_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("transaction_state", "string", "0+"),
    ]),
])
