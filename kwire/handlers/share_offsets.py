"""The share-group offsets admin APIs (KIP-932), as the Java Admin client uses them
(listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets):
DescribeShareGroupOffsets 0-1 (v1: the lag), AlterShareGroupOffsets 0, DeleteShareGroupOffsets 0.

Sent to the group's coordinator (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE /
COORDINATOR_LOAD_IN_PROGRESS as the other group APIs); a group that is not a share group
answers GROUP_ID_NOT_FOUND. The offsets are the share partitions' start offsets
(kwire.share.partition), read from this broker's share partitions and their recovered
durable state. Describe: -1 for a partition the group never read; the lag (v1, KIP-1226)
is the high watermark minus the start offset minus the records in flight already done.
Alter sets the start offset (in-flight state dropped) and Delete forgets the state of
whole topics (the next fetch starts from share.auto.offset.reset), both only on an empty
group (NON_EMPTY_GROUP otherwise), both written to ``__share_group_state`` before answering.
With an authorizer: DESCRIBE on the group and topics to describe, READ on the group to
alter / delete (GROUP_AUTHORIZATION_FAILED / TOPIC_AUTHORIZATION_FAILED).
Served while share.version is 1 (kwire.handlers.api_versions).

On a multi-broker cluster (kwire.share.state_admin), a partition led by another broker is
described from its share coordinator (ReadShareGroupStateSummary, one request per
coordinator), its lag from the partition's high watermark asked of its leader (ListOffsets
LATEST, as Kafka 4.3's group coordinator does; -1 when the leader cannot be asked); a describe
with no topics named asks the share coordinators about every partition of the
non-internal topics led elsewhere (Kafka's group coordinator knows which ones the group has
state for; kwire's does not keep that) and lists those with a state. Alter sends
InitializeShareGroupState (the new start offset at the next state epoch) and Delete
DeleteShareGroupState (an empty state at the next state epoch; for every partition of the
topic led elsewhere, as this broker holds no state of them) to the share coordinator;
the partition's leader is fenced by the state epoch (FENCED_STATE_EPOCH on its next write:
the records it acquired then are not delivered) and reads the state again. DeleteGroups of a
share group (kwire.handlers.groups) deletes the state of its partitions led elsewhere the same
way (``delete_group_state``: those with a state, found by summary).
"""
from __future__ import annotations

import logging
from uuid import UUID

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.api_versions import disabled_apis
from kwire.handlers.group_lookup import coordinator_for, group_denied, topic_denied
from kwire.security.operations import AclOperation as Op
from kwire.share import state_admin
from kwire.share.partition import DONE

E = ErrorCode
_ZERO = UUID(int=0)
log = logging.getLogger("kwire.share")


def _group_error(ctx: RequestContext, group_id: str, op: int, need_empty: bool = False):
    """(coordinator, None) or (None, error code, message)."""
    if ctx.api.key in disabled_apis(ctx.broker.config):
        return None, E.UNSUPPORTED_VERSION, None
    if group_denied(ctx, group_id, op):
        return None, E.GROUP_AUTHORIZATION_FAILED, None
    coord, err = coordinator_for(ctx, group_id)
    if coord is None:
        return None, err, None
    sg = coord.share_group(group_id)
    if sg is None:
        return None, E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    if need_empty and sg.members:
        return None, E.NON_EMPTY_GROUP, f"The group {group_id} has active members."
    return coord, None, None


def _partitions_of(ctx: RequestContext, group_id: str) -> dict:
    """{(topic id, partition): (start offset, done in flight)} of the group's share partitions
    this broker leads (the others: from their share coordinators)."""
    mgr, image, me = ctx.broker.share_partitions, ctx.broker.image, ctx.broker.node_id

    def led_here(tid, p) -> bool:
        t = image.topics_by_id.get(tid)
        return t is not None and p in t.partitions and t.partitions[p].leader == me

    out = {}
    for (gid, tid, p), (start, batches) in mgr.recovered.items():
        if gid == group_id and led_here(tid, p):
            done = sum(x.last_offset - x.first_offset + 1 for x in batches if x.delivery_state in (2, 4))
            out[(tid, p)] = (start, done)
    for (tid, p), sp in mgr.group_partitions(group_id).items():
        if not led_here(tid, p):
            continue
        out[(tid, p)] = (sp.start_offset, sum(1 for r in sp.records.values() if r.state in DONE))
    return out


async def _from_share_coordinators(ctx: RequestContext, group_id: str, tps) -> dict:
    """{(topic id, partition): (start offset, done in flight)} of share partitions led by
    other brokers, as their share coordinators hold them (ReadShareGroupStateSummary);
    (-1, 0) when never written, deleted, or not readable now."""
    sums = await state_admin.summaries(ctx.broker.share_state, group_id, tps)
    return {tp: ((start, done) if err == E.NONE and start >= 0 else (-1, 0))
            for tp, (err, _, start, done) in sums.items()}


def _all_partitions(ctx: RequestContext, state: dict) -> list:
    """Every partition of the non-internal topics not in ``state``, led by another broker."""
    me = ctx.broker.node_id
    return [(t.topic_id, p) for name, t in ctx.broker.image.topics.items() if not name.startswith("__")
            for p, part in t.partitions.items() if (t.topic_id, p) not in state and part.leader != me]


async def delete_group_state(ctx: RequestContext, group_id: str) -> None:
    """DeleteGroups of a share group: the state of its share partitions led by other brokers is
    deleted at their share coordinators too, as Kafka's group coordinator deletes every share
    partition's state (the ones this broker holds go with the group: GroupEdge's
    _share_group_deleted). Which partitions have state is asked by summary, one request per
    share coordinator, as DescribeShareGroupOffsets of all topics asks; the deletes bump the
    state epoch, so those partitions' leaders read the (empty) state again."""
    remote = await _from_share_coordinators(ctx, group_id, _all_partitions(ctx, {}))
    store = ctx.broker.share_state
    for (tid, p), (start, _done) in remote.items():
        if start >= 0:
            store.mark_deleted(group_id, tid, p)
    await store.flush()


async def _latest_offsets(ctx: RequestContext, tps: list) -> dict:
    """{(topic, partition): high watermark} for the lag: this broker's for the partitions it
    leads, the others' from their leaders by ListOffsets (LATEST, read_uncommitted), one
    request per leader, as Kafka's group coordinator asks (KIP-1226, PartitionMetadataClient);
    a leader that cannot be asked leaves its partitions out (lag -1)."""
    b = ctx.broker
    out: dict = {}
    remote: dict[int, list] = {}
    for name, p in tps:
        part = b.image.topics[name].partitions[p]
        if part.leader == b.node_id:
            head = b.replica_manager.read(name, p, 0, 0, min_one=False)
            if not head.error and head.high_watermark >= 0:
                out[(name, p)] = head.high_watermark
        elif part.leader is not None and part.leader >= 0:
            remote.setdefault(part.leader, []).append((name, p))
    R = api("ListOffsets").request
    for node, parts in remote.items():
        topics: dict[str, list] = {}
        for name, p in parts:
            topics.setdefault(name, []).append(R.struct("ListOffsetsPartition")(
                partition_index=p, current_leader_epoch=-1, timestamp=-1))
        req = R.cls(replica_id=-1, isolation_level=0, timeout_ms=int(b.config.get("request.timeout.ms")),
                    topics=[R.struct("ListOffsetsTopic")(name=n, partitions=ps) for n, ps in topics.items()])
        try:
            resp = await b.share_state.channel.request(node, "ListOffsets", 7, req)
        except Exception as exc:  # noqa: BLE001 - unreachable, timed out, a bad answer
            log.info("share offsets: ListOffsets to broker %d for the lag failed: %s", node, exc)
            continue
        for t in resp.topics:
            for pr in t.partitions:
                if pr.error_code == 0 and pr.offset >= 0:
                    out[(t.name, pr.partition_index)] = pr.offset
    return out


@handles("DescribeShareGroupOffsets", "0-1")
async def describe_share_group_offsets(ctx: RequestContext, req):
    G, T = ctx.struct("DescribeShareGroupOffsetsResponseGroup"), ctx.struct("DescribeShareGroupOffsetsResponseTopic")
    P = ctx.struct("DescribeShareGroupOffsetsResponsePartition")
    image = ctx.broker.image
    out = []
    for g in req.groups:
        coord, err, msg = _group_error(ctx, g.group_id, Op.DESCRIBE)
        if coord is None:
            out.append(G(group_id=g.group_id, topics=[], error_code=err, error_message=msg))
            continue
        state = _partitions_of(ctx, g.group_id)
        if g.topics is None:   # every topic the group has state for, here or at a share coordinator
            remote = await _from_share_coordinators(ctx, g.group_id, _all_partitions(ctx, state))
            state.update({tp: v for tp, v in remote.items() if v[0] >= 0})
            wanted: dict[str, list[int]] = {}
            for tid, p in sorted(state, key=lambda k: (str(k[0]), k[1])):
                t = image.topics_by_id.get(tid)
                if t is not None:
                    wanted.setdefault(t.name, []).append(p)
        else:
            wanted = {t.topic_name: list(t.partitions) for t in g.topics}
            elsewhere = [(t.topic_id, p) for name, parts in wanted.items() if (t := image.topics.get(name)) is not None
                         for p in parts if p in t.partitions and (t.topic_id, p) not in state
                         and t.partitions[p].leader != ctx.broker.node_id]
            if elsewhere:
                state.update(await _from_share_coordinators(ctx, g.group_id, elsewhere))
        latest = await _latest_offsets(ctx, [(name, p) for name, parts in wanted.items() for p in parts
                                            if (t := image.topics.get(name)) is not None and p in t.partitions
                                            and state.get((t.topic_id, p), (-1, 0))[0] >= 0]) \
            if ctx.version >= 1 else {}
        topics = []
        for name, parts in wanted.items():
            t = image.topics.get(name)
            denied = topic_denied(ctx, name, Op.DESCRIBE)
            rows = []
            for p in parts:
                if t is None or p not in t.partitions or denied:
                    code = E.TOPIC_AUTHORIZATION_FAILED if denied else E.UNKNOWN_TOPIC_OR_PARTITION
                    rows.append(P(partition_index=p, start_offset=-1, leader_epoch=-1, error_code=code))
                    continue
                start, done = state.get((t.topic_id, p), (-1, 0))
                lag = -1
                if start >= 0 and (hw := latest.get((name, p), -1)) >= 0:
                    lag = max(0, hw - start - done)
                rows.append(P(partition_index=p, start_offset=start, leader_epoch=t.partitions[p].leader_epoch,
                              lag=lag, error_code=0))
            topics.append(T(topic_name=name, topic_id=t.topic_id if t is not None else _ZERO, partitions=rows))
        out.append(G(group_id=g.group_id, topics=topics, error_code=0))
    return ctx.response(throttle_time_ms=0, groups=out)


@handles("AlterShareGroupOffsets", "0")
async def alter_share_group_offsets(ctx: RequestContext, req):
    T, P = ctx.struct("AlterShareGroupOffsetsResponseTopic"), ctx.struct("AlterShareGroupOffsetsResponsePartition")
    coord, err, msg = _group_error(ctx, req.group_id, Op.READ, need_empty=True)
    image, mgr, rm = ctx.broker.image, ctx.broker.share_partitions, ctx.broker.replica_manager
    elsewhere: dict = {}   # (topic id, partition) -> start offset, led by another broker
    out = []
    for t in req.topics:
        ti = image.topics.get(t.topic_name)
        denied = topic_denied(ctx, t.topic_name, Op.READ)
        rows = []
        for p in t.partitions:
            code = err
            if code is None:
                if denied:
                    code = E.TOPIC_AUTHORIZATION_FAILED
                elif ti is None or p.partition_index not in ti.partitions:
                    code = E.UNKNOWN_TOPIC_OR_PARTITION
                elif ti.partitions[p.partition_index].leader != ctx.broker.node_id:
                    head = rm.read(t.topic_name, p.partition_index, 0, 0, min_one=False)   # a replica here?
                    start = max(p.start_offset, head.log_start_offset) if head.high_watermark >= 0 else p.start_offset
                    elsewhere[(ti.topic_id, p.partition_index)] = max(start, 0)
                    code = None   # answered below
                else:
                    head = rm.read(t.topic_name, p.partition_index, 0, 0, min_one=False)
                    if head.high_watermark < 0:
                        code = ErrorCode(head.error) if head.error else E.NOT_LEADER_OR_FOLLOWER
                    else:
                        sp = mgr.get_or_create(req.group_id, ti.topic_id, p.partition_index,
                                               head.log_start_offset, head.high_watermark)
                        sp.reset(max(p.start_offset, head.log_start_offset))
                        mgr.changed(req.group_id, ti.topic_id, p.partition_index)
                        code = E.NONE
            rows.append(P(partition_index=p.partition_index, error_code=code, error_message=None))
        out.append(T(topic_name=t.topic_name, topic_id=ti.topic_id if ti is not None else _ZERO, partitions=rows))
    if elsewhere:   # InitializeShareGroupState at their share coordinators: their leaders are fenced
        done = await state_admin.initialize(ctx.broker.share_state, req.group_id, elsewhere)
        for t in out:
            for row in t.partitions:
                if row.error_code is None:
                    perr = done.get((t.topic_id, row.partition_index), E.UNKNOWN_SERVER_ERROR)
                    row.error_code = perr
                    row.error_message = None if perr == E.NONE else ErrorCode(perr).name
    await ctx.broker.share_state.flush()
    return ctx.response(throttle_time_ms=0, error_code=err or 0, error_message=msg, responses=out)


@handles("DeleteShareGroupOffsets", "0")
async def delete_share_group_offsets(ctx: RequestContext, req):
    T = ctx.struct("DeleteShareGroupOffsetsResponseTopic")
    coord, err, msg = _group_error(ctx, req.group_id, Op.READ, need_empty=True)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=err, error_message=msg, responses=[])
    image, mgr = ctx.broker.image, ctx.broker.share_partitions
    out = []
    for t in req.topics:
        ti = image.topics.get(t.topic_name)
        if ti is None:
            out.append(T(topic_name=t.topic_name, topic_id=_ZERO, error_code=E.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        if topic_denied(ctx, t.topic_name, Op.READ):
            out.append(T(topic_name=t.topic_name, topic_id=ti.topic_id, error_code=E.TOPIC_AUTHORIZATION_FAILED))
            continue
        for p, part in ti.partitions.items():
            if not mgr.remove(req.group_id, ti.topic_id, p) and part.leader != ctx.broker.node_id:
                ctx.broker.share_state.mark_deleted(req.group_id, ti.topic_id, p)   # its state is elsewhere
        out.append(T(topic_name=t.topic_name, topic_id=ti.topic_id, error_code=0))
    await ctx.broker.share_state.flush()
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, responses=out)

