"""OffsetForLeaderEpoch (key 23): versions 2-4 (Kafka 4.0 removed v0-1; v2 added the current
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
an offline log dir KAFKA_STORAGE_ERROR. ``replica_id`` (v3+) is accepted from followers
and consumers alike: there is no authorizer yet (Kafka asks for CLUSTER_ACTION or topic
DESCRIBE), so nothing is refused on its account.
"""
from __future__ import annotations

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles

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
    for t in req.topics:
        parts = []
        for p in t.partitions:
            err, epoch, end = partition_end_offset(b, t.topic, p.partition, p.current_leader_epoch,
                                                   p.leader_epoch)
            parts.append(P(error_code=err, partition=p.partition, leader_epoch=epoch, end_offset=end))
        out.append(T(topic=t.topic, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)
