"""Produce (key 0): versions 0-13 (v12: transaction version 2, see below; v13 names each topic
by id, KIP-516: an id the metadata image does not know is UNKNOWN_TOPIC_ID for its partitions,
and the answer names topics by id too). v0-2 carry message
formats v0/v1 (message sets; Kafka 3.x and older, kwire.emulate.kafka.version 3.9): each partition's message set is converted to one v2
record batch (kwire.codec.legacy_records: keys, values and timestamps kept, -1 in v0; the
compression codec kept) before the append, as Kafka's LogValidator converts to magic 2; a
corrupt set (CRC-32, sizes) is CORRUPT_MESSAGE, a v2 batch in a v0-2 request or a nested
wrapper INVALID_RECORD. Under 4.x emulation v0-2 are advertised (librdkafka needs v0 in
ApiVersions to enable compression) and refused by closing the connection, as Kafka 4 does.

acks 0 (no response at all; a failed partition closes the connection, as Kafka), 1 (after the leader's write) and -1 (all: refused
NOT_ENOUGH_REPLICAS before the write when the ISR is smaller than min.insync.replicas;
answered once the partition's high watermark, which the replica manager decides from the
followers' fetches, has passed the appended records; NOT_ENOUGH_REPLICAS_AFTER_APPEND when
the ISR shrank below min.insync.replicas meanwhile, NOT_LEADER_OR_FOLLOWER when the
leadership moved, REQUEST_TIMED_OUT after timeout_ms). Each partition's records go through the replica manager
(ReplicaManager.append, the one append path of every writer: the leader checks, then the
log's append, PartitionLog.append, origin CLIENT; the outcome awaited with await_appends, Kafka's
DelayedProduce): kwire.log.validator checks and normalises the batch as
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
A large compressed batch (64 KiB+), any 1 MiB+ batch and an append that rolls the segment
run in a worker thread (ReplicaManager.append_off_loop: the validation, decompression
included, outside the log's lock; then the write, roll and producer snapshot), in arrival
order per partition, so one producer's big batches never hold up the other connections.
log.flush.per.append: the appended segment is fdatasync'ed in a worker thread
(trio.to_thread) before the answer, so a slow disk stalls only this request; acks=0 has no
answer to hold back and leaves durability to the flush policy.
KIP-890 part 1 (transaction.partition.verification.enable, default true, cluster-wide dynamic):
in a request with a transactional_id, the partitions whose transactional batch comes from a
producer with no transaction open there (producer state) are verified with the transaction
coordinator first, once per request for all of them (kwire.transactions.verify:
AddPartitionsToTxn v5 verify_only, in process when this broker is the coordinator), as
Kafka's ReplicaManager.handleProduceAppend and AddPartitionsToTxnManager do; the append then
needs the producer's verification guard to be unchanged (a marker meanwhile voids it:
INVALID_TXN_STATE "Record was not part of an ongoing transaction"). The coordinator's
answers as Kafka maps them: not in the transaction (TRANSACTION_ABORTABLE) is answered
TRANSACTION_ABORTABLE from Produce v11, INVALID_TXN_STATE below; PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH; COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS / NETWORK_EXCEPTION / CONCURRENT_TRANSACTIONS become the
retriable NOT_ENOUGH_REPLICAS ("Unable to verify the partition has been added to the
transaction. Underlying error: ..."); INVALID_PRODUCER_ID_MAPPING as is; transactional
batches of more than one producer in one request: INVALID_PRODUCER_ID_MAPPING for the whole
request.
Client quotas: the request's size (producer_byte_rate) and time (request_percentage) are
recorded at the connection edge when the answer is ready (kwire.quota.edge), which sets
throttle_time_ms and mutes the connection; nothing here.
With an authorizer (kwire.security.authorizer): WRITE on each topic (TOPIC_AUTHORIZATION_FAILED
for its partitions) and on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for all).
KIP-890 part 2 (Produce v12, transaction version 2, sent when ApiVersions finalizes
transaction.version 2): the same guard is taken for a producer without a transaction of the
batch's epoch open here (the previous transaction's marker may still be due: its EndTxn bumped
the epoch), and the coordinator is asked to add the partition (kwire.transactions.verify.
add_to_transaction: in process, waiting up to 100 ms for a previous transaction that is still
writing its markers, as Kafka's AddPartitionsToTxnManager retries CONCURRENT_TRANSACTIONS;
AddPartitionsToTxn v5 without verify_only to another broker); its answers map as above.
Left out: Kafka's batching of concurrent verifications into one request per coordinator node
(kwire sends one per Produce request), and the verification entry's lowest-sequence check.
"""
from __future__ import annotations

import logging

from kwire.codec.legacy_records import LegacyRecordError, is_message_set, to_record_batch
from kwire.codec.records import BATCH_HEADER_SIZE, HEADER
from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.log.validator import CLIENT
from kwire.security.authorizer import TOPIC, TRANSACTIONAL_ID, allowed
from kwire.security.operations import AclOperation as Op
from kwire.transactions.verify import add_to_transaction, verify_transaction

log = logging.getLogger("kwire.produce")


@handles("Produce", "0-13")
async def produce(ctx: RequestContext, req):
    v = ctx.version
    b = ctx.broker
    T = ctx.struct("TopicProduceResponse")
    Pr = ctx.struct("PartitionProduceResponse")
    unknown_ids = _resolve_topic_ids(ctx, req) if v >= 13 else []
    acks = req.acks
    now = b.clock.now_ms()
    global_error = 0
    legacy = _convert_message_sets(req) if v < 3 else None
    if acks not in (-1, 0, 1):
        global_error = ErrorCode.INVALID_REQUIRED_ACKS
    elif req.transactional_id is None and _has_transactional_records(req):
        global_error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    auth = b.authorizer   # None: no authorization (one attribute check on the hot path)
    if auth is not None and not global_error and req.transactional_id is not None \
            and not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, req.transactional_id):
        global_error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    rm = b.replica_manager
    verifying = (not global_error and req.transactional_id is not None
                 and bool(b.config.get("transaction.partition.verification.enable")))
    guards: dict = {}          # (topic, partition) -> verification guard (KIP-890 part 1)
    unverified: dict = {}      # (topic, partition) -> KafkaError
    if verifying:
        try:
            guards, unverified = await _verify_transaction(ctx, req, now)
        except KafkaError as exc:
            log.info("produce from %s refused: %s", ctx.peer, exc)
            global_error = exc.code
        now = b.clock.now_ms()
    out = []
    appended = []   # (partition response, AppendOutcome) still waiting: disk work, or acks=all
    for td in req.topic_data:
        parts = []
        denied = auth is not None and not global_error and not allowed(ctx, Op.WRITE, TOPIC, td.name)
        for pd in td.partition_data:
            pr = Pr(index=pd.index, error_code=0, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1)
            parts.append(pr)
            if global_error or denied:
                pr.error_code = global_error or ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if legacy and (td.name, pd.index) in legacy:
                err = rm.leader_error(td.name, pd.index)
                if err:
                    pr.error_code = err
                else:
                    _refuse(ctx, pr, legacy[(td.name, pd.index)])
                continue
            if pd.records is None or len(pd.records) == 0:
                err = rm.leader_error(td.name, pd.index)
                pr.error_code = err or (ErrorCode.INVALID_RECORD if v >= 8 else ErrorCode.CORRUPT_MESSAGE)
                continue
            exc = unverified.get((td.name, pd.index)) if unverified else None
            if exc is not None:
                _refuse(ctx, pr, exc)
                log.info("produce to %s-%d from %s refused: %s", td.name, pd.index, ctx.peer, exc)
                continue
            # a large compressed batch, or one that rolls the segment, is appended in a worker
            # thread, in order per partition (ReplicaManager.append_off_loop)
            res = await rm.append_off_loop(td.name, pd.index, pd.records, now, acks=acks, origin=CLIENT,
                                           verify_transaction=verifying,
                                           verification_guard=guards.get((td.name, pd.index)) if guards else None)
            if res.error is not None:
                _refuse(ctx, pr, res.error)
                log.info("produce to %s-%d from %s refused: %s", td.name, pd.index, ctx.peer, res.error)
                continue
            pr.base_offset = res.base_offset
            pr.log_append_time_ms = res.log_append_time_ms
            pr.log_start_offset = res.log_start_offset
            if not res.completed:
                appended.append((pr, res))
        out.append(T(name=td.name, topic_id=td.topic_id, partition_responses=parts) if v >= 13
                   else T(name=td.name, partition_responses=parts))
    for td in unknown_ids:
        out.append(T(topic_id=td.topic_id, partition_responses=[
            Pr(index=pd.index, error_code=ErrorCode.UNKNOWN_TOPIC_ID, base_offset=-1, log_append_time_ms=-1,
               log_start_offset=-1) for pd in td.partition_data]))
    if appended:
        # the disk work (with acks=0 only flushes are due, done all the same) and, for acks=all,
        # the replication: Kafka's DelayedProduce, in the replica manager
        await rm.await_appends([o for _, o in appended], req.timeout_ms)
        for pr, o in appended:
            if o.error is not None:
                _refuse(ctx, pr, o.error)
    if acks == 0:
        failed = [(t.name or str(t.topic_id), pr.index, pr.error_code) for t in out for pr in t.partition_responses
                  if pr.error_code]
        if failed and ctx.connection is not None:
            # as Kafka's KafkaApis: an acks=0 producer hears of a failed append only by the connection
            # closing (it then refreshes its metadata); kwire kept the connection open
            name, index, code = failed[0]
            ctx.connection.close_after_response = (f"Produce with acks=0 failed for {name}-{index} "
                                                   f"({ErrorCode(code).name}) and {len(failed) - 1} more partitions")
        return None
    return ctx.response(responses=out, throttle_time_ms=0)


def _resolve_topic_ids(ctx: RequestContext, req) -> list:
    """Produce v13+: each topic's name from its id (in place); the topics whose id the image does
    not know are taken out of the request and returned (UNKNOWN_TOPIC_ID, as Kafka answers)."""
    by_id = ctx.broker.image.topics_by_id
    known, unknown = [], []
    for td in req.topic_data:
        t = by_id.get(td.topic_id)
        if t is None:
            unknown.append(td)
        else:
            td.name = t.name
            known.append(td)
    req.topic_data = known
    return unknown


def _convert_message_sets(req) -> dict:
    """Produce v0-2: each partition's v0/v1 message set replaced by one v2 batch, in place;
    {(topic, partition): KafkaError} for those that cannot be taken (Kafka's
    ProduceRequest.validateRecords and LogValidator errors)."""
    errors = {}
    for td in req.topic_data:
        for pd in td.partition_data:
            r = pd.records
            if r is None or len(r) == 0:
                continue
            if not is_message_set(r):
                errors[(td.name, pd.index)] = KafkaError(
                    "Produce requests with version <= 2 are only allowed to contain record batches with magic "
                    "version <= 1", ErrorCode.INVALID_RECORD)
                continue
            try:
                pd.records = to_record_batch(r)[0]
            except LegacyRecordError as exc:
                errors[(td.name, pd.index)] = KafkaError(str(exc), exc.code)
    return errors


def _has_transactional_records(req) -> bool:
    """True when a partition's batch has the transactional bit (attributes, byte 22 of the
    batch header); read from the header only."""
    for td in req.topic_data:
        for pd in td.partition_data:
            r = pd.records
            if r is not None and len(r) > 22 and r[22] & 0x10 and r[16] == 2:
                return True
    return False


async def _verify_transaction(ctx: RequestContext, req, now_ms: int):
    """KIP-890 part 1 before the appends: ({tp: guard}, {tp: KafkaError}). A partition whose
    first batch is transactional (and has a producer id) from a producer without a
    transaction open there takes a verification guard; those partitions are verified with
    the coordinator in one request. Raises KafkaError(INVALID_PRODUCER_ID_MAPPING) when the
    request's transactional batches come from more than one producer (or epoch)."""
    rm = ctx.broker.replica_manager
    producers = set()
    found = []
    for td in req.topic_data:
        for pd in td.partition_data:
            r = pd.records
            if r is None or len(r) < BATCH_HEADER_SIZE or r[16] != 2 or not r[22] & 0x10:
                continue
            h = HEADER.unpack_from(r, 0)
            if h[9] < 0:
                continue
            producers.add((h[9], h[10]))
            found.append((td.name, pd.index))
    if not found:
        return {}, {}
    if len(producers) > 1:
        raise KafkaError("Transactional records contained more than one producer ID",
                         ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    pid, epoch = next(iter(producers))
    tv2 = ctx.version >= 12   # transaction version 2: the leader adds the partition itself
    guards, errors = {}, {}
    for tp in found:
        try:
            g = rm.maybe_start_transaction_verification(tp[0], tp[1], pid, epoch, now_ms, tv2)
        except KafkaError as exc:
            errors[tp] = exc
            continue
        if g is not None:
            guards[tp] = g
    if guards:
        ask = add_to_transaction if tv2 else verify_transaction
        answers = await ask(ctx.broker, req.transactional_id, pid, epoch, list(guards))
        for tp, code in answers.items():
            exc = _verification_error(ErrorCode(code), ctx.version)
            if exc is not None:
                errors[tp] = exc
                guards.pop(tp, None)
    return guards, errors


_RETRIABLE_VERIFICATION = (ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                           ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                           ErrorCode.CONCURRENT_TRANSACTIONS)


def _verification_error(code: ErrorCode, version: int) -> KafkaError | None:
    """The coordinator's answer for one partition as Kafka's AddPartitionsToTxnManager and
    ReplicaManager.handleProduceAppend give it to a Produce of ``version``; None: verified."""
    if code == ErrorCode.NONE:
        return None
    if code == ErrorCode.PRODUCER_FENCED:   # producers expect INVALID_PRODUCER_EPOCH here
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    elif code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        code = ErrorCode.INVALID_TXN_STATE
    elif code == ErrorCode.TRANSACTION_ABORTABLE and version <= 10:   # Kafka's DEFAULT_ERROR clients
        code = ErrorCode.INVALID_TXN_STATE
    if code == ErrorCode.INVALID_TXN_STATE:
        return KafkaError("Partition was not added to the transaction", code)
    if code in _RETRIABLE_VERIFICATION:
        return KafkaError("Unable to verify the partition has been added to the transaction. "
                          f"Underlying error: {code.name}", ErrorCode.NOT_ENOUGH_REPLICAS)
    return KafkaError(code.name, code)


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
