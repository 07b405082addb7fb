"""KIP-932 share group APIs answered by the group coordinator (kwire.groups.share_coordinator):
ShareGroupHeartbeat 1 and ShareGroupDescribe 1, the versions Kafka 4.1+ serve and the Java
client 4.x sends (v0 was 4.0's early access, refused by default there).

The group is coordinated by the leader of its ``__consumer_offsets`` partition, as classic
and consumer groups (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS
from kwire.handlers.groups). Topic names are resolved with the metadata image. Served while
the share.version feature is 1 (the broker config, its default; kwire.handlers.api_versions),
UNSUPPORTED_VERSION otherwise. With an authorizer: READ on the group to heartbeat,
DESCRIBE to describe it (GROUP_AUTHORIZATION_FAILED otherwise); the topics a member subscribes
to it may not DESCRIBE are dropped from its subscription, as Kafka does.

Left out: the member rack is recorded but not used (the simple assignor is not rack aware).
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.api_versions import disabled_apis
from kwire.handlers.group_lookup import client_host, client_id, coordinator_for, group_denied, topic_denied
from kwire.security.authorizer import operations_field
from kwire.security.operations import AclOperation as Op

E = ErrorCode


def _disabled(ctx: RequestContext) -> bool:
    return ctx.api.key in disabled_apis(ctx.broker.config)


@handles("ShareGroupHeartbeat", "1")
async def share_group_heartbeat(ctx: RequestContext, req):
    coord, unavailable = coordinator_for(ctx, req.group_id)
    if _disabled(ctx):
        coord, unavailable = None, E.UNSUPPORTED_VERSION
    if group_denied(ctx, req.group_id):
        coord, unavailable = None, E.GROUP_AUTHORIZATION_FAILED
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=unavailable, error_message=None, member_id=None,
                            member_epoch=-1, heartbeat_interval_ms=0, assignment=None)
    names = req.subscribed_topic_names
    if names is not None:
        names = [n for n in names if not topic_denied(ctx, n, Op.DESCRIBE)]
    p = coord.share_group_heartbeat(req.group_id, req.member_id, req.member_epoch, rack_id=req.rack_id,
                                    subscribed_topic_names=None if names is None else list(names),
                                    client_id=client_id(ctx), client_host=client_host(ctx))
    r = await p.wait()
    assignment = None
    if r.assignment is not None:
        A, TP = ctx.struct("Assignment"), ctx.struct("TopicPartitions")
        assignment = A(topic_partitions=[TP(topic_id=t, partitions=sorted(ps))
                                         for t, ps in sorted(r.assignment.items(), key=lambda kv: str(kv[0]))])
    return ctx.response(throttle_time_ms=0, error_code=r.error, error_message=r.message,
                        member_id=r.member_id, member_epoch=r.member_epoch,
                        heartbeat_interval_ms=r.heartbeat_interval_ms, assignment=assignment)


@handles("ShareGroupDescribe", "1")
async def share_group_describe(ctx: RequestContext, req):
    G, M = ctx.struct("DescribedGroup"), ctx.struct("Member")
    A, TP = ctx.struct("Assignment"), ctx.struct("TopicPartitions")
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
        d = coord.describe_share_groups([gid])[0]
        members = [M(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                     client_id=m.client_id, client_host=m.client_host,
                     subscribed_topic_names=list(m.subscribed_topic_names), assignment=assignment(m.assignment))
                   for m in d.members or ()]
        out.append(G(error_code=d.error, error_message=d.message, group_id=gid, group_state=d.state,
                     group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                     assignor_name=d.assignor if d.error == E.NONE else "", members=members,
                     authorized_operations=operations_field(ctx, "group", gid, req.include_authorized_operations)))
    return ctx.response(throttle_time_ms=0, groups=out)
