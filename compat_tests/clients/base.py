"""The client adapter contract: what every scenario asks of a Kafka client, in Kafka's own terms.

Each adapter (confluent-kafka, kafka-python, aiokafka, kcat) implements what its client can do and
raises ``Unsupported(reason)`` for the rest; the suite turns that into a skipped row with the reason.
Errors coming back from the broker are raised as ``KafkaOpError(name)`` with Kafka's error-code name
(``MESSAGE_TOO_LARGE``, ``UNKNOWN_TOPIC_OR_PARTITION``, ``TOPIC_ALREADY_EXISTS`` ...), so scenarios
compare one vocabulary across clients.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence, Union


class Unsupported(Exception):
    """The client cannot perform this operation (a skip, not a failure)."""


class KafkaOpError(Exception):
    """An operation failed with a Kafka error; ``name`` is Kafka's error-code name."""

    def __init__(self, name: str, detail: str = ""):
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name
        self.detail = detail


@dataclass
class Rec:
    """A record to produce. ``timestamp`` (ms) is the CreateTime the producer sets; ``partition``
    None lets the client's partitioner choose."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes]] = ()
    timestamp: int | None = None
    partition: int | None = None


@dataclass
class Acked:
    partition: int
    offset: int | None  # None when the client reports no offset for the delivery (kcat)


@dataclass
class Got:
    """A consumed record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    timestamp: int = -1
    timestamp_type: str = "CreateTime"  # or "LogAppendTime"


# where a consumer starts: "beginning", "end", an offset, or ("timestamp", ms)
Start = Union[str, int, tuple]


class GroupMember:
    """One consumer-group member subscribed to topics. ``poll`` drives the client (joins, rebalances,
    heartbeats) and returns what it fetched; ``assignment`` is the member's current partitions."""

    def poll(self, timeout: float = 0.2) -> list[Got]:
        raise NotImplementedError

    def assignment(self) -> set[tuple[str, int]]:
        raise NotImplementedError

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        """Synchronously commit the given next-offsets to the group coordinator."""
        raise NotImplementedError

    def committed(self, tp: tuple[str, int]) -> int | None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Client:
    """Base adapter. ``bootstrap`` is HOST:PORT."""

    name = "?"
    can_set_timestamp = True  # can the client set a record's CreateTime
    # what the client can drive; a scenario needing a missing one is skipped before it touches the broker
    lacks: dict[str, str] = {}

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def close(self) -> None:
        pass

    # ---------------------------------------------------------------- producing
    def produce(self, topic: str, records: Iterable[Rec], codec: str = "none", *,
                max_request_size: int | None = None, timeout: float = 20.0) -> list[Acked]:
        """Produce with acks=all, in order; return one Acked per record, in order. Raises KafkaOpError."""
        raise Unsupported(f"{self.name} cannot produce")

    def produce_idempotent(self, topic: str, records: Iterable[Rec], timeout: float = 20.0) -> list[Acked]:
        raise Unsupported(f"{self.name} has no idempotent producer")

    def produce_transactional(self, topic: str, txn_id: str, committed: list[Rec], aborted: list[Rec],
                              timeout: float = 20.0) -> None:
        """In one producer with transactional.id ``txn_id``: a transaction of ``aborted`` that is aborted,
        then a transaction of ``committed`` that is committed."""
        raise Unsupported(f"{self.name} has no transactional producer")

    # ---------------------------------------------------------------- consuming (no group)
    def consume(self, topic: str, partitions: Sequence[int] = (0,), start: Start = "beginning", *,
                count: int, timeout: float = 15.0, on_positioned: Callable[[], None] | None = None,
                read_committed: bool = False, max_fetch_bytes: int | None = None) -> list[Got]:
        """Assign ``partitions`` (no group), position every one at ``start`` and read until ``count``
        records arrived or ``timeout`` passed. ``on_positioned`` is called once the consumer's start
        position is resolved, before records are read (used to produce after a seek to the end)."""
        raise Unsupported(f"{self.name} cannot consume")

    def offset_for_time(self, topic: str, partition: int, ts: int) -> int | None:
        """ListOffsets by timestamp: earliest offset whose timestamp >= ts, None when there is none."""
        raise Unsupported(f"{self.name} cannot look up offsets by time")

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start offset, high watermark)."""
        raise Unsupported(f"{self.name} cannot list offsets")

    # ---------------------------------------------------------------- groups
    def group_member(self, group: str, topics: Sequence[str], **kw) -> GroupMember:
        raise Unsupported(f"{self.name} has no group consumer")

    # ---------------------------------------------------------------- admin
    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        raise Unsupported(f"{self.name} has no admin API (CreateTopics)")

    def delete_topic(self, topic: str) -> None:
        raise Unsupported(f"{self.name} has no admin API (DeleteTopics)")

    def list_topics(self) -> set[str]:
        raise Unsupported(f"{self.name} cannot list topics")

    def partition_count(self, topic: str) -> int:
        """Partitions of ``topic`` from Metadata; raises KafkaOpError(UNKNOWN_TOPIC_OR_PARTITION)."""
        raise Unsupported(f"{self.name} cannot describe topics")

    def create_partitions(self, topic: str, total: int) -> None:
        raise Unsupported(f"{self.name} has no admin API (CreatePartitions)")

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        raise Unsupported(f"{self.name} has no admin API (DescribeConfigs)")

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        """Set the given topic configs (incrementally where the client can)."""
        raise Unsupported(f"{self.name} has no admin API (AlterConfigs)")

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        """DeleteRecords up to ``before``; return the new low watermark."""
        raise Unsupported(f"{self.name} has no admin API (DeleteRecords)")


# Kafka's own names (clients/src/main/java/org/apache/kafka/common/protocol/Errors.java) for the codes
# the scenarios look at; clients sometimes spell them differently (MSG_SIZE_TOO_LARGE, ...).
_KAFKA_NAMES = {
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    10: "MESSAGE_TOO_LARGE",
    36: "TOPIC_ALREADY_EXISTS",
    37: "INVALID_PARTITIONS",
    40: "INVALID_CONFIG",
    87: "INVALID_RECORD",
}


def error_name(code: int) -> str:
    if code in _KAFKA_NAMES:
        return _KAFKA_NAMES[code]
    try:
        import kafka.errors

        return kafka.errors.for_code(code).message
    except Exception:  # noqa: BLE001 - an unknown code still gets a name
        return f"ERROR_{code}"


def ms_now() -> int:
    import time

    return int(time.time() * 1000)
