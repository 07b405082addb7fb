"""Committed offsets of one group, and which of them have expired.

Expiry follows Kafka (KIP-211): offsets of an Empty group expire ``offsets.retention.minutes``
after the group became empty; offsets of a group without a protocol type (standalone
consumers committing with generation -1) expire that long after their commit; a Stable
consumer group's offsets of topics it no longer subscribes to expire that long after their
commit. A commit that carried an explicit retention time (OffsetCommit v2-v4) expires at its
own expire timestamp.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

TopicPartition = tuple[str, int]


@dataclass(slots=True, frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # -1: follows offsets.retention.minutes


class OffsetStore:
    __slots__ = ("_offsets",)

    def __init__(self) -> None:
        self._offsets: dict[TopicPartition, OffsetAndMetadata] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    def __contains__(self, tp: TopicPartition) -> bool:
        return tp in self._offsets

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._offsets)

    def get(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        return self._offsets.get(tp)

    def items(self):
        return self._offsets.items()

    def put(self, tp: TopicPartition, om: OffsetAndMetadata) -> None:
        self._offsets[tp] = om

    def remove(self, tp: TopicPartition) -> bool:
        return self._offsets.pop(tp, None) is not None

    def topics(self) -> set[str]:
        return {t for t, _ in self._offsets}

    def expired(self, now_ms: int, retention_ms: int, base_timestamp: int | None,
                keep_topics: Iterable[str] = ()) -> list[TopicPartition]:
        """Partitions whose offsets have expired.

        ``base_timestamp``: the time retention counts from for every offset (when the group
        became empty); None counts from each offset's commit timestamp.
        """
        keep = set(keep_topics)
        out = []
        for tp, om in self._offsets.items():
            if tp[0] in keep:
                continue
            if om.expire_timestamp >= 0:
                if now_ms >= om.expire_timestamp:
                    out.append(tp)
            else:
                base = om.commit_timestamp if base_timestamp is None else base_timestamp
                if now_ms - base >= retention_ms:
                    out.append(tp)
        return out
