"""Group APIs, answered by the group coordinator (kwire.groups, wired in kwire.groups.edge):
FindCoordinator 0-6 (batched coordinator_keys from v4), JoinGroup 0-9, SyncGroup 0-5,
Heartbeat 0-4, LeaveGroup 0-5 (batched from v3), OffsetCommit 0-10, OffsetFetch 0-10 (several
groups from v8; both name topics by id from v10: an id the metadata image does not know is
UNKNOWN_TOPIC_ID for its partitions, and a fetch of all topics leaves out the committed offsets
of topics that no longer exist, which have no id), DescribeGroups 0-6 (v6: error message), ListGroups 0-5 (state filter from v4, type filter from v5:
"classic" or "consumer"), DeleteGroups 0-2, OffsetDelete 0.

A group is coordinated by the leader of its ``__consumer_offsets`` partition (FindCoordinator
names it; other brokers answer NOT_COORDINATOR, so clients rediscover it); a new leader
answers COORDINATOR_LOAD_IN_PROGRESS while it loads the partition (ListGroups too, with the
groups it has; as from Kafka, a Heartbeat gets NONE meanwhile and a SyncGroup
REBALANCE_IN_PROGRESS, so members rejoin here without rediscovering the coordinator). DescribeGroups
reports authorized operations when asked (without an authorizer: all a group supports).
With an authorizer (kwire.security.authorizer), as Kafka: FindCoordinator needs DESCRIBE on the
group (or transactional id); Join/Sync/Heartbeat/Leave and OffsetCommit READ on the group,
OffsetCommit READ on each topic; OffsetFetch and DescribeGroups DESCRIBE on the group (and
topics: others are left out of an all-topics fetch, TOPIC_AUTHORIZATION_FAILED when named);
ListGroups lists only groups the principal may DESCRIBE (all with DESCRIBE on the cluster);
DeleteGroups and OffsetDelete need DELETE on the group. GROUP_AUTHORIZATION_FAILED otherwise.
FindCoordinator key type 1 names a transaction coordinator (kwire.handlers.transactions), key
type 2 (v6+) a share coordinator (the leader of the ``__share_group_state`` partition of
"group:topicId:partition"; kwire.share.state_store).
The first FindCoordinator of a group creates ``__consumer_offsets`` (kwire.groups.edge), as Kafka.
OffsetFetch with require_stable (v7+) answers UNSTABLE_OFFSET_COMMIT for a partition with a
transactional offset commit still open (TxnOffsetCommit, kwire.handlers.txn_offset_commit).
KIP-848 consumer groups (kwire.handlers.consumer_groups): OffsetCommit (and TxnOffsetCommit) checks
the member epoch as Kafka 4.3 does (KIP-1251: the member epoch, or an older one no older than each
committed partition's assignment epoch; else STALE_MEMBER_EPOCH, ILLEGAL_GENERATION for a classic
member; UNKNOWN_MEMBER_ID; UNSUPPORTED_VERSION below v9 for their members), OffsetFetch
v9 the member id and epoch it names; ListGroups shows them with type and protocol type "consumer";
DescribeGroups answers them Dead with GROUP_ID_NOT_FOUND below v6 turned NONE, as Kafka;
from v6 with Kafka's message ("Group g is not a classic group.", "Group g not found.").
OffsetCommit v0 and OffsetFetch v0 kept offsets in ZooKeeper: a Kafka 3.x KRaft broker answers
them UNSUPPORTED_VERSION ("Unsupported when using a Raft-based metadata quorum"), for every
partition, once any named partition exists and may be read, and so does kwire. OffsetCommit v1's
per-partition commit_timestamp is ignored (it only dated the commit for expiry; kwire dates
commits by its clock, as Kafka does for -1). Before the coordinator
is open (or on a server built without it) every group API answers COORDINATOR_NOT_AVAILABLE.
Handlers wait on the coordinator's ``Pending`` answers with ``await p.wait()``.
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.internal_topics import OFFSETS_TOPIC
from kwire.handlers import RequestContext, handles
from kwire.handlers.group_lookup import (CREATE_WAIT_S, NOT_AVAILABLE, client_host, client_id, coordinator_for,
                                        ensure_offsets_topic, group_coordinator, group_coordinator_node,
                                        group_denied, topic_denied)
from kwire.handlers.transactions import ensure_transaction_topic, transaction_coordinator_node
from kwire.security.authorizer import (
    CLUSTER, CLUSTER_NAME, GROUP, TOPIC, TRANSACTIONAL_ID, allowed, denied_message, operations_field,
)
from kwire.security.operations import AclOperation as Op

E = ErrorCode
CLASSIC_GROUP_TYPE = "classic"


# ============================================================================ FindCoordinator
def _share_coordinator_node(ctx: RequestContext, key: str):
    """Key type 2 (KIP-932, v6+): the share coordinator of the share partition
    "group:topicId:partition", the leader of its ``__share_group_state`` partition (not
    created here: COORDINATOR_NOT_AVAILABLE until the first write made it, as Kafka).
    CLUSTER_ACTION on the cluster, as Kafka (an inter-broker look-up)."""
    from kwire.share.records import parse_coordinator_key  # noqa: PLC0415 - start-up time: share groups only

    if ctx.version < 6:
        return E.INVALID_REQUEST, "Share coordinator keys need FindCoordinator v6+.", None
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
        return E.CLUSTER_AUTHORIZATION_FAILED, None, None
    parsed = parse_coordinator_key(key)
    if parsed is None:
        return E.INVALID_REQUEST, f"Invalid share coordinator key {key!r}.", None
    _, node_id = ctx.broker.share_state.coordinator_node(*parsed)
    node = ctx.broker.image.brokers.get(node_id) if node_id is not None else None
    if node is None:
        return NOT_AVAILABLE, "The share coordinator is not available.", None
    return E.NONE, None, node


@handles("FindCoordinator", "0-6")
async def find_coordinator(ctx: RequestContext, req):
    v = ctx.version

    def answer(key_type: int, key: str):
        """(error, message, coordinating broker)"""
        if key_type == 1:
            if ctx.broker.authorizer is not None and not allowed(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, key):
                return E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, None
            return transaction_coordinator_node(ctx, key)
        if key_type == 2:
            return _share_coordinator_node(ctx, key)
        if key_type != 0:
            return E.INVALID_REQUEST, f"Unknown coordinator key type {key_type}.", None
        if group_denied(ctx, key, Op.DESCRIBE):
            return E.GROUP_AUTHORIZATION_FAILED, None, None
        node = group_coordinator_node(ctx, key)
        if node is None:
            return NOT_AVAILABLE, "The group coordinator is not available.", None
        return E.NONE, None, node

    key_type = req.key_type if v >= 1 else 0
    if key_type == 1:
        await ensure_transaction_topic(ctx)   # created on first use, as Kafka does
    elif key_type == 0:
        await ensure_offsets_topic(ctx)   # likewise __consumer_offsets
    if v < 4:
        err, msg, node = answer(req.key_type if v >= 1 else 0, req.key)
        if err:
            if msg is None:   # an authorization failure: Kafka says the error's default message up to v3
                msg = denied_message(err)
            return ctx.response(throttle_time_ms=0, error_code=err, error_message=msg,
                                node_id=-1, host="", port=-1)
        host, port = node.address(ctx.listener)
        # Kafka fills the message on success too: Errors.NONE.message() ("NONE") up to v3, "" from v4
        return ctx.response(throttle_time_ms=0, error_code=0, error_message="NONE",
                            node_id=node.node_id, host=host, port=port)
    C = ctx.struct("Coordinator")
    out = []
    for key in req.coordinator_keys:
        err, msg, node = answer(req.key_type, key)
        if err:
            if msg is None and denied_message(err) is not None:   # Kafka: "" for an authorization failure from v4
                msg = ""
            out.append(C(key=key, node_id=-1, host="", port=-1, error_code=err, error_message=msg))
        else:
            host, port = node.address(ctx.listener)
            out.append(C(key=key, node_id=node.node_id, host=host, port=port, error_code=0, error_message=""))
    return ctx.response(throttle_time_ms=0, coordinators=out)


# ============================================================================ JoinGroup
@handles("JoinGroup", "0-9")
async def join_group(ctx: RequestContext, req):
    v = ctx.version
    coord, unavailable = coordinator_for(ctx, req.group_id)
    if group_denied(ctx, req.group_id):
        coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=unavailable, generation_id=-1,
                            protocol_type=None, protocol_name=None if v >= 7 else "",
                            leader="", member_id=req.member_id, members=[])
    p = coord.join_group(
        req.group_id, req.member_id, protocol_type=req.protocol_type,
        protocols=[(pr.name, pr.metadata) for pr in req.protocols],
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 else -1,
        group_instance_id=req.group_instance_id, client_id=client_id(ctx),
        client_host=client_host(ctx),
        require_known_member_id=v >= 4 and req.group_instance_id is None,
        supports_skip_assignment=v >= 9, reason=req.reason)
    r = await p.wait()
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
    coord, unavailable = coordinator_for(ctx, req.group_id)
    if unavailable == E.COORDINATOR_LOAD_IN_PROGRESS:
        # the rebalance in progress is lost with the old coordinator: rejoin here (as Kafka;
        # older clients do not know COORDINATOR_LOAD_IN_PROGRESS on SyncGroup)
        unavailable = E.REBALANCE_IN_PROGRESS
    if group_denied(ctx, req.group_id):
        coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=unavailable, assignment=b"")
    p = coord.sync_group(
        req.group_id, req.generation_id, req.member_id,
        assignments=[(a.member_id, a.assignment) for a in req.assignments],
        group_instance_id=req.group_instance_id, protocol_type=req.protocol_type,
        protocol_name=req.protocol_name)
    r = await p.wait()
    return ctx.response(throttle_time_ms=0, error_code=r.error, protocol_type=r.protocol_type,
                        protocol_name=r.protocol_name, assignment=r.assignment or b"")


# ============================================================================ Heartbeat
@handles("Heartbeat", "0-4")
async def heartbeat(ctx: RequestContext, req):
    coord, unavailable = coordinator_for(ctx, req.group_id)
    if unavailable == E.COORDINATOR_LOAD_IN_PROGRESS:
        unavailable = E.NONE   # the group is still loading: Kafka answers blindly
    if group_denied(ctx, req.group_id):
        coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=unavailable)
    err = coord.heartbeat(req.group_id, req.generation_id, req.member_id, req.group_instance_id)
    return ctx.response(throttle_time_ms=0, error_code=err)


# ============================================================================ LeaveGroup
@handles("LeaveGroup", "0-5")
async def leave_group(ctx: RequestContext, req):
    v = ctx.version
    coord, unavailable = coordinator_for(ctx, req.group_id)
    if group_denied(ctx, req.group_id):
        coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=unavailable, members=[])
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
def _names_from_ids(ctx: RequestContext, topics) -> None:
    """v10+: each topic's name from its id, in place ("" for an id the image does not know)."""
    by_id = ctx.broker.image.topics_by_id
    for t in topics:
        found = by_id.get(t.topic_id)
        t.name = found.name if found is not None else ""


@handles("OffsetCommit", "0-10")
async def offset_commit(ctx: RequestContext, req):
    coord, unavailable = coordinator_for(ctx, req.group_id)
    image = ctx.broker.image
    T = ctx.struct("OffsetCommitResponseTopic")
    Pn = ctx.struct("OffsetCommitResponsePartition")
    top_error = None
    if coord is None and ctx.version > 0:   # v0 never reaches a coordinator (answered below)
        top_error = unavailable
    elif not req.group_id:
        top_error = E.INVALID_GROUP_ID
    if group_denied(ctx, req.group_id):
        top_error = E.GROUP_AUTHORIZATION_FAILED
    errors: dict[tuple[str, int], int] = {}
    valid = []
    by_id = ctx.version >= 10
    if by_id:
        _names_from_ids(ctx, req.topics)
    for t in req.topics:
        topic = image.topics.get(t.name)
        no_read = top_error is None and t.name != "" and topic_denied(ctx, t.name, Op.READ)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if top_error is not None:
                errors[tp] = top_error
            elif by_id and t.name == "":
                errors[tp] = E.UNKNOWN_TOPIC_ID
            elif no_read:
                errors[tp] = E.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or p.partition_index not in topic.partitions:
                errors[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                valid.append((t.name, p.partition_index, p.committed_offset,
                              p.committed_leader_epoch, p.committed_metadata))
    if valid and ctx.version == 0:   # ZooKeeper storage: the whole request fails, as Kafka 3.x KRaft
        # (KafkaApis answers it before any coordinator is asked, so also while none is available)
        errors = {(t.name, p.partition_index): E.UNSUPPORTED_VERSION for t in req.topics for p in t.partitions}
    elif valid:
        pend = coord.commit_offsets(
            req.group_id, req.generation_id_or_member_epoch, req.member_id, valid,
            group_instance_id=req.group_instance_id,
            retention_ms=req.retention_time_ms if ctx.version <= 4 else -1, api_version=ctx.version)
        r = await pend.wait()
        errors.update(r.errors)
    out = []
    for t in req.topics:
        out.append(T(name=t.name, **({"topic_id": t.topic_id} if by_id else {}), partitions=[
            Pn(partition_index=p.partition_index,
               error_code=errors.get((t.name, p.partition_index), E.NONE))
            for p in t.partitions]))
    return ctx.response(throttle_time_ms=0, topics=out)


# ============================================================================ OffsetFetch
def _fetch_group(ctx: RequestContext, group_id: str, topics, require_stable: bool,
                 member_id: str | None = None, member_epoch: int = -1):
    """(group error, {(topic, partition): FetchedOffset}) with ``topics`` None for all;
    v9's member id and epoch are checked for a KIP-848 consumer group."""
    coord, unavailable = coordinator_for(ctx, group_id)
    if group_denied(ctx, group_id, Op.DESCRIBE):
        return E.GROUP_AUTHORIZATION_FAILED, {}
    if coord is None:
        return unavailable, {}
    if not group_id:
        return E.INVALID_GROUP_ID, {}
    error = coord.validate_consumer_offset_fetch(group_id, member_id, member_epoch)
    if error is not None:
        return error, {}
    parts = None if topics is None else \
        [(t.name, i) for t in topics for i in t.partition_indexes if ctx.version < 10 or t.name != ""]
    r = coord.fetch_offsets(group_id, parts, require_stable)
    if ctx.broker.authorizer is None:
        return r.error, r.offsets
    offsets = {}
    denied: dict[str, bool] = {}
    for (t, p), fo in r.offsets.items():
        if denied.setdefault(t, topic_denied(ctx, t, Op.DESCRIBE)):
            if topics is not None:   # named: refused; all topics: left out
                from kwire.groups.results import FetchedOffset  # noqa: PLC0415 - start-up time

                offsets[(t, p)] = FetchedOffset(error=E.TOPIC_AUTHORIZATION_FAILED)
        else:
            offsets[(t, p)] = fo
    return r.error, offsets


def _by_topic(offsets) -> dict[str, list]:
    out: dict[str, list] = {}
    for (t, p), fo in offsets.items():
        out.setdefault(t, []).append((p, fo))
    return out


@handles("OffsetFetch", "0-10")
async def offset_fetch(ctx: RequestContext, req):
    v = ctx.version
    if v < 8:
        T = ctx.struct("OffsetFetchResponseTopic")
        Pn = ctx.struct("OffsetFetchResponsePartition")
        if v == 0:   # ZooKeeper storage: Kafka 3.x KRaft answers UNSUPPORTED_VERSION
            err, offsets = E.UNSUPPORTED_VERSION, {}
        else:
            err, offsets = _fetch_group(ctx, req.group_id, req.topics,
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
    image = ctx.broker.image
    for g in req.groups:
        unknown = []
        if v >= 10 and g.topics is not None:
            _names_from_ids(ctx, g.topics)
            unknown = [t for t in g.topics if t.name == ""]
        err, offsets = _fetch_group(ctx, g.group_id, g.topics, req.require_stable,
                                    g.member_id if v >= 9 else None, g.member_epoch if v >= 9 else -1)
        topics = []
        for name, parts in _by_topic(offsets).items():
            ids = {}
            if v >= 10:
                known = image.topics.get(name)
                if known is None:   # all topics: a deleted topic has no id to name it by
                    continue
                ids = {"topic_id": known.topic_id}
            topics.append(T(name=name, **ids, partitions=[
                Pn(partition_index=p, committed_offset=fo.offset,
                   committed_leader_epoch=fo.leader_epoch, metadata=fo.metadata,
                   error_code=fo.error) for p, fo in parts]))
        if not err:
            topics += [T(name="", topic_id=t.topic_id, partitions=[
                Pn(partition_index=i, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                   error_code=E.UNKNOWN_TOPIC_ID) for i in t.partition_indexes]) for t in unknown]
        groups.append(G(group_id=g.group_id, topics=topics, error_code=err))
    return ctx.response(throttle_time_ms=0, groups=groups)


# ============================================================================ DescribeGroups
@handles("DescribeGroups", "0-6")
async def describe_groups(ctx: RequestContext, req):
    G = ctx.struct("DescribedGroup")
    M = ctx.struct("DescribedGroupMember")
    owned, elsewhere = [], {}
    for gid in req.groups:
        coord, unavailable = coordinator_for(ctx, gid)
        if group_denied(ctx, gid, Op.DESCRIBE):
            coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
        if coord is None:
            elsewhere[gid] = unavailable
        else:
            owned.append(gid)
    want_ops = ctx.version >= 3 and req.include_authorized_operations
    described = {}
    for d in (group_coordinator(ctx).describe_groups(owned) if owned else []):
        err = d.error
        if err == E.GROUP_ID_NOT_FOUND and ctx.version < 6:
            err = E.NONE  # Kafka answers an unknown group as Dead without error below v6
        described[d.group_id] = G(
            error_code=err, error_message=d.error_message if err else None, group_id=d.group_id, group_state=d.state,
            authorized_operations=operations_field(ctx, "group", d.group_id, want_ops),
            protocol_type=d.protocol_type, protocol_data=d.protocol,
            members=[M(member_id=m.member_id, group_instance_id=m.group_instance_id,
                       client_id=m.client_id, client_host=m.client_host,
                       member_metadata=m.metadata, member_assignment=m.assignment)
                     for m in d.members])
    out = [described.get(gid) or G(error_code=elsewhere.get(gid, NOT_AVAILABLE), group_id=gid, group_state="",
                                   protocol_type="", protocol_data="", members=[])
           for gid in req.groups]
    return ctx.response(throttle_time_ms=0, groups=out)


# ============================================================================ ListGroups
@handles("ListGroups", "0-5")
async def list_groups(ctx: RequestContext, req):
    coord = group_coordinator(ctx)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=NOT_AVAILABLE, groups=[])
    L = ctx.struct("ListedGroup")
    states = req.states_filter if ctx.version >= 4 else None
    types = req.types_filter if ctx.version >= 5 else None
    # while a partition loads, its groups are left out and the answer says so (as Kafka)
    err = E.COORDINATOR_LOAD_IN_PROGRESS if coord.loading else E.NONE
    groups = coord.list_groups(states, types)
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.DESCRIBE, CLUSTER, CLUSTER_NAME, log_denied=False):
        groups = [g for g in groups if allowed(ctx, Op.DESCRIBE, GROUP, g.group_id, log_denied=False)]
    return ctx.response(throttle_time_ms=0, error_code=err, groups=[
        L(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state, group_type=g.group_type)
        for g in groups])


# ============================================================================ DeleteGroups
@handles("DeleteGroups", "0-2")
async def delete_groups(ctx: RequestContext, req):
    R = ctx.struct("DeletableGroupResult")
    errors, owned = {}, []
    for g in req.groups_names:
        coord, unavailable = coordinator_for(ctx, g)
        if group_denied(ctx, g, Op.DELETE):
            coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
        if coord is None:
            errors[g] = unavailable
        else:
            owned.append(g)
    if owned:
        coord = group_coordinator(ctx)
        shares = [g for g in owned if g in getattr(coord, "share_groups", {})]
        errors.update(await coord.delete_groups(owned).wait())
        for g in shares:   # KIP-932: the state at the share coordinators goes too
            if errors.get(g) == E.NONE:
                from kwire.handlers.share_offsets import delete_group_state  # noqa: PLC0415 - start-up time: share groups only

                await delete_group_state(ctx, g)
    return ctx.response(throttle_time_ms=0, results=[
        R(group_id=g, error_code=errors.get(g, E.NONE)) for g in req.groups_names])


# ============================================================================ OffsetDelete
@handles("OffsetDelete", "0")
async def offset_delete(ctx: RequestContext, req):
    coord, unavailable = coordinator_for(ctx, req.group_id)
    T = ctx.struct("OffsetDeleteResponseTopic")
    Pn = ctx.struct("OffsetDeleteResponsePartition")
    if group_denied(ctx, req.group_id, Op.DELETE):
        coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
    if coord is None:
        return ctx.response(error_code=unavailable, throttle_time_ms=0, topics=[])
    image = ctx.broker.image
    errors: dict[tuple[str, int], int] = {}
    valid = []
    for t in req.topics:
        topic = image.topics.get(t.name)
        no_read = topic_denied(ctx, t.name, Op.READ)
        for p in t.partitions:
            if no_read:
                errors[(t.name, p.partition_index)] = E.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or p.partition_index not in topic.partitions:
                errors[(t.name, p.partition_index)] = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                valid.append((t.name, p.partition_index))
    r = await coord.delete_offsets(req.group_id, valid).wait()
    if r.error:
        return ctx.response(error_code=r.error, throttle_time_ms=0, topics=[])
    errors.update(r.partitions)
    return ctx.response(error_code=0, throttle_time_ms=0, topics=[
        T(name=t.name, partitions=[
            Pn(partition_index=p.partition_index,
               error_code=errors.get((t.name, p.partition_index), E.NONE))
            for p in t.partitions]) for t in req.topics])
