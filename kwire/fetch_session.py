"""Fetch sessions (KIP-227): the cache of incremental fetch sessions of one broker (Kafka's
FetchSessionCache). Sans-I/O; the Fetch handler (kwire.handlers.fetch) drives it, the
broker's composition root builds one per broker."""
from __future__ import annotations

import random

MAX_SESSIONS = 1000


class FetchSession:
    __slots__ = ("id", "epoch", "partitions", "last_used")

    def __init__(self, sid: int):
        self.id = sid
        self.epoch = 1  # the epoch the next request must carry
        # (topic, partition) -> [fetch_offset, partition_max_bytes, last_hw, last_lso, last_log_start, topic_id]
        self.partitions: dict[tuple[str, int], list] = {}
        self.last_used = 0


class FetchSessionCache:
    def __init__(self, max_sessions: int = MAX_SESSIONS):
        self.sessions: dict[int, FetchSession] = {}
        self.max_sessions = max_sessions
        self._rand = random.Random()

    def new(self, now_ms: int) -> FetchSession:
        if len(self.sessions) >= self.max_sessions:  # evict the least recently used
            oldest = min(self.sessions.values(), key=lambda s: s.last_used)
            del self.sessions[oldest.id]
        while True:
            sid = self._rand.randint(1, 2**31 - 1)
            if sid not in self.sessions:
                break
        s = FetchSession(sid)
        s.last_used = now_ms
        self.sessions[sid] = s
        return s
