"""DeleteRecords (key 21): versions 0-2.

Raises a partition's log start offset (the low watermark) to the requested offset; -1 means
the high watermark. Whole segments below it are deleted by the log (the unlinks and the
checkpoint write in a worker thread). Through the replica manager, with its leader checks
(UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER); OFFSET_OUT_OF_RANGE when the offset is
past the high watermark; KAFKA_STORAGE_ERROR when the disk work fails. With an authorizer:
DELETE on the topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

import trio

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import TOPIC, allowed
from kwire.security.operations import AclOperation as Op


@handles("DeleteRecords")
async def delete_records(ctx: RequestContext, req):
    rm = ctx.broker.replica_manager
    T = ctx.struct("DeleteRecordsTopicResult")
    P = ctx.struct("DeleteRecordsPartitionResult")
    out = []
    auth = ctx.broker.authorizer
    for t in req.topics:
        parts = []
        denied = auth is not None and not allowed(ctx, Op.DELETE, TOPIC, t.name)
        for p in t.partitions:
            r = P(partition_index=p.partition_index, low_watermark=-1, error_code=0)
            parts.append(r)
            if denied:
                r.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            try:
                work = rm.plan_delete_records(t.name, p.partition_index, p.offset)
                await trio.to_thread.run_sync(work.run)
                r.low_watermark = rm.finish_delete_records(t.name, p.partition_index, work)
            except KafkaError as exc:
                r.error_code = exc.code
        out.append(T(name=t.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)
