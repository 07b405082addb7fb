"""The share partitions and share sessions of one broker (Kafka's SharePartitionManager and
ShareSessionCache). Sans-I/O: time is passed in; the ShareFetch / ShareAcknowledge handlers
(kwire.handlers.share_fetch) drive it, the broker's composition root builds one.

A share partition (kwire.share.partition) is keyed by (group id, topic id, partition) and
lives on the partition's leader. It is made on the first fetch of a group there, starting at
``share.auto.offset.reset`` of the group (latest by default, as Kafka: the high watermark;
earliest: the log start offset; ``by_duration:<ISO-8601>`` is taken as earliest), unless its
durable state was recovered (``recovered``, filled by kwire.share.state_store).

A share session (KIP-932) is keyed by (group id, member id): epoch 0 opens it (replacing an
older one of the member), the requests that follow carry 1, 2, ... (the epoch the session
expects, INVALID_SHARE_SESSION_EPOCH otherwise; SHARE_SESSION_NOT_FOUND without a session),
-1 closes it and releases what the member holds in its partitions. A session holds the
partitions the member fetches: a ShareFetch adds those it names and drops its forgotten ones.
At most ``max_sessions`` (share.session.cache... Kafka's max.share.session.cache.size, 1000):
a new session past it evicts the least recently used one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable
from uuid import UUID

from kwire.errors import ErrorCode
from kwire.share.partition import SharePartition

E = ErrorCode
TopicIdPartition = tuple[UUID, int]
INITIAL_EPOCH = 0
FINAL_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ShareSettings:
    """A group's share settings (group configs over broker defaults)."""
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_in_flight: int = 2000
    auto_offset_reset: str = "latest"
    #: share.isolation.level=read_committed: delivery up to the last stable offset, records of
    #: aborted transactions archived (Kafka's FetchIsolation.TXN_COMMITTED for share fetches)
    read_committed: bool = False


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1   # the epoch the next request must carry
    partitions: list[TopicIdPartition] = field(default_factory=list)
    last_used: int = 0

    def add(self, tps: Iterable[TopicIdPartition]) -> None:
        for tp in tps:
            if tp not in self.partitions:
                self.partitions.append(tp)

    def forget(self, tps: Iterable[TopicIdPartition]) -> None:
        gone = set(tps)
        if gone:
            self.partitions = [tp for tp in self.partitions if tp not in gone]


class SharePartitionManager:
    def __init__(self, settings: Callable[[str], ShareSettings] = lambda _gid: ShareSettings(),
                 max_sessions: int = 1000):
        self.settings = settings
        self.max_sessions = max_sessions
        self.partitions: dict[tuple[str, UUID, int], SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        #: called with (group id, topic id, partition, share partition) after a change that
        #: the durable form must record (the edge writes __share_group_state)
        self.on_change: Callable[[str, UUID, int, SharePartition], None] | None = None
        self.on_remove: Callable[[str, UUID, int], None] | None = None
        #: (group id, topic id, partition) -> (start offset, state batches) read back from the
        #: durable form at start (kwire.share.state_store): a share partition made here later
        #: starts from it
        self.recovered: dict[tuple[str, UUID, int], tuple[int, tuple]] = {}

    # ------------------------------------------------------------------ sessions
    def session(self, group_id: str, member_id: str, epoch: int, now: int, *,
                opening: bool) -> tuple[ErrorCode, ShareSession | None]:
        """The session a request with ``epoch`` uses. ``opening``: a ShareFetch (epoch 0 opens);
        ShareAcknowledge cannot open one. Epoch -1 returns the session, which the caller closes
        (``close``) after applying the acknowledgements."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if not opening:
                return E.INVALID_SHARE_SESSION_EPOCH, None
            old = self.sessions.pop(key, None)
            if old is None and len(self.sessions) >= self.max_sessions:
                lru = min(self.sessions.values(), key=lambda s: s.last_used)
                self.close(lru, now)
            s = self.sessions[key] = ShareSession(group_id, member_id, last_used=now)
            return E.NONE, s
        s = self.sessions.get(key)
        if s is None:
            return E.SHARE_SESSION_NOT_FOUND, None
        if epoch == FINAL_EPOCH:
            return E.NONE, s
        if epoch != s.epoch:
            return E.INVALID_SHARE_SESSION_EPOCH, None
        s.epoch = s.epoch + 1 if s.epoch < 2**31 - 1 else 1
        s.last_used = now
        return E.NONE, s

    def close(self, s: ShareSession, now: int) -> None:
        """Close a session: the records its member holds in its partitions are released."""
        self.sessions.pop((s.group_id, s.member_id), None)
        for tid, p in s.partitions:
            sp = self.partitions.get((s.group_id, tid, p))
            if sp is not None and sp.release_member(s.member_id, now):
                self._changed(s.group_id, tid, p, sp)

    # ------------------------------------------------------------------ partitions
    def get(self, group_id: str, topic_id: UUID, partition: int) -> SharePartition | None:
        return self.partitions.get((group_id, topic_id, partition))

    def get_or_create(self, group_id: str, topic_id: UUID, partition: int,
                      log_start_offset: int, high_watermark: int) -> SharePartition:
        key = (group_id, topic_id, partition)
        sp = self.partitions.get(key)
        if sp is None:
            st = self.settings(group_id)
            start = high_watermark if st.auto_offset_reset == "latest" else log_start_offset
            sp = self.partitions[key] = SharePartition(
                start_offset=start, record_lock_duration_ms=st.record_lock_duration_ms,
                delivery_count_limit=st.delivery_count_limit, max_in_flight=st.max_in_flight)
            saved = self.recovered.pop(key, None)
            if saved is not None:
                sp.restore(*saved)
            self._changed(group_id, topic_id, partition, sp)
        else:
            self.apply_settings(group_id, sp)
        return sp

    def apply_settings(self, group_id: str, sp: SharePartition) -> None:
        st = self.settings(group_id)
        sp.record_lock_duration_ms = st.record_lock_duration_ms
        sp.delivery_count_limit = st.delivery_count_limit
        sp.max_in_flight = st.max_in_flight

    def load(self, group_id: str, topic_id: UUID, partition: int, sp: SharePartition) -> None:
        """A share partition recovered from its durable form."""
        self.apply_settings(group_id, sp)
        self.partitions[(group_id, topic_id, partition)] = sp

    def changed(self, group_id: str, topic_id: UUID, partition: int) -> None:
        sp = self.partitions.get((group_id, topic_id, partition))
        if sp is not None:
            self._changed(group_id, topic_id, partition, sp)

    def _changed(self, group_id: str, topic_id: UUID, partition: int, sp: SharePartition) -> None:
        if self.on_change is not None:
            self.on_change(group_id, topic_id, partition, sp)

    def expire_locks(self, now: int) -> list[tuple[str, UUID, int]]:
        """Every acquisition lock past its deadline; the partitions that changed."""
        out = []
        for (gid, tid, p), sp in self.partitions.items():
            if sp.expire_locks(now):
                out.append((gid, tid, p))
                self._changed(gid, tid, p, sp)
        return out

    def next_lock_deadline(self) -> int | None:
        ds = [d for sp in self.partitions.values() if (d := sp.next_lock_deadline()) is not None]
        return min(ds) if ds else None

    def group_partitions(self, group_id: str) -> dict[TopicIdPartition, SharePartition]:
        return {(t, p): sp for (g, t, p), sp in self.partitions.items() if g == group_id}

    def remove(self, group_id: str, topic_id: UUID, partition: int) -> bool:
        """Forget a share partition's state (DeleteShareGroupOffsets): a fetch after it starts
        afresh from share.auto.offset.reset. Returns whether there was one."""
        key = (group_id, topic_id, partition)
        had = self.partitions.pop(key, None) is not None or self.recovered.pop(key, None) is not None
        if had and self.on_remove is not None:
            self.on_remove(group_id, topic_id, partition)
        return had

    def drop_group(self, group_id: str) -> None:
        """A deleted share group: its share partitions' state and its sessions go."""
        for key in [k for k in list(self.partitions) + list(self.recovered) if k[0] == group_id]:
            self.remove(*key)
        for key in [k for k in self.sessions if k[0] == group_id]:
            del self.sessions[key]
