"""ListOffsets (key 2): versions 0-11 (v10 timeout_ms: no remote storage, answered at once).

Timestamps: -1 latest (high watermark; the last stable offset with isolation_level 1,
read_committed, which also bounds a lookup by timestamp), -2 earliest (log start offset), -3 max timestamp (KIP-734),
-4 earliest local (= earliest: no tiered storage), -5 latest tiered and (v11, KIP-1023) -6
earliest pending upload (-1 and epoch -1: no tiered storage, as Kafka answers for a topic without
remote storage; each below the version that introduced it (-3 v7, -4 v8, -5 v9, -6 v11), and any
other negative timestamp, is UNSUPPORTED_VERSION, as Kafka answers it),
>= 0 the first offset whose timestamp is >= the target (-1/-1 when none). Answered by the
replica manager (ReplicaManager.fetch_offset_for_timestamp), with its leader checks:
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR (the log dir is
offline), and for current_leader_epoch (v4+) FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.
With an authorizer: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
v0 (Kafka 3.x and older; pre-KIP-79) answers up to ``max_num_offsets`` offsets, newest first, as
Kafka's UnifiedLog.legacyFetchOffsetsBefore: the base offsets of the segments last modified at
or before the timestamp (at least the log start offset), and the log end offset when the active
segment holds data, -1 latest (capped at the high watermark for a consumer) and -2 earliest
picking the newest and the oldest of those points.
"""
from __future__ import annotations

import os

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.replication.replica_manager import EARLIEST_PENDING_UPLOAD_TIMESTAMP
from kwire.security.authorizer import TOPIC, allowed
from kwire.security.operations import AclOperation as Op


#: the first version that may carry each special timestamp (as Kafka 4.3 answers: a special
#: timestamp older versions do not know, or any other negative one, is UNSUPPORTED_VERSION for
#: its partition, before the partition is even looked up)
MIN_VERSION_FOR = {-3: 7, -4: 8, -5: 9, EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11}


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
            if ctx.version == 0:
                error, offsets = _legacy_offsets(ctx, t.name, p.partition_index, p.timestamp, p.max_num_offsets)
                parts.append(Pr(partition_index=p.partition_index, error_code=error, old_style_offsets=offsets))
                continue
            if p.timestamp < -2 and ctx.version < MIN_VERSION_FOR.get(p.timestamp, 1 << 15):
                parts.append(Pr(partition_index=p.partition_index, error_code=ErrorCode.UNSUPPORTED_VERSION,
                                timestamp=-1, offset=-1, leader_epoch=-1))
                continue
            error, offset, timestamp, epoch = rm.fetch_offset_for_timestamp(
                t.name, p.partition_index, p.timestamp, current_leader_epoch=p.current_leader_epoch,
                read_committed=read_committed)
            parts.append(Pr(partition_index=p.partition_index, error_code=error, timestamp=timestamp,
                            offset=offset, leader_epoch=epoch))
        out.append(T(name=t.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)


def _legacy_offsets(ctx: RequestContext, topic: str, partition: int, timestamp: int, max_num: int):
    """ListOffsets v0: (error, offsets newest first), Kafka's legacyFetchOffsetsBefore and
    ReplicaManager.legacyFetchOffsetsForTimestamp for a consumer (replica id -1)."""
    rm = ctx.broker.replica_manager
    try:
        plog = rm.leader_log(topic, partition)
    except KafkaError as exc:
        return exc.code, []
    if max_num < 0:
        return ErrorCode.INVALID_REQUEST, []
    now = ctx.broker.clock.now_ms()
    start = plog.log_start_offset
    points = []   # (offset, last modified ms), oldest segment first
    for seg in plog.segments:
        try:
            mtime = int(os.fstat(seg.file.fileno()).st_mtime * 1000)
        except (OSError, AttributeError, ValueError):
            mtime = now
        points.append((max(seg.base_offset, start), mtime))
    if plog.segments[-1].size > 0:
        points.append((plog.log_end_offset, now))
    if timestamp == -1:
        i = len(points) - 1
    elif timestamp == -2:
        i = 0
    else:
        i = len(points) - 1
        while i >= 0 and points[i][1] > timestamp:
            i -= 1
    offsets = [points[j][0] for j in range(i, i - min(max_num, i + 1), -1)]
    offsets.sort(reverse=True)
    if timestamp == -1:   # a consumer reads no further than the high watermark
        hw = plog.high_watermark
        if any(o > hw for o in offsets):
            offsets = [hw] + [o for o in offsets if o <= hw]
    return ErrorCode.NONE, offsets
