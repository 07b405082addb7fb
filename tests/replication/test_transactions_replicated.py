"""Transactions across replicas (replica managers without sockets, as test_followers): the
followers replicate transactional batches and markers through the same append path, so
their producer state, last stable offset and .txnindex match the leader's; the leader's
LSO waits for the high watermark to pass a marker; after a leader change the new leader
answers read_committed fetches as the old one did and ends the open transaction."""
from __future__ import annotations

from kwire.codec.records import build_batch, build_control_batch, iter_batches
from kwire.log.txn_index import AbortedTxn
from kwire.log.validator import CLIENT, COORDINATOR

from .test_followers import NOW, T, Nodes

A, B = 7001, 7002


def txn(nodes, node, pid, seq, *values):
    batch = build_batch([(None, v, [], NOW) for v in values], producer_id=pid, producer_epoch=0,
                        base_sequence=seq, is_transactional=True)
    return nodes.rms[node].append(T, 0, bytearray(batch), NOW, origin=CLIENT).result()


def end(nodes, node, pid, commit):
    batch = build_control_batch(commit, pid, 0, NOW, coordinator_epoch=1)
    return nodes.rms[node].append(T, 0, bytearray(batch), NOW, origin=COORDINATOR, acks=-1).result()


def committed_values(nodes, node):
    """What a read_committed consumer keeps of a fetch from 0 on ``node`` (the Java client's
    rule: a transactional batch of a producer in an aborted transaction is dropped)."""
    res = nodes.rms[node].read(T, 0, 0, 1 << 20, read_committed=True)
    assert res.error == 0
    aborted = sorted(res.aborted_transactions, key=lambda t: t.first_offset)
    dropping: set[int] = set()
    out = []
    for b in iter_batches(bytes(res.records) if res.size else b""):
        while aborted and aborted[0].first_offset <= b.last_offset:
            dropping.add(aborted.pop(0).producer_id)
        if b.is_control:
            dropping.discard(b.producer_id)
            continue
        if b.is_transactional and b.producer_id in dropping:
            continue
        out += [bytes(r.value) for r in b.records()]
    return out, res.last_stable_offset


def test_followers_replicate_transactions_and_a_new_leader_serves_them(tmp_path):
    nodes = Nodes(tmp_path, n=2)
    try:
        nodes.partition([1, 2])
        txn(nodes, 1, A, 0, b"a0", b"a1")      # 0-1
        txn(nodes, 1, B, 0, b"b0")             # 2
        end(nodes, 1, A, commit=False)         # 3: A aborts
        lead = nodes.plog(1)
        # the marker is not replicated yet: the LSO stays at A's first offset
        assert (lead.high_watermark, lead.last_stable_offset) == (0, 0)
        nodes.fetch(2, 1)
        nodes.fetch(2, 1)
        assert lead.high_watermark == 4
        assert lead.last_stable_offset == 2     # B is open
        follower = nodes.plog(2)
        nodes.fetch(2, 1)                       # the follower learns the high watermark
        assert follower.last_stable_offset == 2
        assert follower.aborted_transactions(0, 10) == lead.aborted_transactions(0, 10) == [AbortedTxn(A, 0, 3, 2)]
        assert dict(follower.producer_state.ongoing_txns) == {2: B}

        nodes.change(leader=2, isr=[1, 2])      # 2 leads now, in a new epoch
        assert committed_values(nodes, 2) == ([], 2)
        end(nodes, 2, B, commit=True)           # the coordinator's marker reaches the new leader: 4
        nodes.fetch(1, 2)
        nodes.fetch(1, 2)
        assert nodes.plog(2).high_watermark == 5
        assert committed_values(nodes, 2) == ([b"b0"], 5)
        nodes.fetch(1, 2)
        assert nodes.plog(1).last_stable_offset == 5
        assert nodes.plog(1).aborted_transactions(0, 10) == [AbortedTxn(A, 0, 3, 2)]
    finally:
        nodes.close()
