"""WriteTxnMarkers (key 27): versions 0-2, the broker side (Kafka's
KafkaApis.handleWriteTxnMarkersRequest).

A transaction coordinator ends a transaction by asking the leader of each partition in it to
append a marker: a transactional control batch with one control record (commit or abort,
the coordinator epoch; kwire.codec.records.build_control_batch) for the producer id and
epoch. Each marker goes through the replica manager's one append path with origin
COORDINATOR and acks=all, as Kafka does (the producer state ends the producer's transaction,
an aborted one goes to the segment's .txnindex, the last stable offset moves once the high
watermark passes the marker); the answer waits until the high watermark passed every marker
(or request.timeout.ms). Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH (a marker older than the producer's epoch) and
TRANSACTION_COORDINATOR_FENCED (an older coordinator epoch than the last marker's).

After a marker is in a ``__consumer_offsets`` partition (replicated), the group coordinator
learns it (``complete_transaction``: the transaction's offset commits become visible, or
vanish on abort), as Kafka's onTransactionCompleted.

With an authorizer: CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED everywhere).
v2 (KIP-1228) names each marker's transaction version: a marker of transaction version 2 must
carry an epoch strictly above the producer's epoch on the partition (EndTxn bumped it), else
INVALID_PRODUCER_EPOCH, as Kafka's ProducerAppendInfo.checkProducerEpoch; versions 0-1 keep the
older rule (an epoch not below the producer's). The check is made here, against the leader's
producer state, right before the append with no await between them. kwire's own coordinator
(kwire.transactions.markers) still sends v1, which every kwire broker serves, carrying the
bumped epoch for a transaction of version 2.
"""
from __future__ import annotations

import logging

import trio

from kwire.codec.records import build_control_batch
from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.log.validator import COORDINATOR
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op

log = logging.getLogger("kwire.txn_markers")

OFFSETS_TOPIC = "__consumer_offsets"


@handles("WriteTxnMarkers", "0-2")
async def write_txn_markers(ctx: RequestContext, req):
    b = ctx.broker
    rm = b.replica_manager
    MR = ctx.struct("WritableTxnMarkerResult")
    TR = ctx.struct("WritableTxnMarkerTopicResult")
    PR = ctx.struct("WritableTxnMarkerPartitionResult")
    now = b.clock.now_ms()
    out = []
    if b.authorizer is not None and not allowed(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
        return ctx.response(markers=[MR(producer_id=m.producer_id, topics=[TR(name=t.name, partitions=[
            PR(partition_index=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for p in t.partition_indexes])
            for t in m.topics]) for m in req.markers])
    syncs = []     # (partition result, LogSync)
    written = []   # (partition result, marker, topic, partition, marker offset, leader epoch, event)
    for m in req.markers:
        topics = []
        out.append(MR(producer_id=m.producer_id, topics=topics))
        for t in m.topics:
            parts = []
            topics.append(TR(name=t.name, partitions=parts))
            for p in t.partition_indexes:
                pr = PR(partition_index=p, error_code=0)
                parts.append(pr)
                batch = build_control_batch(m.transaction_result, m.producer_id, m.producer_epoch, now,
                                            coordinator_epoch=m.coordinator_epoch)
                try:
                    if ctx.version >= 2 and m.transaction_version >= 2:
                        _check_tv2_marker_epoch(rm, t.name, p, m.producer_id, m.producer_epoch)
                    res = rm.append_records(t.name, p, batch, now, origin=COORDINATOR, required_acks=-1)
                except KafkaError as exc:
                    pr.error_code = exc.code
                    log.info("%s marker for producer %d epoch %d on %s-%d from %s refused: %s",
                             "commit" if m.transaction_result else "abort", m.producer_id, m.producer_epoch,
                             t.name, p, ctx.peer, exc)
                    continue
                sync = rm.log_sync_after_append(t.name, p, -1, now)
                if sync is not None:
                    syncs.append((pr, sync))
                end = res.last_offset + 1
                written.append((pr, m, t.name, p, res.base_offset, rm.leader_epoch(t.name, p),
                                rm.wait_for_high_watermark(t.name, p, end)))
    if syncs:
        await trio.to_thread.run_sync(lambda: [s.run() for _, s in syncs])
        for pr, s in syncs:
            exc = s.error()
            if exc is not None:
                pr.error_code = exc.code
    timeout = int(b.config.get("request.timeout.ms")) / 1000
    with trio.move_on_after(timeout):
        for *_, ev in written:
            if ev is not None:
                await ev.wait()
    for pr, m, topic, p, offset, epoch, _ in written:
        if pr.error_code:
            continue
        pr.error_code = rm.acks_all_error(topic, p, offset + 1, epoch)
        if pr.error_code == ErrorCode.NONE and topic == OFFSETS_TOPIC:
            await _complete_group_transaction(ctx, p, m, offset)
    return ctx.response(markers=out)


def _check_tv2_marker_epoch(rm, topic: str, partition: int, producer_id: int, epoch: int) -> None:
    """A transaction version 2 marker's epoch must be above the producer's on the partition."""
    ps = rm.leader_log(topic, partition).producer_state
    entry = ps.producers.get(producer_id) if ps is not None else None
    if entry is not None and epoch <= entry.epoch:
        raise KafkaError(f"Epoch of producer {producer_id} in {topic}-{partition} is {epoch}, which is <= the "
                         f"last seen epoch {entry.epoch} (TV2)", ErrorCode.INVALID_PRODUCER_EPOCH)


async def _complete_group_transaction(ctx: RequestContext, partition: int, m, offset: int) -> None:
    """The group coordinator's part (txg: pending transactional offset commits of the
    producer on this partition become committed, or are dropped)."""
    groups = ctx.broker.groups
    complete = getattr(groups, "complete_transaction", None) if groups is not None else None
    if complete is None:
        return
    try:
        await complete(partition, m.producer_id, m.producer_epoch, bool(m.transaction_result), offset)
    except Exception:  # noqa: BLE001 - the marker is in the log; a reload applies it
        log.exception("group coordinator failed to complete the transaction of producer %d on %s-%d at %d",
                      m.producer_id, OFFSETS_TOPIC, partition, offset)
