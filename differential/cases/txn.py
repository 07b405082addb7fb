"""InitProducerId, idempotent produce (duplicates, gaps, fenced epochs) and transactions
(AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, read_committed Fetch), valid and not."""
from __future__ import annotations

import time

from hypothesis import strategies as st

from kwire.codec.records import build_batch

from differential.cases.data import TS, produce_request
from differential.run import Family
from differential.session import S, Session

V = st.integers(0, 10_000)


def records(i: int, pid: int, epoch: int, seq: int, txn: bool) -> bytes:
    recs = [(f"k{i}-{j}".encode(), f"v{i}-{j}".encode(), [], TS + j) for j in range(2)]
    return build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn)


def idempotent(s: Session, p) -> None:
    vinit, vprod, seqs, epoch_delta = p
    s.create_topic(s.topic("a"), 1)
    vi = s.version("InitProducerId", vinit)
    body = s.call("InitProducerId", vi, transactional_id=None, transaction_timeout_ms=60000)
    if body is None or body.error_code:
        return
    pid, epoch = body.producer_id, body.producer_epoch
    vp = s.version("Produce", vprod)
    for i, seq in enumerate(seqs):
        s.call("Produce", vp, label=f"Produce-seq{seq}", **produce_request(
            s, vp, s.topic("a"), 0, records(i, pid, epoch + (epoch_delta if i == len(seqs) - 1 else 0), seq, False)))


idempotent_st = st.tuples(V, V, st.lists(st.sampled_from([0, 0, 2, 4, 7, -1]), min_size=1, max_size=4),
                          st.sampled_from([0, 0, 1, -1]))


def transaction(s: Session, p) -> None:
    vfind, vinit, vadd, vprod, vaddoff, vtoc, vend, commit, variant = p
    topic, txn, group = s.topic("a"), s.group("txn"), s.group()
    s.create_topic(topic, 2)
    # both coordinators loaded first, as in the groups family: a family that ran before may have
    # deleted __consumer_offsets (DeleteTopics of an internal topic), and Kafka recreates it
    # asynchronously on the next look-up where kwire answers once it exists
    s.wait_coordinator(group)
    s.wait_coordinator(txn, key_type=1)
    vf = s.version("FindCoordinator", vfind)
    if vf >= 4:
        s.call("FindCoordinator", vf, key_type=1, coordinator_keys=[txn])
    else:
        s.call("FindCoordinator", vf, key=txn, key_type=1)
    vi = s.version("InitProducerId", vinit)
    body = s.call("InitProducerId", vi, transactional_id=txn, transaction_timeout_ms=60000)
    if body is None or body.error_code:
        return
    pid, epoch = body.producer_id, body.producer_epoch
    if variant == "fenced":
        # a second producer with the same transactional id bumps the epoch: this one is fenced
        s.call("InitProducerId", vi, label="InitProducerId-fencer", transactional_id=txn,
               transaction_timeout_ms=60000)
    if variant == "bad-epoch":
        epoch_used = epoch + 1
    else:
        epoch_used = epoch
    txn_used = s.group("unknown-txn") if variant == "unknown-txn" else txn
    # clients speak AddPartitionsToTxn v0-3; v4+ is broker to broker
    va = s.version("AddPartitionsToTxn", vadd) if s.side.common.get(24, (0, -1))[1] >= 0 else None
    if va is not None and va > 3:
        va = 3
    if variant != "no-add":
        AT = S("AddPartitionsToTxn", "AddPartitionsToTxnTopic")
        parts = [0] if variant != "bad-partition" else [0, 9]
        s.call("AddPartitionsToTxn", va, v3_and_below_transactional_id=txn_used, v3_and_below_producer_id=pid,
               v3_and_below_producer_epoch=epoch_used, v3_and_below_topics=[AT(name=topic, partitions=parts)])
    vp = s.version("Produce", vprod, at_least=3)
    s.call("Produce", vp, **produce_request(s, vp, topic, 0, records(0, pid, epoch, 0, True), txn=txn))
    vo = s.version("AddOffsetsToTxn", vaddoff)
    if variant != "no-add-offsets":
        s.call("AddOffsetsToTxn", vo, transactional_id=txn_used, producer_id=pid, producer_epoch=epoch_used,
               group_id=group)
    vt = s.version("TxnOffsetCommit", vtoc)
    TT = S("TxnOffsetCommit", "TxnOffsetCommitRequestTopic")
    TP = S("TxnOffsetCommit", "TxnOffsetCommitRequestPartition")
    s.call("TxnOffsetCommit", vt, transactional_id=txn_used, group_id=group, producer_id=pid,
           producer_epoch=epoch_used, topics=[TT(name=topic, partitions=[TP(partition_index=0, committed_offset=1,
                                                                             committed_metadata="t")])])
    ve = s.version("EndTxn", vend)
    end = s.call("EndTxn", ve, transactional_id=txn_used, producer_id=pid, producer_epoch=epoch_used, committed=commit)
    if variant == "double-end":
        s.call("EndTxn", ve, label="EndTxn-again", transactional_id=txn, producer_id=pid, producer_epoch=epoch,
               committed=not commit)
    # what a read_committed consumer sees (the marker lands asynchronously: wait for the LSO to move)
    if end is not None and end.error_code == 0:
        wait_stable(s, topic, 0)
    FT = S("Fetch", "FetchTopic")
    FP = S("Fetch", "FetchPartition")
    s.call("Fetch", 12, label="Fetch-read-committed", replica_id=-1, max_wait_ms=500, min_bytes=1,
           max_bytes=1 << 20, isolation_level=1,
           topics=[FT(topic=topic, partitions=[FP(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])


def wait_stable(s: Session, topic: str, partition: int, timeout: float = 10.0) -> None:
    """Until the partition's last stable offset reaches its high watermark (unrecorded): Kafka
    answers EndTxn before its coordinator has written the markers, kwire after."""
    T = S("ListOffsets", "ListOffsetsTopic")
    LP = S("ListOffsets", "ListOffsetsPartition")

    def latest(isolation: int):
        body = s.setup("ListOffsets", 7, replica_id=-1, isolation_level=isolation, topics=[
            T(name=topic, partitions=[LP(partition_index=partition, timestamp=-1)])])
        return None if body is None else body.topics[0].partitions[0].offset

    deadline = time.monotonic() + timeout
    while latest(1) != latest(0) and time.monotonic() < deadline:
        time.sleep(0.05)


transaction_st = st.tuples(V, V, V, V, V, V, V, st.booleans(),
                           st.sampled_from(["ok", "ok", "ok", "bad-epoch", "unknown-txn", "no-add", "bad-partition",
                                            "double-end", "fenced", "no-add-offsets"]))


FAMILIES = [
    Family("idempotent", idempotent_st, idempotent, examples=60, ci_examples=6),
    Family("transactions", transaction_st, transaction, examples=80, ci_examples=6),
]
