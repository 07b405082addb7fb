"""Transactions in the log: transactional batches and markers through PartitionLog.append,
the last stable offset, the aborted-transactions index (.txnindex) and what survives a clean
close, a crash, a truncation, retention and a follower's append."""
from __future__ import annotations

import os

import pytest

from kwire.codec.records import build_batch, build_control_batch
from kwire.errors import ErrorCode, KafkaError
from kwire.log import producer_log as PL
from kwire.log.config import LogConfig
from kwire.log.partition_log import PartitionLog
from kwire.log.producer_state import ProducerStateManager
from kwire.log.txn_index import ENTRY_SIZE, AbortedTxn
from kwire.log.validator import CLIENT, COORDINATOR, REPLICATION

NOW = 1_700_000_000_000
A, B = 5001, 5002


def open_log(path, **cfg):
    return PartitionLog.open(str(path), LogConfig(**cfg), now_ms=NOW)


def txn_batch(pid, epoch, seq, n=2, tag="v", transactional=True, base_offset=0, leader_epoch=-1):
    return build_batch([(b"k", f"{tag}{i}".encode(), [], NOW) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, is_transactional=transactional,
                       base_offset=base_offset, partition_leader_epoch=leader_epoch)


def marker(pid, epoch, commit, coordinator_epoch=0, base_offset=0, leader_epoch=-1):
    return build_control_batch(commit, pid, epoch, NOW, coordinator_epoch=coordinator_epoch,
                               base_offset=base_offset, partition_leader_epoch=leader_epoch)


def produce(log, batch):
    res = log.append(batch, now_ms=NOW, origin=CLIENT)
    log.update_high_watermark(log.log_end_offset)   # a single replica: everything is replicated
    return res


def end_txn(log, pid, epoch, commit, coordinator_epoch=0):
    res = log.append(marker(pid, epoch, commit, coordinator_epoch), now_ms=NOW, origin=COORDINATOR)
    log.update_high_watermark(log.log_end_offset)
    return res


def test_lso_stops_at_the_first_open_transaction(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, build_batch([(b"k", b"plain", [], NOW)]))            # 0
    produce(log, txn_batch(A, 0, 0))                                 # 1-2  A opens at 1
    produce(log, txn_batch(B, 0, 0))                                 # 3-4  B opens at 3
    assert (log.high_watermark, log.last_stable_offset) == (5, 1)
    end_txn(log, A, 0, commit=True)                                  # 5: A commits
    assert log.last_stable_offset == 3
    end_txn(log, B, 0, commit=False)                                 # 6: B aborts
    assert log.last_stable_offset == log.high_watermark == 7
    assert log.aborted_transactions(0, 7) == [AbortedTxn(B, 3, 6, 7)]
    assert log.aborted_transactions(7, 7) == []      # the marker is before the fetch offset
    assert log.aborted_transactions(0, 3) == []      # B starts at or after the upper bound
    seg = log.segments[-1]
    assert os.path.getsize(seg.txn_index.path) == ENTRY_SIZE
    log.close()


def test_lso_waits_for_the_marker_to_be_replicated(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, txn_batch(A, 0, 0))
    log.append(marker(A, 0, True), now_ms=NOW, origin=COORDINATOR)   # 2, high watermark still 2
    assert log.last_stable_offset == 0
    log.update_high_watermark(3)
    assert log.last_stable_offset == 3
    log.close()


def test_aborted_entry_lso_names_the_next_open_transaction(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, txn_batch(A, 0, 0))                                 # 0-1
    produce(log, txn_batch(B, 0, 0))                                 # 2-3
    end_txn(log, A, 0, commit=False)                                 # 4
    assert log.aborted_transactions(0, 10) == [AbortedTxn(A, 0, 4, 2)]
    log.close()


def test_transaction_state_checks(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, txn_batch(A, 3, 0))
    with pytest.raises(KafkaError) as e:
        produce(log, txn_batch(A, 3, 2, transactional=False))
    assert e.value.code == ErrorCode.INVALID_TXN_STATE
    with pytest.raises(KafkaError) as e:
        end_txn(log, A, 2, commit=True)                  # a marker of an older epoch
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    end_txn(log, A, 3, commit=True, coordinator_epoch=7)
    with pytest.raises(KafkaError) as e:
        end_txn(log, A, 3, commit=True, coordinator_epoch=6)   # a zombie coordinator
    assert e.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    # the coordinator aborts with a bumped epoch (a timed-out transaction): the old one is fenced
    produce(log, txn_batch(A, 3, 2))
    end_txn(log, A, 4, commit=False, coordinator_epoch=7)
    with pytest.raises(KafkaError) as e:
        produce(log, txn_batch(A, 3, 4))
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    produce(log, txn_batch(A, 5, 0))                     # the next epoch starts at sequence 0
    # a marker for a producer without an open transaction ends nothing and indexes nothing
    end_txn(log, B, 0, commit=False)
    assert [t.producer_id for t in log.aborted_transactions(0, 100)] == [A]
    log.close()


def test_clients_cannot_write_markers(tmp_path):
    log = open_log(tmp_path / "t-0")
    with pytest.raises(KafkaError) as e:
        log.append(marker(A, 0, True), now_ms=NOW, origin=CLIENT)
    assert e.value.code == ErrorCode.INVALID_RECORD
    log.close()


def test_coordinator_batches_without_sequences_open_transactions(tmp_path):
    """What the group coordinator writes for TxnOffsetCommit: transactional, no sequence."""
    log = open_log(tmp_path / "t-0", cleanup_policy="compact")
    log.append(txn_batch(A, 1, -1, n=1), now_ms=NOW, origin=COORDINATOR)
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 0
    end_txn(log, A, 1, commit=True)
    assert log.last_stable_offset == 2
    log.close()


def _states(log):
    ps = PL.producer_state_of(log)
    return ({p: (e.epoch, e.current_txn_first_offset, e.coordinator_epoch) for p, e in ps.producers.items()},
            dict(ps.ongoing_txns))


def _history(log):
    produce(log, txn_batch(A, 0, 0))                   # 0-1
    end_txn(log, A, 0, commit=False, coordinator_epoch=2)    # 2
    produce(log, txn_batch(B, 0, 0))                   # 3-4
    produce(log, txn_batch(A, 0, 2))                   # 5-6
    end_txn(log, A, 0, commit=False, coordinator_epoch=2)    # 7
    produce(log, txn_batch(A, 0, 4))                   # 8-9  open


def test_open_transactions_survive_a_clean_close(tmp_path):
    log = open_log(tmp_path / "t-0")
    _history(log)
    before = _states(log)
    aborted = log.aborted_transactions(0, 100)
    log.close()
    again = open_log(tmp_path / "t-0")
    assert again.producer_state is not None        # loaded at open: the LSO needs it
    again.update_high_watermark(again.log_end_offset)
    assert again.last_stable_offset == 3
    assert _states(again) == before
    assert again.aborted_transactions(0, 100) == aborted == [AbortedTxn(A, 0, 2, 3), AbortedTxn(A, 5, 7, 3)]
    again.close()


@pytest.mark.parametrize("lose", ["nothing", "txnindex", "snapshots"])
def test_a_crash_rebuilds_transactions_and_the_txnindex(tmp_path, lose):
    path = tmp_path / "t-0"
    # a few batches per segment (snapshots on roll); one segment when the index is torn: its
    # markers are after the last snapshot, where a crash can leave an index behind its log
    seg_bytes = 250 if lose != "txnindex" else 1 << 20
    log = open_log(path, segment_bytes=seg_bytes)
    _history(log)
    before = _states(log)
    aborted = log.aborted_transactions(0, 100)
    log.flush()   # a crash: no close
    if lose == "txnindex":   # an index that never reached the disk
        for seg in log.segments:
            if os.path.exists(seg.txn_index.path):
                os.truncate(seg.txn_index.path, ENTRY_SIZE // 2)   # torn
    elif lose == "snapshots":
        for f in os.listdir(path):
            if f.endswith(".snapshot") and int(f[:20]) > 0:
                os.unlink(path / f)
    again = open_log(path, segment_bytes=seg_bytes)
    again.update_high_watermark(again.log_end_offset)
    assert _states(again) == before
    assert again.last_stable_offset == 3
    assert again.aborted_transactions(0, 100) == aborted
    again.close()


def test_truncation_reopens_a_transaction_and_cuts_the_index(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=250)
    _history(log)
    assert len(log.aborted_transactions(0, 100)) == 2
    log.truncate_to(7)                      # the second abort marker is gone
    log.update_high_watermark(log.log_end_offset)
    assert log.aborted_transactions(0, 100) == [AbortedTxn(A, 0, 2, 3)]
    assert dict(log.producer_state.ongoing_txns) == {3: B, 5: A}
    assert log.last_stable_offset == 3
    log.truncate_to(1)
    log.update_high_watermark(log.log_end_offset)
    assert log.aborted_transactions(0, 100) == []
    assert log.last_stable_offset == 0
    log.close()


def test_retention_deletes_the_txnindex_with_its_segment(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=250, retention_ms=1)
    _history(log)
    end_txn(log, A, 0, commit=True, coordinator_epoch=2)
    indexes = [s.txn_index.path for s in log.segments if os.path.exists(s.txn_index.path)]
    assert indexes
    log.roll(NOW)
    log.delete_old_segments(NOW + 10**9)
    assert not any(os.path.exists(p) for p in indexes)
    assert log.aborted_transactions(log.log_start_offset, log.log_end_offset) == []
    log.close()


def test_a_follower_records_what_the_leader_wrote(tmp_path):
    leader = open_log(tmp_path / "l-0")
    _history(leader)
    follower = open_log(tmp_path / "f-0")
    data = b"".join(bytes(leader.read(o, 1 << 20)) for o in [0])
    follower.append(data, now_ms=NOW, origin=REPLICATION)
    follower.update_high_watermark(follower.log_end_offset)
    assert _states(follower) == _states(leader)
    assert follower.last_stable_offset == 3
    assert follower.aborted_transactions(0, 100) == leader.aborted_transactions(0, 100)
    leader.close()
    follower.close()


def test_expiration_keeps_producers_with_open_transactions():
    ps = ProducerStateManager(None, expiration_ms=1000)
    ps.update_batch(A, 0, 0, 0, 1, NOW, True)
    ps.update_batch(B, 0, 0, 2, 3, NOW, False)
    assert ps.remove_expired(NOW + 5000) == 1
    assert list(ps.producers) == [A]
