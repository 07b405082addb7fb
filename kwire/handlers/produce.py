"""Produce (key 0): versions 3-11 served; 0-2 advertised (librdkafka needs v0 in ApiVersions to
enable compression) but answered with UNSUPPORTED_VERSION for every partition, since record
batch v2 needs v3+.

acks 0 (no response at all), 1 and -1 (all: on one broker the leader's write is the whole ISR).
Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION, CORRUPT_MESSAGE (CRC, layout),
MESSAGE_TOO_LARGE, INVALID_RECORD, INVALID_REQUIRED_ACKS. The batch is validated by its
header and CRC only; offsets are assigned by rewriting baseOffset (kwire.log).
Idempotent batches (producer id set; ids from InitProducerId) go through the partition's
producer state (kwire.log.producer_state, via Broker.append_records): a retry of one of the
producer's last 5 batches is answered with its original offsets and not written again;
OUT_OF_ORDER_SEQUENCE_NUMBER for a gap or a new epoch not starting at 0,
INVALID_PRODUCER_EPOCH for a stale epoch, INVALID_RECORD for a producer id without sequence.
Left out: transactions (a transactional_id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
until they exist).
"""
from __future__ import annotations

import logging

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles

log = logging.getLogger("kwire.produce")


@handles("Produce", "0-11")
async def produce(ctx: RequestContext, req):
    v = ctx.version
    b = ctx.broker
    T = ctx.struct("TopicProduceResponse")
    Pr = ctx.struct("PartitionProduceResponse")
    acks = req.acks
    now = b.clock.now_ms()
    global_error = 0
    if v < 3:
        global_error = ErrorCode.UNSUPPORTED_VERSION
    elif acks not in (-1, 0, 1):
        global_error = ErrorCode.INVALID_REQUIRED_ACKS
    elif req.transactional_id is not None:
        global_error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    out = []
    for td in req.topic_data:
        parts = []
        for pd in td.partition_data:
            pr = Pr(index=pd.index, error_code=0, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
            parts.append(pr)
            if global_error:
                pr.error_code = global_error
                continue
            plog = b.partition_log(td.name, pd.index)
            if plog is None:
                pr.error_code = b.partition_error(td.name, pd.index)
                continue
            if pd.records is None or len(pd.records) == 0:
                pr.error_code = ErrorCode.INVALID_RECORD if v >= 8 else ErrorCode.CORRUPT_MESSAGE
                continue
            try:
                res = b.append_records(td.name, pd.index, plog, pd.records, now)
            except KafkaError as exc:
                pr.error_code = exc.code
                if v >= 8:
                    pr.error_message = str(exc)
                log.info("produce to %s-%d from %s refused: %s", td.name, pd.index, ctx.peer, exc)
                continue
            pr.base_offset = res.base_offset
            pr.log_append_time_ms = res.log_append_time_ms
            pr.log_start_offset = res.log_start_offset
        out.append(T(name=td.name, partition_responses=parts))
    if acks == 0:
        return None
    return ctx.response(responses=out, throttle_time_ms=0)
