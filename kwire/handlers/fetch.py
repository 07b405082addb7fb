"""Fetch (key 1): versions 4-16.

Long poll: the answer waits until min_bytes are available or max_wait_ms passes, woken the
moment data is appended to any fetched partition (no polling: a waiting fetch holds only an
event). max_bytes and partition_max_bytes, with the first batch returned even when larger
(KIP-74). isolation_level: read_committed reads up to the last stable offset (the high
watermark while there are no transactions). Fetch sessions (KIP-227): full and incremental
fetches, forgotten topics, FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH.
Topic ids from v13 (UNKNOWN_TOPIC_ID). Records are sent as file regions (sendfile).
KAFKA_STORAGE_ERROR for partitions whose log dir went offline after an I/O error.
Left out: v0-3 (message formats v0/v1), follower fetches (replication issue), rack-aware
preferred read replicas (-1).
"""
from __future__ import annotations

import itertools
import random

import trio

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.codec.primitives import ZERO_UUID

FINAL_EPOCH = -1
INITIAL_EPOCH = 0
MAX_SESSIONS = 1000


class FetchSession:
    __slots__ = ("id", "epoch", "partitions", "last_used")

    def __init__(self, sid: int):
        self.id = sid
        self.epoch = 1  # the epoch the next request must carry
        # (topic, partition) -> [fetch_offset, partition_max_bytes, last_hw, last_lso, last_log_start]
        self.partitions: dict[tuple[str, int], list] = {}
        self.last_used = 0


class FetchSessionCache:
    def __init__(self):
        self.sessions: dict[int, FetchSession] = {}
        self._rand = random.Random()

    def new(self, now_ms: int) -> FetchSession:
        if len(self.sessions) >= MAX_SESSIONS:  # evict the least recently used
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


def _resolve_topics(ctx: RequestContext, req):
    """[(topic_name or None, topic_id, [FetchPartition...])] from the request."""
    image = ctx.broker.image
    out = []
    for t in req.topics:
        if ctx.version >= 13:
            ti = image.topics_by_id.get(t.topic_id)
            out.append((ti.name if ti else None, t.topic_id, t.partitions))
        else:
            ti = image.topics.get(t.topic)
            out.append((t.topic, ti.topic_id if ti else ZERO_UUID, t.partitions))
    return out


@handles("Fetch", "4-16")
async def fetch(ctx: RequestContext, req):
    b = ctx.broker
    v = ctx.version
    now = b.clock.monotonic_ms()
    if b.fetch_sessions is None:
        b.fetch_sessions = FetchSessionCache()
    cache: FetchSessionCache = b.fetch_sessions
    topics = _resolve_topics(ctx, req)
    # wanted: ordered (name, topic_id, partition) -> [fetch_offset, partition_max_bytes]
    wanted: dict[tuple, list] = {}
    unknown_ids: list = []
    for name, tid, parts in topics:
        for p in parts:
            if name is None:
                unknown_ids.append((tid, p.partition))
                continue
            wanted[(name, p.partition)] = [p.fetch_offset, p.partition_max_bytes, tid]
    session = None
    session_id = 0
    incremental = False
    if v >= 7:
        sid, epoch = req.session_id, req.session_epoch
        if epoch == FINAL_EPOCH:
            if sid:
                cache.sessions.pop(sid, None)
        elif epoch == INITIAL_EPOCH:
            if sid:
                cache.sessions.pop(sid, None)
            session = cache.new(now)
            for key, (off, maxb, tid) in wanted.items():
                session.partitions[key] = [off, maxb, -1, -1, -1, tid]
        else:
            session = cache.sessions.get(sid)
            if session is None:
                return ctx.response(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
            if session.epoch != epoch:
                return ctx.response(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=0, responses=[])
            incremental = True
            for key, (off, maxb, tid) in wanted.items():
                st = session.partitions.get(key)
                if st is None:
                    session.partitions[key] = [off, maxb, -1, -1, -1, tid]
                else:
                    st[0], st[1] = off, maxb
            for ft in req.forgotten_topics_data:
                name = ft.topic if v < 13 else (b.image.topics_by_id[ft.topic_id].name
                                                if ft.topic_id in b.image.topics_by_id else None)
                for p in ft.partitions:
                    session.partitions.pop((name, p), None)
        if session is not None:
            session.epoch += 1 if epoch != INITIAL_EPOCH else 0
            session.last_used = now
            session_id = session.id
    if incremental:
        fetch_set = {k: (st[0], st[1], st[5]) for k, st in session.partitions.items()}
        explicit = set(wanted)
    else:
        fetch_set = {k: tuple(x) for k, x in wanted.items()}
        explicit = set(wanted)

    read_committed = req.isolation_level == 1
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    while True:
        responses, total, has_error = _read_all(ctx, fetch_set, req.max_bytes, read_committed, session,
                                                incremental, explicit)
        if total >= req.min_bytes or has_error or req.max_wait_ms <= 0 or trio.current_time() >= deadline \
                or not fetch_set:
            break
        tps = list(fetch_set)
        ev = b.data_event(tps)
        try:
            with trio.move_on_at(deadline):
                await ev.wait()
        finally:
            b.forget_event(ev, tps)
        explicit = set()  # after waiting, report what changed
    if session is not None:  # remember what this answer told the client
        for key, _, pd in responses:
            st = session.partitions.get(key)
            if st is not None:
                st[2], st[3], st[4] = pd.high_watermark, pd.last_stable_offset, pd.log_start_offset
    # group responses by topic, keeping request order
    T = ctx.struct("FetchableTopicResponse")
    by_topic: dict[str, object] = {}
    out = []
    for _, (name, tid), pd in responses:
        t = by_topic.get(name)
        if t is None:
            t = by_topic[name] = T(topic=name, topic_id=tid, partitions=[])
            out.append(t)
        t.partitions.append(pd)
    PD = ctx.struct("PartitionData")
    for tid, p in unknown_ids:
        out.append(T(topic="", topic_id=tid, partitions=[PD(partition_index=p, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                                                             high_watermark=-1, records=b"")]))
    return ctx.response(throttle_time_ms=0, error_code=0, session_id=session_id, responses=out)


def _read_all(ctx: RequestContext, fetch_set: dict, max_bytes: int, read_committed: bool, session,
              incremental: bool, explicit: set):
    b = ctx.broker
    PD = ctx.struct("PartitionData")
    remaining = max_bytes if max_bytes > 0 else 0
    total = 0
    has_error = False
    out = []
    for key, (offset, pmax, tid) in fetch_set.items():
        name, p = key
        plog = b.partition_log(name, p)
        pd = PD(partition_index=p, error_code=0, high_watermark=-1, last_stable_offset=-1,
                log_start_offset=-1, records=b"",
                aborted_transactions=[] if read_committed else None)
        changed = key in explicit
        if plog is None or plog.offline:  # offline: its log dir failed (KAFKA_STORAGE_ERROR)
            pd.error_code = b.partition_error(name, p) if plog is None else ErrorCode.KAFKA_STORAGE_ERROR
            has_error = True
            out.append((key, (name, tid), pd))
            continue
        hw = plog.high_watermark
        pd.high_watermark = hw
        pd.last_stable_offset = hw
        pd.log_start_offset = plog.log_start_offset
        pd.current_leader.leader_id = b.node_id
        pd.current_leader.leader_epoch = b.leader_epoch(name, p)
        try:
            if offset < plog.log_start_offset or offset > plog.log_end_offset:
                raise KafkaError(f"offset {offset} out of range", ErrorCode.OFFSET_OUT_OF_RANGE)
            if offset < hw:
                limit = min(pmax, remaining) if remaining > 0 else 0
                data = plog.read(offset, limit, max_offset=hw, min_one=(total == 0))
                size = data.size if data is not None else 0
                if size:
                    pd.records = data  # kwire.log FetchData: file regions, sent with sendfile
                    total += size
                    remaining -= size
                    changed = True
        except KafkaError as exc:
            pd.error_code = exc.code
            pd.records = b""  # Kafka sends empty records with an error, never null
            has_error = True
            changed = True
        if session is not None:
            st = session.partitions.get(key)
            if st is not None:
                meta = (pd.high_watermark, pd.last_stable_offset, pd.log_start_offset)
                if tuple(st[2:5]) != meta:
                    changed = True
        if incremental and not changed:
            continue
        out.append((key, (name, tid), pd))
    return out, total, has_error
