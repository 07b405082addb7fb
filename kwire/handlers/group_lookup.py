"""Finding a group's coordinator from a request handler (Kafka's GroupCoordinator look-up in
KafkaApis): the group handlers (kwire.handlers.groups, consumer_groups, share_groups,
share_fetch, share_offsets, txn_offset_commit) and the transaction handlers share it, so it
sits apart from any of them: none of them imports another for it."""
from __future__ import annotations

import trio

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext
from kwire.internal_topics import OFFSETS_TOPIC
from kwire.security.authorizer import GROUP, TOPIC, allowed
from kwire.security.operations import AclOperation as Op

E = ErrorCode
NOT_AVAILABLE = E.COORDINATOR_NOT_AVAILABLE
#: how long FindCoordinator waits for an internal topic to be created before answering
CREATE_WAIT_S = 10.0


def group_coordinator(ctx: RequestContext):
    return ctx.broker.groups   # None until it has replayed __consumer_offsets


def group_coordinator_node(ctx: RequestContext, group_id: str):
    """The live broker that coordinates ``group_id``: the leader of its ``__consumer_offsets``
    partition (this node on a single broker), or None while there is none."""
    b = ctx.broker
    coord = group_coordinator(ctx)
    if coord is None:
        return None
    t = b.image.topics.get(OFFSETS_TOPIC)
    p = t.partitions.get(coord.partition_for(group_id)) if t is not None else None
    if p is None:
        return None
    node = b.image.brokers.get(p.leader)
    return node if node is not None and not node.fenced else None


def coordinator_for(ctx: RequestContext, group_id: str):
    """(coordinator, None) when this node coordinates the group, else (None, error code):
    NOT_COORDINATOR when another broker does (the client asks FindCoordinator again),
    COORDINATOR_NOT_AVAILABLE while none does, COORDINATOR_LOAD_IN_PROGRESS while this node,
    its new leader, loads the group's partition (the client retries here)."""
    node = group_coordinator_node(ctx, group_id)
    if node is None:
        return None, NOT_AVAILABLE
    if node.node_id != ctx.broker.node_id:
        return None, E.NOT_COORDINATOR
    coord = group_coordinator(ctx)
    error = coord.coordinator_error(group_id)
    if error is not None:
        return None, error
    return coord, None


def group_denied(ctx: RequestContext, group_id: str, op: int = Op.READ) -> bool:
    return ctx.broker.authorizer is not None and not allowed(ctx, op, GROUP, group_id)


def topic_denied(ctx: RequestContext, name: str, op: int) -> bool:
    return ctx.broker.authorizer is not None and not allowed(ctx, op, TOPIC, name)


def client_host(ctx: RequestContext) -> str:
    host = ctx.peer.rpartition(":")[0] if ":" in ctx.peer else ctx.peer
    return "/" + host


def client_id(ctx: RequestContext) -> str:
    return ctx.header.client_id or ""


async def ensure_offsets_topic(ctx: RequestContext) -> None:
    """Create ``__consumer_offsets`` on the first look-up of a group coordinator, as Kafka
    does (bounded wait; the client retries COORDINATOR_NOT_AVAILABLE after that, and the
    creation goes on meanwhile)."""
    edge = ctx.broker.group_edge
    if edge is None or edge.coordinator is None or OFFSETS_TOPIC in ctx.broker.image.topics:
        return
    with trio.move_on_after(CREATE_WAIT_S):
        await edge.ensure_topic()
