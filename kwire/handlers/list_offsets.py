"""ListOffsets (key 2): versions 1-9.

Timestamps: -1 latest (high watermark; last stable offset for read_committed, the same while
there are no transactions), -2 earliest (log start offset), -3 max timestamp (KIP-734),
-4 earliest local (= earliest: no tiered storage), -5 latest tiered (-1: no tiered storage),
>= 0 the first offset whose timestamp is >= the target (-1/-1 when none).
KAFKA_STORAGE_ERROR for partitions whose log dir went offline after an I/O error.
Left out: v0 (pre-KIP-79 offset lists; no client of today sends it).
"""
from __future__ import annotations

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


@handles("ListOffsets")
async def list_offsets(ctx: RequestContext, req):
    b = ctx.broker
    T = ctx.struct("ListOffsetsTopicResponse")
    Pr = ctx.struct("ListOffsetsPartitionResponse")
    out = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            r = Pr(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=-1, leader_epoch=-1)
            parts.append(r)
            plog = b.partition_log(t.name, p.partition_index)
            if plog is None:
                r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            if plog.offline:  # its log dir failed after an I/O error
                r.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            r.leader_epoch = b.leader_epoch(t.name, p.partition_index)
            ts = p.timestamp
            try:
                if ts == LATEST:
                    r.offset = plog.high_watermark
                elif ts in (EARLIEST, EARLIEST_LOCAL):
                    r.offset = plog.log_start_offset
                elif ts == LATEST_TIERED:
                    r.offset = -1
                elif ts == MAX_TIMESTAMP:
                    found = plog.max_timestamp_offset()
                    if found is not None:
                        r.offset, r.timestamp = found[0], found[1]
                elif ts >= 0:
                    found = plog.offset_for_timestamp(ts)
                    if found is not None and found[0] < plog.high_watermark:
                        r.offset, r.timestamp = found[0], found[1]
                else:
                    r.error_code = ErrorCode.INVALID_REQUEST
            except KafkaError as exc:
                r.error_code = exc.code
        out.append(T(name=t.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=out)
