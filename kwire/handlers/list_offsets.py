"""ListOffsets (key 2): versions 1-10 (v10 timeout_ms: no remote storage, answered at once).

Timestamps: -1 latest (high watermark; the last stable offset with isolation_level 1,
read_committed, which also bounds a lookup by timestamp), -2 earliest (log start offset), -3 max timestamp (KIP-734),
-4 earliest local (= earliest: no tiered storage), -5 latest tiered (-1: no tiered storage),
>= 0 the first offset whose timestamp is >= the target (-1/-1 when none). Answered by the
replica manager (ReplicaManager.fetch_offset_for_timestamp), with its leader checks:
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR (the log dir is
offline), and for current_leader_epoch (v4+) FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.
With an authorizer: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
Left out: v0 (pre-KIP-79 offset lists; no client of today sends it).
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import TOPIC, allowed
from kwire.security.operations import AclOperation as Op


@handles("ListOffsets")
async def list_offsets(ctx: RequestContext, req):
    rm = ctx.broker.replica_manager
    T = ctx.struct("ListOffsetsTopicResponse")
    Pr = ctx.struct("ListOffsetsPartitionResponse")
    out = []
    read_committed = ctx.version >= 2 and req.isolation_level == 1
    auth = ctx.broker.authorizer
    for t in req.topics:
        parts = []
        if auth is not None and not allowed(ctx, Op.DESCRIBE, TOPIC, t.name):
            out.append(T(name=t.name, partitions=[Pr(
                partition_index=p.partition_index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, timestamp=-1,
                offset=-1, leader_epoch=-1) for p in t.partitions]))
            continue
        for p in t.partitions:
            error, offset, timestamp, epoch = rm.fetch_offset_for_timestamp(
                t.name, p.partition_index, p.timestamp, current_leader_epoch=p.current_leader_epoch,
                read_committed=read_committed)
            parts.append(Pr(partition_index=p.partition_index, error_code=error, timestamp=timestamp,
                            offset=offset, leader_epoch=epoch))
        out.append(T(name=t.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)
