"""Produce (key 0): versions 3-11 served; 0-2 advertised (librdkafka needs v0 in ApiVersions to
enable compression) but answered with UNSUPPORTED_VERSION for every partition, since record
batch v2 needs v3+.

acks 0 (no response at all), 1 and -1 (all: on one broker the leader's write is the whole ISR).
Each partition's records go through the log's one append path (PartitionLog.append via
Broker.append_records, origin CLIENT): kwire.log.validator checks and normalises the batch as
Kafka's LogValidator does (records walked, max timestamp recomputed or set to the append
time, timestamp bounds, keys on compacted topics, offsets and counts), then idempotent
producers' epochs and sequences (kwire.log.producer_state: a retry of one of the producer's
last 5 batches is answered with its original offsets and not written again), then offsets
are assigned. Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION, CORRUPT_MESSAGE (CRC,
layout), MESSAGE_TOO_LARGE, INVALID_RECORD and INVALID_TIMESTAMP (with record_errors and
Kafka's error_message from v8), OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
INVALID_REQUIRED_ACKS, KAFKA_STORAGE_ERROR (the log dir is offline after an I/O error; the
broker serves everything else).
log.flush.per.append: the appended segment is fdatasync'ed in a worker thread
(trio.to_thread) before the answer, so a slow disk stalls only this request; acks=0 has no
answer to hold back and leaves durability to the flush policy.
Left out: transactions (a transactional_id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
until they exist).
"""
from __future__ import annotations

import logging

import trio

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.log.validator import CLIENT

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
    to_sync = []  # (partition response, log, duplicated segment fd) for log.flush.per.append
    to_flush = []  # (partition response, log) whose flush.messages / flush.ms was reached
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
                res = b.append_records(td.name, pd.index, plog, pd.records, now, origin=CLIENT)
            except KafkaError as exc:
                _refuse(ctx, pr, exc)
                log.info("produce to %s-%d from %s refused: %s", td.name, pd.index, ctx.peer, exc)
                continue
            pr.base_offset = res.base_offset
            pr.log_append_time_ms = res.log_append_time_ms
            pr.log_start_offset = res.log_start_offset
            if plog.config.fsync_per_append and acks != 0:
                to_sync.append((pr, plog, plog.dup_active_segment_fd()))
            elif plog.flush_wanted:
                to_flush.append((pr, plog))
        out.append(T(name=td.name, partition_responses=parts))
    if to_flush:
        await _flush(ctx, to_flush)
    if acks == 0:
        return None
    if to_sync:
        await _datasync(ctx, to_sync)
    return ctx.response(responses=out, throttle_time_ms=0)


async def _flush(ctx: RequestContext, to_flush) -> None:
    """flush.messages / flush.ms reached: flush those logs in one worker thread before the
    answer (PartitionLog.flush may run beside the loop's appends); a failure takes the log
    dir offline and the partition is not acknowledged."""
    now = ctx.broker.clock.now_ms()

    def flush_all():
        failed = {}
        for pr, plog in to_flush:
            try:
                plog.flush(now_ms=now)
            except OSError as exc:
                failed[id(pr)] = exc
        return failed

    failed = await trio.to_thread.run_sync(flush_all)
    for pr, plog in to_flush:
        exc = failed.get(id(pr))
        if exc is not None:
            _refuse(ctx, pr, plog.storage_failure("flush", exc))


def _refuse(ctx: RequestContext, pr, exc: KafkaError) -> None:
    """A partition's refusal: the error code, and from v8 Kafka's error_message and the
    record_errors of records refused one by one (RecordValidationError)."""
    pr.error_code = exc.code
    pr.base_offset = -1
    pr.log_append_time_ms = -1
    pr.log_start_offset = -1
    if ctx.version >= 8:
        pr.error_message = str(exc)
        record_errors = getattr(exc, "record_errors", None)
        if record_errors:
            RE = ctx.struct("BatchIndexAndErrorMessage")
            pr.record_errors = [RE(batch_index=i, batch_index_error_message=m) for i, m in record_errors]


async def _datasync(ctx: RequestContext, to_sync) -> None:
    """fdatasync every segment file this request appended to, in one worker thread; a
    failure takes the log dir offline and the partitions it held are not acknowledged."""
    def sync_all():
        failed = {}
        for _, plog, fd in to_sync:
            try:
                plog.datasync(fd)
            except OSError as exc:
                failed[fd] = exc
        return failed

    failed = await trio.to_thread.run_sync(sync_all)
    for pr, plog, fd in to_sync:
        exc = failed.get(fd)
        if exc is not None:
            _refuse(ctx, pr, plog.storage_failure("fsync", exc))
