"""DescribeQuorum (key 55): versions 0-2.

The KRaft quorum of ``__cluster_metadata`` partition 0: leader, epoch, high watermark, and
the voters' and observers' log end offsets and fetch times (their lag behind the leader).
The leader answers from its own bookkeeping; another node asks the leader over the
controller listener and relays its answer; if the leader cannot be reached it answers
NOT_LEADER_OR_FOLLOWER with the leader and epoch it knows. v2 ``nodes``: each voter's
controller endpoint from the static voter set (controller.quorum.voters), named as Kafka's
VoterSet.fromInetSocketAddresses names it, by the first of controller.listener.names
(CONTROLLER when unset): kafka-metadata-quorum prints them as the voters' "endpoints". A quorum
of one has no controller listener, so no node. Left out: directory ids (kwire voters have
none). With an authorizer: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

import logging

import trio

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.raft.transport import DESCRIBE_QUORUM, V_DESCRIBE_QUORUM
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op

log = logging.getLogger("kwire.describe_quorum")

METADATA_TOPIC = "__cluster_metadata"


def _voter_nodes(ctx: RequestContext) -> list:
    """The v2 ``nodes``: every voter with a known controller address (the static voter set, the
    same on every node, so a relayed answer gets them too)."""
    names = [n.strip() for n in (ctx.broker.config.get("controller.listener.names") or []) if n.strip()]
    name = names[0] if names else "CONTROLLER"
    Node, Listener = ctx.struct("Node"), ctx.struct("Listener")
    return [Node(node_id=nid, listeners=[Listener(name=name, host=addr[0], port=addr[1])])
            for nid, addr in sorted(ctx.broker.quorum.voters.items()) if addr]


def _answer(ctx: RequestContext, d: dict, error: int):
    RS = ctx.struct("ReplicaState")

    def states(rows):
        return [RS(replica_id=r["replica_id"], log_end_offset=r["log_end_offset"],
                   last_fetch_timestamp=r["last_fetch_timestamp"],
                   last_caught_up_timestamp=r["last_caught_up_timestamp"]) for r in rows]
    part = ctx.struct("PartitionData")(
        partition_index=0, error_code=error, leader_id=d["leader_id"], leader_epoch=d["leader_epoch"],
        high_watermark=d["high_watermark"], current_voters=states(d["current_voters"]),
        observers=states(d["observers"]))
    return ctx.response(error_code=0, topics=[ctx.struct("TopicData")(topic_name=METADATA_TOPIC, partitions=[part])],
                        nodes=_voter_nodes(ctx) if ctx.version >= 2 else [])


@handles("DescribeQuorum")
async def describe_quorum(ctx: RequestContext, req):
    b = ctx.broker
    if b.authorizer is not None and not allowed(ctx, Op.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return ctx.response(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, topics=[], nodes=[])
    wanted = [(t.topic_name, p.partition_index) for t in req.topics for p in t.partitions]
    if wanted and wanted != [(METADATA_TOPIC, 0)]:
        return ctx.response(error_code=ErrorCode.INVALID_REQUEST, topics=[], nodes=[])
    q = b.quorum
    d = q.driver.describe_quorum()
    if q.driver.is_leader:
        return _answer(ctx, d, 0)
    leader = q.driver.leader_id
    if leader >= 0 and q.transport is not None:
        try:
            resp = await q.transport.call(leader, DESCRIBE_QUORUM, V_DESCRIBE_QUORUM, req, timeout=2.0)
            p = resp.topics[0].partitions[0]
            if p.error_code == 0:
                row = lambda r: {"replica_id": r.replica_id, "log_end_offset": r.log_end_offset,  # noqa: E731
                                 "last_fetch_timestamp": r.last_fetch_timestamp,
                                 "last_caught_up_timestamp": r.last_caught_up_timestamp}
                return _answer(ctx, {"leader_id": p.leader_id, "leader_epoch": p.leader_epoch,
                                     "high_watermark": p.high_watermark,
                                     "current_voters": [row(r) for r in p.current_voters],
                                     "observers": [row(r) for r in p.observers]}, 0)
        except (ConnectionError, OSError, trio.TooSlowError, IndexError) as exc:
            log.debug("DescribeQuorum relay to leader %d failed: %s", leader, exc)
    return _answer(ctx, d, ErrorCode.NOT_LEADER_OR_FOLLOWER)
