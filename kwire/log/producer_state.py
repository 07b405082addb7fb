"""Per-partition producer state: idempotent and transactional producers (Kafka's
ProducerStateManager, ProducerStateEntry and ProducerAppendInfo rules), pure apart from the
snapshot files. The log side (rebuild from the log, the append path's hooks) is
kwire.log.producer_log.

For every producer id that wrote to a partition: its current producer epoch, the sequence
ranges and offsets of its last 5 batches (a producer has at most 5 requests in flight per
partition, max.in.flight.requests.per.connection <= 5), the coordinator epoch of its last
transaction marker and the first offset of its ongoing transaction (-1: none). The append
path asks ``check`` / ``check_marker`` before writing and records after:

* same epoch, same (first, last) sequence as a cached batch: a retry of a batch that was
  already written. Kafka answers it with the original offsets and no error (what
  DUPLICATE_SEQUENCE_NUMBER became in modern Kafka) and writes nothing.
* producer epoch below the current one: INVALID_PRODUCER_EPOCH (Kafka 2.7+ answers this,
  not PRODUCER_FENCED, on Produce); the same for a marker with an older epoch (a marker's
  newer epoch fences the older one: the next batch of the old epoch is refused).
* a new, higher epoch must start at sequence 0; the same epoch must continue at last + 1
  (0 after Int32.MAX): otherwise OUT_OF_ORDER_SEQUENCE_NUMBER. Sequences are checked for
  client appends only; kwire's coordinators write batches without sequences (-1).
* a producer id this partition has no state for is accepted at any sequence, as Kafka 2.5+
  does (KIP-360: state is kept until producer.id.expiration.ms, retention does not drop it;
  Kafka no longer answers UNKNOWN_PRODUCER_ID on Produce).
* a non-transactional batch from a producer whose transaction is open: INVALID_TXN_STATE;
  a transactional batch of a producer without one begins a transaction at its first offset.
* a marker (control batch: abort or commit) ends the producer's transaction; a coordinator
  epoch older than the producer's last marker's: TRANSACTION_COORDINATOR_FENCED.

Transactions: ``ongoing_txns`` (first offset -> producer id, in offset order) and the
completed ones whose marker is not below the high watermark yet (``unreplicated_txns``);
the last stable offset is min(their first offsets, high watermark) (Kafka's
firstUnstableOffset). An aborted transaction is answered as an AbortedTxn for the
segment's .txnindex (kwire.log.txn_index), with the LSO right after its marker.

A follower's append (origin REPLICATION) checks nothing (the leader did) but records each
batch's producer id, epoch, sequences, transactions and the leader's offsets, as Kafka's
ProducerAppendInfo does for replicated batches: once the follower becomes leader, a retry
of any of the last 5 batches is answered with its original offsets and the LSO is right.

KIP-890 part 1 (Kafka's VerificationStateEntry / VerificationGuard): before a producer's
first transactional batch on a partition (no transaction open here), the produce path takes
the producer's verification guard (``maybe_start_verification``: a fresh object, or the one an
earlier request of the same producer is already waiting on), asks the transaction
coordinator, and appends only if the guard is still the producer's. Any transactional batch
or marker of the producer clears it (``update_batch`` / ``update_marker``), so a marker
written while the coordinator was being asked (the transaction ended) refuses the late batch
instead of letting it open a transaction nobody will end (a hanging transaction). Guards live
in memory only (Kafka's too) and go with producer.id.expiration.ms.

Durability: the state is rebuilt from the log (kwire.log.producer_log) starting at the
latest ``<20-digit offset>.snapshot`` file in the partition directory; snapshots are written
when a segment rolls, when a partition gets its first producer and at a clean close, so a
restart scans at most the active segment. The snapshot layout is kwire's own (Kafka's v1
file keeps only the last batch per producer; ours keeps all 5, so retries in flight across a
broker restart are still recognised), declared with ``construct`` (SNAPSHOT_FILE below);
version 101 adds the transaction fields, version 100 (without them) is still read:

    version int16 (=101) | crc32c uint32 (of everything after it) | count int32 |
    count x { producer_id int64 | epoch int16 | last_timestamp int64 |
              coordinator_epoch int32 | current_txn_first_offset int64 | n int8 |
              n x { first_seq int32 | last_seq int32 | first_offset int64 | last_offset int64 |
                    timestamp int64 } }

A snapshot written on a roll is renamed into place without an fsync (as Kafka's
takeSnapshot(asyncFlush)); the next flush of the log fsyncs it off the event loop
(``unsynced_snapshots`` / ``sync_files``). A lost or torn snapshot only costs a longer
rebuild from the log (the CRC rejects a torn one). A clean close writes it durably.
"""
from __future__ import annotations

import functools
import os
import re
import struct
import threading
from collections import deque

from kwire.atomic import fsync_dir, write_atomic
from kwire.codec.records import crc32c
from kwire.errors import ErrorCode, KafkaError
from kwire.fds import open_fd, out_of_descriptors, read_file
from kwire.log.txn_index import AbortedTxn

BATCHES_TO_RETAIN = 5
INT32_MAX = 0x7FFFFFFF
NO_PRODUCER_ID = -1
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 101
SNAPSHOT_VERSION_V100 = 100   # before transactions: still read
SNAPSHOTS_TO_KEEP = 2
DEFAULT_EXPIRATION_CHECK_MS = 600_000  # producer.id.expiration.check.interval.ms
DEFAULT_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms

_SNAPSHOT_FILE = re.compile(r"^(\d{20})\.snapshot$")


# --- the snapshot file (cold path: written on roll and close, read once at open) ----------
@functools.lru_cache(maxsize=None)
def _snapshot_codecs():
    """(body, body v100, file) construct parsers of the snapshot format, compiled on the first
    snapshot read or written: construct's import and compilation (~30-40 ms) stay off the start
    of a broker that has none to read."""
    import construct as C  # noqa: PLC0415 - start-up time: construct, first snapshot

    SNAPSHOT_BATCH = C.Struct(
        "first_seq" / C.Int32sb,
        "last_seq" / C.Int32sb,
        "first_offset" / C.Int64sb,
        "last_offset" / C.Int64sb,
        "timestamp" / C.Int64sb,
    )
    SNAPSHOT_ENTRY = C.Struct(
        "producer_id" / C.Int64sb,
        "epoch" / C.Int16sb,
        "last_timestamp" / C.Int64sb,
        "coordinator_epoch" / C.Int32sb,
        "current_txn_first_offset" / C.Int64sb,
        "batches" / C.PrefixedArray(C.Int8sb, SNAPSHOT_BATCH),
    )
    SNAPSHOT_BODY = C.Struct("producers" / C.PrefixedArray(C.Int32sb, SNAPSHOT_ENTRY), C.Terminated)
    SNAPSHOT_ENTRY_V100 = C.Struct(
        "producer_id" / C.Int64sb,
        "epoch" / C.Int16sb,
        "last_timestamp" / C.Int64sb,
        "batches" / C.PrefixedArray(C.Int8sb, SNAPSHOT_BATCH),
    )
    SNAPSHOT_BODY_V100 = C.Struct("producers" / C.PrefixedArray(C.Int32sb, SNAPSHOT_ENTRY_V100), C.Terminated)
    SNAPSHOT_FILE = C.Struct(
        "version" / C.Int16sb,
        "crc" / C.Int32ub,       # CRC-32C of body
        "body" / C.GreedyBytes,
    )
    return SNAPSHOT_BODY.compile(), SNAPSHOT_BODY_V100.compile(), SNAPSHOT_FILE.compile()


class OutOfOrderSequence(KafkaError):
    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpoch(KafkaError):
    code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidSequence(KafkaError):
    """An idempotent batch (producer id set) without a base sequence (Kafka's LogValidator)."""

    code = ErrorCode.INVALID_RECORD


class InvalidTxnState(KafkaError):
    code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFenced(KafkaError):
    code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    return (base_sequence + last_offset_delta) & INT32_MAX


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


class BatchMetadata:
    __slots__ = ("first_seq", "last_seq", "first_offset", "last_offset", "timestamp")

    def __init__(self, first_seq: int, last_seq: int, first_offset: int, last_offset: int, timestamp: int):
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.timestamp = timestamp

    def _tuple(self):
        return (self.first_seq, self.last_seq, self.first_offset, self.last_offset, self.timestamp)

    def __eq__(self, other):
        return isinstance(other, BatchMetadata) and self._tuple() == other._tuple()

    def __repr__(self) -> str:
        return "BatchMetadata(seq %d-%d, offsets %d-%d, ts %d)" % self._tuple()


class ProducerStateEntry:
    __slots__ = ("producer_id", "epoch", "batches", "last_timestamp", "coordinator_epoch",
                 "current_txn_first_offset")

    def __init__(self, producer_id: int, epoch: int, batches=(), last_timestamp: int = -1,
                 coordinator_epoch: int = -1, current_txn_first_offset: int = -1):
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=BATCHES_TO_RETAIN)
        self.last_timestamp = last_timestamp
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = current_txn_first_offset  # -1: no transaction open

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def add(self, epoch: int, meta: BatchMetadata) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()
        self.batches.append(meta)
        self.last_timestamp = meta.timestamp

    def maybe_update_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()

    def __repr__(self) -> str:
        txn = f", txn from {self.current_txn_first_offset}" if self.current_txn_first_offset >= 0 else ""
        return f"ProducerStateEntry(pid={self.producer_id}, epoch={self.epoch}, batches={list(self.batches)}{txn})"


class VerificationGuard:
    """An identity token (Kafka's VerificationGuard): only the very object taken before the
    coordinator was asked lets the batch in."""
    __slots__ = ("producer_id", "epoch", "created_ms", "supports_epoch_bump")

    def __init__(self, producer_id: int, epoch: int, created_ms: int, supports_epoch_bump: bool = False):
        self.producer_id = producer_id
        self.epoch = epoch
        self.created_ms = created_ms
        #: transaction version 2 (Produce v12): the marker that ends the producer's previous
        #: transaction carries this guard's epoch (bumped by its EndTxn) and does not void it;
        #: only a marker of a later epoch (this transaction aborted) does
        self.supports_epoch_bump = supports_epoch_bump

    def voided_by_marker(self, marker_epoch: int) -> bool:
        return not self.supports_epoch_bump or marker_epoch > self.epoch

    def __repr__(self) -> str:
        return f"VerificationGuard(pid={self.producer_id}, epoch={self.epoch}, at {self.created_ms})"


class ProducerStateManager:
    """The producer state of one partition. ``map_end_offset``: the log offset up to which
    batches have been applied (the next offset to read when catching up with the log)."""

    def __init__(self, dir: str | None, *, expiration_ms: int = 86_400_000,
                 expiration_check_ms: int = DEFAULT_EXPIRATION_CHECK_MS):
        self.dir = dir
        self.expiration_ms = expiration_ms
        self.expiration_check_ms = expiration_check_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0
        self.last_expiry_check_ms: int | None = None
        self.last_snapshot_offset = -1
        self.unsynced: list[str] = []   # snapshot files renamed into place, not fsynced yet
        # open transactions: first offset -> producer id, in offset order (they begin at the
        # log end, so insertion order is offset order; a rebuild inserts them sorted)
        self.ongoing_txns: dict[int, int] = {}
        # completed transactions whose marker is not below the high watermark yet:
        # (first offset, marker offset); they keep the LSO until it passes the marker
        self.unreplicated_txns: list[tuple[int, int]] = []
        # held while either changes, and while the last stable offset is read from them: an
        # append may run in a worker thread (kwire.replication.replica_manager.append_off_loop,
        # the replica fetcher) while a fetch on the event loop asks for the LSO
        self._txns_lock = threading.Lock()
        # KIP-890 part 1: producer id -> the guard of a verification in progress (memory only)
        self.verification_guards: dict[int, VerificationGuard] = {}

    # --- transaction verification (KIP-890 part 1) ----------------------------------------
    def has_ongoing_transaction(self, producer_id: int, epoch: int | None = None) -> bool:
        """Whether the producer has a transaction open here; with ``epoch``, one of that epoch
        (Kafka's UnifiedLog.hasOngoingTransaction: a batch of another epoch belongs to another
        transaction, e.g. the next one of transaction version 2 while this one's marker is due)."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 and (epoch is None or entry.epoch == epoch)

    def maybe_start_verification(self, producer_id: int, epoch: int, now_ms: int,
                                 supports_epoch_bump: bool = False) -> VerificationGuard | None:
        """None when the producer's transaction of this epoch is open here (nothing to
        verify), else its guard: the one already taken (a concurrent request of the same
        producer shares it, its epoch raised to the newer one), or a new one."""
        if self.has_ongoing_transaction(producer_id, epoch):
            return None
        g = self.verification_guards.get(producer_id)
        if g is None:
            g = self.verification_guards[producer_id] = VerificationGuard(producer_id, epoch, now_ms,
                                                                          supports_epoch_bump)
        elif epoch > g.epoch:
            g.epoch = epoch
        return g

    def verification_guard(self, producer_id: int) -> VerificationGuard | None:
        return self.verification_guards.get(producer_id)

    def clear_verification(self, producer_id: int) -> None:
        if self.verification_guards:
            self.verification_guards.pop(producer_id, None)

    # --- validation (client appends) ----------------------------------------------------
    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
              pending: dict | None = None, *, transactional: bool = False,
              sequences: bool = True) -> BatchMetadata | None:
        """Validate one data batch against the state (and ``pending``: pid -> (epoch, last
        sequence, transaction open) after earlier batches of the same append). Returns the
        cached batch when this is a duplicate; raises InvalidProducerEpoch /
        OutOfOrderSequence / InvalidTxnState. ``sequences``: check sequences (client appends;
        kwire's own writers send none, as Kafka's coordinators)."""
        if sequences and first_seq < 0:
            raise InvalidSequence(f"invalid sequence number {first_seq} in record batch with producer id {producer_id}")
        entry = self.producers.get(producer_id)
        p = pending.get(producer_id) if pending else None
        if p is not None:
            cur_epoch, cur_last = p[0], p[1]
            in_txn = len(p) > 2 and p[2]
        elif entry is not None:
            cur_epoch, cur_last, in_txn = entry.epoch, entry.last_seq, entry.current_txn_first_offset >= 0
            if sequences:
                dup = entry.find_duplicate(epoch, first_seq, last_seq)
                if dup is not None and epoch >= cur_epoch:
                    return dup
        else:
            return None  # a producer new to this partition: any sequence (Kafka 2.5+)
        if epoch < cur_epoch:
            raise InvalidProducerEpoch(
                f"epoch {epoch} of producer {producer_id} is older than the current epoch {cur_epoch}")
        if sequences:
            if epoch != cur_epoch:
                if first_seq != 0 and cur_epoch >= 0:
                    raise OutOfOrderSequence(
                        f"invalid sequence number {first_seq} for new epoch {epoch} of producer {producer_id} "
                        f"(current epoch {cur_epoch}): a new epoch starts at 0")
            elif cur_last >= 0 and not in_sequence(cur_last, first_seq):
                raise OutOfOrderSequence(
                    f"out of order sequence number for producer {producer_id} epoch {epoch}: "
                    f"{first_seq} (incoming seq. number), {cur_last} (current end sequence number)")
        if in_txn and not transactional:
            raise InvalidTxnState(f"expected a transactional write from producer {producer_id}: its "
                                  f"transaction is open")
        return None

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """Validate a transaction marker (Kafka's appendEndTxnMarker, transaction versions
        0 and 1): its epoch may not be older than the producer's, nor its coordinator epoch
        older than the last marker's."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"epoch {epoch} of the marker for producer {producer_id} is older than the current "
                f"epoch {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFenced(
                f"invalid coordinator epoch for producer {producer_id}: {coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)")

    # --- updates ------------------------------------------------------------------------
    def update(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int) -> None:
        """Record a batch that is now in the log (client append or log replay)."""
        meta = BatchMetadata(first_seq, last_seq, first_offset, last_offset, timestamp)
        entry = self.producers.get(producer_id)
        if entry is None:
            self.producers[producer_id] = ProducerStateEntry(producer_id, epoch, (meta,), timestamp)
        else:
            entry.add(epoch, meta)
        if last_offset + 1 > self.map_end_offset:
            self.map_end_offset = last_offset + 1

    def update_batch(self, producer_id: int, epoch: int, base_seq: int, first_offset: int,
                     last_offset: int, timestamp: int, transactional: bool) -> None:
        """Record a data batch now in the log (any origin): its sequences (when it has
        them), epoch, and the transaction it begins. The produce path's per-batch step."""
        entry = self.producers.get(producer_id)
        if base_seq >= 0:
            meta = BatchMetadata(base_seq, (base_seq + last_offset - first_offset) & INT32_MAX, first_offset,
                                 last_offset, timestamp)
            if entry is None:
                entry = self.producers[producer_id] = ProducerStateEntry(producer_id, epoch, (meta,), timestamp)
            else:
                entry.add(epoch, meta)
        elif entry is None:   # a coordinator's batch: no sequences
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id, epoch, (), timestamp)
        else:
            entry.maybe_update_epoch(epoch)
            entry.last_timestamp = timestamp
        if last_offset >= self.map_end_offset:
            self.map_end_offset = last_offset + 1
        if transactional:
            if self.verification_guards:   # the transaction has its first offset: verified
                self.verification_guards.pop(producer_id, None)
            if entry.current_txn_first_offset < 0:
                entry.current_txn_first_offset = first_offset
                with self._txns_lock:
                    self.ongoing_txns[first_offset] = producer_id

    def update_marker(self, producer_id: int, epoch: int, offset: int, timestamp: int, commit: bool,
                      coordinator_epoch: int) -> AbortedTxn | None:
        """Record a transaction marker at ``offset``: the producer's transaction (if one is
        open) ends. Returns the entry for the segment's aborted-transactions index when it
        aborted one."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id, epoch, (), timestamp)
        if self.verification_guards:   # the transaction ended: a verification in flight is void
            g = self.verification_guards.get(producer_id)
            if g is not None and g.voided_by_marker(epoch):
                del self.verification_guards[producer_id]
        aborted = None
        first = entry.current_txn_first_offset
        if first >= 0:
            with self._txns_lock:
                self.ongoing_txns.pop(first, None)
                self.unreplicated_txns.append((first, offset))
                # the LSO right after the marker: the first other transaction still open
                lso = next(iter(self.ongoing_txns), offset + 1)
            if not commit:
                aborted = AbortedTxn(producer_id, first, offset, lso)
        entry.maybe_update_epoch(epoch)
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        if offset + 1 > self.map_end_offset:
            self.map_end_offset = offset + 1
        return aborted

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of a transaction that is open, or completed with its marker not
        below ``high_watermark`` yet (those are forgotten once it is); None when none."""
        with self._txns_lock:
            un = self.unreplicated_txns
            if un:
                un[:] = [t for t in un if t[1] >= high_watermark]
            first = next(iter(self.ongoing_txns), None) if self.ongoing_txns else None
            for f, _ in un:
                if first is None or f < first:
                    first = f
        return first

    def last_stable_offset(self, high_watermark: int) -> int:
        first = self.first_unstable_offset(high_watermark) if self.ongoing_txns or self.unreplicated_txns else None
        return high_watermark if first is None or first >= high_watermark else first

    def remove_expired(self, now_ms: int) -> int:
        """Forget producers whose last batch is older than producer.id.expiration.ms."""
        limit = self.expiration_ms
        # a producer with an open transaction is kept (Kafka's isProducerExpired)
        doomed = [pid for pid, e in self.producers.items()
                  if now_ms - e.last_timestamp >= limit and e.current_txn_first_offset < 0]
        for pid in doomed:
            del self.producers[pid]
        if self.verification_guards:   # Kafka drops verification state on the same clock
            for pid in [p for p, g in self.verification_guards.items() if now_ms - g.created_ms >= limit]:
                del self.verification_guards[pid]
        return len(doomed)

    def maybe_remove_expired(self, now_ms: int) -> int:
        last = self.last_expiry_check_ms
        if last is None:
            self.last_expiry_check_ms = now_ms
            return 0
        if now_ms - last < self.expiration_check_ms:
            return 0
        self.last_expiry_check_ms = now_ms
        return self.remove_expired(now_ms)

    def truncate(self) -> None:
        self.producers.clear()
        self.verification_guards.clear()
        with self._txns_lock:
            self.ongoing_txns.clear()
            self.unreplicated_txns.clear()
        self.map_end_offset = 0

    def _index_transactions(self) -> None:
        """``ongoing_txns`` from the entries (after loading a snapshot)."""
        ongoing = dict(sorted((e.current_txn_first_offset, pid) for pid, e in self.producers.items()
                              if e.current_txn_first_offset >= 0))
        with self._txns_lock:
            self.ongoing_txns = ongoing
            self.unreplicated_txns = []

    # --- snapshots ----------------------------------------------------------------------
    def encode_snapshot(self) -> bytes:
        _BODY, _, _FILE = _snapshot_codecs()
        body = _BODY.build({"producers": [
            {"producer_id": e.producer_id, "epoch": e.epoch, "last_timestamp": e.last_timestamp,
             "coordinator_epoch": e.coordinator_epoch, "current_txn_first_offset": e.current_txn_first_offset,
             "batches": [{"first_seq": b.first_seq, "last_seq": b.last_seq, "first_offset": b.first_offset,
                          "last_offset": b.last_offset, "timestamp": b.timestamp} for b in e.batches]}
            for e in self.producers.values()]})
        return _FILE.build({"version": SNAPSHOT_VERSION, "crc": crc32c(body), "body": body})

    @staticmethod
    def decode_snapshot(data: bytes) -> dict[int, ProducerStateEntry]:
        """Raises ValueError when the snapshot is not one of ours or is corrupt."""
        import construct as C  # noqa: PLC0415 - start-up time: construct, first snapshot

        _BODY, _BODY_V100, _FILE = _snapshot_codecs()
        try:
            f = _FILE.parse(data)
        except (C.ConstructError, struct.error):  # compiled parsers raise struct.error
            raise ValueError("snapshot too short") from None
        if f.version not in (SNAPSHOT_VERSION, SNAPSHOT_VERSION_V100):
            raise ValueError(f"unknown snapshot version {f.version}")
        if crc32c(f.body) != f.crc:
            raise ValueError("snapshot CRC mismatch")
        try:
            body = (_BODY if f.version == SNAPSHOT_VERSION else _BODY_V100).parse(f.body)
        except C.TerminatedError:
            raise ValueError("trailing bytes in snapshot") from None
        except (C.ConstructError, struct.error) as exc:
            raise ValueError(f"truncated snapshot: {exc}") from None
        out: dict[int, ProducerStateEntry] = {}
        for e in body.producers:
            batches = [BatchMetadata(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
                       for b in e.batches]
            out[e.producer_id] = ProducerStateEntry(e.producer_id, e.epoch, batches, e.last_timestamp,
                                                    e.get("coordinator_epoch", -1),
                                                    e.get("current_txn_first_offset", -1))
        return out

    def snapshot_offsets(self) -> list[int]:
        if self.dir is None or not os.path.isdir(self.dir):
            return []
        out = []
        for name in os.listdir(self.dir):
            m = _SNAPSHOT_FILE.match(name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def take_snapshot(self, offset: int | None = None, *, sync: bool = False, sync_dir: bool = True) -> str | None:
        """Write ``<offset>.snapshot`` (default: ``map_end_offset``) atomically and keep the
        newest SNAPSHOTS_TO_KEEP. Without ``sync`` the file and directory fsync is left to
        the log's next flush (``unsynced``). Returns the path (None without a directory)."""
        if self.dir is None:
            return None
        offset = self.map_end_offset if offset is None else offset
        if offset == self.last_snapshot_offset:
            if sync and self.unsynced:
                sync_files(self.unsynced, self.dir if sync_dir else None)
                self.unsynced = []
            return None
        path = os.path.join(self.dir, snapshot_name(offset))
        write_atomic(path, self.encode_snapshot(), sync=sync, sync_dir=sync_dir)
        self.last_snapshot_offset = offset
        if sync:
            sync_files(self.unsynced, self.dir if sync_dir else None)
            self.unsynced = []
        else:
            self.unsynced.append(path)
        for old in self.snapshot_offsets()[:-SNAPSHOTS_TO_KEEP]:
            _unlink(os.path.join(self.dir, snapshot_name(old)))
        return path

    def load_latest_snapshot(self, log_end_offset: int) -> int:
        """Load the newest readable snapshot at or below ``log_end_offset``; snapshots beyond
        it (the log lost its tail) and unreadable ones are deleted. Returns the offset the
        state now reflects (0 without a snapshot)."""
        self.truncate()
        for off in reversed(self.snapshot_offsets()):
            path = os.path.join(self.dir, snapshot_name(off))
            if off > log_end_offset:
                _unlink(path)
                continue
            try:
                self.producers = self.decode_snapshot(read_file(path))
            except OSError as exc:
                if out_of_descriptors(exc):   # no reason to drop a good snapshot (kwire.fds)
                    raise
                _unlink(path)
                continue
            except ValueError:
                _unlink(path)
                continue
            self._index_transactions()
            self.map_end_offset = off
            self.last_snapshot_offset = off
            return off
        return 0

    def __repr__(self) -> str:
        return f"ProducerStateManager({self.dir!r}, {len(self.producers)} producers, end={self.map_end_offset})"


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def has_snapshots(dir: str) -> bool:
    try:
        return any(_SNAPSHOT_FILE.match(n) for n in os.listdir(dir))
    except OSError:
        return False


def unsynced_snapshots(plog) -> list[str]:
    """Take the log's snapshot files that still need an fsync (for its next flush)."""
    ps = getattr(plog, "producer_state", None)
    if ps is None or not ps.unsynced:
        return []
    out, ps.unsynced = ps.unsynced, []
    return out


def sync_files(paths, directory: str | None) -> None:
    """fsync ``paths`` (those still there: an older snapshot may be gone) and ``directory``
    (None: the caller's): disk work only, any thread."""
    if not paths:
        return
    for path in paths:
        try:
            fd = open_fd(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    if directory is not None:
        fsync_dir(directory)


