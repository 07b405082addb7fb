"""KIP-848 consumer group APIs, answered by the group coordinator (kwire.groups.consumer_coordinator):
ConsumerGroupHeartbeat 0-1 (v1: regex subscriptions, member ids chosen by the client) and
ConsumerGroupDescribe 0-1 (v1: member type, 1 "consumer" or 0 "classic" for a member of an
upgraded group still using JoinGroup/SyncGroup).

The group is coordinated by the leader of its ``__consumer_offsets`` partition, as classic
groups (kwire.handlers.groups: NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE /
COORDINATOR_LOAD_IN_PROGRESS the same way). Topic ids in the heartbeat are resolved with
the metadata image; owned partitions of topics the image does not know are dropped.
A classic group with members is upgraded online by a member joining with the consumer
protocol, and a consumer group whose last consumer-protocol member leaves is downgraded, as
group.consumer.migration.policy allows (kwire.groups.consumer_migration; otherwise
GROUP_ID_NOT_FOUND); classic DescribeGroups on a consumer group answers Dead, as Kafka 4;
an empty group of either kind changes kind on first use.
With an authorizer: READ on the group to heartbeat, DESCRIBE to describe it
(GROUP_AUTHORIZATION_FAILED otherwise). Static members (instance ids) rejoin without a
rebalance after leaving with epoch -2 (kwire.groups.consumer_coordinator).
Both APIs are served (and advertised) only while group.coordinator.rebalance.protocols lists
"consumer" (its default); otherwise they answer UNSUPPORTED_VERSION.

Left out (later slices): client-side
assignors, RE2/J's rarer corners (Python's ``re`` matches, constructs RE2/J refuses are
refused; Unicode classes like ``\\p{Greek}`` are not translated).
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.api_versions import disabled_apis
from kwire.handlers.group_lookup import client_host, client_id, coordinator_for, group_denied
from kwire.security.authorizer import operations_field
from kwire.security.operations import AclOperation as Op

E = ErrorCode
CONSUMER_MEMBER_TYPE = 1
CLASSIC_MEMBER_TYPE = 0   # a member using the classic protocol (after an online upgrade)


def _disabled(ctx: RequestContext) -> bool:
    return ctx.api.key in disabled_apis(ctx.broker.config)


@handles("ConsumerGroupHeartbeat", "0-1")
async def consumer_group_heartbeat(ctx: RequestContext, req):
    coord, unavailable = coordinator_for(ctx, req.group_id)
    if _disabled(ctx):   # group.coordinator.rebalance.protocols without "consumer"
        coord, unavailable = None, E.UNSUPPORTED_VERSION
    if group_denied(ctx, req.group_id):
        coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=unavailable, error_message=None,
                            member_id=None, member_epoch=-1, heartbeat_interval_ms=0, assignment=None)
    image = ctx.broker.image
    owned = None
    if req.topic_partitions is not None:
        owned = [(tp.topic_id, list(tp.partitions)) for tp in req.topic_partitions
                 if tp.topic_id in image.topics_by_id]
    p = coord.consumer_group_heartbeat(
        req.group_id, req.member_id, req.member_epoch, instance_id=req.instance_id,
        rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
        subscribed_topic_regex=req.subscribed_topic_regex if ctx.version >= 1 else None,
        server_assignor=req.server_assignor, topic_partitions=owned,
        client_id=client_id(ctx), client_host=client_host(ctx), version=ctx.version)
    r = await p.wait()
    assignment = None
    if r.assignment is not None:
        A = ctx.struct("Assignment")
        TP = ctx.struct("TopicPartitions")
        assignment = A(topic_partitions=[TP(topic_id=t, partitions=sorted(ps))
                                         for t, ps in sorted(r.assignment.items(), key=lambda kv: str(kv[0]))])
    return ctx.response(throttle_time_ms=0, error_code=r.error, error_message=r.message,
                        member_id=r.member_id, member_epoch=r.member_epoch,
                        heartbeat_interval_ms=r.heartbeat_interval_ms, assignment=assignment)


@handles("ConsumerGroupDescribe", "0-1")
async def consumer_group_describe(ctx: RequestContext, req):
    G = ctx.struct("DescribedGroup")
    M = ctx.struct("Member")
    A = ctx.struct("Assignment")
    TP = ctx.struct("TopicPartitions")
    by_id = ctx.broker.image.topics_by_id

    def assignment(a):
        return A(topic_partitions=[TP(topic_id=t, topic_name=by_id[t].name, partitions=sorted(ps))
                                   for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])) if t in by_id])

    out = []
    for gid in req.group_ids:
        coord, unavailable = coordinator_for(ctx, gid)
        if _disabled(ctx):
            coord, unavailable = None, E.UNSUPPORTED_VERSION
        if group_denied(ctx, gid, Op.DESCRIBE):
            coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
        if coord is None:
            out.append(G(error_code=unavailable, error_message=None, group_id=gid, group_state="",
                         group_epoch=0, assignment_epoch=0, assignor_name="", members=[]))
            continue
        d = coord.describe_consumer_groups([gid])[0]
        members = [M(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                     member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                     subscribed_topic_names=list(m.subscribed_topic_names),
                     subscribed_topic_regex=m.subscribed_topic_regex,
                     assignment=assignment(m.assigned),
                     target_assignment=assignment((d.targets or {}).get(m.member_id, {})),
                     member_type=CLASSIC_MEMBER_TYPE if m.classic is not None else CONSUMER_MEMBER_TYPE)
                   for m in d.members or ()]
        out.append(G(error_code=d.error, error_message=d.message, group_id=gid, group_state=d.state,
                     group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                     assignor_name=d.assignor, members=members,
                     authorized_operations=operations_field(ctx, "group", gid,
                                                            req.include_authorized_operations)))
    return ctx.response(throttle_time_ms=0, groups=out)
