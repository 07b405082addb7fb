"""Produce (key 0): versions 3-11 served; 0-2 advertised (librdkafka needs v0 in ApiVersions to
enable compression) but answered with UNSUPPORTED_VERSION for every partition, since record
batch v2 needs v3+.

acks 0 (no response at all), 1 (after the leader's write) and -1 (all: refused
NOT_ENOUGH_REPLICAS before the write when the ISR is smaller than min.insync.replicas;
answered once the partition's high watermark, which the replica manager decides from the
followers' fetches, has passed the appended records; NOT_ENOUGH_REPLICAS_AFTER_APPEND when
the ISR shrank below min.insync.replicas meanwhile, NOT_LEADER_OR_FOLLOWER when the
leadership moved, REQUEST_TIMED_OUT after timeout_ms). Each partition's records go through the replica manager
(ReplicaManager.append_records: the leader checks, then the log's one append path,
PartitionLog.append, origin CLIENT): kwire.log.validator checks and normalises the batch as
Kafka's LogValidator does (records walked, max timestamp recomputed or set to the append
time, timestamp bounds, keys on compacted topics, offsets and counts), then idempotent
producers' epochs and sequences (kwire.log.producer_state: a retry of one of the producer's
last 5 batches is answered with its original offsets and not written again), then offsets
are assigned. Transactional batches (transactional_id set): the producer state opens the
producer's transaction at the batch's first offset (the partition's last stable offset stays
there until the coordinator's marker, WriteTxnMarkers); a transactional batch in a request
without a transactional_id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole
request, as Kafka does. Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, CORRUPT_MESSAGE (CRC,
layout), MESSAGE_TOO_LARGE, INVALID_RECORD and INVALID_TIMESTAMP (with record_errors and
Kafka's error_message from v8), OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH (also an
epoch older than the one a marker fenced it with), INVALID_TXN_STATE (a non-transactional
batch while the producer's transaction is open), INVALID_REQUIRED_ACKS, KAFKA_STORAGE_ERROR (the log dir is offline after an I/O error; the
broker serves everything else).
log.flush.per.append: the appended segment is fdatasync'ed in a worker thread
(trio.to_thread) before the answer, so a slow disk stalls only this request; acks=0 has no
answer to hold back and leaves durability to the flush policy.
Left out: KIP-890 part 1 (Produce v11+: the leader asks the coordinator, AddPartitionsToTxn
verify_only, before a producer's first transactional batch on a partition; the TODO
verify_transaction in produce() marks where), and authorization of the transactional id (no authorizer yet).
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
    elif req.transactional_id is None and _has_transactional_records(req):
        global_error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    rm = b.replica_manager
    out = []
    to_sync = []   # (partition response, LogSync): an fdatasync or flush due before answering
    to_replicate = []  # acks=all: events set once the high watermark passes the appended records
    for td in req.topic_data:
        parts = []
        for pd in td.partition_data:
            pr = Pr(index=pd.index, error_code=0, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
            parts.append(pr)
            if global_error:
                pr.error_code = global_error
                continue
            if pd.records is None or len(pd.records) == 0:
                err = rm.leader_error(td.name, pd.index)
                pr.error_code = err or (ErrorCode.INVALID_RECORD if v >= 8 else ErrorCode.CORRUPT_MESSAGE)
                continue
            # TODO(KIP-890 part 1) verify_transaction: for v11+ with a transactional batch of a
            # producer that has no transaction open on this partition, ask the transaction
            # coordinator (AddPartitionsToTxn v4+ verify_only) first and refuse what it refuses
            # (INVALID_TXN_STATE); the lead wires it once the coordinator (txc) is merged.
            try:
                res = rm.append_records(td.name, pd.index, pd.records, now, origin=CLIENT, required_acks=acks)
            except KafkaError as exc:
                _refuse(ctx, pr, exc)
                log.info("produce to %s-%d from %s refused: %s", td.name, pd.index, ctx.peer, exc)
                continue
            pr.base_offset = res.base_offset
            pr.log_append_time_ms = res.log_append_time_ms
            pr.log_start_offset = res.log_start_offset
            sync = rm.log_sync_after_append(td.name, pd.index, acks, now)
            if sync is not None:
                to_sync.append((pr, sync))
            if acks == -1:
                offset = res.last_offset + 1
                to_replicate.append((pr, td.name, pd.index, offset, rm.leader_epoch(td.name, pd.index),
                                     rm.wait_for_high_watermark(td.name, pd.index, offset)))
        out.append(T(name=td.name, partition_responses=parts))
    if to_sync:   # with acks=0 only flushes are due (log_sync_after_append), done all the same
        await _sync(ctx, to_sync)
    if acks == 0:
        return None
    if to_replicate:
        await _wait_for_replication(ctx, req, to_replicate)
    return ctx.response(responses=out, throttle_time_ms=0)


def _has_transactional_records(req) -> bool:
    """True when a partition's batch has the transactional bit (attributes, byte 22 of the
    batch header); read from the header only."""
    for td in req.topic_data:
        for pd in td.partition_data:
            r = pd.records
            if r is not None and len(r) > 22 and r[22] & 0x10:
                return True
    return False


async def _wait_for_replication(ctx: RequestContext, req, waiting) -> None:
    """acks=all: each partition answers once its high watermark passed the appended records
    (then NONE or NOT_ENOUGH_REPLICAS_AFTER_APPEND), when the leadership moved
    (NOT_LEADER_OR_FOLLOWER), or REQUEST_TIMED_OUT after the request's timeout_ms."""
    rm = ctx.broker.replica_manager
    with trio.move_on_after(max(req.timeout_ms, 0) / 1000):
        for _, _, _, _, _, ev in waiting:
            if ev is not None:
                await ev.wait()
    for pr, topic, partition, offset, epoch, _ in waiting:
        if pr.error_code:
            continue
        err = rm.acks_all_error(topic, partition, offset, epoch)
        if err:
            _refuse(ctx, pr, KafkaError(_ACKS_ALL_MESSAGES.get(err, err.name), err))


_ACKS_ALL_MESSAGES = {
    ErrorCode.REQUEST_TIMED_OUT: "Timed out waiting for the in-sync replicas to replicate the records.",
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "The records were written, but fewer in-sync replicas than "
                                                "min.insync.replicas have them.",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "This broker stopped leading the partition before the records were "
                                      "replicated.",
}


async def _sync(ctx: RequestContext, syncs) -> None:
    """Run the disk work of this request's appends (fdatasync or flush, PartitionLog.flush
    may run beside the loop's appends) in one worker thread before the answer; a failure
    takes the log dir offline and its partition is not acknowledged."""
    def run_all():
        for _, sync in syncs:
            sync.run()

    await trio.to_thread.run_sync(run_all)
    for pr, sync in syncs:
        exc = sync.error()
        if exc is not None:
            _refuse(ctx, pr, exc)


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
