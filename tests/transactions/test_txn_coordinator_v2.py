"""The transaction coordinator's transaction version 2 (KIP-890 part 2) alone, on a fake clock:
the epoch bumped at every end (PrepareCommit/PrepareAbort carry it, the markers too, EndTxn v5
answers it), Kafka's table of EndTxn retries (handleEndTransaction: a retry is the epoch one
below the current one), aborts with nothing added, fencing, an exhausted epoch moving the
producer to a new id, and the version surviving a coordinator move."""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.transactions import records as R
from kwire.transactions.metadata import MAX_EPOCH, TransactionState
from tests.transactions.test_txn_coordinator import make_owned
from tests.transactions.txn_harness import Harness

E = ErrorCode
S = TransactionState


def add2(h, tid, pid, epoch, *tps):
    p = h.coord.add_partitions(tid, pid, epoch, tps, 2)
    assert p.done
    return p.result


def end2(h, tid, pid, epoch, committed):
    p = h.coord.end_transaction(tid, pid, epoch, committed, 2)
    assert p.done
    return p.result


def test_every_end_bumps_the_epoch_and_markers_carry_it():
    h = Harness()
    r = h.init("tx")
    pid = r.producer_id
    assert add2(h, "tx", pid, 0, ("t", 0)) == E.NONE
    assert h.md("tx").client_transaction_version == 2
    res = end2(h, "tx", pid, 0, True)
    assert (res.error, res.producer_id, res.producer_epoch) == (E.NONE, pid, 1)
    md = h.md("tx")
    assert (md.state, md.producer_epoch, md.last_producer_epoch) == (S.PREPARE_COMMIT, 1, 0)
    (job,) = h.jobs
    assert (job.producer_epoch, job.committed) == (1, True)
    # the next transaction (epoch 1) waits while the markers are written
    assert add2(h, "tx", pid, 1, ("t", 0)) == E.CONCURRENT_TRANSACTIONS
    assert add2(h, "tx", pid, 0, ("t", 0)) == E.PRODUCER_FENCED      # the old epoch is gone
    h.write_markers()
    assert h.md("tx").state == S.COMPLETE_COMMIT
    assert add2(h, "tx", pid, 1, ("t", 0)) == E.NONE
    res = end2(h, "tx", pid, 1, False)
    assert (res.error, res.producer_epoch) == (E.NONE, 2)
    assert h.jobs[0].producer_epoch == 2 and not h.jobs[0].committed
    h.write_markers()
    assert h.writer.states("tx") == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing",
                                     "PrepareAbort", "CompleteAbort"]
    # version 2 is written with value version 1 and read back
    last = [v for _p, k, v in h.writer.log if k == R.key_bytes("tx")][-1]
    t = R.decode_value(last)
    assert (t.client_transaction_version, t.producer_epoch) == (2, 2)


def test_retries_answer_from_the_table():
    h = Harness()
    pid = h.init("tx").producer_id
    add2(h, "tx", pid, 0, ("t", 0))
    assert end2(h, "tx", pid, 0, True).producer_epoch == 1
    # a retry while the markers are written (epoch one below): CONCURRENT_TRANSACTIONS
    assert end2(h, "tx", pid, 0, True).error == E.CONCURRENT_TRANSACTIONS
    assert end2(h, "tx", pid, 1, True).error == E.PRODUCER_FENCED     # not a retry, not current
    h.write_markers()
    r = end2(h, "tx", pid, 0, True)                                   # retry once complete: NONE
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, pid, 1)
    assert end2(h, "tx", pid, 0, False).error == E.INVALID_TXN_STATE  # retry of the other result
    assert end2(h, "tx", pid, 1, True).error == E.INVALID_TXN_STATE   # commit of nothing
    assert end2(h, "tx", pid, 5, True).error == E.PRODUCER_FENCED


def test_abort_with_nothing_added_bumps_the_epoch():
    h = Harness()
    pid = h.init("tx").producer_id
    r = end2(h, "tx", pid, 0, False)                 # Empty: an abort is allowed, a commit is not
    assert (r.error, r.producer_epoch) == (E.NONE, 1)
    assert not h.jobs and h.md("tx").state == S.COMPLETE_ABORT   # no partitions: no markers
    assert end2(h, "tx", pid, 1, True).error == E.INVALID_TXN_STATE
    assert end2(h, "tx", pid, 1, False).producer_epoch == 2     # CompleteAbort, current epoch: EB
    assert h.writer.states("tx") == ["Empty", "PrepareAbort", "CompleteAbort", "PrepareAbort", "CompleteAbort"]


def test_fence_of_a_version_2_transaction():
    h = Harness()
    pid = h.init("tx").producer_id
    add2(h, "tx", pid, 0, ("t", 0))
    assert h.init("tx").error == E.CONCURRENT_TRANSACTIONS   # fences (1) and aborts, bumping again (2)
    (job,) = h.jobs
    assert (job.committed, job.producer_epoch) == (False, 2)
    assert end2(h, "tx", pid, 0, True).error == E.PRODUCER_FENCED      # the zombie
    h.write_markers()
    r = h.init("tx")
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, pid, 3)


def test_timed_out_version_2_transaction_is_aborted_with_a_bumped_epoch():
    h = Harness(abort_timed_out_transaction_cleanup_interval_ms=1000)
    pid = h.init("tx", timeout_ms=5000).producer_id
    add2(h, "tx", pid, 0, ("t", 0))
    h.advance(7000)
    (job,) = h.jobs
    assert not job.committed and job.producer_epoch == 2
    h.write_markers()
    assert end2(h, "tx", pid, 0, True).error == E.PRODUCER_FENCED


def test_exhausted_epoch_moves_to_a_new_producer_id():
    h = Harness()
    pid = h.init("tx").producer_id
    md = h.md("tx")
    md.producer_epoch = MAX_EPOCH - 2          # as after ~32k transactions
    add2(h, "tx", pid, MAX_EPOCH - 2, ("t", 0))
    r = end2(h, "tx", pid, MAX_EPOCH - 2, True)
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, pid, MAX_EPOCH - 1)
    h.write_markers()                          # not exhausted yet: same id
    add2(h, "tx", pid, MAX_EPOCH - 1, ("t", 0))
    r = end2(h, "tx", pid, MAX_EPOCH - 1, True)   # MAX-1 is exhausted: the next id is taken now
    assert r.error == E.NONE and h.md("tx").next_producer_id != -1
    h.write_markers()
    md = h.md("tx")
    assert md.producer_id != pid and md.producer_epoch == 0 and md.prev_producer_id == pid
    # a retry of that EndTxn with the old id and its last epoch is recognised
    r = end2(h, "tx", pid, MAX_EPOCH - 1, True)
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, md.producer_id, 0)


def test_version_survives_a_coordinator_move():
    h = Harness()
    pid = h.init("tx").producer_id
    add2(h, "tx", pid, 0, ("t", 0))
    end2(h, "tx", pid, 0, True)               # PrepareCommit (epoch 1) durable, markers pending
    h.jobs.clear()
    coord = make_owned(h, range(h.coord.config.transaction_state_log_num_partitions), epoch=2)
    md = coord.state.state_of("tx")[2]
    assert (md.state, md.client_transaction_version, md.producer_epoch) == (S.PREPARE_COMMIT, 2, 1)
    (job,) = h.jobs                           # the new coordinator finishes it, with epoch 1
    assert job.producer_epoch == 1
    for tp in sorted(job.partitions):
        coord.marker_written(job, tp)
    assert coord.describe("tx").state == "CompleteCommit"
    r = coord.end_transaction("tx", pid, 0, True, 2).result    # the producer's retry: answered
    assert (r.error, r.producer_epoch) == (E.NONE, 1)
