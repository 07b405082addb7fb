"""ElectLeaders (key 43): versions 0-2 (v0 preferred only; v1 adds the election type and a
top-level error code; v2 flexible).

The active controller decides (kwire.metadata.replication_control.elect_leaders, forwarded
over the controller listener when this node is not it) and commits the new leaders; this
node answers once it has applied them. Preferred (0): the first replica, if it is an active
ISR member; unclean (1): only for partitions without a leader, the first active ISR member,
else the first active replica. Per partition: ELECTION_NOT_NEEDED (already led by the
preferred replica / has a leader), PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, with Kafka's messages. Null
topic_partitions means every partition, and then those that need no election are left out,
as Kafka does. An unknown election type is INVALID_REQUEST. A controller that does not answer
within timeout_ms gives REQUEST_TIMED_OUT for every partition asked.
With an authorizer: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every partition asked).
"""
from __future__ import annotations

from kwire.errors import INVALID_REQUEST_MESSAGE, ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.metadata.controller_apis import ELECTION_TYPES, elect_leaders_response
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op

DEFAULT_MESSAGES = {ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
                    ErrorCode.INVALID_REQUEST: INVALID_REQUEST_MESSAGE}


def _all_failed(req, code: ErrorCode, message: str | None) -> dict:
    """Kafka's ElectLeadersRequest.getErrorResponse: the error for every partition asked."""
    if req.topic_partitions is None:
        return {}
    return {t.topic: [(p, code, message) for p in t.partitions] for t in req.topic_partitions}


@handles("ElectLeaders")
async def elect_leaders(ctx: RequestContext, req):
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.ALTER, CLUSTER, CLUSTER_NAME):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return elect_leaders_response(code, _all_failed(req, code, None), ctx.version)
    election = ELECTION_TYPES.get(req.election_type if ctx.version >= 1 else 0)
    if election is None:
        code = ErrorCode.INVALID_REQUEST
        return elect_leaders_response(code, _all_failed(req, code, f"Unknown election type {req.election_type}"),
                                      ctx.version)
    tps = None if req.topic_partitions is None else {t.topic: list(t.partitions) for t in req.topic_partitions}
    timeout = max(req.timeout_ms, 0) / 1000 or 30.0
    code, results = await ctx.broker.quorum.elect_leaders(election, tps, timeout=timeout)
    if code != ErrorCode.NONE:
        return elect_leaders_response(code, _all_failed(req, code, DEFAULT_MESSAGES.get(code)), ctx.version)
    return elect_leaders_response(code, results, ctx.version)
