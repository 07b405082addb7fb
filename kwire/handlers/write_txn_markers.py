"""WriteTxnMarkers (key 27): versions 0-2, the broker side (Kafka's
KafkaApis.handleWriteTxnMarkersRequest).

A transaction coordinator ends a transaction by asking the leader of each partition in it to
append a marker: a transactional control batch with one control record (commit or abort,
the coordinator epoch; kwire.codec.records.build_control_batch) for the producer id and
epoch. Each marker goes through the replica manager's one append path (ReplicaManager.append,
then await_appends) with origin COORDINATOR and acks=all, as Kafka does (the producer state ends the producer's transaction,
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
from dataclasses import dataclass

from kwire.codec.records import build_control_batch
from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.log.validator import COORDINATOR
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op

log = logging.getLogger("kwire.txn_markers")

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(slots=True)
class MarkerWrite:
    """One partition's marker: what to write, and its error once written (0: NONE)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    transaction_version: int = 0   # >= 2: the KIP-1228 epoch rule (WriteTxnMarkers v2 only)
    error: int = 0


async def write_markers(broker, writes: list[MarkerWrite], peer: str) -> None:
    """Append each marker (acks=all) and set its ``error``: the handler's work, also called
    in process by this broker's own transaction coordinator (kwire.transactions.markers) for
    the partitions it leads. Waits only for what is due: a log sync, the high watermark of a
    replicated partition, a group's transaction completion."""
    rm = broker.replica_manager
    now = broker.clock.now_ms()
    written = []   # (write, AppendOutcome)
    for w in writes:
        batch = build_control_batch(w.committed, w.producer_id, w.producer_epoch, now,
                                    coordinator_epoch=w.coordinator_epoch)
        try:
            if w.transaction_version >= 2:
                _check_tv2_marker_epoch(rm, w.topic, w.partition, w.producer_id, w.producer_epoch)
        except KafkaError as exc:
            _refused(w, exc, peer)
            continue
        res = rm.append(w.topic, w.partition, batch, now, acks=-1, origin=COORDINATOR)
        if res.error is not None and res.base_offset < 0:   # refused: nothing written
            _refused(w, res.error, peer)
            continue
        written.append((w, res))
    # the disk work and the replication of every marker, within request.timeout.ms
    await rm.await_appends([res for _, res in written], int(broker.config.get("request.timeout.ms")))
    for w, res in written:
        w.error = res.code
        if w.error == ErrorCode.NONE and w.topic == OFFSETS_TOPIC:
            await _complete_group_transaction(broker, w, res.base_offset)


def _refused(w: MarkerWrite, exc: KafkaError, peer: str) -> None:
    w.error = exc.code
    log.info("%s marker for producer %d epoch %d on %s-%d from %s refused: %s",
             "commit" if w.committed else "abort", w.producer_id, w.producer_epoch,
             w.topic, w.partition, peer, exc)


@handles("WriteTxnMarkers", "0-2")
async def write_txn_markers(ctx: RequestContext, req):
    b = ctx.broker
    MR = ctx.struct("WritableTxnMarkerResult")
    TR = ctx.struct("WritableTxnMarkerTopicResult")
    PR = ctx.struct("WritableTxnMarkerPartitionResult")
    if b.authorizer is not None and not allowed(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
        return ctx.response(markers=[MR(producer_id=m.producer_id, topics=[TR(name=t.name, partitions=[
            PR(partition_index=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for p in t.partition_indexes])
            for t in m.topics]) for m in req.markers])
    tv = (lambda m: m.transaction_version) if ctx.version >= 2 else (lambda m: 0)
    writes = [[[MarkerWrite(t.name, p, m.producer_id, m.producer_epoch, bool(m.transaction_result),
                            m.coordinator_epoch, tv(m)) for p in t.partition_indexes]
               for t in m.topics] for m in req.markers]
    await write_markers(b, [w for per_m in writes for per_t in per_m for w in per_t], ctx.peer)
    return ctx.response(markers=[
        MR(producer_id=m.producer_id, topics=[
            TR(name=t.name, partitions=[PR(partition_index=w.partition, error_code=w.error) for w in ws])
            for t, ws in zip(m.topics, per_m)])
        for m, per_m in zip(req.markers, writes)])


def _check_tv2_marker_epoch(rm, topic: str, partition: int, producer_id: int, epoch: int) -> None:
    """A transaction version 2 marker's epoch must be above the producer's on the partition."""
    ps = rm.leader_log(topic, partition).producer_state
    entry = ps.producers.get(producer_id) if ps is not None else None
    if entry is not None and epoch <= entry.epoch:
        raise KafkaError(f"Epoch of producer {producer_id} in {topic}-{partition} is {epoch}, which is <= the "
                         f"last seen epoch {entry.epoch} (TV2)", ErrorCode.INVALID_PRODUCER_EPOCH)


async def _complete_group_transaction(broker, w: MarkerWrite, offset: int) -> None:
    """The group coordinator's part (txg: pending transactional offset commits of the
    producer on this partition become committed, or are dropped)."""
    groups = broker.groups
    complete = getattr(groups, "complete_transaction", None) if groups is not None else None
    if complete is None:
        return
    try:
        await complete(w.partition, w.producer_id, w.producer_epoch, w.committed, offset)
    except Exception:  # noqa: BLE001 - the marker is in the log; a reload applies it
        log.exception("group coordinator failed to complete the transaction of producer %d on %s-%d at %d",
                      w.producer_id, OFFSETS_TOPIC, w.partition, offset)
