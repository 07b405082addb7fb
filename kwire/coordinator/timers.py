"""Named deadlines on a heap: schedule, cancel, pop the expired ones; no clock inside.

Rescheduling a key pushes a new heap entry and leaves the old one stale; stale entries are
dropped when they reach the top, so a heartbeat costs O(log n) and nothing is scanned.
"""
from __future__ import annotations

import heapq
from typing import Hashable


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int]] = {}
        self._seq = 0

    def schedule(self, key: Hashable, deadline: int) -> None:
        self._seq += 1
        self._live[key] = (deadline, self._seq)
        heapq.heappush(self._heap, (deadline, self._seq, key))

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        e = self._live.get(key)
        return None if e is None else e[0]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def _drop_stale(self) -> None:
        heap, live = self._heap, self._live
        while heap:
            deadline, seq, key = heap[0]
            if live.get(key) == (deadline, seq):
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_expired(self, now: int) -> Hashable | None:
        """The key of one timer whose deadline is <= now (earliest first), removed; else None."""
        self._drop_stale()
        if self._heap and self._heap[0][0] <= now:
            _, _, key = heapq.heappop(self._heap)
            del self._live[key]
            return key
        return None
