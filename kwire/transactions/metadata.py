"""One transactional id's state at its coordinator: Kafka's TransactionState, TransactionMetadata
and TxnTransitMetadata, with no I/O and no clock inside (times are passed in).

A change of state is two steps, as in Kafka: ``prepare_*`` checks the transition against the
table of valid previous states, marks the metadata with a ``pending_state`` (so no other change
can start meanwhile: the coordinator answers CONCURRENT_TRANSACTIONS) and returns a
``TxnTransit`` (the state to write to ``__transaction_state``); once the write is durable,
``complete_transition_to(transit)`` checks it against the metadata and installs it. A failed
write clears ``pending_state`` and leaves the metadata as it was.

A transition the table refuses raises ``IllegalTransition`` (Kafka's IllegalStateException):
the coordinator checks states first and answers the client Kafka's error codes
(INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, PRODUCER_FENCED), so it is a bug when it escapes.

Transaction versions 1 and 2 (``client_transaction_version``, stored in __transaction_state as
Kafka does): with version 2 (KIP-890 part 2) PrepareCommit/PrepareAbort carry the epoch bumped
by one (``last_producer_epoch`` the one before), the markers are written with it, and an epoch
that would be exhausted hands the producer a new id (``next_producer_id``, installed by
CompleteCommit/CompleteAbort with epoch 0); an abort may start from Empty, CompleteCommit or
CompleteAbort (a transaction that added nothing, or a fenced producer's retry).
"""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field

from kwire.errors import ErrorCode, KafkaError

log = logging.getLogger("kwire.transactions")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MAX_VALUE

TopicPartition = tuple[str, int]


def epoch_exhausted(epoch: int) -> bool:
    """No epoch past Short.MAX_VALUE - 1 is handed out, so a fence can always bump once more."""
    return epoch >= MAX_EPOCH - 1


class TransactionState(enum.Enum):
    """(id in __transaction_state, name in DescribeTransactions/ListTransactions, expiration allowed)."""

    EMPTY = (0, "Empty", True)
    ONGOING = (1, "Ongoing", False)
    PREPARE_COMMIT = (2, "PrepareCommit", False)
    PREPARE_ABORT = (3, "PrepareAbort", False)
    COMPLETE_COMMIT = (4, "CompleteCommit", True)
    COMPLETE_ABORT = (5, "CompleteAbort", True)
    DEAD = (6, "Dead", False)
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence", False)

    def __init__(self, id_: int, state_name: str, expiration_allowed: bool):
        self.id = id_
        self.state_name = state_name
        self.expiration_allowed = expiration_allowed

    @classmethod
    def from_id(cls, id_: int) -> "TransactionState":
        for s in cls:
            if s.id == id_:
                return s
        raise ValueError(f"unknown transaction state id {id_}")

    @classmethod
    def from_name(cls, name: str) -> "TransactionState | None":
        for s in cls:
            if s.state_name == name:
                return s
        return None


S = TransactionState

#: target state -> the states it may be entered from (Kafka's validPreviousStates, TV1)
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Empty / Complete*: version 2 only (the coordinator checks the version before preparing)
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


class IllegalTransition(KafkaError):
    """A transition the state table forbids, or a completion that does not match what was
    prepared: a coordinator bug, never a client's mistake."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


class Fenced(KafkaError):
    """The producer's epoch is neither the current one nor the one before the last bump."""

    code = ErrorCode.PRODUCER_FENCED


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The state a transition will leave, written to __transaction_state before it applies."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int = 0


def supports_epoch_bump(transaction_version: int) -> bool:
    """Kafka's TransactionVersion.supportsEpochBump: version 2 and later."""
    return transaction_version >= 2


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60_000
    state: TransactionState = S.EMPTY
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    #: the state a transition in flight will reach (None: none in flight)
    pending_state: TransactionState | None = None
    #: a fence whose write failed: the next fence keeps the epoch it bumped to
    has_failed_epoch_fence: bool = False
    #: the transaction version of the client's last transition (2: an epoch bump per end)
    client_transaction_version: int = 0

    # ------------------------------------------------------------------ queries
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def producer_epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    def _has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # ------------------------------------------------------------------ prepare
    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Bump the epoch to fence the producer of an ongoing transaction (InitProducerId from
        a new producer, or the transaction timed out); the abort that follows writes it."""
        if self.producer_epoch == MAX_EPOCH:
            log.error("fencing producer %s %d with epoch equal to Short.MAX_VALUE: a bug",
                      self.transactional_id, self.producer_id)
        bumped = self.producer_epoch if self.has_failed_epoch_fence or self.producer_epoch == MAX_EPOCH \
            else self.producer_epoch + 1
        return self._prepare(state=S.PREPARE_EPOCH_FENCE, producer_epoch=bumped)

    def prepare_increment_producer_epoch(self, new_timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransit:
        """InitProducerId on a transactional id with no transaction in flight (KIP-360 rules
        for a producer that sends its current id and epoch). Raises Fenced."""
        if self.producer_epoch_exhausted:
            raise IllegalTransition(f"cannot allocate more producer epochs for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch   # a retry of a bump answered
        else:
            log.info("transactional id %s: expected producer epoch %d is neither the current %d nor "
                     "the previous %d", self.transactional_id, expected_epoch, self.producer_epoch,
                     self.last_producer_epoch)
            raise Fenced(f"producer epoch {expected_epoch} is fenced")
        return self._prepare(state=S.EMPTY, producer_epoch=epoch, last_producer_epoch=last,
                             txn_timeout_ms=new_timeout_ms, topic_partitions=frozenset(), txn_start_timestamp=-1,
                             txn_last_update_timestamp=now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        """A new producer id with epoch 0 once the epoch of the current one is exhausted."""
        if self._has_pending_transaction():
            raise IllegalTransition("cannot rotate producer ids while a transaction is pending")
        return self._prepare(state=S.EMPTY, producer_id=new_producer_id, producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             txn_timeout_ms=new_timeout_ms, topic_partitions=frozenset(), txn_start_timestamp=-1,
                             txn_last_update_timestamp=now_ms)

    def prepare_add_partitions(self, partitions, now_ms: int, transaction_version: int | None = None) -> TxnTransit:
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) \
            else self.txn_start_timestamp
        tv = self.client_transaction_version if transaction_version is None else transaction_version
        return self._prepare(state=S.ONGOING, topic_partitions=frozenset(self.topic_partitions) | frozenset(partitions),
                             txn_start_timestamp=start, txn_last_update_timestamp=now_ms, client_transaction_version=tv)

    def prepare_abort_or_commit(self, new_state: TransactionState, now_ms: int, transaction_version: int = 0,
                                next_producer_id: int = NO_PRODUCER_ID,
                                no_partition_added: bool = False) -> TxnTransit:
        """PrepareCommit / PrepareAbort; version 2 bumps the epoch (the caller checked that it
        is not exhausted, or passes the ``next_producer_id`` CompleteCommit/Abort installs)."""
        if supports_epoch_bump(transaction_version):
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._prepare(state=new_state, next_producer_id=next_producer_id,
                             producer_epoch=epoch, last_producer_epoch=last,
                             txn_start_timestamp=now_ms if no_partition_added else self.txn_start_timestamp,
                             txn_last_update_timestamp=now_ms, client_transaction_version=transaction_version)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """CompleteCommit / CompleteAbort once every partition has its marker (version 2 with
        an exhausted epoch: the next producer id, epoch 0)."""
        self.has_failed_epoch_fence = False
        to = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        pid, epoch = self.producer_id, self.producer_epoch
        if supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0
        return self._prepare(state=to, producer_id=pid, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
                             topic_partitions=frozenset(), txn_last_update_timestamp=now_ms)

    def prepare_dead(self) -> TxnTransit:
        """The transactional id expired: a tombstone is written, then it is forgotten."""
        return self._prepare(state=S.DEAD, topic_partitions=frozenset())

    def _prepare(self, **changes) -> TxnTransit:
        """The transition to the current state with ``changes``, checked and made pending. The
        transit remembers the producer id it replaces (Kafka's prevProducerId)."""
        t = TxnTransit(**{"producer_id": self.producer_id, "next_producer_id": self.next_producer_id,
                          "producer_epoch": self.producer_epoch, "last_producer_epoch": self.last_producer_epoch,
                          "txn_timeout_ms": self.txn_timeout_ms, "state": self.state,
                          "topic_partitions": frozenset(self.topic_partitions),
                          "txn_start_timestamp": self.txn_start_timestamp,
                          "txn_last_update_timestamp": self.txn_last_update_timestamp,
                          "client_transaction_version": self.client_transaction_version, **changes},
                       prev_producer_id=self.producer_id)
        if self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: preparing a transition to {t.state.state_name} "
                                    f"while {self.pending_state.state_name} is pending")
        if t.producer_id < 0:
            raise IllegalTransition(f"illegal new producer id {t.producer_id}")
        if t.state != S.DEAD and t.producer_epoch < 0:
            raise IllegalTransition(f"illegal new producer epoch {t.producer_epoch}")
        if self.state not in VALID_PREVIOUS[t.state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.state_name} cannot become "
                                    f"{t.state.state_name}")
        self.pending_state = t.state
        return t

    # ------------------------------------------------------------------ complete
    def complete_transition_to(self, t: TxnTransit) -> None:
        """Install a prepared transition once its record is durable (Kafka's checks: the
        pending state matches, epochs move only by the rules, partitions only grow while
        Ongoing, the timeout does not change underneath a transaction)."""
        to = self.pending_state
        if to is None or to != t.state:
            raise IllegalTransition(f"{self.transactional_id}: completing {t.state.state_name} "
                                    f"but the pending state is {to}")
        ok = True
        if to == S.EMPTY:
            ok = (self.producer_epoch == t.producer_epoch or self._valid_epoch_bump(t)) and \
                not t.topic_partitions and t.txn_start_timestamp == -1
        elif to == S.ONGOING:
            ok = self._same_producer(t) and t.topic_partitions >= self.topic_partitions and \
                self.txn_timeout_ms == t.txn_timeout_ms
        elif to in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            empty_abort = to == S.PREPARE_ABORT and supports_epoch_bump(t.client_transaction_version) and \
                self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
            ok = self._valid_producer_epoch(t) and frozenset(self.topic_partitions) == t.topic_partitions and \
                self.txn_timeout_ms == t.txn_timeout_ms and \
                (self.txn_start_timestamp == t.txn_start_timestamp or empty_abort)
        elif to in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            ok = self._valid_producer_epoch(t) and self.txn_timeout_ms == t.txn_timeout_ms and \
                t.txn_start_timestamp != -1
        else:   # PrepareEpochFence is never completed (an abort follows it); Dead is forgotten
            ok = False
        if not ok:
            raise IllegalTransition(f"{self.transactional_id}: transition to {t} does not match {self}")
        self.producer_id = t.producer_id
        self.prev_producer_id = t.prev_producer_id
        self.next_producer_id = t.next_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.txn_timeout_ms = t.txn_timeout_ms
        self.topic_partitions = set(t.topic_partitions)
        self.txn_start_timestamp = t.txn_start_timestamp
        self.txn_last_update_timestamp = t.txn_last_update_timestamp
        self.client_transaction_version = t.client_transaction_version
        self.pending_state = None
        self.state = to

    def _same_producer(self, t: TxnTransit) -> bool:
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _valid_producer_epoch(self, t: TxnTransit) -> bool:
        """Kafka's validProducerEpoch: version 2's PrepareCommit/PrepareAbort bump the epoch by
        one (the transit's last epoch is the current one), its Complete* after an exhausted
        epoch install the next producer id with epoch 0; otherwise the producer is unchanged."""
        if supports_epoch_bump(t.client_transaction_version):
            if t.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and t.producer_epoch == 0 and \
                    t.producer_id != self.producer_id:
                return t.last_producer_epoch == self.last_producer_epoch and t.prev_producer_id == self.producer_id
            if t.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                return t.last_producer_epoch == self.producer_epoch and t.producer_id == self.producer_id
        return self._same_producer(t)

    def _valid_epoch_bump(self, t: TxnTransit) -> bool:
        return t.producer_epoch == self.producer_epoch + 1 or \
            (t.producer_epoch == 0 and t.producer_id != self.producer_id)

    def remove_partition(self, tp: TopicPartition) -> None:
        """A partition has its marker (only while PrepareCommit / PrepareAbort)."""
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalTransition(f"{self.transactional_id}: removing a partition in state "
                                    f"{self.state.state_name}")
        self.topic_partitions.discard(tp)

    @classmethod
    def from_transit(cls, transactional_id: str, t: TxnTransit) -> "TransactionMetadata":
        """Metadata as a record of __transaction_state left it (the last epoch is not stored)."""
        return cls(transactional_id, t.producer_id, t.prev_producer_id, t.next_producer_id,
                   t.producer_epoch, NO_PRODUCER_EPOCH, t.txn_timeout_ms, t.state,
                   set(t.topic_partitions), t.txn_start_timestamp, t.txn_last_update_timestamp,
                   client_transaction_version=t.client_transaction_version)
