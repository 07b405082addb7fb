"""Transaction coordinator APIs (kwire.transactions, wired in kwire.transactions.edge):
AddPartitionsToTxn 0-5, AddOffsetsToTxn 0-4, EndTxn 0-5, DescribeTransactions 0,
ListTransactions 0-2; and the transactional halves of InitProducerId (0-5, called from
init_producer_id.py) and FindCoordinator key type 1 (called from groups.py).

A transactional id is coordinated by the leader of its ``__transaction_state`` partition
(FindCoordinator names it, creating the topic on first use as Kafka does); other brokers
answer NOT_COORDINATOR, a new leader COORDINATOR_LOAD_IN_PROGRESS while it loads.

Versions: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below InitProducerId v4,
AddPartitionsToTxn v2, AddOffsetsToTxn v2 and EndTxn v2 (KIP-588, as Kafka answers older
clients). AddPartitionsToTxn v4+ (sent by brokers, batched) answers each transaction,
``verify_only`` from the coordinator's state (KIP-890 part 1: NONE for a partition in the
ongoing transaction, TRANSACTION_ABORTABLE for the others, INVALID_TXN_STATE below v5);
unknown topics or partitions fail the whole transaction (UNKNOWN_TOPIC_OR_PARTITION for
those, OPERATION_NOT_ATTEMPTED for the rest).

Transaction version 2 (KIP-890 part 2), when the transaction.version config finalizes it
(ApiVersions then advertises EndTxn v5, Produce v12, TxnOffsetCommit v5): EndTxn v5 bumps the
epoch at every end and answers the new producer id and epoch; AddPartitionsToTxn v5 without
verify_only (a partition leader, or a group coordinator, adding for such a producer) adds as
version 2. Clients that stay on version 1 (librdkafka, kafka-python, aiokafka) see no change.

With an authorizer (kwire.security.authorizer), as Kafka: WRITE on the transactional id for
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
DESCRIBE for DescribeTransactions (ListTransactions lists only those); AddPartitionsToTxn needs
WRITE on each topic (TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED) and, v4+
(brokers' verification), CLUSTER_ACTION on the cluster; AddOffsetsToTxn READ on the group.
"""
from __future__ import annotations

import logging

import trio

from kwire.errors import ErrorCode
from kwire.internal_topics import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from kwire.handlers import RequestContext, handles
from kwire.handlers.group_lookup import CREATE_WAIT_S, ensure_offsets_topic
from kwire.producers.ids import ensure_producer_ids
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, GROUP, TOPIC, TRANSACTIONAL_ID, allowed
from kwire.security.operations import AclOperation as Op
from kwire.transactions.verify import add_partitions_waiting

E = ErrorCode
log = logging.getLogger("kwire.transactions")



def _fenced(error: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """PRODUCER_FENCED for clients that know it, INVALID_PRODUCER_EPOCH for older ones."""
    if error == E.PRODUCER_FENCED and version < first_fenced_version:
        return E.INVALID_PRODUCER_EPOCH
    return error


def _edge(ctx: RequestContext):
    return ctx.broker.txn_edge


def _coordinator(ctx: RequestContext):
    edge = _edge(ctx)
    return edge.coordinator if edge is not None else None


def _txn_denied(ctx: RequestContext, transactional_id: str, op: int = Op.WRITE) -> bool:
    return ctx.broker.authorizer is not None and not allowed(ctx, op, TRANSACTIONAL_ID, transactional_id)


def _coordinator_for(ctx: RequestContext, transactional_id: str):
    """(coordinator, None) when this node coordinates the id, else (None, error)."""
    coord = _coordinator(ctx)
    if coord is None:
        return None, E.COORDINATOR_NOT_AVAILABLE
    error = coord.coordinator_error(transactional_id)
    if error is not None:
        return None, error
    return coord, None


# ============================================================================ FindCoordinator
async def ensure_transaction_topic(ctx: RequestContext) -> None:
    """Create ``__transaction_state`` on the first look-up of a transaction coordinator
    (bounded wait; the client retries COORDINATOR_NOT_AVAILABLE after that)."""
    edge = _edge(ctx)
    if edge is None or edge.coordinator is None or TRANSACTION_STATE_TOPIC in ctx.broker.image.topics:
        return
    with trio.move_on_after(CREATE_WAIT_S):
        await edge.ensure_topic()


def transaction_coordinator_node(ctx: RequestContext, transactional_id: str):
    """FindCoordinator key type 1: (error, message, node) for a transactional id."""
    b = ctx.broker
    coord = _coordinator(ctx)
    if not transactional_id:
        return E.INVALID_REQUEST, "The transactional id is empty.", None
    t = b.image.topics.get(TRANSACTION_STATE_TOPIC)
    if coord is None or t is None:
        return E.COORDINATOR_NOT_AVAILABLE, "The transaction coordinator is not available.", None
    p = t.partitions.get(coord.partition_for(transactional_id))
    node = b.image.brokers.get(p.leader) if p is not None else None
    if node is None or node.fenced:
        return E.COORDINATOR_NOT_AVAILABLE, "The transaction coordinator is not available.", None
    return E.NONE, None, node


# ============================================================================ InitProducerId
async def init_transactional_producer_id(ctx: RequestContext, req):
    """InitProducerId with a transactional id (init_producer_id.py hands it over)."""

    v = ctx.version

    def answer(error, pid=-1, epoch=-1):
        return ctx.response(throttle_time_ms=0, error_code=_fenced(error, v, 4), producer_id=pid,
                            producer_epoch=epoch)

    tid = req.transactional_id
    if tid == "":
        return answer(E.INVALID_REQUEST)
    if _txn_denied(ctx, tid):
        return answer(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coord, error = _coordinator_for(ctx, tid)
    if coord is None:
        return answer(error)
    try:   # a new transactional id (or an exhausted epoch) takes a fresh producer id
        await ensure_producer_ids(ctx.broker, ctx.broker.producer_ids)
    except Exception as exc:  # noqa: BLE001 - no controller, a failed commit: the client retries
        log.warning("InitProducerId(%s) from %s: cannot allocate producer ids: %s", tid, ctx.peer, exc)
        return answer(E.COORDINATOR_NOT_AVAILABLE)
    r = await coord.init_producer_id(tid, req.transaction_timeout_ms,
                                     req.producer_id if v >= 3 else -1,
                                     req.producer_epoch if v >= 3 else -1).wait()
    if r.error:
        log.info("InitProducerId(%s) from %s: %s", tid, ctx.peer, r.error.name)
    return answer(r.error, r.producer_id, r.producer_epoch)


# ============================================================================ AddPartitionsToTxn
def _partition_errors(ctx: RequestContext, topics) -> tuple[list, dict]:
    """(the partitions asked for, errors of those that do not exist: the others then
    OPERATION_NOT_ATTEMPTED, as Kafka answers)."""
    image = ctx.broker.image
    tps, missing = [], {}
    for t in topics:
        ti = image.topics.get(t.name)
        for p in t.partitions:
            tps.append((t.name, p))
            if ti is None or p not in ti.partitions:
                missing[(t.name, p)] = E.UNKNOWN_TOPIC_OR_PARTITION
    if missing:
        return tps, {tp: missing.get(tp, E.OPERATION_NOT_ATTEMPTED) for tp in tps}
    return tps, {}


def _topic_results(ctx: RequestContext, errors: dict) -> list:
    TR = ctx.struct("AddPartitionsToTxnTopicResult")
    PR = ctx.struct("AddPartitionsToTxnPartitionResult")
    by_topic: dict[str, list] = {}
    for (topic, p), err in errors.items():
        by_topic.setdefault(topic, []).append(PR(partition_index=p, partition_error_code=err))
    return [TR(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


async def _add_one(ctx: RequestContext, tid: str, pid: int, epoch: int, topics, verify_only: bool) -> dict:
    v = ctx.version
    if v < 4 and ctx.broker.authorizer is not None:
        tps = [(t.name, p) for t in topics for p in t.partitions]
        if _txn_denied(ctx, tid):
            return {tp: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in tps}
        denied = {t.name for t in topics if not allowed(ctx, Op.WRITE, TOPIC, t.name)}
        if denied:
            return {tp: E.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied else E.OPERATION_NOT_ATTEMPTED for tp in tps}
    tps, errors = _partition_errors(ctx, topics)
    if errors:
        return errors
    if not tid:
        return {tp: E.INVALID_REQUEST for tp in tps}
    coord, error = _coordinator_for(ctx, tid)
    if coord is None:
        return {tp: error for tp in tps}
    if verify_only:
        out = coord.verify_partitions(tid, pid, epoch, tps)
        if v < 5:
            out = {tp: E.INVALID_TXN_STATE if e == E.TRANSACTION_ABORTABLE else e for tp, e in out.items()}
        return out
    # v5 without verify_only: a partition leader (Produce v12) or group coordinator
    # (TxnOffsetCommit v5) adding the partition for a producer of transaction version 2
    error = await _add_partitions(ctx, coord, tid, pid, epoch, tps, 2 if v >= 5 else None)
    return {tp: _fenced(error, v, 2) for tp in tps}


async def _add_partitions(ctx: RequestContext, coord, tid: str, pid: int, epoch: int, tps,
                          transaction_version: int | None = None) -> ErrorCode:
    """coordinator.add_partitions, waiting for a transaction still ending (see
    kwire.transactions.verify.add_partitions_waiting)."""
    return await add_partitions_waiting(_edge(ctx), coord, tid, pid, epoch, tps, transaction_version)


@handles("AddPartitionsToTxn", "0-5")
async def add_partitions_to_txn(ctx: RequestContext, req):
    v = ctx.version
    if v < 4:
        errors = await _add_one(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)
        return ctx.response(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(ctx, errors))
    R = ctx.struct("AddPartitionsToTxnResult")
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
        return ctx.response(throttle_time_ms=0, error_code=E.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[])
    ids = [t.transactional_id for t in req.transactions]
    if len(set(ids)) != len(ids):   # Kafka: duplicate transactional ids fail the whole request
        return ctx.response(throttle_time_ms=0, error_code=E.INVALID_REQUEST, results_by_transaction=[])
    results = [None] * len(req.transactions)

    async def one(i, t):
        errors = await _add_one(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                                t.verify_only)
        results[i] = R(transactional_id=t.transactional_id, topic_results=_topic_results(ctx, errors))

    async with trio.open_nursery() as n:
        for i, t in enumerate(req.transactions):
            n.start_soon(one, i, t)
    return ctx.response(throttle_time_ms=0, error_code=0, results_by_transaction=results)


# ============================================================================ AddOffsetsToTxn
@handles("AddOffsetsToTxn", "0-4")
async def add_offsets_to_txn(ctx: RequestContext, req):
    """The group's __consumer_offsets partition joins the transaction (TxnOffsetCommit then
    writes the offsets there)."""
    v = ctx.version

    def answer(error):
        return ctx.response(throttle_time_ms=0, error_code=_fenced(error, v, 2))

    if _txn_denied(ctx, req.transactional_id):
        return answer(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.READ, GROUP, req.group_id):
        return answer(E.GROUP_AUTHORIZATION_FAILED)
    coord, error = _coordinator_for(ctx, req.transactional_id)
    if coord is None:
        return answer(error)

    await ensure_offsets_topic(ctx)   # the markers of this transaction go to the group's partition
    groups = ctx.broker.groups
    if groups is not None:
        partition = groups.partition_for(req.group_id)
    else:
        t = ctx.broker.image.topics.get(OFFSETS_TOPIC)
        if t is None:
            return answer(E.COORDINATOR_NOT_AVAILABLE)
        from kwire.groups.records import partition_for as offsets_partition_for  # noqa: PLC0415 - start-up time

        partition = offsets_partition_for(req.group_id, len(t.partitions))
    error = await _add_partitions(ctx, coord, req.transactional_id, req.producer_id, req.producer_epoch,
                                  [(OFFSETS_TOPIC, partition)])
    return answer(error)


# ============================================================================ EndTxn
@handles("EndTxn", "0-5")
async def end_txn(ctx: RequestContext, req):
    """v5: transaction version 2 (the epoch bumped by this end is answered with the id)."""
    v = ctx.version
    if _txn_denied(ctx, req.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coord, error = _coordinator_for(ctx, req.transactional_id)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=error)
    sender = _edge(ctx).sender
    if sender is not None:
        sender.note_end_txn(req.transactional_id)   # for the timing log (off unless enabled)
    r = await coord.end_transaction(req.transactional_id, req.producer_id, req.producer_epoch, req.committed,
                                    2 if v >= 5 else 0).wait()
    if r.error:
        log.info("EndTxn(%s, %s) from %s: %s", req.transactional_id, "commit" if req.committed else "abort",
                 ctx.peer, r.error.name)
    return ctx.response(throttle_time_ms=0, error_code=_fenced(r.error, v, 2), producer_id=r.producer_id,
                        producer_epoch=r.producer_epoch)


# ============================================================================ operators
@handles("DescribeTransactions", "0")
async def describe_transactions(ctx: RequestContext, req):
    TS = ctx.struct("TransactionState")
    TD = ctx.struct("TopicData")
    coord = _coordinator(ctx)
    out = []
    for tid in req.transactional_ids:
        if _txn_denied(ctx, tid, Op.DESCRIBE):
            out.append(TS(error_code=E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, transactional_id=tid,
                          transaction_state="", transaction_timeout_ms=0, transaction_start_time_ms=-1,
                          producer_id=-1, producer_epoch=-1, topics=[]))
            continue
        d = coord.describe(tid) if coord is not None else None
        if d is None or d.error:
            out.append(TS(error_code=d.error if d is not None else E.COORDINATOR_NOT_AVAILABLE,
                          transactional_id=tid, transaction_state="", transaction_timeout_ms=0,
                          transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, p in d.partitions:
            by_topic.setdefault(topic, []).append(p)
        out.append(TS(error_code=0, transactional_id=tid, transaction_state=d.state,
                      transaction_timeout_ms=d.timeout_ms, transaction_start_time_ms=d.start_time_ms,
                      producer_id=d.producer_id, producer_epoch=d.producer_epoch,
                      topics=[TD(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return ctx.response(throttle_time_ms=0, transaction_states=out)


@handles("ListTransactions", "0-2")
async def list_transactions(ctx: RequestContext, req):
    v = ctx.version
    coord = _coordinator(ctx)
    if coord is None:
        return ctx.response(throttle_time_ms=0, error_code=E.COORDINATOR_NOT_AVAILABLE,
                            unknown_state_filters=[], transaction_states=[])
    r = coord.list_transactions(req.state_filters, req.producer_id_filters,
                                req.duration_filter if v >= 1 else -1,
                                req.transactional_id_pattern if v >= 2 else None)
    TS = ctx.struct("TransactionState")
    txns = [x for x in r.transactions if not _txn_denied(ctx, x.transactional_id, Op.DESCRIBE)]
    return ctx.response(throttle_time_ms=0, error_code=r.error, unknown_state_filters=list(r.unknown_state_filters),
                        transaction_states=[TS(transactional_id=x.transactional_id, producer_id=x.producer_id,
                                               transaction_state=x.state) for x in txns])
