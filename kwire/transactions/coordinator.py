"""The transaction coordinator (Kafka's TransactionCoordinator, transaction versions 1 and 2): the
APIs of transactional producers and operators, over the state manager (state_manager.py) and
the per-id state machine (metadata.py). Nothing here does I/O; time comes from ``clock``.

The edge:
- builds ``TransactionCoordinator(config, clock, writer, new_producer_id, owned_partitions=())``
  (``new_producer_id()`` hands out a fresh producer id: the broker's block allocator, topped
  up before each InitProducerId), sets ``send_markers`` (called with a ``TxnMarkerJob`` when a
  transaction's markers are to be written), ``wakeup`` (called when a timer was set earlier
  than the deadline ``tick()`` last returned) and ``on_complete`` (called with the id once its
  CompleteCommit/CompleteAbort is durable: requests held on CONCURRENT_TRANSACTIONS go on);
- loads and unloads ``__transaction_state`` partitions as leadership moves (``begin_load``,
  ``PartitionLoad.replay``, ``complete_load``; ``unload``);
- runs a timer task: ``deadline = tick()`` (monotonic ms), sleep until then or ``wakeup``;
- feeds the marker sender's results back: ``marker_job_live``, ``marker_written``.

API methods answer a ``Pending`` (completed once the new state is durable) or a value.

EndTxn (end_txn.py, a part of the class) writes PrepareCommit/PrepareAbort, answers the client, then hands the markers over;
once every partition of the transaction has its marker the coordinator writes
CompleteCommit/CompleteAbort (retrying while __transaction_state is unavailable). A new
producer (InitProducerId) or a timeout fences the epoch of an ongoing transaction and aborts
it the same way; InitProducerId answers CONCURRENT_TRANSACTIONS until the abort completes.

Transaction version 2 (KIP-890 part 2; ``transaction_version`` 2 on ``add_partitions`` from a
partition leader adding the partition itself, and on ``end_transaction`` for EndTxn v5):
every end bumps the epoch (PrepareCommit/PrepareAbort carry it, the markers too, EndTxn
answers it), a retried EndTxn is recognised by the epoch one below the current one, an abort
is allowed with nothing added (Kafka's table in handleEndTransaction), and an exhausted epoch
moves the producer to a fresh id at the end of the transaction.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from kwire.clock import REAL_CLOCK
from kwire.errors import ErrorCode
from kwire.coordinator.pending import Pending
from kwire.coordinator.timers import Timers
from kwire.transactions.metadata import (NO_PRODUCER_EPOCH, NO_PRODUCER_ID, Fenced, IllegalTransition,
                                         TopicPartition, TransactionMetadata, TransactionState, TxnTransit,
                                         epoch_exhausted)
from kwire.transactions.end_txn import EndTransactions, InitResult, TxnMarkerJob  # noqa: F401 - re-exported
from kwire.transactions.state_manager import (PartitionLoad, TransactionConfig,
                                              TransactionStateManager, Writer)

E = ErrorCode
S = TransactionState
log = logging.getLogger("kwire.transactions")

@dataclass(frozen=True, slots=True)
class TxnDescription:
    error: ErrorCode
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_time_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class TxnListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ListResult:
    error: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[TxnListing, ...] = ()


class TransactionCoordinator(EndTransactions):
    def __init__(self, config: TransactionConfig | None = None, clock=None, writer: Writer | None = None,
                 new_producer_id: Callable[[], int] | None = None, *,
                 owned_partitions: Iterable[int] | None = None):
        self.config = config or TransactionConfig()
        self.clock = clock or REAL_CLOCK
        self.state = TransactionStateManager(self.config, writer, owned_partitions)
        self.new_producer_id = new_producer_id
        self.send_markers: Callable[[TxnMarkerJob], None] = lambda job: None
        self.wakeup: Callable[[], None] = lambda: None
        self.on_complete: Callable[[str], None] = lambda transactional_id: None
        self.timers = Timers()
        self._last_deadline: int | None = None
        self._payloads: dict = {}   # timer key -> what it acts on (a marker job to complete)
        now = self.clock.monotonic_ms()
        self.timers.schedule(("abort_timed_out",), now + self.config.abort_timed_out_transaction_cleanup_interval_ms)
        self.timers.schedule(("expire_ids",), now + self.config.remove_expired_transaction_cleanup_interval_ms)

    # ================================================================== ownership ====
    def partition_for(self, transactional_id: str) -> int:
        return self.state.partition_for(transactional_id)

    def coordinator_error(self, transactional_id: str) -> ErrorCode | None:
        return self.state.coordinator_error(transactional_id)

    def begin_load(self, partition: int, coordinator_epoch: int) -> PartitionLoad:
        return self.state.begin_load(partition, coordinator_epoch)

    def complete_load(self, load: PartitionLoad) -> bool:
        """Serve the loaded ids; send the markers of transactions left in PrepareCommit or
        PrepareAbort (the old coordinator may not have written them all). False when the
        load was superseded."""
        unfinished = self.state.complete_load(load)
        if unfinished is None:
            return False
        now = self.clock.now_ms()
        for md in unfinished:
            complete = md.prepare_complete(now)
            self._start_markers(md, load.coordinator_epoch, complete)
        return True

    def unload(self, partition: int) -> int:
        return self.state.unload(partition)

    def owns(self, partition: int) -> bool:
        return self.state.owns(partition)

    def is_loading(self, partition: int) -> bool:
        return self.state.is_loading(partition)

    # ================================================================== InitProducerId ====
    def init_producer_id(self, transactional_id: str, transaction_timeout_ms: int,
                         producer_id: int = NO_PRODUCER_ID,
                         producer_epoch: int = NO_PRODUCER_EPOCH) -> Pending[InitResult]:
        """InitProducerId with a transactional id. ``producer_id``/``producer_epoch`` are the
        producer's current ones (v3+, KIP-360), or -1 for a new producer."""
        p: Pending[InitResult] = Pending()
        if not transactional_id:
            return Pending.completed(InitResult(E.INVALID_REQUEST))
        if not 0 < transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return Pending.completed(InitResult(E.INVALID_TRANSACTION_TIMEOUT))
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return Pending.completed(InitResult(E.INVALID_REQUEST))
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        err, coordinator_epoch, md = self.state.state_of(transactional_id)
        if err is not None:
            return Pending.completed(InitResult(err))
        if md is None:
            md = self.state.put_if_absent(TransactionMetadata(
                transactional_id, self._fresh_producer_id(), txn_timeout_ms=transaction_timeout_ms,
                txn_last_update_timestamp=self.clock.now_ms()))
        result = self._prepare_init(md, transaction_timeout_ms, expected)
        if isinstance(result, ErrorCode):
            if result == E.PRODUCER_FENCED:
                log.info("InitProducerId(%s, %s): fenced", transactional_id, expected)
            return Pending.completed(InitResult(result))
        transit = result
        if transit.state == S.PREPARE_EPOCH_FENCE:
            # abort the ongoing transaction first; the producer retries on CONCURRENT_TRANSACTIONS
            def aborted(r: InitResult) -> None:
                p.set_result(InitResult(r.error if r.error != E.NONE else E.CONCURRENT_TRANSACTIONS))

            log.info("InitProducerId(%s): fencing epoch %d of producer %d and aborting its ongoing "
                     "transaction", transactional_id, md.producer_epoch, md.producer_id)
            self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch,
                                  committed=False, from_client=False).add_done_callback(
                lambda q: aborted(q.result))
            return p

        def written(error: ErrorCode) -> None:
            if error == E.NONE:
                log.info("initialized transactional id %s with producer id %d epoch %d (%s-%d)",
                         transactional_id, transit.producer_id, transit.producer_epoch,
                         "__transaction_state", self.partition_for(transactional_id))
                p.set_result(InitResult(E.NONE, transit.producer_id, transit.producer_epoch))
            else:
                p.set_result(InitResult(error))

        self.state.append(transactional_id, coordinator_epoch, transit, written)
        return p

    def _fresh_producer_id(self) -> int:
        if self.new_producer_id is None:
            raise RuntimeError("no producer id source")
        return self.new_producer_id()

    def _prepare_init(self, md: TransactionMetadata, timeout_ms: int,
                      expected: tuple[int, int] | None) -> TxnTransit | ErrorCode:
        def valid_producer(pid: int, epoch: int) -> bool:
            return md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id or \
                (pid == md.prev_producer_id and epoch_exhausted(epoch))

        if md.pending_transition_in_progress:
            return E.CONCURRENT_TRANSACTIONS
        if expected is not None and not valid_producer(*expected):
            return E.PRODUCER_FENCED
        now = self.clock.now_ms()
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return E.CONCURRENT_TRANSACTIONS
        if md.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if md.producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                return md.prepare_producer_id_rotation(self._fresh_producer_id(), timeout_ms, now,
                                                       expected is not None)
            try:
                return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
            except Fenced:
                return E.PRODUCER_FENCED
        if md.state == S.ONGOING:
            return md.prepare_fence_producer_epoch()
        raise IllegalTransition(f"transactional id {md.transactional_id} found in state {md.state.state_name}")

    # ================================================================== AddPartitionsToTxn ====
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition],
                       transaction_version: int | None = None) -> Pending[ErrorCode]:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's __consumer_offsets
        partition): the partitions join the transaction once the new state is durable.
        ``transaction_version`` 2: a partition leader (Produce v12) or group coordinator
        (TxnOffsetCommit v5) adding it for a producer of transaction version 2."""
        partitions = frozenset(partitions)
        if not transactional_id:
            return Pending.completed(E.INVALID_REQUEST)
        err, coordinator_epoch, md = self.state.state_of(transactional_id)
        if err is not None:
            return Pending.completed(err)
        if md is None or md.producer_id != producer_id:
            return Pending.completed(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != producer_epoch:
            return Pending.completed(E.PRODUCER_FENCED)
        if md.pending_transition_in_progress or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return Pending.completed(E.CONCURRENT_TRANSACTIONS)
        if md.state == S.ONGOING and partitions <= md.topic_partitions:
            return Pending.completed(E.NONE)
        transit = md.prepare_add_partitions(partitions, self.clock.now_ms(), transaction_version)
        p: Pending[ErrorCode] = Pending()
        self.state.append(transactional_id, coordinator_epoch, transit, p.set_result)
        return p

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn with verify_only (a partition leader asking, KIP-890 part 1):
        NONE for each partition in the ongoing transaction, TRANSACTION_ABORTABLE for the
        others; one error for all when the producer does not match."""
        partitions = list(partitions)

        def all_(error: ErrorCode) -> dict[TopicPartition, ErrorCode]:
            return {tp: error for tp in partitions}

        if not transactional_id:
            return all_(E.INVALID_REQUEST)
        err, _epoch, md = self.state.state_of(transactional_id)
        if err is not None:
            return all_(err)
        if md is None or md.producer_id != producer_id:
            return all_(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != producer_epoch:
            return all_(E.PRODUCER_FENCED)
        if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return all_(E.CONCURRENT_TRANSACTIONS)
        return {tp: E.NONE if tp in md.topic_partitions else E.TRANSACTION_ABORTABLE for tp in partitions}

    def completing(self, transactional_id: str) -> bool:
        """Whether the id's transaction is ending (PrepareCommit/PrepareAbort: its markers are
        being written; ``on_complete`` follows unless the coordinator moves)."""
        err, _epoch, md = self.state.state_of(transactional_id)
        return err is None and md is not None and md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)

    # ================================================================== operators ====
    def describe(self, transactional_id: str) -> TxnDescription:
        if not transactional_id:
            return TxnDescription(E.INVALID_REQUEST, transactional_id or "")
        err, _epoch, md = self.state.state_of(transactional_id)
        if err is not None:
            return TxnDescription(err, transactional_id)
        if md is None or md.pending_state == S.DEAD:
            return TxnDescription(E.TRANSACTIONAL_ID_NOT_FOUND, transactional_id)
        return TxnDescription(E.NONE, transactional_id, md.state.state_name, md.txn_timeout_ms,
                              md.txn_start_timestamp, md.producer_id, md.producer_epoch,
                              tuple(sorted(md.topic_partitions)))

    def list_transactions(self, state_filters: Iterable[str] = (), producer_id_filters: Iterable[int] = (),
                          duration_filter_ms: int = -1, transactional_id_pattern: str | None = None) -> ListResult:
        if self.state.loading:
            return ListResult(E.COORDINATOR_LOAD_IN_PROGRESS)
        states, unknown = set(), []
        for name in state_filters:
            s = S.from_name(name)
            if s is None:
                unknown.append(name)
            else:
                states.add(s)
        pattern = None
        if transactional_id_pattern:
            try:
                pattern = re.compile(transactional_id_pattern)
            except re.error:
                return ListResult(E.INVALID_REGULAR_EXPRESSION)
        pids = set(producer_id_filters)
        now = self.clock.now_ms()
        out = []
        for entry in self.state.served():
            for tid, md in entry.transactions.items():
                if md.state == S.DEAD or (pids and md.producer_id not in pids) or \
                        (state_filters and md.state not in states) or \
                        (duration_filter_ms >= 0 and now - md.txn_start_timestamp <= duration_filter_ms) or \
                        (pattern is not None and pattern.fullmatch(tid) is None):
                    continue
                out.append(TxnListing(tid, md.producer_id, md.state.state_name))
        return ListResult(E.NONE, tuple(unknown), tuple(out))

    # ================================================================== timers ====
    def _schedule(self, key, delay_ms: int, payload=None) -> None:
        deadline = self.clock.monotonic_ms() + delay_ms
        self.timers.schedule(key, deadline)
        if payload is not None:
            self._payloads[key] = payload
        if self._last_deadline is None or deadline < self._last_deadline:
            self.wakeup()

    def tick(self) -> int | None:
        """Run the timers that are due; the next deadline (monotonic ms)."""
        now = self.clock.monotonic_ms()
        while (key := self.timers.pop_expired(now)) is not None:
            self._on_timer(key)
        self._last_deadline = self.timers.next_deadline()
        return self._last_deadline

    def _on_timer(self, key) -> None:
        kind = key[0]
        if kind == "abort_timed_out":
            self.abort_timed_out_transactions()
            self._schedule(key, self.config.abort_timed_out_transaction_cleanup_interval_ms)
        elif kind == "expire_ids":
            self.expire_transactional_ids()
            self._schedule(key, self.config.remove_expired_transaction_cleanup_interval_ms)
        elif kind == "complete":
            job = self._payloads.pop(key, None)
            if job is not None and self.marker_job_live(job) and not job.metadata.topic_partitions:
                self._write_complete(job)

    def abort_timed_out_transactions(self) -> int:
        """Fence and abort every Ongoing transaction older than its timeout (Kafka's
        abortTimedOutTransactions); how many aborts started."""
        now = self.clock.now_ms()
        started = 0
        for entry in self.state.served():
            for tid, md in list(entry.transactions.items()):
                if md.pending_transition_in_progress or md.state != S.ONGOING or \
                        md.txn_start_timestamp + md.txn_timeout_ms >= now:
                    continue
                transit = md.prepare_fence_producer_epoch()
                log.info("transaction of %s (producer %d epoch %d) timed out after %d ms: aborting it",
                         tid, md.producer_id, md.producer_epoch, md.txn_timeout_ms)
                started += 1
                self._end_transaction(tid, transit.producer_id, transit.producer_epoch, committed=False,
                                      from_client=False).add_done_callback(
                    lambda q, tid=tid: q.result.error in (E.NONE, E.INVALID_PRODUCER_ID_MAPPING, E.PRODUCER_FENCED,
                                                          E.CONCURRENT_TRANSACTIONS)
                    or log.warning("aborting the timed-out transaction of %s failed: %s", tid,
                                   E(q.result.error).name))
        return started

    def expire_transactional_ids(self) -> int:
        """Forget ids idle for transactional.id.expiration.ms (tombstones in their partitions)."""
        now = self.clock.now_ms()
        limit = now - self.config.transactional_id_expiration_ms
        n = 0
        for entry in self.state.served():
            doomed = []
            for md in entry.transactions.values():
                if md.state.expiration_allowed and not md.pending_transition_in_progress and \
                        md.txn_last_update_timestamp <= limit:
                    doomed.append((md, md.prepare_dead()))
            if doomed:
                n += len(doomed)
                self.state.write_tombstones(entry.partition, entry.coordinator_epoch, doomed)
        return n
