"""Transaction markers appended on this broker (the leader side of Kafka's
KafkaApis.handleWriteTxnMarkersRequest, below the wire): the one function that writes them, used
by the WriteTxnMarkers handler (kwire.handlers.write_txn_markers, a thin wire adapter) and, for
the partitions this broker leads, by its own transaction coordinator's marker sender
(kwire.transactions.markers) without a request.

Each marker is a transactional control batch with one control record (commit or abort, the
coordinator epoch; kwire.codec.records.build_control_batch) for the producer id and epoch,
appended through the replica manager's one append path (ReplicaManager.append, then
await_appends) with origin COORDINATOR and acks=all, as Kafka does: the producer state ends the
producer's transaction, an aborted one goes to the segment's .txnindex, the last stable offset
moves once the high watermark passes the marker. Waits until the high watermark passed every
marker (or request.timeout.ms). Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH (a marker older than the producer's epoch; for a
marker of transaction version 2, KIP-1228, one not above it) and TRANSACTION_COORDINATOR_FENCED
(an older coordinator epoch than the last marker's).

After a marker is in a ``__consumer_offsets`` partition (replicated), the group coordinator
learns it (``broker.groups.complete_transaction``: the transaction's offset commits become
visible, or vanish on abort), as Kafka's onTransactionCompleted.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from kwire.codec.records import build_control_batch
from kwire.errors import ErrorCode, KafkaError
from kwire.internal_topics import OFFSETS_TOPIC
from kwire.log.validator import COORDINATOR

log = logging.getLogger("kwire.txn_markers")


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
    """Append each marker (acks=all) and set its ``error``: the WriteTxnMarkers handler's work,
    also called by this broker's own transaction coordinator (kwire.transactions.markers) for
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
