"""WriteTxnMarkers (key 27): versions 0-2, the broker side (Kafka's
KafkaApis.handleWriteTxnMarkersRequest).

A transaction coordinator ends a transaction by asking the leader of each partition in it to
append a marker. This module is the wire adapter: the request's markers are written by
kwire.transactions.marker_writer.write_markers (the one marker writer, which this broker's own
transaction coordinator also calls for the partitions it leads); the answer waits until the
high watermark passed every marker (or request.timeout.ms). Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION,
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
producer state, right before the append with no await between them (in the marker writer).
kwire's own coordinator (kwire.transactions.markers) still sends v1 to other brokers, which every kwire broker serves, carrying the
bumped epoch for a transaction of version 2.
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op
from kwire.transactions.marker_writer import MarkerWrite, write_markers


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
