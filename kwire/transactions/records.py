"""The durable form of transaction state: Kafka's ``__transaction_state`` record formats.

Key: int16 version 0 + TransactionLogKey (transactional id). Value: int16 version + the
TransactionLogValue struct of that version; version 0 is what Kafka writes for transactions
version 0/1, version 1 (flexible, with the previous/next producer ids and the client's
transaction version as tagged fields) what it writes for version 2; both are read and written. A transactional id that expired is a
tombstone (value ``None``), so the compacted topic forgets it. Partitions are written null in
state Empty, as Kafka does.
"""
from __future__ import annotations

import functools
import struct
from collections import defaultdict

from kwire.codec.schema import F, Message
from kwire.coordinator.records import partition_for_key
from kwire.errors import CodecError
from kwire.transactions.metadata import TransactionState, TxnTransit

from kwire.internal_topics import TRANSACTION_STATE_TOPIC  # noqa: E402,F401 - named here too

TRANSACTION_LOG_KEY = Message("TransactionLogKey", valid="0", fields=[
    F("transactional_id", "string", "0"),
])

TRANSACTION_LOG_VALUE = Message("TransactionLogValue", valid="0-1", flexible="1+", fields=[
    F("producer_id", "int64", "0+"),
    F("previous_producer_id", "int64", "1+", tag=0, tagged="1+", default=-1),
    F("next_producer_id", "int64", "1+", tag=1, tagged="1+", default=-1),
    F("producer_epoch", "int16", "0+"),
    F("transaction_timeout_ms", "int32", "0+"),
    F("transaction_status", "int8", "0+"),
    F("transaction_partitions", "[]PartitionsSchema", "0+", nullable="0+", fields=[
        F("topic", "string", "0+"),
        F("partition_ids", "[]int32", "0+"),
    ]),
    F("transaction_last_update_timestamp_ms", "int64", "0+"),
    F("transaction_start_timestamp_ms", "int64", "0+"),
    F("client_transaction_version", "int16", "1+", tag=2, tagged="1+", default=0),
])
PartitionsSchema = TRANSACTION_LOG_VALUE.struct("PartitionsSchema")

KEY_VERSION = 0
VALUE_VERSION = 0

_I16 = struct.Struct(">h")


@functools.lru_cache(maxsize=16384)
def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of a transactional id: Kafka's
    ``Utils.abs(transactionalId.hashCode) % n``. Cached: the coordinator asks it on every
    request of the id (the hash walks the id's characters in Python)."""
    return partition_for_key(transactional_id, num_partitions)


# --- encoding ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)   # an id is written three times per transaction
def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + TRANSACTION_LOG_KEY.encode(
        TRANSACTION_LOG_KEY(transactional_id=transactional_id), KEY_VERSION)


def value_bytes(t: TxnTransit, version: int | None = None) -> bytes:
    """Version 0, or 1 for a transaction of version 2 (Kafka's TransactionLog.valueToBytes:
    the previous/next producer ids and the client's transaction version travel with it)."""
    if version is None:
        version = 1 if t.client_transaction_version >= 2 else VALUE_VERSION
    if t.state == TransactionState.EMPTY and t.topic_partitions:
        raise ValueError(f"a transaction in state Empty has no partitions: {t}")
    parts = None
    if t.state != TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, p in sorted(t.topic_partitions):
            by_topic[topic].append(p)
        parts = [PartitionsSchema(topic=topic, partition_ids=ps) for topic, ps in by_topic.items()]
    obj = TRANSACTION_LOG_VALUE(
        producer_id=t.producer_id, previous_producer_id=t.prev_producer_id,
        next_producer_id=t.next_producer_id, producer_epoch=t.producer_epoch,
        transaction_timeout_ms=t.txn_timeout_ms, transaction_status=t.state.id,
        transaction_partitions=parts, transaction_last_update_timestamp_ms=t.txn_last_update_timestamp,
        transaction_start_timestamp_ms=t.txn_start_timestamp,
        client_transaction_version=t.client_transaction_version if version >= 1 else 0)
    return _I16.pack(version) + TRANSACTION_LOG_VALUE.encode(obj, version)


# --- decoding ----------------------------------------------------------------------------
def _version(buf: bytes, what: str) -> int:
    if len(buf) < 2:
        raise CodecError(f"{TRANSACTION_STATE_TOPIC} {what} shorter than its version")
    return _I16.unpack_from(buf, 0)[0]


def decode_key(buf: bytes) -> str:
    version = _version(buf, "key")
    if version != KEY_VERSION:
        raise CodecError(f"unknown {TRANSACTION_STATE_TOPIC} key version {version}")
    return TRANSACTION_LOG_KEY.decode(buf, version, 2).transactional_id


def decode_value(buf: bytes) -> TxnTransit:
    """The state a record holds (CodecError for an unknown version or state, or bad bytes)."""
    version = _version(buf, "value")
    if not 0 <= version <= 1:
        raise CodecError(f"unknown TransactionLogValue version {version}")
    v = TRANSACTION_LOG_VALUE.decode(buf, version, 2, exact=False)
    try:
        state = TransactionState.from_id(v.transaction_status)
    except ValueError as exc:
        raise CodecError(str(exc)) from None
    tps: frozenset = frozenset()
    if state != TransactionState.EMPTY and v.transaction_partitions:
        tps = frozenset((ps.topic, p) for ps in v.transaction_partitions for p in ps.partition_ids)
    return TxnTransit(v.producer_id, v.previous_producer_id, v.next_producer_id, v.producer_epoch, -1,
                      v.transaction_timeout_ms, state, tps, v.transaction_start_timestamp_ms,
                      v.transaction_last_update_timestamp_ms,
                      getattr(v, "client_transaction_version", 0) or 0)
