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

v5 (transaction version 2, KIP-890 part 2; advertised when the transaction.version config
finalizes 2): the producer sent no AddOffsetsToTxn, so the group's __consumer_offsets partition
is added to its transaction with the transaction coordinator first (kwire.transactions.verify.
add_to_transaction), and its answer fails every partition as Kafka maps it (PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH, the retriable ones as COORDINATOR_NOT_AVAILABLE...).
Left out: KIP-890 part 1 verification of the offsets partition below v5 (so
TRANSACTION_ABORTABLE is never answered there).
With an authorizer: READ on the group (GROUP_AUTHORIZATION_FAILED everywhere) and on each topic
(TOPIC_AUTHORIZATION_FAILED), as Kafka.
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.groups import _coordinator_for, _group_denied, _topic_denied, _wait
from kwire.security.operations import AclOperation as Op

E = ErrorCode


@handles("TxnOffsetCommit", "0-5")
async def txn_offset_commit(ctx: RequestContext, req):
    v = ctx.version
    image = ctx.broker.image
    coord, unavailable = _coordinator_for(ctx, req.group_id)
    top_error = None
    if coord is None:
        top_error = unavailable
        if v < 2 and top_error == E.COORDINATOR_LOAD_IN_PROGRESS:
            top_error = E.COORDINATOR_NOT_AVAILABLE
    elif not req.group_id:
        top_error = E.INVALID_GROUP_ID
    elif req.producer_id < 0 or req.producer_epoch < 0:
        top_error = E.INVALID_PRODUCER_ID_MAPPING
    if _group_denied(ctx, req.group_id):
        top_error = E.GROUP_AUTHORIZATION_FAILED
    errors: dict[tuple[str, int], int] = {}
    valid = []
    for t in req.topics:
        topic = image.topics.get(t.name)
        no_read = top_error is None and _topic_denied(ctx, t.name, Op.READ)
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
    if valid and v >= 5:
        add_error = await _add_offsets_partition(ctx, coord, req)
        if add_error is not None:
            errors.update({(t, p): add_error for t, p, *_ in valid})
            valid = []
    if valid:
        pend = coord.commit_txn_offsets(
            req.group_id, req.producer_id, req.producer_epoch, valid,
            generation_id=req.generation_id, member_id=req.member_id,
            group_instance_id=req.group_instance_id)
        r = await _wait(pend)
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


async def _add_offsets_partition(ctx: RequestContext, coord, req):
    """Transaction version 2: the group's offsets partition joins the producer's transaction
    (the coordinator then writes its marker there); None when added."""
    from kwire.groups.records import OFFSETS_TOPIC  # noqa: PLC0415
    from kwire.transactions.verify import add_to_transaction  # noqa: PLC0415

    tp = (OFFSETS_TOPIC, coord.partition_for(req.group_id))
    answers = await add_to_transaction(ctx.broker, req.transactional_id, req.producer_id, req.producer_epoch, [tp])
    code = E(answers.get(tp, E.UNKNOWN_SERVER_ERROR))
    if code == E.NONE:
        return None
    return _ADD_ERRORS.get(code, code)
