"""Record helpers shared by the coordinator topics (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``): the partition a coordinator key lives on.

Kafka places a key with ``Utils.abs(key.hashCode()) % partitions`` (GroupCoordinatorShard's
partitionFor, TransactionStateManager.partitionFor, SharePartitionKey.asCoordinatorKey), where
hashCode is Java's String.hashCode; the three coordinators here share this one copy."""
from __future__ import annotations


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units, int32 overflow)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: str, num_partitions: int) -> int:
    """The coordinator partition of ``key``: Kafka's ``Utils.abs(key.hashCode()) % n``
    (Utils.abs maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(key)
    h = 0 if h == -(1 << 31) else abs(h)
    return h % num_partitions
