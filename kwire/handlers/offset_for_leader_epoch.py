"""OffsetForLeaderEpoch (key 23): versions 0-4 (Kafka 4.0 removed v0-1, 3.x served them: v0 answers no
leader epoch; v2 added the current
leader epoch, v3 the replica id, v4 is flexible).

For each partition this broker leads: the largest leader epoch <= the requested one that
its log knows, and where that epoch ends (the start offset of the next larger epoch, or the
log end offset for the latest epoch) from the partition's leader epoch cache (Kafka's
Partition.lastOffsetForLeaderEpoch). A follower truncates to it after a leader change; a
consumer (KIP-320) uses it to check its fetch position after a leader epoch change.
Unknown epochs answer NONE with leader_epoch / end_offset -1 (UNDEFINED), as Kafka.

Errors as Kafka's: current_leader_epoch older than ours FENCED_LEADER_EPOCH, newer
UNKNOWN_LEADER_EPOCH (-1 skips the check); a partition led elsewhere NOT_LEADER_OR_FOLLOWER
(Kafka requires the leader for every replica id); an unknown one UNKNOWN_TOPIC_OR_PARTITION;
an offline log dir KAFKA_STORAGE_ERROR. With an authorizer, as Kafka: a follower (replica_id
>= 0, v3+) needs CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED), a client
DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed
from kwire.security.operations import AclOperation as Op

def partition_end_offset(b, topic: str, partition: int, current_leader_epoch: int,
                         leader_epoch: int) -> tuple[int, int, int]:
    """(error code, leader epoch, end offset) of one partition on broker ``b``: the replica
    manager's one leader check (leadership, offline log dir, current_leader_epoch), then the
    partition's leader epoch cache."""
    try:
        plog = b.replica_manager.leader_log(topic, partition, current_leader_epoch)
    except KafkaError as exc:
        return ErrorCode(exc.code), -1, -1
    found = plog.end_offset_for_epoch(leader_epoch)
    if found is None:
        return ErrorCode.NONE, -1, -1
    return ErrorCode.NONE, found[0], found[1]


@handles("OffsetForLeaderEpoch")
async def offset_for_leader_epoch(ctx: RequestContext, req):
    b = ctx.broker
    T = ctx.struct("OffsetForLeaderTopicResult")
    P = ctx.struct("EpochEndOffset")
    out = []
    follower = ctx.version >= 3 and req.replica_id >= 0
    cluster_denied = b.authorizer is not None and follower and not allowed(ctx, Op.CLUSTER_ACTION, CLUSTER,
                                                                            CLUSTER_NAME)
    for t in req.topics:
        parts = []
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED if cluster_denied else \
            ErrorCode.TOPIC_AUTHORIZATION_FAILED if b.authorizer is not None and not follower \
            and not allowed(ctx, Op.DESCRIBE, TOPIC, t.topic) else 0
        for p in t.partitions:
            if denied:
                parts.append(P(error_code=denied, partition=p.partition, leader_epoch=-1, end_offset=-1))
                continue
            err, epoch, end = partition_end_offset(b, t.topic, p.partition, p.current_leader_epoch,
                                                   p.leader_epoch)
            parts.append(P(error_code=err, partition=p.partition, leader_epoch=epoch, end_offset=end))
        out.append(T(topic=t.topic, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)
