"""ShareFetch (key 78) versions 1-2 and ShareAcknowledge (key 79) versions 1-2 (KIP-932), the
versions Kafka 4.2+ serve and the Java client 4.x sends; answered by the partitions' leader
from its share partitions and share sessions (kwire.share.manager, kwire.share.partition).

ShareFetch, in order:
1. the share session (epoch 0 opens one and must carry no acknowledgements: INVALID_REQUEST;
   -1 closes it after its acknowledgements; otherwise the session's next epoch:
   INVALID_SHARE_SESSION_EPOCH / SHARE_SESSION_NOT_FOUND, top level); the topics named join
   the session, the forgotten ones leave it;
2. the acknowledgements piggy-backed on it (per partition: ``acknowledge_error_code``,
   INVALID_RECORD_STATE for records the member does not hold, e.g. after their lock expired);
3. unless closing: records are acquired for the member in every partition of its session,
   served in an order rotated by the session epoch (Kafka's PartitionRotateStrategy), the
   request's ``max_bytes`` spread evenly over the partitions that can be acquired (Kafka's
   PartitionMaxBytesStrategy UNIFORM, at least one batch each; ``max_bytes`` 0 answers at
   once with no partitions, as Kafka), ``max_records`` shared in that order. Acquire mode
   (v2's ``share_acquire_mode``, KIP-1206): batch_optimized (0, the default) hands out the
   batch holding the ``max_records``-th record whole and cuts the acquired runs at batch
   starts every ``batch_size`` records; record_limit (1) stops at ``max_records``. The whole
   batches holding the acquired records are sent, with the acquired offset ranges and their
   delivery counts. A read_committed share group (share.isolation.level) reads up to the last
   stable offset and archives the records of aborted transactions. When none can be had, the
   request waits up to ``max_wait_ms`` for new records, a release, or a lock expiring.
The acquisition lock (``acquisition_lock_timeout_ms``) is the group's
share.record.lock.duration.ms. Before step 2, each partition named that this broker leads
and has not served at its leader epoch gets its state read from the share coordinator
(ReadShareGroupState; kwire.share.state_store): a new leader goes on from where the old one
wrote; a partition whose state cannot be read yet is answered with no records; a fetch
opening a share session reads the served ones again too, and starts over from a newer state
epoch (offsets deleted or altered elsewhere while this leader was idle). Before
answering, the share partitions changed are written to the share coordinator
(WriteShareGroupState, replicated in ``__share_group_state``): an acknowledgement answered is
durable; a write fenced by a newer state epoch (FENCED_STATE_EPOCH) drops the share
partition (read again on the next fetch), answers its acknowledgements with that error and
delivers none of the records acquired from it. ShareAcknowledge: steps 1 (it cannot open a session) and 2.

Errors per partition: UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED (READ on the topic; READ on
the group for the request, GROUP_AUTHORIZATION_FAILED top level), and the leader checks of
the replica manager (NOT_LEADER_OR_FOLLOWER with the current leader, ...). A share partition
whose start fell below the log start offset (retention) starts again at the log start offset.
Served while share.version is 1 (kwire.handlers.api_versions).

Client quotas as for Fetch (kwire.quota.edge): ``max_bytes`` capped at one quota window of
consumer_byte_rate, the answer's record bytes recorded; a throttled answer carries no records
(what it acquired is released at once) and throttle_time_ms, and the connection is muted.

Left out: ``node_endpoints`` of other leaders (the client asks Metadata again after
NOT_LEADER_OR_FOLLOWER).
"""
from __future__ import annotations

import logging

import trio

from kwire.codec.records import RecordBatch
from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.api_versions import disabled_apis
from kwire.handlers.group_lookup import group_denied
from kwire.quota import edge as quota_edge
from kwire.security.authorizer import TOPIC, allowed
from kwire.security.operations import AclOperation as Op
from kwire.share.manager import FINAL_EPOCH, INITIAL_EPOCH

E = ErrorCode
log = logging.getLogger("kwire.share")
#: ShareFetch v2's share_acquire_mode (KIP-1206): 0 batch_optimized (the default), 1 record_limit
SHARE_ACQUIRE_MODE_RECORD_LIMIT = 1


def _top_error(ctx: RequestContext, req) -> ErrorCode | None:
    if ctx.api.key in disabled_apis(ctx.broker.config):
        return E.UNSUPPORTED_VERSION
    if not req.group_id:
        return E.INVALID_GROUP_ID
    if not req.member_id:
        return E.UNKNOWN_MEMBER_ID
    if group_denied(ctx, req.group_id):
        return E.GROUP_AUTHORIZATION_FAILED
    return None


def _topic_error(ctx: RequestContext, topic_id) -> tuple[str | None, ErrorCode]:
    t = ctx.broker.image.topics_by_id.get(topic_id)
    if t is None:
        return None, E.UNKNOWN_TOPIC_ID
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.READ, TOPIC, t.name):
        return t.name, E.TOPIC_AUTHORIZATION_FAILED
    return t.name, E.NONE


def _named(req) -> set:
    return {(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions}


def _not_durable(acks: dict, group_id: str, failed: dict) -> None:
    """An acknowledgement whose state could not be written answers the write's error."""
    for (tid, p), (err, name) in list(acks.items()):
        if err == E.NONE and (e := failed.get((group_id, tid, p))) is not None:
            acks[(tid, p)] = (e, name)


def _acknowledge(ctx: RequestContext, req, session, topics) -> dict:
    """Apply the acknowledgement batches; {(topic id, partition): (error, name)}."""
    mgr = ctx.broker.share_partitions
    now = ctx.broker.clock.monotonic_ms()
    out = {}
    for t in topics:
        name, terr = _topic_error(ctx, t.topic_id)
        for p in t.partitions:
            if not p.acknowledgement_batches:
                continue
            key = (t.topic_id, p.partition_index)
            sp = mgr.get(req.group_id, t.topic_id, p.partition_index) if terr == E.NONE else None
            if terr != E.NONE:
                out[key] = (terr, name)
                continue
            if sp is None:
                out[key] = (E.INVALID_RECORD_STATE, name)
                continue
            err = E.NONE
            for ack in p.acknowledgement_batches:
                e = sp.acknowledge(req.member_id, ack.first_offset, ack.last_offset, list(ack.acknowledge_types), now)
                if e != E.NONE:
                    err = e
            mgr.changed(req.group_id, t.topic_id, p.partition_index)
            # released records may be taken by a waiting fetch of another member
            ctx.broker.replica_manager.fetch_waiters.wake((name, p.partition_index))
            out[key] = (err, name)
    return out


def _aborted_offsets(batches, aborted) -> set[int]:
    """The offsets of records of aborted transactions among ``batches`` (read_committed): a
    transactional batch of a producer whose aborted transaction began at or before it, until
    that producer's control marker (as a read_committed consumer filters them, Kafka's
    SharePartition.maybeFilterAbortedTransactionalAcquiredRecords)."""
    if not aborted:
        return set()
    pending = sorted(aborted, key=lambda t: t.first_offset)
    open_aborted: set[int] = set()
    out: set[int] = set()
    i = 0
    for bt in batches:
        while i < len(pending) and pending[i].first_offset <= bt.last_offset:
            open_aborted.add(pending[i].producer_id)
            i += 1
        if bt.is_control:
            open_aborted.discard(bt.producer_id)
        elif bt.is_transactional and bt.producer_id in open_aborted:
            out.update(range(bt.base_offset, bt.last_offset + 1))
    return out


def _prepare(ctx: RequestContext, req, tid, name: str, partition: int):
    """The leader checks and the share partition of one partition of the session: (error, share
    partition or None when nothing can be acquired now, fetch offset, leader epoch)."""
    b = ctx.broker
    rm, mgr = b.replica_manager, b.share_partitions
    now = b.clock.monotonic_ms()
    head = rm.read(name, partition, 0, 0, min_one=False)   # leader checks, high watermark, log start
    if head.error and head.error != E.OFFSET_OUT_OF_RANGE:
        return head.error, None, 0, head.leader_epoch
    if not b.share_state.ready(req.group_id, tid, partition):   # its state not read yet (no coordinator)
        return E.NONE, None, 0, head.leader_epoch
    sp = mgr.get_or_create(req.group_id, tid, partition, head.log_start_offset, head.high_watermark)
    before = (sp.version, sp.start_offset, sp.end_offset)   # lock expiries below count too
    if sp.start_offset < head.log_start_offset:
        log.info("share group %s: %s-%d starts again at the log start offset %d (was %d)", req.group_id,
                 name, partition, head.log_start_offset, sp.start_offset)
        sp.reset(head.log_start_offset)
    # read_committed: up to the last stable offset (an open transaction stalls delivery)
    limit = head.last_stable_offset if mgr.settings(req.group_id).read_committed else head.high_watermark
    ok = sp.can_acquire(now) and sp.fetch_offset(now) < limit
    if (sp.version, sp.start_offset, sp.end_offset) != before:
        mgr.changed(req.group_id, tid, partition)
    return E.NONE, (sp if ok else None), (sp.fetch_offset(now) if ok else 0), head.leader_epoch


def _acquire(ctx: RequestContext, req, tid, name: str, partition: int, sp, offset: int, max_records: int,
             max_bytes: int):
    """Acquire records of one partition from ``offset``: (error, records bytes, [AcquiredRecords],
    leader epoch)."""
    b = ctx.broker
    rm, mgr = b.replica_manager, b.share_partitions
    now = b.clock.monotonic_ms()
    read_committed = mgr.settings(req.group_id).read_committed
    # a plain acquisition is not written (Kafka's SharePartition.acquire calls no persister):
    # only what else the acquire did (locks expired, aborted records archived, start moved)
    before = (sp.durable_version, sp.start_offset)
    res = rm.read(name, partition, offset, max_bytes, min_one=True, read_committed=read_committed)
    if res.error:
        return res.error, b"", [], res.leader_epoch
    data = bytes(res.records) if res.size else b""
    batches = []
    pos = 0
    while pos + 61 <= len(data):
        try:
            batch = RecordBatch(data, pos)
        except Exception:   # a partial batch at the end of the read
            break
        if batch.end > len(data):
            break
        batches.append(batch)
        pos = batch.end
    offsets = [o for bt in batches if not bt.is_control
               for o in range(max(bt.base_offset, offset), bt.last_offset + 1)]
    read_end = batches[-1].last_offset + 1 if batches else None
    record_limit = getattr(req, "share_acquire_mode", 0) == SHARE_ACQUIRE_MODE_RECORD_LIMIT
    acquired = sp.acquire(req.member_id, offsets, max_records, now, read_end=read_end,
                          batch_starts=None if record_limit else {bt.base_offset for bt in batches},
                          batch_size=req.batch_size,
                          archive=_aborted_offsets(batches, res.aborted_transactions) if read_committed else set())
    if (sp.durable_version, sp.start_offset) != before:   # the durable form must follow
        mgr.changed(req.group_id, tid, partition)
    if not acquired:
        return E.NONE, b"", [], res.leader_epoch
    chosen = [bt for bt in batches if any(a.first_offset <= bt.last_offset and bt.base_offset <= a.last_offset
                                           for a in acquired)]
    out = b"".join(bytes(data[bt.pos:bt.end]) for bt in chosen)
    return E.NONE, out, acquired, res.leader_epoch


def _rotated(partitions: list, epoch: int) -> list:
    """The session's partitions in the order this request serves them: rotated by the session
    epoch (Kafka's PartitionRotateStrategy ROUND_ROBIN), so that with the record limit shared
    no partition is starved."""
    n = len(partitions)
    if n < 2 or epoch < 1 or epoch % n == 0:
        return list(partitions)
    k = epoch % n
    return list(partitions[k:]) + list(partitions[:k])


def _fetch_once(ctx: RequestContext, req, session, max_bytes: int) -> dict:
    """One pass over the session's partitions: {(topic id, partition): (error, name, records,
    [AcquiredRecords], leader epoch, share partition)} of those with an error or records."""
    fetched: dict = {}
    ready = []
    for tid, p in _rotated(session.partitions, req.share_session_epoch):
        name, terr = _topic_error(ctx, tid)
        if terr != E.NONE:
            fetched[(tid, p)] = (terr, name, b"", [], -1, None)
            continue
        e, sp, offset, lepoch = _prepare(ctx, req, tid, name, p)
        if e != E.NONE:
            fetched[(tid, p)] = (e, name, b"", [], lepoch, None)
        elif sp is not None:
            ready.append((tid, p, name, sp, offset))
    if not ready:
        return fetched
    # the request's max bytes spread evenly over the partitions that can be acquired (Kafka's
    # PartitionMaxBytesStrategy UNIFORM); each still reads at least one batch
    per_partition = max(1, max_bytes // len(ready))
    remaining = req.max_records if req.max_records > 0 else 500
    for tid, p, name, sp, offset in ready:
        if remaining <= 0:
            break
        e, data, acquired, lepoch = _acquire(ctx, req, tid, name, p, sp, offset, remaining, per_partition)
        if e != E.NONE or acquired:
            fetched[(tid, p)] = (e, name, data, acquired, lepoch, sp)
        remaining -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
    return fetched


def _leader(ctx: RequestContext, name: str | None, partition: int, epoch: int):
    L = ctx.struct("LeaderIdAndEpoch")
    t = ctx.broker.image.topics.get(name) if name else None
    p = t.partitions.get(partition) if t is not None else None
    if p is None:
        return L(leader_id=-1, leader_epoch=-1)
    return L(leader_id=p.leader, leader_epoch=p.leader_epoch if epoch < 0 else epoch)


@handles("ShareFetch", "1-2")
async def share_fetch(ctx: RequestContext, req):
    b = ctx.broker
    mgr = b.share_partitions
    lock_ms = mgr.settings(req.group_id or "").record_lock_duration_ms

    def answer(error, responses=(), message=None):
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=message,
                            acquisition_lock_timeout_ms=lock_ms, responses=list(responses), node_endpoints=[])

    err = _top_error(ctx, req)
    if err is not None:
        return answer(err)
    epoch = req.share_session_epoch
    if epoch == INITIAL_EPOCH and any(p.acknowledgement_batches for t in req.topics for p in t.partitions):
        return answer(E.INVALID_REQUEST, message="Acknowledge data present on initial fetch request")
    now = b.clock.monotonic_ms()
    err, session = mgr.session(req.group_id, req.member_id, epoch, now, opening=True)
    if err != E.NONE:
        return answer(err)
    await b.share_state.ensure_loaded(req.group_id, _named(req) | set(session.partitions),
                                      recheck=epoch == INITIAL_EPOCH)
    acks = _acknowledge(ctx, req, session, req.topics)
    if epoch == FINAL_EPOCH:
        mgr.close(session, now)
        for tid, p in session.partitions:
            t = b.image.topics_by_id.get(tid)
            if t is not None:
                b.replica_manager.fetch_waiters.wake((t.name, p))
        _not_durable(acks, req.group_id, await b.share_state.flush())
        return answer(E.NONE, _rows(ctx, acks, {}))
    session.add((t.topic_id, p.partition_index) for t in req.topics for p in t.partitions)
    session.forget((t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions)

    quotas = b.quotas if b.quotas.enabled else None
    max_bytes = req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF
    if quotas is not None:   # no more than one quota window's worth (consumer_byte_rate), as Fetch
        max_bytes = quota_edge.fetch_max_bytes(quotas, ctx, max_bytes)
    if req.max_bytes == 0:
        # nothing fits: Kafka answers at once with no partitions (PartitionMaxBytesStrategy
        # refuses a request max bytes of 0), the acknowledgements answered
        _not_durable(acks, req.group_id, await b.share_state.flush())
        return answer(E.NONE, _rows(ctx, acks, {}))
    member = (req.group_id, req.member_id)
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    while True:
        if mgr.sessions.get(member) is not session:
            # replaced (a new epoch 0 of the member), closed or evicted while this request
            # waited: it acquires nothing more for a session that is gone
            fetched = {}
            break
        fetched = _fetch_once(ctx, req, session, max_bytes)
        if fetched or req.max_wait_ms <= 0 or trio.current_time() >= deadline or not session.partitions:
            break
        wait_until = deadline
        locks = [d for tid, p in session.partitions
                 if (sp := mgr.get(req.group_id, tid, p)) is not None and (d := sp.next_lock_deadline()) is not None]
        next_lock = min(locks) if locks else None   # a lock of the session's partitions expiring
        if next_lock is not None:
            wait_until = min(wait_until, trio.current_time() + max(0, next_lock - b.clock.monotonic_ms()) / 1000)
        tps = [(t.name, p) for tid, p in session.partitions if (t := b.image.topics_by_id.get(tid)) is not None]
        await b.replica_manager.wait_for_data(tps, wait_until)
    # the acknowledgements answered are durable (or the acknowledgement fails), and whatever
    # else changed the durable form; a plain acquisition is not written (Kafka: neither)
    failed = await b.share_state.flush()
    _not_durable(acks, req.group_id, failed)
    out = {}
    order = {tp: i for i, tp in enumerate(session.partitions)}   # answered in session order, as Kafka
    for (tid, p), (e, name, data, acquired, lepoch, sp) in sorted(fetched.items(),
                                                                  key=lambda kv: order.get(kv[0], len(order))):
        if acquired and (failed.get((req.group_id, tid, p)) == E.FENCED_STATE_EPOCH
                         or mgr.get(req.group_id, tid, p) is not sp):
            # acquired from a share partition dropped while the state was written (fenced by
            # a state deleted / initialized elsewhere, or started over from a newer state
            # epoch): those records are not held there; the next fetch reads the state again
            data, acquired = b"", []
        out[(tid, p)] = (e, name, data, acquired, lepoch)
    if quotas is not None:
        # the fetch quota (consumer_byte_rate) and request_percentage, as Kafka's
        # KafkaApis.handleShareFetchRequest records them; the edge mutes a throttled connection
        total = sum(len(v[2]) for v in out.values())
        throttle = ctx.throttle_time_ms = quota_edge.fetch_quota(quotas, ctx, total, b.clock.now_ms())
        if throttle > 0:
            _release_undelivered(ctx, req, out)
            resp = answer(E.NONE, _rows(ctx, acks, {}))
            resp.throttle_time_ms = throttle
            return resp
    return answer(E.NONE, _rows(ctx, acks, out))


def _release_undelivered(ctx: RequestContext, req, out: dict) -> None:
    """A throttled answer carries no records (Kafka's throttled share fetch response): what was
    acquired for it goes back at once (acknowledged RELEASE for the member), instead of staying
    locked until the acquisition lock expires."""
    mgr = ctx.broker.share_partitions
    now = ctx.broker.clock.monotonic_ms()
    for (tid, p), (_e, name, _data, acquired, _lepoch) in out.items():
        sp = mgr.get(req.group_id, tid, p)
        if sp is None or not acquired:
            continue
        for a in acquired:
            sp.acknowledge(req.member_id, a.first_offset, a.last_offset, [2], now)   # RELEASE
        mgr.changed(req.group_id, tid, p)
        ctx.broker.replica_manager.fetch_waiters.wake((name, p))


def _rows(ctx: RequestContext, acks: dict, fetched: dict) -> list:
    T, PD, AR = ctx.struct("ShareFetchableTopicResponse"), ctx.struct("PartitionData"), ctx.struct("AcquiredRecords")
    by_topic: dict = {}
    for key in list(fetched) + [k for k in acks if k not in fetched]:
        tid, p = key
        e, name, data, acquired, lepoch = fetched.get(key, (E.NONE, acks.get(key, (E.NONE, None))[1], b"", [], -1))
        aerr = acks.get(key, (E.NONE, None))[0]
        pd = PD(partition_index=p, error_code=e, error_message=None, acknowledge_error_code=aerr,
                acknowledge_error_message=None, current_leader=_leader(ctx, name, p, lepoch), records=data,
                acquired_records=[AR(first_offset=a.first_offset, last_offset=a.last_offset,
                                     delivery_count=a.delivery_count) for a in acquired])
        t = by_topic.get(tid)
        if t is None:
            t = by_topic[tid] = T(topic_id=tid, partitions=[])
        t.partitions.append(pd)
    return list(by_topic.values())


@handles("ShareAcknowledge", "1-2")
async def share_acknowledge(ctx: RequestContext, req):
    b = ctx.broker
    mgr = b.share_partitions
    lock_ms = mgr.settings(req.group_id or "").record_lock_duration_ms

    def answer(error, responses=()):
        return ctx.response(throttle_time_ms=0, error_code=error, error_message=None,
                            acquisition_lock_timeout_ms=lock_ms, responses=list(responses), node_endpoints=[])

    err = _top_error(ctx, req)
    if err is not None:
        return answer(err)
    now = b.clock.monotonic_ms()
    err, session = mgr.session(req.group_id, req.member_id, req.share_session_epoch, now, opening=False)
    if err != E.NONE:
        return answer(err)
    await b.share_state.ensure_loaded(req.group_id, _named(req))
    acks = _acknowledge(ctx, req, session, req.topics)
    if req.share_session_epoch == FINAL_EPOCH:
        mgr.close(session, now)
    _not_durable(acks, req.group_id, await b.share_state.flush())
    T, PD = ctx.struct("ShareAcknowledgeTopicResponse"), ctx.struct("PartitionData")
    by_topic: dict = {}
    for (tid, p), (e, name) in acks.items():
        t = by_topic.get(tid)
        if t is None:
            t = by_topic[tid] = T(topic_id=tid, partitions=[])
        t.partitions.append(PD(partition_index=p, error_code=e, error_message=None,
                               current_leader=_leader(ctx, name, p, -1)))
    return answer(E.NONE, by_topic.values())
