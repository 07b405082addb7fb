"""DeleteRecords (key 21): versions 0-2.

Raises a partition's log start offset (the low watermark) to the requested offset; -1 means
the high watermark. Whole segments below it are deleted by the log. OFFSET_OUT_OF_RANGE when
the offset is past the high watermark.
"""
from __future__ import annotations

import trio

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles


@handles("DeleteRecords")
async def delete_records(ctx: RequestContext, req):
    b = ctx.broker
    T = ctx.struct("DeleteRecordsTopicResult")
    P = ctx.struct("DeleteRecordsPartitionResult")
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            r = P(partition_index=p.partition_index, low_watermark=-1, error_code=0)
            parts.append(r)
            plog = b.partition_log(t.name, p.partition_index)
            if plog is None:
                r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offset = plog.high_watermark if p.offset == -1 else p.offset
            if offset < 0 or offset > plog.high_watermark:
                r.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                continue
            try:   # the segment unlinks and the checkpoint write run in a worker thread
                _, work = b.logs.plan_delete_records(t.name, p.partition_index, offset)
                await trio.to_thread.run_sync(work.run)
                b.logs.finish(work, "DeleteRecords", raise_error=True)
            except KafkaError as exc:
                r.error_code = exc.code
                continue
            r.low_watermark = plog.log_start_offset
        out.append(T(name=t.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)
