"""Committed offsets of one group, and which of them have expired.

Expiry follows Kafka (KIP-211): offsets of an Empty group expire ``offsets.retention.minutes``
after the group became empty; offsets of a group without a protocol type (standalone
consumers committing with generation -1) expire that long after their commit; a Stable
consumer group's offsets of topics it no longer subscribes to expire that long after their
commit. A commit that carried an explicit retention time (OffsetCommit v2-v4) expires at its
own expire timestamp. An offset with a pending transactional commit does not expire (Kafka's
OffsetMetadataManager.cleanupExpiredOffsets).

Transactional offsets (TxnOffsetCommit) wait here per producer id until the transaction
ends (Kafka's pendingTransactionalOffsets): a commit marker moves them to the committed
offsets, unless a later commit (by its record's offset in ``__consumer_offsets``) is there
already; an abort marker drops them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

TopicPartition = tuple[str, int]

#: ``record_offset`` of a commit whose record is not in the log yet (its append is in flight)
IN_FLIGHT = -2


@dataclass(slots=True, frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # -1: follows offsets.retention.minutes
    #: offset of the commit's record in ``__consumer_offsets`` (-1: unknown; IN_FLIGHT): of
    #: two commits of a partition the later record wins (not part of equality)
    record_offset: int = field(default=-1, compare=False)


def newer(candidate: OffsetAndMetadata, current: OffsetAndMetadata | None) -> bool:
    """True when ``candidate`` may replace ``current``: there is none, or its record is not
    older (unknown record offsets, -1, as from a writer that does not say, count as newer)."""
    return current is None or candidate.record_offset >= current.record_offset


class OffsetStore:
    __slots__ = ("_offsets", "_pending")

    def __init__(self) -> None:
        self._offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        #: producer id -> the transactional offsets of its open transaction
        self._pending: dict[int, dict[TopicPartition, OffsetAndMetadata]] = {}

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

    def put_if_newer(self, tp: TopicPartition, om: OffsetAndMetadata) -> bool:
        """Store ``om`` unless a commit from a later record is there (see ``newer``)."""
        if newer(om, self._offsets.get(tp)):
            self._offsets[tp] = om
            return True
        return False

    def topics(self) -> set[str]:
        return {t for t, _ in self._offsets}

    @property
    def empty(self) -> bool:
        """No committed offset and no open transaction: nothing keeps the group."""
        return not self._offsets and not self._pending

    # --- transactional offsets ------------------------------------------------------------
    def open_producers(self) -> list[int]:
        """Producer ids with an open transaction holding offsets of this group."""
        return list(self._pending)

    def pending(self, producer_id: int) -> dict[TopicPartition, OffsetAndMetadata]:
        return dict(self._pending.get(producer_id, {}))

    def all_partitions(self) -> list[TopicPartition]:
        """Partitions with a committed offset or one in an open transaction."""
        out = dict.fromkeys(self._offsets)
        for offsets in self._pending.values():
            out.update(dict.fromkeys(offsets))
        return list(out)

    def has_pending(self, tp: TopicPartition) -> bool:
        """True when an open transaction holds an offset of ``tp`` (OffsetFetch with
        require_stable answers UNSTABLE_OFFSET_COMMIT for it)."""
        return any(tp in offsets for offsets in self._pending.values())

    def put_pending(self, producer_id: int, tp: TopicPartition, om: OffsetAndMetadata) -> None:
        self._pending.setdefault(producer_id, {})[tp] = om

    def pending_appended(self, producer_id: int, tp: TopicPartition, om: OffsetAndMetadata,
                         record_offset: int) -> None:
        """The append of ``om`` (put with IN_FLIGHT) succeeded: it is in the log at
        ``record_offset``. Nothing happens when a later commit replaced it meanwhile."""
        offsets = self._pending.get(producer_id)
        if offsets is not None and offsets.get(tp) is om:
            offsets[tp] = OffsetAndMetadata(om.offset, om.leader_epoch, om.metadata,
                                            om.commit_timestamp, om.expire_timestamp,
                                            record_offset)

    def fail_pending(self, producer_id: int, tp: TopicPartition, om: OffsetAndMetadata) -> None:
        """The append of ``om`` failed: forget it (unless a later commit replaced it)."""
        offsets = self._pending.get(producer_id)
        if offsets is not None and offsets.get(tp) is om:
            del offsets[tp]
            if not offsets:
                del self._pending[producer_id]

    def remove_pending(self, tp: TopicPartition) -> bool:
        """A tombstone of ``tp``: drop it from every open transaction too (as Kafka)."""
        found = False
        for pid in list(self._pending):
            offsets = self._pending[pid]
            if offsets.pop(tp, None) is not None:
                found = True
        return found

    def complete(self, producer_id: int, committed: bool,
                 marker_offset: int = -1) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """A transaction marker of ``producer_id`` at ``marker_offset`` (-1: unknown): on
        commit its offsets become committed where no later record committed the partition.
        Offsets whose record lies after the marker belong to the producer's next
        transaction and stay pending; offsets still in flight are dropped (the transaction
        ended before their append did). Returns (partitions committed, partitions dropped)."""
        offsets = self._pending.pop(producer_id, None)
        if not offsets:
            return [], []
        done: list[TopicPartition] = []
        dropped: list[TopicPartition] = []
        later: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, om in offsets.items():
            if marker_offset >= 0 and om.record_offset > marker_offset:
                later[tp] = om
            elif om.record_offset == IN_FLIGHT:
                dropped.append(tp)
            elif committed and self.put_if_newer(tp, om):
                done.append(tp)
        if later:
            self._pending[producer_id] = later
        return done, dropped

    def expired(self, now_ms: int, retention_ms: int, base_timestamp: int | None,
                keep_topics: Iterable[str] = ()) -> list[TopicPartition]:
        """Partitions whose offsets have expired.

        ``base_timestamp``: the time retention counts from for every offset (when the group
        became empty); None counts from each offset's commit timestamp.
        """
        keep = set(keep_topics)
        out = []
        for tp, om in self._offsets.items():
            if tp[0] in keep or self.has_pending(tp):
                continue
            if om.expire_timestamp >= 0:
                if now_ms >= om.expire_timestamp:
                    out.append(tp)
            else:
                base = om.commit_timestamp if base_timestamp is None else base_timestamp
                if now_ms - base >= retention_ms:
                    out.append(tp)
        return out
