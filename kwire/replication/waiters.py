"""Waiters on partitions, kept by the replica manager (Kafka's delayed-operation purgatory
for Fetch and Produce, in its sans-I/O part).

- Fetch long polls wait for *any* of their partitions to change: one ``trio.Event`` per
  waiting request, registered under each partition it reads; an append or a deletion sets
  it (``wake``) and forgets every registration of that partition at once. An idle waiting
  fetch costs one set entry per partition and no CPU.
- acks=all produces wait for the high watermark of one partition to reach an offset (the
  last offset they appended, plus one): ``wait_for(tp, offset)`` answers None when it has
  already, else an event that ``high_watermark_moved`` sets once it does. A deleted
  partition completes its waiters too (the handler then finds the partition gone).

Nothing here awaits; the events are the edge a handler awaits on.
"""
from __future__ import annotations

import trio

TopicPartition = tuple[str, int]


class FetchWaiters:
    """Fetch long polls, by partition."""

    __slots__ = ("_by_partition",)

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, set[trio.Event]] = {}

    def watch(self, tps) -> trio.Event:
        """An event set at the next change (append, deletion) of any of ``tps``."""
        ev = trio.Event()
        for tp in tps:
            self._by_partition.setdefault(tp, set()).add(ev)
        return ev

    def unwatch(self, ev: trio.Event, tps) -> None:
        for tp in tps:
            s = self._by_partition.get(tp)
            if s is not None:
                s.discard(ev)
                if not s:
                    del self._by_partition[tp]

    def wake(self, tp: TopicPartition) -> None:
        waiters = self._by_partition.pop(tp, None)
        if waiters:
            for ev in waiters:
                ev.set()

    def __len__(self) -> int:
        """Registrations (a fetch waiting on n partitions counts n)."""
        return sum(len(s) for s in self._by_partition.values())


class HighWatermarkWaiters:
    """acks=all produces, by partition: (required offset, event), completed in offset order."""

    __slots__ = ("_by_partition",)

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, list[tuple[int, trio.Event]]] = {}

    def add(self, tp: TopicPartition, offset: int) -> trio.Event:
        ev = trio.Event()
        self._by_partition.setdefault(tp, []).append((offset, ev))
        return ev

    def high_watermark_moved(self, tp: TopicPartition, high_watermark: int) -> None:
        waiting = self._by_partition.get(tp)
        if not waiting:
            return
        still = []
        for offset, ev in waiting:
            if offset <= high_watermark:
                ev.set()
            else:
                still.append((offset, ev))
        if still:
            self._by_partition[tp] = still
        else:
            del self._by_partition[tp]

    def complete_all(self, tp: TopicPartition) -> None:
        for _, ev in self._by_partition.pop(tp, ()):
            ev.set()

    def __len__(self) -> int:
        return sum(len(w) for w in self._by_partition.values())
