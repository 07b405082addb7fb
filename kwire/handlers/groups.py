"""Group APIs, answered by the group coordinator (kwire.groups, wired in kwire.groups.edge):
FindCoordinator 0-5 (batched coordinator_keys from v4), JoinGroup 0-9, SyncGroup 0-5,
Heartbeat 0-4, LeaveGroup 0-5 (batched from v3), OffsetCommit 2-9, OffsetFetch 1-9 (several
groups from v8), DescribeGroups 0-5, ListGroups 0-4 (state filter from v4), DeleteGroups 0-2,
OffsetDelete 0.

This single broker coordinates every group. Left out: transactions (FindCoordinator for a
transactional id answers COORDINATOR_NOT_AVAILABLE until they exist, so require_stable has no
pending commits to wait for); ACLs (authorized operations reported as "not requested");
KIP-848 member epochs (OffsetFetch v9's member id/epoch are ignored). Before the coordinator
is open (or on a server built without it) every group API answers COORDINATOR_NOT_AVAILABLE.
Handlers wait on the coordinator's ``Pending`` answers with a trio.Event.
"""
from __future__ import annotations

import trio

from kwire.errors import ErrorCode
from kwire.groups.pending import Pending
from kwire.handlers import RequestContext, handles

E = ErrorCode
NOT_AVAILABLE = E.COORDINATOR_NOT_AVAILABLE


async def _wait(p: Pending):
    if not p.done:
        ev = trio.Event()
        p.add_done_callback(lambda _p: ev.set())
        await ev.wait()
    return p.result


def _coordinator(ctx: RequestContext):
    return getattr(ctx.broker, "groups", None)


def _client_host(ctx: RequestContext) -> str:
    host = ctx.peer.rpartition(":")[0] if ":" in ctx.peer else ctx.peer
    return "/" + host


def _client_id(ctx: RequestContext) -> str:
    return ctx.header.client_id or ""


# ============================================================================ FindCoordinator
@handles("FindCoordinator", "0-5")
async def find_coordinator(ctx: RequestContext, req):
    b = ctx.broker
    v = ctx.version
    ready = _coordinator(ctx) is not None

    def answer(key_type: int) -> tuple[int, str | None]:
        if key_type == 1:
            return NOT_AVAILABLE, "Transactions are not supported by this broker yet."
        if key_type != 0:
            return E.INVALID_REQUEST, f"Unknown coordinator key type {key_type}."
        if not ready:
            return NOT_AVAILABLE, "The group coordinator is not available."
        return E.NONE, None

    if v < 4:
        err, msg = answer(req.key_type if v >= 1 else 0)
        if err:
            return ctx.response(throttle_time_ms=0, error_code=err, error_message=msg,
                                node_id=-1, host="", port=-1)
        return ctx.response(throttle_time_ms=0, error_code=0, error_message=None,
                            node_id=b.node_id, host=b.advertised_host, port=b.advertised_port)
    C = ctx.struct("Coordinator")
    out = []
    for key in req.coordinator_keys:
        err, msg = answer(req.key_type)
        if err:
            out.append(C(key=key, node_id=-1, host="", port=-1, error_code=err, error_message=msg))
        else:
            out.append(C(key=key, node_id=b.node_id, host=b.advertised_host,
                         port=b.advertised_port, error_code=0, error_message=None))
    return ctx.response(throttle_time_ms=0, coordinators=out)


# ============================================================================ JoinGroup
@handles("JoinGroup", "0-9")
async def join_group(ctx: RequestContext, req):
    v = ctx.version
    coord = _coordinator(ctx)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=NOT_AVAILABLE, generation_id=-1,
                            protocol_type=None, protocol_name=None if v >= 7 else "",
                            leader="", member_id=req.member_id, members=[])
    p = coord.join_group(
        req.group_id, req.member_id, protocol_type=req.protocol_type,
        protocols=[(pr.name, pr.metadata) for pr in req.protocols],
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 else -1,
        group_instance_id=req.group_instance_id, client_id=_client_id(ctx),
        client_host=_client_host(ctx),
        require_known_member_id=v >= 4 and req.group_instance_id is None,
        supports_skip_assignment=v >= 9, reason=req.reason)
    r = await _wait(p)
    M = ctx.struct("JoinGroupResponseMember")
    members = [M(member_id=m.member_id, group_instance_id=m.group_instance_id,
                 metadata=m.metadata) for m in r.members]
    name = r.protocol_name
    if name is None and v < 7:
        name = ""
    return ctx.response(throttle_time_ms=0, error_code=r.error, generation_id=r.generation_id,
                        protocol_type=r.protocol_type, protocol_name=name, leader=r.leader,
                        skip_assignment=r.skip_assignment, member_id=r.member_id,
                        members=members)


# ============================================================================ SyncGroup
@handles("SyncGroup", "0-5")
async def sync_group(ctx: RequestContext, req):
    coord = _coordinator(ctx)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=NOT_AVAILABLE, assignment=b"")
    p = coord.sync_group(
        req.group_id, req.generation_id, req.member_id,
        assignments=[(a.member_id, a.assignment) for a in req.assignments],
        group_instance_id=req.group_instance_id, protocol_type=req.protocol_type,
        protocol_name=req.protocol_name)
    r = await _wait(p)
    return ctx.response(throttle_time_ms=0, error_code=r.error, protocol_type=r.protocol_type,
                        protocol_name=r.protocol_name, assignment=r.assignment or b"")


# ============================================================================ Heartbeat
@handles("Heartbeat", "0-4")
async def heartbeat(ctx: RequestContext, req):
    coord = _coordinator(ctx)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=NOT_AVAILABLE)
    err = coord.heartbeat(req.group_id, req.generation_id, req.member_id, req.group_instance_id)
    return ctx.response(throttle_time_ms=0, error_code=err)


# ============================================================================ LeaveGroup
@handles("LeaveGroup", "0-5")
async def leave_group(ctx: RequestContext, req):
    v = ctx.version
    coord = _coordinator(ctx)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=NOT_AVAILABLE, members=[])
    if v < 3:
        r = coord.leave_group(req.group_id, [(req.member_id, None)])
        err = r.error if r.error or not r.members else r.members[0].error
        return ctx.response(throttle_time_ms=0, error_code=err, members=[])
    r = coord.leave_group(req.group_id, [(m.member_id, m.group_instance_id) for m in req.members])
    M = ctx.struct("MemberResponse")
    return ctx.response(throttle_time_ms=0, error_code=r.error, members=[
        M(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=m.error)
        for m in r.members])


# ============================================================================ OffsetCommit
@handles("OffsetCommit", "2-9")
async def offset_commit(ctx: RequestContext, req):
    coord = _coordinator(ctx)
    image = ctx.broker.image
    T = ctx.struct("OffsetCommitResponseTopic")
    Pn = ctx.struct("OffsetCommitResponsePartition")
    top_error = None
    if coord is None:
        top_error = NOT_AVAILABLE
    elif not req.group_id:
        top_error = E.INVALID_GROUP_ID
    errors: dict[tuple[str, int], int] = {}
    valid = []
    for t in req.topics:
        topic = image.topics.get(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if top_error is not None:
                errors[tp] = top_error
            elif topic is None or p.partition_index not in topic.partitions:
                errors[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                valid.append((t.name, p.partition_index, p.committed_offset,
                              p.committed_leader_epoch, p.committed_metadata))
    if valid:
        pend = coord.commit_offsets(
            req.group_id, req.generation_id_or_member_epoch, req.member_id, valid,
            group_instance_id=req.group_instance_id,
            retention_ms=req.retention_time_ms if ctx.version <= 4 else -1)
        r = await _wait(pend)
        errors.update(r.errors)
    out = []
    for t in req.topics:
        out.append(T(name=t.name, partitions=[
            Pn(partition_index=p.partition_index,
               error_code=errors.get((t.name, p.partition_index), E.NONE))
            for p in t.partitions]))
    return ctx.response(throttle_time_ms=0, topics=out)


# ============================================================================ OffsetFetch
def _fetch_group(coord, group_id: str, topics, require_stable: bool):
    """(group error, {(topic, partition): FetchedOffset}) with ``topics`` None for all."""
    if coord is None:
        return NOT_AVAILABLE, {}
    if not group_id:
        return E.INVALID_GROUP_ID, {}
    parts = None if topics is None else \
        [(t.name, i) for t in topics for i in t.partition_indexes]
    r = coord.fetch_offsets(group_id, parts, require_stable)
    return r.error, r.offsets


def _by_topic(offsets) -> dict[str, list]:
    out: dict[str, list] = {}
    for (t, p), fo in offsets.items():
        out.setdefault(t, []).append((p, fo))
    return out


@handles("OffsetFetch", "1-9")
async def offset_fetch(ctx: RequestContext, req):
    v = ctx.version
    coord = _coordinator(ctx)
    if v < 8:
        T = ctx.struct("OffsetFetchResponseTopic")
        Pn = ctx.struct("OffsetFetchResponsePartition")
        err, offsets = _fetch_group(coord, req.group_id, req.topics,
                                    req.require_stable if v >= 7 else False)
        topics = []
        if err and v < 2 and req.topics:
            # v1 has no top-level error: report it on every partition asked for
            offsets = {(t.name, i): None for t in req.topics for i in t.partition_indexes}
        for name, parts in _by_topic(offsets).items():
            topics.append(T(name=name, partitions=[
                Pn(partition_index=p, committed_offset=-1 if fo is None else fo.offset,
                   committed_leader_epoch=-1 if fo is None else fo.leader_epoch,
                   metadata="" if fo is None else fo.metadata,
                   error_code=err if fo is None else fo.error)
                for p, fo in parts]))
        return ctx.response(throttle_time_ms=0, topics=topics, error_code=err)
    G = ctx.struct("OffsetFetchResponseGroup")
    T = ctx.struct("OffsetFetchResponseTopics")
    Pn = ctx.struct("OffsetFetchResponsePartitions")
    groups = []
    for g in req.groups:
        err, offsets = _fetch_group(coord, g.group_id, g.topics, req.require_stable)
        topics = [T(name=name, partitions=[
            Pn(partition_index=p, committed_offset=fo.offset,
               committed_leader_epoch=fo.leader_epoch, metadata=fo.metadata,
               error_code=fo.error) for p, fo in parts])
            for name, parts in _by_topic(offsets).items()]
        groups.append(G(group_id=g.group_id, topics=topics, error_code=err))
    return ctx.response(throttle_time_ms=0, groups=groups)


# ============================================================================ DescribeGroups
@handles("DescribeGroups", "0-5")
async def describe_groups(ctx: RequestContext, req):
    coord = _coordinator(ctx)
    G = ctx.struct("DescribedGroup")
    M = ctx.struct("DescribedGroupMember")
    if coord is None:
        return ctx.response(throttle_time_ms=0, groups=[
            G(error_code=NOT_AVAILABLE, group_id=gid, group_state="", protocol_type="",
              protocol_data="", members=[]) for gid in req.groups])
    out = []
    for d in coord.describe_groups(req.groups):
        err = d.error
        if err == E.GROUP_ID_NOT_FOUND and ctx.version < 6:
            err = E.NONE  # Kafka answers an unknown group as Dead without error below v6
        out.append(G(error_code=err, group_id=d.group_id, group_state=d.state,
                     protocol_type=d.protocol_type, protocol_data=d.protocol,
                     members=[M(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                client_id=m.client_id, client_host=m.client_host,
                                member_metadata=m.metadata, member_assignment=m.assignment)
                              for m in d.members]))
    return ctx.response(throttle_time_ms=0, groups=out)


# ============================================================================ ListGroups
@handles("ListGroups", "0-4")
async def list_groups(ctx: RequestContext, req):
    coord = _coordinator(ctx)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=NOT_AVAILABLE, groups=[])
    L = ctx.struct("ListedGroup")
    states = req.states_filter if ctx.version >= 4 else None
    return ctx.response(throttle_time_ms=0, error_code=0, groups=[
        L(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state)
        for g in coord.list_groups(states)])


# ============================================================================ DeleteGroups
@handles("DeleteGroups", "0-2")
async def delete_groups(ctx: RequestContext, req):
    coord = _coordinator(ctx)
    R = ctx.struct("DeletableGroupResult")
    if coord is None:
        return ctx.response(throttle_time_ms=0, results=[
            R(group_id=g, error_code=NOT_AVAILABLE) for g in req.groups_names])
    result = await _wait(coord.delete_groups(req.groups_names))
    return ctx.response(throttle_time_ms=0, results=[
        R(group_id=g, error_code=result.get(g, E.NONE)) for g in req.groups_names])


# ============================================================================ OffsetDelete
@handles("OffsetDelete", "0")
async def offset_delete(ctx: RequestContext, req):
    coord = _coordinator(ctx)
    T = ctx.struct("OffsetDeleteResponseTopic")
    Pn = ctx.struct("OffsetDeleteResponsePartition")
    if coord is None:
        return ctx.response(error_code=NOT_AVAILABLE, throttle_time_ms=0, topics=[])
    image = ctx.broker.image
    errors: dict[tuple[str, int], int] = {}
    valid = []
    for t in req.topics:
        topic = image.topics.get(t.name)
        for p in t.partitions:
            if topic is None or p.partition_index not in topic.partitions:
                errors[(t.name, p.partition_index)] = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                valid.append((t.name, p.partition_index))
    r = await _wait(coord.delete_offsets(req.group_id, valid))
    if r.error:
        return ctx.response(error_code=r.error, throttle_time_ms=0, topics=[])
    errors.update(r.partitions)
    return ctx.response(error_code=0, throttle_time_ms=0, topics=[
        T(name=t.name, partitions=[
            Pn(partition_index=p.partition_index,
               error_code=errors.get((t.name, p.partition_index), E.NONE))
            for p in t.partitions]) for t in req.topics])
