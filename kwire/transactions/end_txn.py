"""EndTxn in the transaction coordinator (Kafka's TransactionCoordinator.endTransaction and the
marker completion), transaction versions 1 and 2: a part of kwire.transactions.coordinator's
TransactionCoordinator (it inherits this class), which holds the state (``state``, ``clock``,
``send_markers``, ``on_complete``, ``_schedule``). Nothing here does I/O.

EndTxn writes PrepareCommit/PrepareAbort, answers the client, then hands the markers over
(``send_markers`` with a ``TxnMarkerJob``); once every partition of the transaction has its
marker the coordinator writes CompleteCommit/CompleteAbort, retrying while __transaction_state
is unavailable. A fence (InitProducerId of a new producer, or a timeout) ends an ongoing
transaction through the same path. Transaction version 2: every end bumps the epoch, a retried
EndTxn is recognised by the epoch one below the current one, an abort is allowed with nothing
added, and an exhausted epoch moves the producer to a fresh id.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kwire.errors import ErrorCode
from kwire.coordinator.pending import Pending
from kwire.transactions.metadata import (MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, IllegalTransition,
                                         TopicPartition, TransactionMetadata, TransactionState, TxnTransit,
                                         supports_epoch_bump)

E = ErrorCode
S = TransactionState
log = logging.getLogger("kwire.transactions")

#: how soon a CompleteCommit/CompleteAbort write is retried after COORDINATOR_NOT_AVAILABLE
COMPLETE_RETRY_MS = 100


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(slots=True)
class TxnMarkerJob:
    """The markers of one transaction: written to the leader of each partition with
    WriteTxnMarkers; ``partitions`` are those still without a marker."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    committed: bool
    partitions: set[TopicPartition]
    metadata: TransactionMetadata = field(repr=False)
    complete: TxnTransit = field(repr=False)


class EndTransactions:
    """EndTxn and the markers' completion, mixed into TransactionCoordinator."""
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                committed: bool) -> Pending[ErrorCode]:
        """EndTxn v0-4: answered once PrepareCommit/PrepareAbort is durable; the markers follow."""
        out: Pending[ErrorCode] = Pending()
        self.end_transaction(transactional_id, producer_id, producer_epoch, committed).add_done_callback(
            lambda q: out.set_result(q.result.error))
        return out

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                        transaction_version: int = 0) -> Pending[InitResult]:
        """EndTxn of any version: the error and, for version 2 (EndTxn v5), the producer id and
        epoch the producer goes on with (the epoch bumped by this end)."""
        return self._end_transaction(transactional_id, producer_id, producer_epoch, committed, from_client=True,
                                     transaction_version=transaction_version)

    def _end_transaction(self, tid: str, producer_id: int, producer_epoch: int, committed: bool,
                         from_client: bool, transaction_version: int | None = None) -> Pending[InitResult]:
        """``transaction_version`` None (a fence or a timeout): the version of the id's
        transaction."""
        def fail(error: ErrorCode) -> Pending[InitResult]:
            return Pending.completed(InitResult(error))

        if not tid:
            return fail(E.INVALID_REQUEST)
        err, coordinator_epoch, md = self.state.state_of(tid)
        if err is not None:
            return fail(err)
        if md is None:
            return fail(E.INVALID_PRODUCER_ID_MAPPING)
        tv = md.client_transaction_version if transaction_version is None else transaction_version
        if supports_epoch_bump(tv):
            result = self._prepare_end_v2(md, producer_id, producer_epoch, committed, from_client, tv)
        else:
            if md.producer_id != producer_id:
                return fail(E.INVALID_PRODUCER_ID_MAPPING)
            # a client's epoch must be the current one; a fence (not from a client) carries the bumped one
            if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
                return fail(E.PRODUCER_FENCED)
            if md.pending_transition_in_progress and md.pending_state != S.PREPARE_EPOCH_FENCE:
                return fail(E.CONCURRENT_TRANSACTIONS)
            result = self._prepare_end(md, committed, producer_epoch)
        if isinstance(result, InitResult):
            return Pending.completed(result)
        if isinstance(result, ErrorCode):
            return fail(result)
        transit, is_epoch_fence = result
        p: Pending[InitResult] = Pending()

        def written(error: ErrorCode) -> None:
            if error != E.NONE:
                log.info("%s: writing %s failed (%s): EndTxn answers it", tid, transit.state.state_name,
                         E(error).name)
                if is_epoch_fence:
                    err2, epoch2, md2 = self.state.state_of(tid)
                    if err2 is None and md2 is not None and epoch2 == coordinator_epoch:
                        md2.has_failed_epoch_fence = True   # the bumped epoch was never answered
                p.set_result(InitResult(error))
                return
            pre = self._prepare_send(tid, coordinator_epoch, producer_id, transit.producer_epoch, committed)
            if isinstance(pre, ErrorCode):
                p.set_result(InitResult(pre))
                return
            md2, complete = pre
            if supports_epoch_bump(tv):   # answer first; the markers follow
                p.set_result(InitResult(E.NONE, md2.producer_id, md2.producer_epoch))
            else:
                p.set_result(InitResult(E.NONE))
            self._start_markers(md2, coordinator_epoch, complete)

        self.state.append(tid, coordinator_epoch, transit, written)
        return p

    def _prepare_end_v2(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, committed: bool,
                        from_client: bool, tv: int) -> tuple[TxnTransit, bool] | ErrorCode | InitResult:
        """Kafka's endTransaction for transaction version 2 (its table: a retry is the epoch
        one below the current one, or the last epoch of a producer id that overflowed)."""
        is_fence = md.pending_state == S.PREPARE_EPOCH_FENCE
        retry_on_overflow = not is_fence and md.prev_producer_id == producer_id and \
            producer_epoch == MAX_EPOCH - 1 and md.producer_epoch == 0
        retry_on_bump = not is_fence and md.producer_epoch == producer_epoch + 1
        if is_fence:
            valid_epoch = (not from_client or producer_epoch == md.producer_epoch) and \
                producer_epoch >= md.producer_epoch
        elif md.state in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
            valid_epoch = producer_epoch == md.producer_epoch
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        else:   # CompleteCommit / CompleteAbort
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if md.producer_id != producer_id and not retry_on_overflow:
            return E.INVALID_PRODUCER_ID_MAPPING
        if not valid_epoch:
            return E.PRODUCER_FENCED
        if md.pending_transition_in_progress and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS

        def prepare(nxt: TransactionState, no_partition_added: bool):
            next_pid = NO_PRODUCER_ID
            if not is_fence and md.producer_epoch_exhausted:
                next_pid = self._fresh_producer_id()
            if nxt == S.PREPARE_ABORT and is_fence:
                md.pending_state = None   # the abort carries the fenced epoch
                md.producer_epoch = producer_epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            return md.prepare_abort_or_commit(nxt, self.clock.now_ms(), tv, next_pid, no_partition_added), is_fence

        st = md.state
        done = InitResult(E.NONE, md.producer_id, md.producer_epoch)
        if st == S.ONGOING:
            return prepare(S.PREPARE_COMMIT if committed else S.PREPARE_ABORT, False)
        if st == S.COMPLETE_COMMIT:
            if committed:
                return done if is_retry else self._invalid_state(md, committed)
            return self._invalid_state(md, committed) if is_retry else prepare(S.PREPARE_ABORT, True)
        if st == S.COMPLETE_ABORT:
            if not committed:
                return done if is_retry else prepare(S.PREPARE_ABORT, True)
            return self._invalid_state(md, committed)
        if st == S.PREPARE_COMMIT:
            return E.CONCURRENT_TRANSACTIONS if committed else self._invalid_state(md, committed)
        if st == S.PREPARE_ABORT:
            return E.CONCURRENT_TRANSACTIONS if not committed else self._invalid_state(md, committed)
        if st == S.EMPTY:
            return prepare(S.PREPARE_ABORT, True) if not committed else self._invalid_state(md, committed)
        raise IllegalTransition(f"transactional id {md.transactional_id} found in state {st.state_name}")

    def _prepare_end(self, md: TransactionMetadata, committed: bool,
                     producer_epoch: int) -> tuple[TxnTransit, bool] | ErrorCode:
        st = md.state
        if st == S.ONGOING:
            nxt = S.PREPARE_COMMIT if committed else S.PREPARE_ABORT
            fence = False
            if nxt == S.PREPARE_ABORT and md.pending_state == S.PREPARE_EPOCH_FENCE:
                # the abort carries the fenced epoch: clear the fence's pending state, take the epoch
                fence = True
                md.pending_state = None
                md.producer_epoch = producer_epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            return md.prepare_abort_or_commit(nxt, self.clock.now_ms()), fence
        if st == S.COMPLETE_COMMIT:
            return E.NONE if committed else self._invalid_state(md, committed)
        if st == S.COMPLETE_ABORT:
            return E.NONE if not committed else self._invalid_state(md, committed)
        if st == S.PREPARE_COMMIT:
            return E.CONCURRENT_TRANSACTIONS if committed else self._invalid_state(md, committed)
        if st == S.PREPARE_ABORT:
            return E.CONCURRENT_TRANSACTIONS if not committed else self._invalid_state(md, committed)
        if st == S.EMPTY:
            return self._invalid_state(md, committed)
        raise IllegalTransition(f"transactional id {md.transactional_id} found in state {st.state_name}")

    @staticmethod
    def _invalid_state(md: TransactionMetadata, committed: bool) -> ErrorCode:
        log.info("transactional id %s is %s, asked to %s: INVALID_TXN_STATE", md.transactional_id,
                 md.state.state_name, "commit" if committed else "abort")
        return E.INVALID_TXN_STATE

    def _prepare_send(self, tid: str, coordinator_epoch: int, producer_id: int, producer_epoch: int,
                      committed: bool) -> tuple[TransactionMetadata, TxnTransit] | ErrorCode:
        """After PrepareCommit/PrepareAbort is durable: still ours, still that state?"""
        err, epoch, md = self.state.state_of(tid)
        if err is not None:
            return err
        if md is None or epoch != coordinator_epoch:
            return E.NOT_COORDINATOR
        if md.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if md.producer_epoch != producer_epoch:   # the epoch PrepareCommit/PrepareAbort installed
            return E.PRODUCER_FENCED
        if md.pending_transition_in_progress:
            return E.CONCURRENT_TRANSACTIONS
        if md.state == (S.PREPARE_COMMIT if committed else S.PREPARE_ABORT):
            return md, md.prepare_complete(self.clock.now_ms())
        return self._invalid_state(md, committed)

    # ================================================================== markers ====
    def _start_markers(self, md: TransactionMetadata, coordinator_epoch: int, complete: TxnTransit) -> None:
        job = TxnMarkerJob(md.transactional_id, md.producer_id, md.producer_epoch, coordinator_epoch,
                           complete.state == S.COMPLETE_COMMIT, set(md.topic_partitions), md, complete)
        if not job.partitions:
            self._write_complete(job)
            return
        self.send_markers(job)

    def marker_job_live(self, job: TxnMarkerJob) -> bool:
        """Whether markers are still wanted: the id is still served here at the job's
        coordinator epoch and still waits for them (else the sender drops the job: a new
        coordinator finishes the transaction)."""
        err, epoch, md = self.state.state_of(job.transactional_id)
        return err is None and md is job.metadata and epoch == job.coordinator_epoch and \
            md.pending_state == job.complete.state

    def marker_written(self, job: TxnMarkerJob, tp: TopicPartition) -> None:
        """The leader of ``tp`` wrote the marker (or the partition is gone): once every
        partition has one, CompleteCommit/CompleteAbort is written."""
        job.partitions.discard(tp)
        if not self.marker_job_live(job):
            return
        md = job.metadata
        if tp in md.topic_partitions:
            md.remove_partition(tp)
            if not md.topic_partitions:
                log.debug("%s: all markers written", job.transactional_id)
                self._write_complete(job)

    def _write_complete(self, job: TxnMarkerJob) -> None:
        tid = job.transactional_id

        def written(error: ErrorCode) -> None:
            if error == E.NONE:
                log.debug("%s: %s", tid, job.complete.state.state_name)
                self.on_complete(tid)
            elif error == E.COORDINATOR_NOT_AVAILABLE and self.marker_job_live(job):
                self._schedule(("complete", tid, job.coordinator_epoch), COMPLETE_RETRY_MS, job)
            else:
                log.info("%s: writing %s failed (%s); the transaction's next coordinator completes it",
                         tid, job.complete.state.state_name, E(error).name)

        self.state.append(tid, job.coordinator_epoch, job.complete, written,
                          retry_on_error=lambda e: e == E.COORDINATOR_NOT_AVAILABLE)
