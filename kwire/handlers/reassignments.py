"""AlterPartitionReassignments (key 45): versions 0-1; ListPartitionReassignments (key 46):
version 0.

AlterPartitionReassignments goes to the active controller (forwarded over the controller
listener when this node is not it; kwire.metadata.replication_control.alter_reassignment):
a partition's target replicas start a reassignment - the new replicas join ``replicas`` as
adding, the old ones stay as removing until every new one is in the ISR (their leader's
AlterPartition), then leave, with a new leader if the leader was one of them; null replicas
cancel the reassignment in progress (NO_REASSIGNMENT_IN_PROGRESS when there is none;
INVALID_REPLICA_ASSIGNMENT when reverting would need an unclean election the topic does not
allow). Manual assignment checks and messages as CreateTopics (registered brokers, no
duplicates); v1's allow_replication_factor_change=false refuses a new factor with
INVALID_REPLICATION_FACTOR. The answer comes once this node has applied the change.

ListPartitionReassignments answers from this node's image (which holds every change this
node answered for): partitions with a reassignment in progress, of the topics asked (null:
all); unknown topics and partitions are left out, as Kafka does.
With an authorizer: ALTER (Alter...) and DESCRIBE (List...) on the cluster
(CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.metadata import replication_control as RC
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op
from kwire.metadata.controller_apis import reassignment_intent, reassignments_response


@handles("AlterPartitionReassignments")
async def alter_partition_reassignments(ctx: RequestContext, req):
    allow = bool(req.allow_replication_factor_change) if ctx.version >= 1 else True
    topics = reassignment_intent(req)
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.ALTER, CLUSTER, CLUSTER_NAME):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return reassignments_response(code, {name: [(pid, code, None) for pid, _ in parts]
                                             for name, parts in topics.items()}, None)
    timeout = max(req.timeout_ms, 0) / 1000 or 30.0
    code, results = await ctx.broker.quorum.alter_reassignments(topics, allow, timeout=timeout)
    if code != ErrorCode.NONE:   # Kafka's getErrorResponse: the error for every partition asked
        message = "The request timed out." if code == ErrorCode.REQUEST_TIMED_OUT else None
        results = {name: [(pid, code, message) for pid, _ in parts] for name, parts in topics.items()}
        return reassignments_response(code, results, message)
    return reassignments_response(code, results, None)


@handles("ListPartitionReassignments")
async def list_partition_reassignments(ctx: RequestContext, req):
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message=None, topics=[])
    asked = None if req.topics is None else {t.name: list(t.partition_indexes) for t in req.topics}
    T, P = ctx.struct("OngoingTopicReassignment"), ctx.struct("OngoingPartitionReassignment")
    topics = [T(name=name, partitions=[P(partition_index=p.index, replicas=list(p.replicas),
                                         adding_replicas=list(p.adding_replicas),
                                         removing_replicas=list(p.removing_replicas)) for p in parts])
              for name, parts in RC.list_reassignments(ctx.broker.image, asked).items()]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, topics=topics)
