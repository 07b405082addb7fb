"""Kafka's TransactionStateManager, without I/O: which ``__transaction_state`` partitions this
coordinator serves (loaded when its broker becomes their leader, with the partition's leader
epoch as the coordinator epoch; unloaded when it resigns), the metadata of their
transactional ids, and the writes of new states through a ``writer``.

- ``state_of(tid)`` -> (error, coordinator epoch, metadata or None): COORDINATOR_LOAD_IN_PROGRESS
  while the id's partition loads, NOT_COORDINATOR when it is not served here.
- ``begin_load(p, epoch)`` hands out a ``PartitionLoad`` to feed with the partition's records
  (``replay(key, value)``, in offset order); ``complete_load(load)`` installs what it rebuilt
  and returns the transactions left in PrepareCommit/PrepareAbort, whose markers must be sent
  again; a superseded load (resigned, or loading again) is ignored.
- ``append(tid, epoch, transit, callback, retry_on_error)`` writes one state (acks=all by the
  writer) and completes the prepared transition once it is durable, Kafka's
  appendTransactionToLog: append errors become coordinator errors, and a coordinator epoch
  that changed meanwhile (the partition moved away and back) answers NOT_COORDINATOR.

``owned_partitions`` None serves every partition at coordinator epoch 0 (tests, a coordinator
on its own); the edge starts with none.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable

from kwire.errors import CodecError, ErrorCode
from kwire.transactions import records as R
from kwire.transactions.metadata import TransactionMetadata, TransactionState, TxnTransit

E = ErrorCode
log = logging.getLogger("kwire.transactions")

Record = tuple[bytes, "bytes | None"]
#: writer(partition, records, done): append to __transaction_state-<partition>, acks=all;
#: ``done(error)`` once durable (or failed)
Writer = Callable[[int, list[Record], Callable[[ErrorCode], None]], None]


@dataclass
class TransactionConfig:
    """Kafka's transaction coordinator configs (broker configs of the same names)."""

    transactional_id_expiration_ms: int = 604_800_000
    transaction_max_timeout_ms: int = 900_000
    transaction_state_log_num_partitions: int = 50
    abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    remove_expired_transaction_cleanup_interval_ms: int = 3_600_000


def append_error(error: ErrorCode) -> ErrorCode:
    """What a failed append to __transaction_state means to a client (Kafka's mapping)."""
    if error in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                 E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE   # retriable: the client retries here
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE):
        return E.UNKNOWN_SERVER_ERROR
    return error


class TxnPartition:
    """A served ``__transaction_state`` partition: its coordinator epoch and its ids."""

    __slots__ = ("partition", "coordinator_epoch", "transactions")

    def __init__(self, partition: int, coordinator_epoch: int,
                 transactions: dict[str, TransactionMetadata] | None = None):
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        self.transactions: dict[str, TransactionMetadata] = transactions or {}


class PartitionLoad:
    """The transactional ids of one partition, rebuilt record by record before they are served.
    Records that do not decode are skipped (counted), as Kafka skips unknown versions."""

    __slots__ = ("partition", "coordinator_epoch", "transactions", "records", "skipped")

    def __init__(self, partition: int, coordinator_epoch: int):
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        self.transactions: dict[str, TransactionMetadata] = {}
        self.records = 0
        self.skipped = 0

    def replay(self, key: bytes, value: bytes | None) -> None:
        self.records += 1
        try:
            tid = R.decode_key(bytes(key))
            if value is None:
                self.transactions.pop(tid, None)
                return
            t = R.decode_value(bytes(value))
        except CodecError as exc:
            self.skipped += 1
            log.warning("%s-%d: skipped a record that does not decode: %s", R.TRANSACTION_STATE_TOPIC,
                        self.partition, exc)
            return
        self.transactions[tid] = TransactionMetadata.from_transit(tid, t)

    def replay_batch(self, batch) -> None:
        """One record batch read from the partition (the coordinator runtime's load): its
        records; control batches carry nothing for the transaction coordinator."""
        if batch.is_control:
            return
        for rec in batch.records():
            if rec.key is not None:
                self.replay(bytes(rec.key), None if rec.value is None else bytes(rec.value))

    def __repr__(self) -> str:
        return f"PartitionLoad({self.partition}, epoch {self.coordinator_epoch}, {self.records} records)"


class TransactionStateManager:
    def __init__(self, config: TransactionConfig, writer: Writer | None,
                 owned_partitions: Iterable[int] | None = None):
        self.config = config
        self.writer = writer
        self.owned: dict[int, TxnPartition] = {}
        self.loading: dict[int, PartitionLoad] = {}
        self.serve_all = owned_partitions is None
        for p in owned_partitions or ():
            self.owned[p] = TxnPartition(p, 0)

    # ------------------------------------------------------------------ queries
    @property
    def num_partitions(self) -> int:
        return self.config.transaction_state_log_num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return R.partition_for(transactional_id, self.num_partitions)

    def _entry(self, partition: int) -> TxnPartition | None:
        e = self.owned.get(partition)
        if e is None and self.serve_all and partition not in self.loading:
            e = self.owned[partition] = TxnPartition(partition, 0)
        return e

    def coordinator_error(self, transactional_id: str) -> ErrorCode | None:
        p = self.partition_for(transactional_id)
        if p in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return None if self._entry(p) is not None else E.NOT_COORDINATOR

    def state_of(self, transactional_id: str) -> tuple[ErrorCode | None, int, TransactionMetadata | None]:
        """(error, coordinator epoch, metadata or None when the id is unknown)."""
        p = self.partition_for(transactional_id)
        if p in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, -1, None
        e = self._entry(p)
        if e is None:
            return E.NOT_COORDINATOR, -1, None
        return None, e.coordinator_epoch, e.transactions.get(transactional_id)

    def put_if_absent(self, md: TransactionMetadata) -> TransactionMetadata:
        e = self._entry(self.partition_for(md.transactional_id))
        assert e is not None, "put_if_absent on a partition not served here"
        return e.transactions.setdefault(md.transactional_id, md)

    def served(self) -> list[TxnPartition]:
        return [self.owned[p] for p in sorted(self.owned)]

    def owns(self, partition: int) -> bool:
        return partition in self.owned and partition not in self.loading

    def is_loading(self, partition: int) -> bool:
        return partition in self.loading

    # ------------------------------------------------------------------ ownership
    def begin_load(self, partition: int, coordinator_epoch: int) -> PartitionLoad:
        self.unload(partition)
        load = self.loading[partition] = PartitionLoad(partition, coordinator_epoch)
        return load

    def complete_load(self, load: PartitionLoad) -> list[TransactionMetadata] | None:
        """Serve what ``load`` rebuilt; None when it was superseded. Returns the transactions
        in PrepareCommit/PrepareAbort (their markers are to be sent again)."""
        p = load.partition
        if self.loading.get(p) is not load:
            return None
        del self.loading[p]
        self.owned[p] = TxnPartition(p, load.coordinator_epoch, load.transactions)
        log.info("loaded %d transactional ids of %s-%d at coordinator epoch %d (%d records, %d skipped)",
                 len(load.transactions), R.TRANSACTION_STATE_TOPIC, p, load.coordinator_epoch,
                 load.records, load.skipped)
        return [md for md in load.transactions.values()
                if md.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)]

    def unload(self, partition: int) -> int:
        """Forget the partition's ids (a write in flight for them then answers NOT_COORDINATOR)."""
        self.loading.pop(partition, None)
        if self.serve_all:
            self.serve_all = False
            for p in range(self.num_partitions):
                if p != partition:
                    self._entry_force(p)
        e = self.owned.pop(partition, None)
        n = len(e.transactions) if e is not None else 0
        if n:
            log.info("unloaded %d transactional ids of %s-%d", n, R.TRANSACTION_STATE_TOPIC, partition)
        return n

    def _entry_force(self, p: int) -> None:
        if p not in self.owned:
            self.owned[p] = TxnPartition(p, 0)

    # ------------------------------------------------------------------ writes
    def append(self, transactional_id: str, coordinator_epoch: int, transit: TxnTransit,
               callback: Callable[[ErrorCode], None],
               retry_on_error: Callable[[ErrorCode], bool] = lambda _e: False) -> None:
        err, epoch, md = self.state_of(transactional_id)
        if err is not None:
            callback(err)
            return
        if md is None or epoch != coordinator_epoch:
            callback(E.NOT_COORDINATOR)
            return
        partition = self.partition_for(transactional_id)
        records = [(R.key_bytes(transactional_id), R.value_bytes(transit))]

        def done(error: ErrorCode) -> None:
            error = append_error(E(error))
            err2, epoch2, md2 = self.state_of(transactional_id)
            if error == E.NONE:
                if err2 is not None:
                    error = err2
                elif md2 is None or epoch2 != coordinator_epoch:
                    log.info("%s: coordinator epoch changed from %d after writing %s: NOT_COORDINATOR",
                             transactional_id, coordinator_epoch, transit.state.state_name)
                    error = E.NOT_COORDINATOR
                else:
                    md2.complete_transition_to(transit)
            elif err2 is None and md2 is not None and epoch2 == coordinator_epoch:
                if retry_on_error(error):
                    log.info("%s: writing %s failed with %s; kept pending to retry", transactional_id,
                             transit.state.state_name, error.name)
                else:
                    log.info("%s: writing %s failed with %s; transition dropped", transactional_id,
                             transit.state.state_name, error.name)
                    md2.pending_state = None
            callback(error)

        self.writer(partition, records, done)

    def write_tombstones(self, partition: int, coordinator_epoch: int,
                         doomed: list[tuple[TransactionMetadata, TxnTransit]]) -> None:
        """Expire transactional ids (prepared Dead): tombstones, then forget them."""
        records = [(R.key_bytes(md.transactional_id), None) for md, _ in doomed]

        def done(error: ErrorCode) -> None:
            e = self.owned.get(partition)
            for md, t in doomed:
                live = e is not None and e.coordinator_epoch == coordinator_epoch and \
                    e.transactions.get(md.transactional_id) is md
                if live and error == E.NONE and md.pending_state == TransactionState.DEAD \
                        and md.producer_epoch == t.producer_epoch:
                    del e.transactions[md.transactional_id]
                else:
                    if error != E.NONE:
                        log.warning("expiring transactional id %s failed: %s", md.transactional_id,
                                    E(error).name)
                    md.pending_state = None
            if error == E.NONE:
                log.info("expired %d transactional ids of %s-%d", len(doomed), R.TRANSACTION_STATE_TOPIC,
                         partition)

        self.writer(partition, records, done)
