"""Fetch (key 1): versions 0-18 (v18's follower high watermark, KIP-1166, is read and not used:
a kwire leader completes a follower's waiting fetch by data alone; consumers send the default).

Long poll: the answer waits until min_bytes are available or max_wait_ms passes, woken the
moment data is appended to any fetched partition (no polling: a waiting fetch holds only an
event). max_bytes and partition_max_bytes, with the first batch returned even when larger
(KIP-74). isolation_level: read_committed (1) reads up to the last stable offset (the first
offset of a transaction still open, at most the high watermark; kwire.log.producer_state)
and gets the aborted transactions among the records returned (producer id, first offset;
from the segments' .txnindex) so the client drops their records; read_uncommitted (0) reads
up to the high watermark, aborted_transactions null. last_stable_offset in every answer
(v4+). Fetch sessions (KIP-227): full and incremental
fetches, forgotten topics, FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH.
Topic ids from v13 (UNKNOWN_TOPIC_ID). Records are sent as file regions (sendfile); up to 64 KiB of them are
copied into the answer's one write instead (kwire.net.send_parts: one send for a tailing consumer).
Reads, waits and leader checks are the replica manager's (kwire.replication): records up to
the high watermark; UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR
(the log dir is offline); current_leader_epoch (v9+) older than the partition's:
FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH (kept per partition in a fetch session).
Replica fetches (a follower's: replica_id, or replica_state from v15): read up to the log end
offset, not the high watermark; the fetch offset is the follower's log end offset, which the
replica manager records (high watermark, ISR expansion); a follower whose last fetched epoch
(v12+) ends earlier on the leader gets ``diverging_epoch`` and no records; sessionless, woken
by every append (replica.fetch.wait.max.ms is the follower's max_wait_ms). A replica outside the
ISR fetching a partition under a replication throttle (KIP-73, kwire.quota.replication) gets no
records while the leader's throttled rate is over its bound.
Client quotas (kwire.quota.edge): a consumer's max_bytes is capped at one quota window of its
consumer_byte_rate; its answer's record bytes are recorded, and a throttled fetch is answered
empty with throttle_time_ms (replica fetches are exempt). The size recorded is that of the
records returned, not of the whole encoded response as in Kafka (a few dozen bytes a partition less).
With an authorizer: READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, kept
out of the session); a follower needs CLUSTER_ACTION on the cluster (TOPIC_AUTHORIZATION_FAILED
everywhere otherwise, as Kafka).
v0-3 (Kafka 3.x and older; kwire.emulate.kafka.version 3.9) read message formats v0 (Fetch v0-1)
and v1 (v2-3): the v2 batches read are down-converted (kwire.codec.legacy_records, Kafka's
RecordsUtil.downConvert: headers dropped, control batches and records below the fetch offset
left out, compression kept; zstd batches, and lz4 to magic 0, UNSUPPORTED_COMPRESSION_TYPE),
which costs a read and a copy instead of sendfile. Size limits as Kafka's: v0-2 have only
partition_max_bytes, a hard limit (a first message larger than it is sent cut at it, which an
old consumer reports as too large); v3 has max_bytes and, like v4+, the first message whole
(KIP-74); converted data is cut at message boundaries to the bytes read.
Fetch from follower (KIP-392), v11+ (Kafka's ClientMetadata: the request's rack_id): a
follower serves a consumer's fetch up to its own high watermark (an offset between it and the
follower's log end offset waits or is answered empty, one past the log end offset is
OFFSET_OUT_OF_RANGE, which sends the client back to the leader); older versions are served by
the leader only (NOT_LEADER_OR_FOLLOWER elsewhere). With replica.selector.class set, the
leader answers a consumer whose rack holds an in-sync follower with preferred_read_replica and
no records for that partition, at once (kwire.replication.replica_selector). ListOffsets stays
with the leader.
Left out: fetch sessions for followers (they fetch sessionless).
"""
from __future__ import annotations

import trio

from kwire.errors import ErrorCode
from kwire.fetch_session import FetchSessionCache
from kwire.handlers import RequestContext, handles
from kwire.codec.legacy_records import LegacyRecordError, down_convert, fetch_magic
from kwire.codec.primitives import ZERO_UUID
from kwire.quota import edge as quota_edge
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed
from kwire.security.operations import AclOperation as Op

FINAL_EPOCH = -1
INITIAL_EPOCH = 0


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


@handles("Fetch", "0-18")
async def fetch(ctx: RequestContext, req):
    b = ctx.broker
    v = ctx.version
    replica_id = req.replica_state.replica_id if v >= 15 else req.replica_id
    auth = b.authorizer   # None: no authorization
    if replica_id >= 0:
        ctx.throttle_time_ms = 0   # replica fetches are exempt from client quotas
        if auth is not None and not allowed(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return _all_denied(ctx, req)
        return await _replica_fetch(ctx, req, replica_id)
    now = b.clock.monotonic_ms()
    rm = b.replica_manager
    cache: FetchSessionCache = b.fetch_sessions
    topics = _resolve_topics(ctx, req)
    # wanted: ordered (name, partition) -> [fetch_offset, partition_max_bytes, topic_id, current_leader_epoch]
    wanted: dict[tuple, list] = {}
    unknown_ids: list = []
    denied: list = []   # (name, topic_id, partition) not READable by the principal
    for name, tid, parts in topics:
        no_read = auth is not None and name is not None and not allowed(ctx, Op.READ, TOPIC, name)
        for p in parts:
            if name is None:
                unknown_ids.append((tid, p.partition))
                continue
            if no_read:
                denied.append((name, tid, p.partition))
                continue
            wanted[(name, p.partition)] = [p.fetch_offset, p.partition_max_bytes, tid, p.current_leader_epoch]
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
            for key, (off, maxb, tid, leader_epoch) in wanted.items():
                session.partitions[key] = [off, maxb, -1, -1, -1, tid, leader_epoch]
        else:
            session = cache.sessions.get(sid)
            if session is None:
                return ctx.response(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
            if session.epoch != epoch:
                return ctx.response(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=0, responses=[])
            incremental = True
            for key, (off, maxb, tid, leader_epoch) in wanted.items():
                st = session.partitions.get(key)
                if st is None:
                    session.partitions[key] = [off, maxb, -1, -1, -1, tid, leader_epoch]
                else:
                    st[0], st[1], st[6] = off, maxb, leader_epoch
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
        fetch_set = {k: (st[0], st[1], st[5], st[6]) for k, st in session.partitions.items()}
        explicit = set(wanted)
    else:
        fetch_set = {k: tuple(x) for k, x in wanted.items()}
        explicit = set(wanted)

    read_committed = req.isolation_level == 1
    # Kafka's ClientMetadata (v11+): the client's rack; with it a follower may serve the read
    # and the leader may name a preferred read replica (KIP-392)
    client_rack = req.rack_id if v >= 11 else None
    quotas = b.quotas if b.quotas.enabled else None
    max_bytes, min_bytes = req.max_bytes, req.min_bytes
    if quotas is not None:   # no more than one quota window's worth (consumer_byte_rate)
        max_bytes = quota_edge.fetch_max_bytes(quotas, ctx, max_bytes)
        min_bytes = min(min_bytes, max_bytes)
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    while True:
        responses, total, answer_now = _read_all(ctx, fetch_set, max_bytes, read_committed, session,
                                                 incremental, explicit, client_rack)
        if total >= min_bytes or answer_now or req.max_wait_ms <= 0 or trio.current_time() >= deadline \
                or not fetch_set:
            break
        await rm.wait_for_data(list(fetch_set), deadline)
        explicit = set()  # after waiting, report what changed
    if quotas is not None:
        throttle = ctx.throttle_time_ms = quota_edge.fetch_quota(quotas, ctx, total, b.clock.now_ms())
        if throttle > 0:   # Kafka's getThrottledResponse: nothing, and the session left as it was
            return ctx.response(throttle_time_ms=throttle, error_code=0, session_id=session_id, responses=[])
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
    for name, tid, p in denied:
        out.append(T(topic=name, topic_id=tid, partitions=[PD(
            partition_index=p, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, high_watermark=-1, records=b"")]))
    return ctx.response(throttle_time_ms=0, error_code=0, session_id=session_id, responses=out)


def _all_denied(ctx: RequestContext, req):
    """Kafka's answer to a follower without CLUSTER_ACTION: TOPIC_AUTHORIZATION_FAILED everywhere."""
    T, PD = ctx.struct("FetchableTopicResponse"), ctx.struct("PartitionData")
    out = [T(topic=name or "", topic_id=tid, partitions=[PD(
        partition_index=p.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, high_watermark=-1,
        records=b"") for p in parts]) for name, tid, parts in _resolve_topics(ctx, req)]
    return ctx.response(throttle_time_ms=0, error_code=0, session_id=0, responses=out)


def _read_all(ctx: RequestContext, fetch_set: dict, max_bytes: int, read_committed: bool, session,
              incremental: bool, explicit: set, client_rack: str | None):
    """(responses, record bytes read, answer now?): an error or a preferred read replica is
    answered at once (Kafka's ReplicaManager.fetchMessages: errorReadingData,
    hasPreferredReadReplica)."""
    rm = ctx.broker.replica_manager
    node_id = ctx.broker.node_id
    PD = ctx.struct("PartitionData")
    remaining = max_bytes if max_bytes > 0 else 0
    total = 0
    answer_now = False
    out = []
    old_format = ctx.version < 4   # message format v0/v1: down-converted
    for key, (offset, pmax, tid, leader_epoch) in fetch_set.items():
        name, p = key
        limit = min(pmax, remaining) if remaining > 0 else 0
        res = rm.read(name, p, offset, limit, current_leader_epoch=leader_epoch,
                      min_one=(total == 0) and ctx.version >= 3, read_committed=read_committed,
                      client_rack=client_rack, listener=ctx.listener)
        if old_format and res.high_watermark >= 0 and not res.error:
            _down_convert(ctx, res, name, p, offset, limit, first=(total == 0))
        pd = PD(partition_index=p, error_code=res.error, high_watermark=res.high_watermark,
                last_stable_offset=res.last_stable_offset, log_start_offset=res.log_start_offset,
                records=res.records, aborted_transactions=[] if read_committed else None)
        if res.aborted_transactions:
            AT = ctx.struct("AbortedTransaction")
            pd.aborted_transactions = [AT(producer_id=t.producer_id, first_offset=t.first_offset)
                                       for t in res.aborted_transactions]
        changed = key in explicit
        if res.high_watermark < 0:   # refused before reading (leader checks): no offsets to tell
            answer_now = True
            out.append((key, (name, tid), pd))
            continue
        if res.error:
            # as Kafka's ReplicaManager (a LogReadResult made from the error): no offsets to tell,
            # and the leader hint (KIP-951) only with the errors that send a client to another leader
            pd.high_watermark = pd.last_stable_offset = pd.log_start_offset = -1
            if res.error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
                pd.current_leader.leader_id = node_id
                pd.current_leader.leader_epoch = res.leader_epoch
            answer_now = True
            changed = True
        elif res.size:
            total += res.size
            remaining -= res.size
            changed = True
        elif res.preferred_read_replica >= 0:
            # read it there (v11+ only: older fetches carry no rack); a fetch session always
            # tells it, as Kafka's CachedPartition.maybeUpdateResponseData
            pd.preferred_read_replica = res.preferred_read_replica
            answer_now = True
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
    return out, total, answer_now


async def _replica_fetch(ctx: RequestContext, req, replica_id: int):
    """A follower's fetch (kwire.replication: ReplicaManager.read_for_follower)."""
    b = ctx.broker
    rm = b.replica_manager
    T = ctx.struct("FetchableTopicResponse")
    PD = ctx.struct("PartitionData")
    topics = _resolve_topics(ctx, req)
    tps = [(name, p.partition) for name, _, parts in topics if name is not None for p in parts]
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    while True:
        out = []
        total = 0
        remaining = req.max_bytes if req.max_bytes > 0 else 0
        stop = False
        for name, tid, parts in topics:
            rows = []
            out.append(T(topic=name or "", topic_id=tid, partitions=rows))
            for p in parts:
                if name is None:
                    rows.append(PD(partition_index=p.partition, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                                   high_watermark=-1, records=b""))
                    stop = True
                    continue
                res = rm.read_for_follower(name, p.partition, replica_id, p.fetch_offset, p.last_fetched_epoch,
                                           min(p.partition_max_bytes, remaining) if remaining > 0 else 0,
                                           current_leader_epoch=p.current_leader_epoch, min_one=(total == 0),
                                           follower_log_start_offset=p.log_start_offset)
                pd = PD(partition_index=p.partition, error_code=res.error, high_watermark=res.high_watermark,
                        last_stable_offset=res.last_stable_offset, log_start_offset=res.log_start_offset,
                        records=res.records)
                if res.error or res.diverging_epoch >= 0 or res.diverging_end_offset >= 0:
                    stop = True
                    pd.diverging_epoch.epoch = res.diverging_epoch
                    pd.diverging_epoch.end_offset = res.diverging_end_offset
                if res.leader_epoch >= 0:
                    pd.current_leader.leader_id = b.node_id
                    pd.current_leader.leader_epoch = res.leader_epoch
                total += res.size
                remaining -= res.size
                rows.append(pd)
        if stop or total >= req.min_bytes or req.max_wait_ms <= 0 or trio.current_time() >= deadline or not tps:
            break
        await rm.wait_for_replica_data(tps, deadline)
    return ctx.response(throttle_time_ms=0, error_code=0, session_id=0, responses=out)


def _down_convert(ctx: RequestContext, res, topic: str, partition: int, offset: int, limit: int, first: bool):
    """Fetch v0-3: the v2 batches of ``res`` as a v0/v1 message set, in place (see the module
    doc for the size rules)."""
    hard = ctx.version <= 2
    data = res.records
    if hard and first and not data and offset < res.high_watermark and limit > 0:
        # Kafka's hard limit: a first batch larger than the limit is sent cut (a partial message)
        data = ctx.broker.replica_manager.read(topic, partition, offset, limit, min_one=True).records
    if not data:
        return
    try:
        units = down_convert(bytes(data), fetch_magic(ctx.version), offset)
    except LegacyRecordError as exc:
        res.error, res.records, res.size = exc.code, b"", 0
        return
    taken, size = [], 0
    for u in units:
        if size + len(u) <= limit or (not taken and first):
            taken.append(u)
            size += len(u)
        else:
            break
    out = taken[0] if len(taken) == 1 else b"".join(taken)
    if hard and len(out) > limit:
        out = out[:limit]
    res.records = out
    res.size = len(out)
