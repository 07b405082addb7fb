"""The transaction coordinator alone, on a fake clock (no sockets, no sleeps): every API's
answers, the flows of commit, abort, fencing and timeouts, durable writes and their failures,
and loading/unloading of __transaction_state partitions."""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.transactions import records as R
from kwire.transactions.coordinator import TransactionCoordinator
from kwire.transactions.metadata import MAX_EPOCH, TransactionState

from tests.transactions.txn_harness import Harness

E = ErrorCode
S = TransactionState


def started(h, tid="tx", *tps):
    r = h.init(tid)
    assert r.error == E.NONE
    assert h.add(tid, r.producer_id, r.producer_epoch, *(tps or [("t", 0), ("t", 1)])) == E.NONE
    return r.producer_id, r.producer_epoch


# ------------------------------------------------------------------ InitProducerId
def test_init_new_then_again_bumps_epoch():
    h = Harness()
    r = h.init("tx")
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, 1000, 0)
    r2 = h.init("tx")
    assert (r2.producer_id, r2.producer_epoch) == (1000, 1)
    assert h.writer.states("tx") == ["Empty", "Empty"]
    assert h.md("tx").last_producer_epoch == -1     # a new producer forgets the old epoch


def test_init_with_current_epoch_kip360_and_stale_epoch_fenced():
    h = Harness()
    r = h.init("tx")
    r2 = h.init("tx", pid=r.producer_id, epoch=r.producer_epoch)
    assert (r2.error, r2.producer_epoch) == (E.NONE, 1)
    r3 = h.init("tx", pid=r.producer_id, epoch=r.producer_epoch)   # retry of that bump
    assert (r3.error, r3.producer_epoch) == (E.NONE, 1)
    h.init("tx")                                                   # another producer: epoch 2
    assert h.init("tx", pid=r.producer_id, epoch=1).error == E.PRODUCER_FENCED
    assert h.init("tx", pid=424242, epoch=2).error == E.PRODUCER_FENCED


def test_init_bad_requests():
    h = Harness(transaction_max_timeout_ms=10_000)
    assert h.init("").error == E.INVALID_REQUEST
    assert h.init("tx", timeout_ms=10_001).error == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("tx", timeout_ms=0).error == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init("tx", timeout_ms=1000, pid=5).error == E.INVALID_REQUEST
    assert h.init("tx", timeout_ms=10_000).error == E.NONE
    assert h.writer.states("tx") == ["Empty"]


def test_init_rotates_an_exhausted_producer_id():
    h = Harness()
    r = h.init("tx")
    h.md("tx").producer_epoch = MAX_EPOCH - 1
    r2 = h.init("tx")
    assert (r2.error, r2.producer_epoch) == (E.NONE, 0) and r2.producer_id != r.producer_id


def test_init_while_a_write_is_pending_is_concurrent():
    h = Harness()
    h.writer.hold = True
    p = h.coord.init_producer_id("tx", 1000)
    assert not p.done
    assert h.init("tx").error == E.CONCURRENT_TRANSACTIONS
    h.writer.release()
    assert p.result.error == E.NONE


def test_failed_write_answers_coordinator_error_and_drops_the_transition():
    h = Harness()
    r = h.init("tx")
    h.writer.fail_with = E.NOT_ENOUGH_REPLICAS
    assert h.init("tx").error == E.COORDINATOR_NOT_AVAILABLE
    h.writer.fail_with = E.NOT_LEADER_OR_FOLLOWER
    assert h.add("tx", r.producer_id, 0, ("t", 0)) == E.NOT_COORDINATOR
    md = h.md("tx")
    assert (md.state, md.producer_epoch, md.pending_state) == (S.EMPTY, 0, None)
    h.writer.fail_with = None
    assert h.add("tx", r.producer_id, 0, ("t", 0)) == E.NONE


# ------------------------------------------------------------------ AddPartitionsToTxn
def test_add_partitions_checks_the_producer():
    h = Harness()
    assert h.add("tx", 1, 0, ("t", 0)) == E.INVALID_PRODUCER_ID_MAPPING   # unknown id
    pid, epoch = started(h)
    assert h.add("tx", pid + 1, epoch, ("t", 0)) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.add("tx", pid, epoch + 1, ("t", 0)) == E.PRODUCER_FENCED
    assert h.add("", pid, epoch, ("t", 0)) == E.INVALID_REQUEST
    n = len(h.writer.log)
    assert h.add("tx", pid, epoch, ("t", 1)) == E.NONE     # already in: nothing written
    assert len(h.writer.log) == n
    assert h.add("tx", pid, epoch, ("u", 0)) == E.NONE
    assert h.md("tx").topic_partitions == {("t", 0), ("t", 1), ("u", 0)}


def test_verify_partitions():
    h = Harness()
    pid, epoch = started(h)
    out = h.coord.verify_partitions("tx", pid, epoch, [("t", 0), ("t", 5)])
    assert out == {("t", 0): E.NONE, ("t", 5): E.TRANSACTION_ABORTABLE}
    assert h.coord.verify_partitions("tx", pid, epoch + 1, [("t", 0)]) == {("t", 0): E.PRODUCER_FENCED}
    assert h.coord.verify_partitions("tx", 9, epoch, [("t", 0)]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert h.coord.verify_partitions("nope", pid, epoch, [("t", 0)]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert h.end("tx", pid, epoch, True) == E.NONE
    assert h.coord.verify_partitions("tx", pid, epoch, [("t", 0)]) == {("t", 0): E.CONCURRENT_TRANSACTIONS}


# ------------------------------------------------------------------ EndTxn
def test_commit_flow():
    h = Harness()
    pid, epoch = started(h)
    assert h.end("tx", pid, epoch, True) == E.NONE
    assert h.md("tx").state == S.PREPARE_COMMIT
    (job,) = h.jobs
    assert (job.committed, job.producer_id, job.producer_epoch, job.partitions) == \
        (True, pid, epoch, {("t", 0), ("t", 1)})
    # while the markers are written: the producer's next calls wait
    assert h.add("tx", pid, epoch, ("t", 0)) == E.CONCURRENT_TRANSACTIONS
    assert h.end("tx", pid, epoch, True) == E.CONCURRENT_TRANSACTIONS
    assert h.init("tx").error == E.CONCURRENT_TRANSACTIONS
    h.coord.marker_written(job, ("t", 0))
    assert h.md("tx").state == S.PREPARE_COMMIT and h.coord.describe("tx").partitions == (("t", 1),)
    h.coord.marker_written(job, ("t", 1))
    md = h.md("tx")
    assert (md.state, md.topic_partitions, md.pending_state) == (S.COMPLETE_COMMIT, set(), None)
    assert h.writer.states("tx") == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    # a retried EndTxn(commit) is answered NONE, an abort now is INVALID_TXN_STATE
    assert h.end("tx", pid, epoch, True) == E.NONE
    assert h.end("tx", pid, epoch, False) == E.INVALID_TXN_STATE
    # the next transaction starts from CompleteCommit
    assert h.add("tx", pid, epoch, ("t", 2)) == E.NONE
    assert h.md("tx").topic_partitions == {("t", 2)}


def test_abort_flow_and_illegal_ends():
    h = Harness()
    r = h.init("tx")
    assert h.end("tx", r.producer_id, 0, True) == E.INVALID_TXN_STATE     # Empty
    assert h.end("tx", r.producer_id, 0, False) == E.INVALID_TXN_STATE
    pid, epoch = r.producer_id, 0
    assert h.add("tx", pid, epoch, ("t", 0)) == E.NONE
    assert h.end("tx", pid, epoch + 1, False) == E.PRODUCER_FENCED
    assert h.end("tx", pid + 1, epoch, False) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.end("tx", pid, epoch, False) == E.NONE
    # markers in flight (CompleteAbort pending): anything waits, as in Kafka
    assert h.end("tx", pid, epoch, True) == E.CONCURRENT_TRANSACTIONS
    assert h.end("tx", pid, epoch, False) == E.CONCURRENT_TRANSACTIONS
    md = h.md("tx")
    pending, md.pending_state = md.pending_state, None    # as a coordinator that just loaded it
    assert h.end("tx", pid, epoch, True) == E.INVALID_TXN_STATE           # PrepareAbort, commit
    assert h.end("tx", pid, epoch, False) == E.CONCURRENT_TRANSACTIONS    # PrepareAbort, abort
    md.pending_state = pending
    h.write_markers()
    assert h.md("tx").state == S.COMPLETE_ABORT
    assert h.end("tx", pid, epoch, False) == E.NONE
    assert h.end("tx", pid, epoch, True) == E.INVALID_TXN_STATE


def test_end_of_a_transaction_without_partitions_completes_at_once():
    h = Harness()
    r = h.init("tx")
    assert h.add("tx", r.producer_id, 0) == E.NONE      # Ongoing with no partitions
    assert h.end("tx", r.producer_id, 0, True) == E.NONE
    assert not h.jobs and h.md("tx").state == S.COMPLETE_COMMIT


def test_complete_write_is_retried_while_the_log_is_unavailable():
    h = Harness()
    pid, epoch = started(h)
    h.end("tx", pid, epoch, True)
    h.writer.fail_with = E.REQUEST_TIMED_OUT
    h.write_markers()
    md = h.md("tx")
    assert md.state == S.PREPARE_COMMIT and md.pending_state == S.COMPLETE_COMMIT
    h.writer.fail_with = None
    h.advance(100)
    assert h.md("tx").state == S.COMPLETE_COMMIT


# ------------------------------------------------------------------ fencing
def test_new_producer_fences_and_aborts_the_ongoing_transaction():
    h = Harness()
    pid, epoch = started(h)
    r = h.init("tx")                      # a second producer with the same transactional id
    assert r.error == E.CONCURRENT_TRANSACTIONS
    md = h.md("tx")
    assert (md.state, md.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
    (job,) = h.jobs
    assert (job.committed, job.producer_epoch) == (False, epoch + 1)   # markers fence the old epoch
    # the zombie is fenced
    assert h.end("tx", pid, epoch, True) == E.PRODUCER_FENCED
    assert h.add("tx", pid, epoch, ("t", 9)) == E.PRODUCER_FENCED
    assert h.init("tx").error == E.CONCURRENT_TRANSACTIONS   # until the abort completes
    h.write_markers()
    assert h.md("tx").state == S.COMPLETE_ABORT
    r = h.init("tx")
    assert (r.error, r.producer_id, r.producer_epoch) == (E.NONE, pid, epoch + 2)
    assert h.writer.states("tx") == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]
    assert h.end("tx", pid, epoch + 1, False) == E.PRODUCER_FENCED


def test_failed_fence_write_is_not_bumped_twice():
    h = Harness()
    pid, epoch = started(h)
    h.writer.fail_with = E.NOT_ENOUGH_REPLICAS
    assert h.init("tx").error == E.COORDINATOR_NOT_AVAILABLE
    md = h.md("tx")
    assert md.has_failed_epoch_fence and md.state == S.ONGOING and md.pending_state is None
    h.writer.fail_with = None
    assert h.init("tx").error == E.CONCURRENT_TRANSACTIONS
    assert h.md("tx").producer_epoch == epoch + 1


# ------------------------------------------------------------------ timeouts and expiration
def test_timed_out_transaction_is_aborted():
    h = Harness(abort_timed_out_transaction_cleanup_interval_ms=1000)
    r = h.init("tx", timeout_ms=5000)
    pid = r.producer_id
    h.add("tx", pid, 0, ("t", 0))
    h.advance(1000)
    assert h.md("tx").state == S.ONGOING
    h.advance(5000)
    md = h.md("tx")
    assert (md.state, md.producer_epoch) == (S.PREPARE_ABORT, 1)
    h.write_markers()
    assert h.md("tx").state == S.COMPLETE_ABORT
    assert h.add("tx", pid, 0, ("t", 0)) == E.PRODUCER_FENCED    # the stalled producer is fenced
    assert h.end("tx", pid, 0, True) == E.PRODUCER_FENCED


def test_idle_transactional_ids_expire():
    h = Harness(transactional_id_expiration_ms=10_000, remove_expired_transaction_cleanup_interval_ms=1000)
    pid, epoch = started(h, "busy")
    h.init("idle")
    h.advance(11_000)
    assert h.coord.describe("idle").error == E.TRANSACTIONAL_ID_NOT_FOUND
    assert h.writer.states("idle")[-1] is None          # a tombstone
    assert h.coord.describe("busy").state == "Ongoing"   # an ongoing transaction does not expire
    assert h.end("idle", 1001, 0, True) == E.INVALID_PRODUCER_ID_MAPPING


def test_tick_returns_the_next_deadline():
    h = Harness(abort_timed_out_transaction_cleanup_interval_ms=1000,
                remove_expired_transaction_cleanup_interval_ms=5000)
    assert h.coord.tick() == h.clock.monotonic_ms() + 1000


# ------------------------------------------------------------------ operators
def test_describe_and_list():
    h = Harness()
    pid, _ = started(h, "a", ("t", 3))
    h.init("b")
    h.clock.advance(50)
    d = h.coord.describe("a")
    assert (d.error, d.state, d.producer_id, d.partitions, d.timeout_ms) == \
        (E.NONE, "Ongoing", pid, (("t", 3),), 60_000)
    assert h.coord.describe("zz").error == E.TRANSACTIONAL_ID_NOT_FOUND
    assert h.coord.describe("").error == E.INVALID_REQUEST
    everyone = h.coord.list_transactions()
    assert {(x.transactional_id, x.state) for x in everyone.transactions} == {("a", "Ongoing"), ("b", "Empty")}
    ongoing = h.coord.list_transactions(["Ongoing", "Bogus"])
    assert [x.transactional_id for x in ongoing.transactions] == ["a"]
    assert ongoing.unknown_state_filters == ("Bogus",)
    assert [x.transactional_id for x in h.coord.list_transactions(producer_id_filters=[pid]).transactions] == ["a"]
    # as in Kafka, the duration counts from the start time, -1 for an id with no transaction
    longer = h.coord.list_transactions(["Ongoing"], duration_filter_ms=10)
    assert [x.transactional_id for x in longer.transactions] == ["a"]
    assert h.coord.list_transactions(["Ongoing"], duration_filter_ms=10_000).transactions == ()
    assert [x.transactional_id for x in h.coord.list_transactions(transactional_id_pattern="b.*").transactions] == ["b"]
    assert h.coord.list_transactions(transactional_id_pattern="(").error == E.INVALID_REGULAR_EXPRESSION


# ------------------------------------------------------------------ loading and unloading
def make_owned(h, partitions, epoch=1):
    coord = TransactionCoordinator(h.coord.config, h.clock, h.writer, lambda: next(h.ids),
                                   owned_partitions=())
    coord.send_markers = h.jobs.append
    for p in partitions:
        load = coord.begin_load(p, epoch)
        for part, k, v in h.writer.log:
            if part == p:
                load.replay(k, v)
        assert coord.complete_load(load)
    return coord


def test_state_survives_a_coordinator_move():
    h = Harness(transaction_state_log_num_partitions=4)
    pid, epoch = started(h, "tx")
    h.init("other")
    p = h.coord.partition_for("tx")
    h.end("tx", pid, epoch, True)       # PrepareCommit written; markers never sent
    h.jobs.clear()
    coord = make_owned(h, range(4), epoch=2)
    (job,) = h.jobs                      # the new coordinator sends the markers again
    assert (job.coordinator_epoch, job.committed, job.partitions) == (2, True, {("t", 0), ("t", 1)})
    for tp in sorted(job.partitions):
        coord.marker_written(job, tp)
    assert coord.describe("tx").state == "CompleteCommit"
    assert coord.describe("other").state == "Empty"
    # the fenced-epoch bookkeeping: the new coordinator bumps from the loaded epoch
    h2 = coord.init_producer_id("tx", 1000)
    assert (h2.result.producer_id, h2.result.producer_epoch) == (pid, epoch + 1)
    assert p == coord.partition_for("tx")


def test_load_in_progress_then_not_coordinator_after_unload():
    h = Harness(transaction_state_log_num_partitions=2)
    coord = TransactionCoordinator(h.coord.config, h.clock, h.writer, lambda: next(h.ids), owned_partitions=())
    p = coord.partition_for("tx")
    assert coord.init_producer_id("tx", 1000).result.error == E.NOT_COORDINATOR
    load = coord.begin_load(p, 5)
    assert coord.init_producer_id("tx", 1000).result.error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert coord.list_transactions().error == E.COORDINATOR_LOAD_IN_PROGRESS
    coord.complete_load(load)
    assert coord.init_producer_id("tx", 1000).result.error == E.NONE
    coord.unload(p)
    assert coord.describe("tx").error == E.NOT_COORDINATOR
    assert not coord.complete_load(load)          # a superseded load changes nothing


def test_write_acknowledged_after_the_partition_moved_is_not_coordinator():
    h = Harness(transaction_state_log_num_partitions=1)
    coord = make_owned(h, [0], epoch=1)
    h.writer.hold = True
    p = coord.init_producer_id("tx", 1000)
    coord.unload(0)
    coord.complete_load(coord.begin_load(0, 2))   # led here again, in a later epoch
    h.writer.release()
    assert p.result.error == E.NOT_COORDINATOR


def test_marker_job_dropped_when_the_coordinator_moves():
    h = Harness(transaction_state_log_num_partitions=1)
    coord = make_owned(h, [0])
    r = coord.init_producer_id("tx", 1000).result
    coord.add_partitions("tx", r.producer_id, 0, [("t", 0)])
    coord.end_txn("tx", r.producer_id, 0, False)
    (job,) = h.jobs
    assert coord.marker_job_live(job)
    coord.unload(0)
    assert not coord.marker_job_live(job)
    coord.marker_written(job, ("t", 0))            # nothing to do, no error
    assert len([v for _p, k, v in h.writer.log if k == R.key_bytes("tx")]) == 3
