"""The per-id state machine alone (kwire.transactions.metadata): Kafka's transition table, the
epoch rules of InitProducerId, and the checks a completion makes; and the records of
__transaction_state."""
from __future__ import annotations

from dataclasses import replace

import pytest

from kwire.errors import CodecError
from kwire.transactions import records as R
from kwire.transactions.metadata import (MAX_EPOCH, VALID_PREVIOUS, Fenced, IllegalTransition,
                                         TransactionMetadata, TransactionState, TxnTransit)
from kwire.transactions.state_manager import PartitionLoad

S = TransactionState
ALL = list(S)


def md_in(state, **kw):
    kw.setdefault("producer_epoch", 3)
    kw.setdefault("topic_partitions", {("t", 0)} if state not in (S.EMPTY,) else set())
    kw.setdefault("txn_start_timestamp", 100 if state != S.EMPTY else -1)
    return TransactionMetadata("tx", 7, state=state, **kw)


@pytest.mark.parametrize("source", ALL, ids=[s.state_name for s in ALL])
@pytest.mark.parametrize("target", ALL, ids=[s.state_name for s in ALL])
def test_transition_table(source, target):
    """Every (state -> state) pair: prepared iff Kafka's validPreviousStates allows it."""
    md = md_in(source)
    if source in VALID_PREVIOUS[target]:
        out = md._prepare(state=target)
        assert md.pending_state == target and out.state == target
        assert out.prev_producer_id == md.producer_id and out.producer_epoch == md.producer_epoch
    else:
        with pytest.raises(IllegalTransition):
            md._prepare(state=target)
        assert md.pending_state is None


def test_kafka_table_spelled_out():
    assert VALID_PREVIOUS[S.PREPARE_COMMIT] == {S.ONGOING}
    # Kafka 4 (transaction version 2): an abort may also start from Empty or Complete*
    assert VALID_PREVIOUS[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                              S.COMPLETE_ABORT}
    assert VALID_PREVIOUS[S.COMPLETE_COMMIT] == {S.PREPARE_COMMIT}
    assert VALID_PREVIOUS[S.COMPLETE_ABORT] == {S.PREPARE_ABORT}
    assert VALID_PREVIOUS[S.DEAD] == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert VALID_PREVIOUS[S.PREPARE_EPOCH_FENCE] == {S.ONGOING}
    assert [s.id for s in ALL] == list(range(8))
    assert {s.state_name for s in ALL if s.expiration_allowed} == {"Empty", "CompleteCommit", "CompleteAbort"}


def test_one_transition_at_a_time():
    md = md_in(S.ONGOING)
    md.prepare_abort_or_commit(S.PREPARE_COMMIT, 200)
    with pytest.raises(IllegalTransition):
        md.prepare_abort_or_commit(S.PREPARE_ABORT, 200)


def test_increment_epoch_rules():
    # a new producer: the epoch is bumped and the last epoch forgotten
    md = md_in(S.EMPTY, last_producer_epoch=2)
    t = md.prepare_increment_producer_epoch(5000, None, 10)
    assert (t.producer_epoch, t.last_producer_epoch, t.txn_timeout_ms) == (4, -1, 5000)
    md.complete_transition_to(t)
    assert (md.producer_epoch, md.state, md.txn_last_update_timestamp) == (4, S.EMPTY, 10)
    # the producer's own epoch (KIP-360): bumped, the previous remembered
    t = md.prepare_increment_producer_epoch(5000, 4, 11)
    assert (t.producer_epoch, t.last_producer_epoch) == (5, 4)
    md.complete_transition_to(t)
    # a retry with the epoch before that bump: the current epoch again
    t = md.prepare_increment_producer_epoch(5000, 4, 12)
    assert (t.producer_epoch, t.last_producer_epoch) == (5, 4)
    md.pending_state = None
    # anything else is fenced
    with pytest.raises(Fenced):
        md.prepare_increment_producer_epoch(5000, 2, 13)
    assert md.pending_state is None


def test_exhausted_epoch_refuses_increment_and_rotates():
    md = md_in(S.COMPLETE_COMMIT, producer_epoch=MAX_EPOCH - 1)
    assert md.producer_epoch_exhausted
    with pytest.raises(IllegalTransition):
        md.prepare_increment_producer_epoch(1000, None, 1)
    t = md.prepare_producer_id_rotation(99, 1000, 2, record_last_epoch=True)
    assert (t.producer_id, t.producer_epoch, t.last_producer_epoch, t.prev_producer_id) == \
        (99, 0, MAX_EPOCH - 1, 7)
    md.complete_transition_to(t)
    assert (md.producer_id, md.producer_epoch) == (99, 0)


def test_fence_bumps_once_even_after_a_failed_fence():
    md = md_in(S.ONGOING)
    assert md.prepare_fence_producer_epoch().producer_epoch == 4
    md.pending_state = None
    md.has_failed_epoch_fence = True
    assert md.prepare_fence_producer_epoch().producer_epoch == 3


def test_add_partitions_keeps_start_time_while_ongoing():
    md = md_in(S.EMPTY)
    t = md.prepare_add_partitions({("a", 1)}, 500)
    assert t.txn_start_timestamp == 500 and t.topic_partitions == {("a", 1)}
    md.complete_transition_to(t)
    t = md.prepare_add_partitions({("b", 0)}, 900)
    assert t.txn_start_timestamp == 500 and t.topic_partitions == {("a", 1), ("b", 0)}
    md.complete_transition_to(t)
    assert md.state == S.ONGOING and md.txn_last_update_timestamp == 900


def test_complete_checks_what_was_prepared():
    md = md_in(S.ONGOING)
    t = md.prepare_abort_or_commit(S.PREPARE_COMMIT, 200)
    with pytest.raises(IllegalTransition):   # another producer epoch than the metadata's
        md.complete_transition_to(replace(t, producer_epoch=9))
    with pytest.raises(IllegalTransition):   # not the pending state
        md.complete_transition_to(replace(t, state=S.PREPARE_ABORT))
    md.complete_transition_to(t)
    assert md.state == S.PREPARE_COMMIT and md.pending_state is None
    with pytest.raises(IllegalTransition):   # nothing pending
        md.complete_transition_to(t)


def test_remove_partition_only_while_preparing():
    md = md_in(S.ONGOING)
    with pytest.raises(IllegalTransition):
        md.remove_partition(("t", 0))
    md.complete_transition_to(md.prepare_abort_or_commit(S.PREPARE_ABORT, 1))
    md.remove_partition(("t", 0))
    assert not md.topic_partitions
    c = md.prepare_complete(5)
    md.complete_transition_to(c)
    assert md.state == S.COMPLETE_ABORT and md.txn_start_timestamp == 100


def test_dead_is_never_completed():
    md = md_in(S.COMPLETE_ABORT)
    t = md.prepare_dead()
    with pytest.raises(IllegalTransition):
        md.complete_transition_to(t)


# --- records ---------------------------------------------------------------------------
def test_value_v0_bytes_as_kafka_writes_them():
    t = TxnTransit(5, 4, -1, 3, -1, 60000, S.ONGOING, frozenset({("a", 1), ("a", 0)}), 100, 200)
    b = R.value_bytes(t)
    # version 0 | producer id | epoch | timeout | status | [topic [partitions]] | last update | start
    assert b.hex() == ("0000" "0000000000000005" "0003" "0000ea60" "01"
                       "00000001" "000161" "00000002" "00000000" "00000001"
                       "00000000000000c8" "0000000000000064")
    assert R.key_bytes("tx") == bytes.fromhex("0000" "0002") + b"tx"


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("state", [s for s in ALL if s != S.DEAD])
def test_value_round_trip(version, state):
    tps = frozenset() if state == S.EMPTY else frozenset({("x", 3), ("y", 0)})
    t = TxnTransit(11, 10, -1, 2, -1, 900, state, tps, -1 if state == S.EMPTY else 7, 8)
    back = R.decode_value(R.value_bytes(t, version))
    assert back == replace(t, prev_producer_id=t.prev_producer_id if version else -1)


def test_empty_state_has_null_partitions_and_refuses_some():
    t = TxnTransit(1, -1, -1, 0, -1, 10, S.EMPTY, frozenset(), -1, 1)
    assert R.value_bytes(t)[2 + 8 + 2 + 4 + 1:][:4] == b"\xff\xff\xff\xff"
    with pytest.raises(ValueError):
        R.value_bytes(replace(t, topic_partitions=frozenset({("a", 0)})))


@pytest.mark.parametrize("bad", [b"", b"\x00", b"\x00\x07rest", b"\x00\x00\x00"])
def test_bad_values_are_codec_errors(bad):
    with pytest.raises(CodecError):
        R.decode_value(bad)


def test_partition_for_matches_kafka():
    # Utils.abs("my-txn".hashCode()) % 50 as Kafka computes it (Java hashCode -1061187895)
    assert R.partition_for("my-txn", 50) == abs(-1061187895) % 50 == 45
    assert all(0 <= R.partition_for(f"t{i}", 7) < 7 for i in range(100))


def test_load_replays_in_order_and_skips_garbage():
    load = PartitionLoad(3, 9)
    a1 = TxnTransit(1, -1, -1, 0, -1, 10, S.EMPTY, frozenset(), -1, 1)
    a2 = replace(a1, state=S.ONGOING, topic_partitions=frozenset({("t", 0)}), txn_start_timestamp=2)
    load.replay(R.key_bytes("a"), R.value_bytes(a1))
    load.replay(R.key_bytes("b"), R.value_bytes(a1))
    load.replay(R.key_bytes("a"), R.value_bytes(a2))
    load.replay(R.key_bytes("b"), None)            # tombstone: b expired
    load.replay(b"\x00\x09junk", b"junk")         # an unknown key version
    load.replay(R.key_bytes("c"), b"\x00\x00\x01")  # a value cut short
    assert set(load.transactions) == {"a"}
    md = load.transactions["a"]
    assert (md.state, md.topic_partitions, md.last_producer_epoch) == (S.ONGOING, {("t", 0)}, -1)
    assert (load.records, load.skipped) == (6, 2)
