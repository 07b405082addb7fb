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
3. unless closing: records are acquired for the member in every partition of its session, at
   most ``max_records`` in all (the share partition's first available offset onwards, read
   up to the high watermark within ``max_bytes``; the whole batches holding them are sent,
   with the acquired offset ranges and their delivery counts); when none can be had, the
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

Left out: ``node_endpoints`` of other leaders (the client asks Metadata again after
NOT_LEADER_OR_FOLLOWER), read_committed share groups (share.isolation.level: records are read
up to the high watermark, control batches skipped), the record-limit acquire mode's strict
batch alignment (``max_records`` is always a hard limit here), quotas and throttling.
"""
from __future__ import annotations

import logging

import trio

from kwire.codec.records import RecordBatch
from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.api_versions import disabled_apis
from kwire.handlers.groups import _group_denied
from kwire.security.authorizer import TOPIC, allowed
from kwire.security.operations import AclOperation as Op
from kwire.share.manager import FINAL_EPOCH, INITIAL_EPOCH

E = ErrorCode
log = logging.getLogger("kwire.share")


def _top_error(ctx: RequestContext, req) -> ErrorCode | None:
    if ctx.api.key in disabled_apis(ctx.broker.config):
        return E.UNSUPPORTED_VERSION
    if not req.group_id:
        return E.INVALID_GROUP_ID
    if not req.member_id:
        return E.UNKNOWN_MEMBER_ID
    if _group_denied(ctx, req.group_id):
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


def _acquire(ctx: RequestContext, req, tid, name: str, partition: int, max_records: int, max_bytes: int):
    """Acquire records of one partition: (error, records bytes, [AcquiredRecords], leader epoch, size)."""
    b = ctx.broker
    rm, mgr = b.replica_manager, b.share_partitions
    now = b.clock.monotonic_ms()
    head = rm.read(name, partition, 0, 0, min_one=False)   # leader checks, high watermark, log start
    if head.error and head.error != E.OFFSET_OUT_OF_RANGE:
        return head.error, b"", [], head.leader_epoch, 0
    if not b.share_state.ready(req.group_id, tid, partition):   # its state not read yet (no coordinator)
        return E.NONE, b"", [], head.leader_epoch, 0
    sp = mgr.get_or_create(req.group_id, tid, partition, head.log_start_offset, head.high_watermark)
    before = (sp.version, sp.start_offset, sp.end_offset)   # lock expiries below count too
    if sp.start_offset < head.log_start_offset:
        log.info("share group %s: %s-%d starts again at the log start offset %d (was %d)", req.group_id,
                 name, partition, head.log_start_offset, sp.start_offset)
        sp.reset(head.log_start_offset)
    if not sp.can_acquire(now) or sp.fetch_offset(now) >= head.high_watermark:
        if (sp.version, sp.start_offset, sp.end_offset) != before:
            mgr.changed(req.group_id, tid, partition)
        return E.NONE, b"", [], head.leader_epoch, 0
    offset = sp.fetch_offset(now)
    res = rm.read(name, partition, offset, max_bytes, min_one=True)
    if res.error:
        if (sp.version, sp.start_offset, sp.end_offset) != before:
            mgr.changed(req.group_id, tid, partition)
        return res.error, b"", [], res.leader_epoch, 0
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
    acquired = sp.acquire(req.member_id, offsets, max_records, now, read_end=read_end)
    if (sp.version, sp.start_offset, sp.end_offset) != before:   # the durable form must follow
        mgr.changed(req.group_id, tid, partition)
    if not acquired:
        return E.NONE, b"", [], res.leader_epoch, 0
    chosen = [bt for bt in batches if any(a.first_offset <= bt.last_offset and bt.base_offset <= a.last_offset
                                           for a in acquired)]
    out = b"".join(bytes(data[bt.pos:bt.end]) for bt in chosen)
    return E.NONE, out, acquired, res.leader_epoch, len(out)


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

    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    while True:
        fetched: dict = {}
        remaining_records = req.max_records if req.max_records > 0 else 500
        remaining_bytes = req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF
        for tid, p in list(session.partitions):
            if remaining_records <= 0 or remaining_bytes <= 0:
                break
            name, terr = _topic_error(ctx, tid)
            if terr != E.NONE:
                fetched[(tid, p)] = (terr, name, b"", [], -1)
                continue
            e, data, acquired, lepoch, size = _acquire(ctx, req, tid, name, p, remaining_records, remaining_bytes)
            if e != E.NONE or acquired:
                fetched[(tid, p)] = (e, name, data, acquired, lepoch)
            remaining_records -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
            remaining_bytes -= size
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
    # the acknowledgements and acquisitions answered are durable (or the acknowledgement fails)
    failed = await b.share_state.flush()
    _not_durable(acks, req.group_id, failed)
    for (tid, p), (e, name, data, acquired, lepoch) in list(fetched.items()):
        if failed.get((req.group_id, tid, p)) == E.FENCED_STATE_EPOCH:
            # acquired from a state the share coordinator replaced (deleted / initialized
            # elsewhere): not delivered; the next fetch reads the state again
            fetched[(tid, p)] = (E.NONE, name, b"", [], lepoch)
    return answer(E.NONE, _rows(ctx, acks, fetched))


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
