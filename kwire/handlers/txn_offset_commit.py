"""TxnOffsetCommit (key 28): versions 0-5 served.

A transactional producer's ``sendOffsetsToTransaction``: the group's coordinator (the leader
of its ``__consumer_offsets`` partition) writes the offsets as a transactional batch of the
producer and keeps them pending until the transaction's marker lands (kwire.groups.txn_offsets);
the answer comes once the write is replicated (acks=all). Per-partition errors as Kafka's
KafkaApis.handleTxnOffsetCommitRequest: UNKNOWN_TOPIC_OR_PARTITION for a partition that does
not exist; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS (as
COORDINATOR_NOT_AVAILABLE below v2: 0.11-2.0 clients did not expect it) and INVALID_GROUP_ID
for every partition; from v3 the group's member id, instance id and generation are checked
(UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION); OFFSET_METADATA_TOO_LARGE; a
producer id or epoch below 0 is INVALID_PRODUCER_ID_MAPPING (no transaction can hold the
offsets); the log's verdict on the producer's epoch (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED)
and append errors as an OffsetCommit's.

KIP-890 verification of the offsets partition (Kafka's CoordinatorRuntime.
scheduleTransactionalWriteOperation -> CoordinatorPartitionWriter.maybeStartTransactionVerification
-> ReplicaManager / AddPartitionsToTxnManager), once the per-partition checks passed and before
the group's member and generation checks: unless the producer already has a transaction of
this epoch open on the group's __consumer_offsets partition (then the log's epoch check is all),
the transaction coordinator is asked about that partition (kwire.transactions.verify), and the
append then needs the verification guard still current (a marker meanwhile: INVALID_TXN_STATE).
- v0-4, when transaction.partition.verification.enable (default true): AddPartitionsToTxn
  verify_only. Its answer fails every partition: an unknown transactional id or another
  producer id INVALID_PRODUCER_ID_MAPPING; another epoch (PRODUCER_FENCED) INVALID_PRODUCER_EPOCH;
  a transaction ending CONCURRENT_TRANSACTIONS; the partition not in the transaction (no
  AddOffsetsToTxn) TRANSACTION_ABORTABLE from v4, INVALID_TXN_STATE below (Kafka's
  DEFAULT_ERROR clients); then the group coordinator's operation-error mapping
  (CoordinatorOperationExceptionHelper): NETWORK_EXCEPTION -> COORDINATOR_LOAD_IN_PROGRESS,
  NOT_ENOUGH_REPLICAS / REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER
  -> NOT_COORDINATOR.
- v5 (transaction version 2, KIP-890 part 2; advertised when the transaction.version config
  finalizes 2), whatever the verification config: the producer sent no AddOffsetsToTxn, so
  the partition is added to its transaction (kwire.transactions.verify.add_to_transaction),
  and its answer fails every partition (PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, the
  retriable ones as COORDINATOR_NOT_AVAILABLE). Kept from before: Kafka maps these as the
  v0-4 ones (CONCURRENT_TRANSACTIONS as it is); kwire first waits up to 100 ms for an ending
  transaction (kwire.transactions.verify), so the retriable answers are rare here.
With an authorizer: READ on the group (GROUP_AUTHORIZATION_FAILED everywhere) and on each topic
(TOPIC_AUTHORIZATION_FAILED), as Kafka.
"""
from __future__ import annotations

from kwire.errors import ErrorCode, KafkaError
from kwire.groups.records import OFFSETS_TOPIC
from kwire.handlers import RequestContext, handles
from kwire.handlers.group_lookup import coordinator_for, group_denied, topic_denied
from kwire.security.operations import AclOperation as Op
from kwire.transactions.verify import add_to_transaction, verify_transaction

E = ErrorCode


@handles("TxnOffsetCommit", "0-5")
async def txn_offset_commit(ctx: RequestContext, req):
    v = ctx.version
    image = ctx.broker.image
    coord, unavailable = coordinator_for(ctx, req.group_id)
    top_error = None
    if coord is None:
        top_error = unavailable
        if v < 2 and top_error == E.COORDINATOR_LOAD_IN_PROGRESS:
            top_error = E.COORDINATOR_NOT_AVAILABLE
    elif not req.group_id:
        top_error = E.INVALID_GROUP_ID
    elif req.producer_id < 0 or req.producer_epoch < 0:
        top_error = E.INVALID_PRODUCER_ID_MAPPING
    if group_denied(ctx, req.group_id):
        top_error = E.GROUP_AUTHORIZATION_FAILED
    errors: dict[tuple[str, int], int] = {}
    valid = []
    for t in req.topics:
        topic = image.topics.get(t.name)
        no_read = top_error is None and topic_denied(ctx, t.name, Op.READ)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if top_error == E.GROUP_AUTHORIZATION_FAILED:
                errors[tp] = top_error
            elif no_read:
                errors[tp] = E.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or p.partition_index not in topic.partitions:
                errors[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
            elif top_error is not None:
                errors[tp] = top_error
            else:
                valid.append((t.name, p.partition_index, p.committed_offset,
                              p.committed_leader_epoch, p.committed_metadata))
    verify, guard = False, None
    if valid and (v >= 5 or ctx.broker.config.get("transaction.partition.verification.enable")):
        verify = True
        guard, verify_error = await _verify_offsets_partition(ctx, coord, req, v)
        if verify_error is not None:
            errors.update({(t, p): verify_error for t, p, *_ in valid})
            valid = []
    if valid:
        pend = coord.commit_txn_offsets(
            req.group_id, req.producer_id, req.producer_epoch, valid,
            generation_id=req.generation_id, member_id=req.member_id,
            group_instance_id=req.group_instance_id, verify=verify, verification_guard=guard)
        r = await pend.wait()
        errors.update(r.errors)
    T = ctx.struct("TxnOffsetCommitResponseTopic")
    Pn = ctx.struct("TxnOffsetCommitResponsePartition")
    return ctx.response(throttle_time_ms=0, topics=[
        T(name=t.name, partitions=[
            Pn(partition_index=p.partition_index,
               error_code=errors.get((t.name, p.partition_index), E.NONE))
            for p in t.partitions])
        for t in req.topics])


#: the coordinator's answer to adding the offsets partition, as Kafka's group coordinator gives
#: it to a TxnOffsetCommit v5 (retriable ones become COORDINATOR_NOT_AVAILABLE so the producer
#: retries; TRANSACTION_ABORTABLE and fencing as they are, PRODUCER_FENCED as the epoch error)
_ADD_ERRORS = {E.PRODUCER_FENCED: E.INVALID_PRODUCER_EPOCH, E.CONCURRENT_TRANSACTIONS: E.COORDINATOR_NOT_AVAILABLE,
               E.NETWORK_EXCEPTION: E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR: E.COORDINATOR_NOT_AVAILABLE,
               E.COORDINATOR_LOAD_IN_PROGRESS: E.COORDINATOR_NOT_AVAILABLE}


#: the group coordinator's operation-error mapping (Kafka's CoordinatorOperationExceptionHelper)
#: of what a verification below v5 answers
_OPERATION_ERRORS = {E.NETWORK_EXCEPTION: E.COORDINATOR_LOAD_IN_PROGRESS,
                     E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
                     E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
                     E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
                     E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR, E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR}


def _verification_error(code: ErrorCode, v: int) -> ErrorCode | None:
    """The transaction coordinator's answer about the offsets partition as a TxnOffsetCommit of
    version ``v`` gets it; None: in the transaction (or added to it)."""
    if code == E.NONE:
        return None
    if v >= 5:
        return _ADD_ERRORS.get(code, code)
    if code == E.PRODUCER_FENCED:   # AddPartitionsToTxnManager: producers expect INVALID_PRODUCER_EPOCH
        code = E.INVALID_PRODUCER_EPOCH
    elif code == E.CLUSTER_AUTHORIZATION_FAILED:
        code = E.INVALID_TXN_STATE
    elif code == E.TRANSACTION_ABORTABLE and v < 4:   # DEFAULT_ERROR clients
        code = E.INVALID_TXN_STATE
    return _OPERATION_ERRORS.get(code, code)


async def _verify_offsets_partition(ctx: RequestContext, coord, req, v: int):
    """(verification guard or None, error or None): the group's offsets partition verified
    in (below v5) or added to (v5, transaction version 2) the producer's transaction, unless
    the producer has a transaction of this epoch open there already (no guard, no error)."""
    b = ctx.broker
    tp = (OFFSETS_TOPIC, coord.partition_for(req.group_id))
    try:
        guard = b.replica_manager.maybe_start_transaction_verification(
            tp[0], tp[1], req.producer_id, req.producer_epoch, b.clock.now_ms(), v >= 5)
    except KafkaError as exc:
        return None, _verification_error(E(exc.code), 4 if v >= 5 else v)
    if guard is None:
        return None, None
    ask = add_to_transaction if v >= 5 else verify_transaction
    answers = await ask(b, req.transactional_id, req.producer_id, req.producer_epoch, [tp])
    return guard, _verification_error(E(answers.get(tp, E.UNKNOWN_SERVER_ERROR)), v)
