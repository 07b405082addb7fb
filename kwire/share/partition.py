"""The state of one share partition (KIP-932; Kafka's SharePartition): which records of a
topic partition a share group has delivered, to whom, how often, and what became of them.
Pure: time is passed in (monotonic ms), no I/O.

Offsets below ``start_offset`` are done (acknowledged or archived). Offsets from
``start_offset`` up to ``end_offset`` (exclusive: the next offset never fetched) are *in
flight*, each record in one state (Kafka's RecordState, with its byte values):

- AVAILABLE (0): may be acquired by any member;
- ACQUIRED (1): locked by one member until its acquisition lock expires
  (``record_lock_duration_ms``, group.share.record.lock.duration.ms);
- ACKNOWLEDGED (2): accepted, done;
- ARCHIVED (4): rejected, or released / timed out after ``delivery_count_limit`` deliveries
  (group.share.delivery.count.limit: a poison record is given up on), or a gap.

Offsets in flight that hold no record (compaction gaps, transaction markers) are simply
absent from ``records`` and count as done. ``start_offset`` moves past every done offset at
the front. At most ``max_in_flight`` records (group.share.partition.max.record.locks) are in
flight: new records are not acquired beyond that until the front is done.

Acknowledge types as on the wire: 0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT, 4 RENEW (the lock
starts again). Only the member holding a record may acknowledge it (INVALID_RECORD_STATE
otherwise, for the whole batch, which is then left as it was).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable

from kwire.errors import ErrorCode

E = ErrorCode


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(slots=True)
class InFlightRecord:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline: int = 0      # monotonic ms; meaningful while ACQUIRED


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One run of acquired offsets with the same delivery count (the wire's AcquiredRecords)."""
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of in-flight offsets in one state (the durable form's StateBatch)."""
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class SharePartition:
    def __init__(self, *, start_offset: int = 0, record_lock_duration_ms: int = 30000,
                 delivery_count_limit: int = 5, max_in_flight: int = 2000):
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.record_lock_duration_ms = record_lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.records: dict[int, InFlightRecord] = {}
        #: bumped by every change of the in-flight state, acquisitions included
        self.version = 0
        #: bumped by every change the durable form must follow (acknowledgements, releases,
        #: lock expiries, archived records, resets); not by a plain acquisition: Kafka's
        #: SharePartition.acquire writes no state (the lock and the delivery count are
        #: written at the acknowledgement, release or lock expiry that ends the delivery)
        self.durable_version = 0

    # ------------------------------------------------------------------ queries
    def in_flight(self) -> int:
        return len(self.records)

    def state_of(self, offset: int) -> RecordState | None:
        """The state of an offset in flight, ACKNOWLEDGED/ARCHIVED-ish None below the start."""
        r = self.records.get(offset)
        return None if r is None else r.state

    def fetch_offset(self, now: int) -> int:
        """Where the next read for this partition starts: the first available record in
        flight, else the end of what was fetched (Kafka's nextFetchOffset)."""
        self.expire_locks(now)
        for off in sorted(self.records):
            if self.records[off].state is RecordState.AVAILABLE:
                return off
        return self.end_offset

    def can_acquire(self, now: int) -> bool:
        """Whether an acquire could take something: an available record in flight, or room
        for new records."""
        self.expire_locks(now)
        return (any(r.state is RecordState.AVAILABLE for r in self.records.values())
                or len(self.records) < self.max_in_flight)

    def next_lock_deadline(self) -> int | None:
        ds = [r.lock_deadline for r in self.records.values() if r.state is RecordState.ACQUIRED]
        return min(ds) if ds else None

    # ------------------------------------------------------------------ acquire
    def acquire(self, member_id: str, offsets: Iterable[int], max_records: int, now: int, *,
                read_end: int | None = None, lock_ms: int | None = None,
                batch_starts: set[int] | None = None, batch_size: int = 0,
                archive: set[int] | frozenset[int] = frozenset()) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` what it may take among ``offsets`` (ascending offsets of
        the records read from the log, control records left out), at most ``max_records``.
        ``read_end``: the offset after the last batch read; when every offset read was
        looked at, the offsets up to it without a record are passed (gaps, markers).

        ``batch_starts`` (the base offsets of the log batches read): Kafka's batch_optimized
        acquire mode (SharePartition.acquire, the default): ``max_records`` and the in-flight
        limit are soft, checked only where a log batch starts, so the batch holding the
        ``max_records``-th record is acquired whole (never less than one batch); and the
        acquired runs are cut where a batch starts once a run holds ``batch_size`` records
        (the request's BatchSize, Kafka's createBatches). Without it (record_limit mode, or a
        caller with no batches) both limits are exact.

        ``archive``: offsets of records of aborted transactions (a read_committed share
        group): new ones are archived on the way, never delivered (Kafka's
        maybeFilterAbortedTransactionalAcquiredRecords)."""
        self.expire_locks(now)
        lock = self.record_lock_duration_ms if lock_ms is None else lock_ms
        taken: list[tuple[int, int]] = []
        stopped = False
        changed = False
        for off in offsets:
            at_boundary = batch_starts is None or off in batch_starts or not taken
            if at_boundary and len(taken) >= max_records:
                stopped = True
                break
            if off < self.start_offset:
                continue
            r = self.records.get(off)
            if r is None:
                if off < self.end_offset:
                    continue   # below the end and not in flight: done
                if at_boundary and len(self.records) >= self.max_in_flight:
                    stopped = True
                    break
                r = self.records[off] = InFlightRecord()
                self.end_offset = off + 1
                if off in archive:   # an aborted transaction's record: done at once
                    r.state = RecordState.ARCHIVED
                    changed = True
                    continue
            if r.state is not RecordState.AVAILABLE:
                continue
            r.state = RecordState.ACQUIRED
            r.delivery_count += 1
            r.member_id = member_id
            r.lock_deadline = now + lock
            taken.append((off, r.delivery_count))
        if not stopped and read_end is not None and read_end > self.end_offset:
            self.end_offset = read_end
        if taken or changed:
            self.version += 1
        if changed:
            self.durable_version += 1
        self._advance_start()
        return _runs(taken, batch_starts, batch_size)

    # ------------------------------------------------------------------ acknowledge
    def acknowledge(self, member_id: str, first_offset: int, last_offset: int,
                    types: list[int], now: int) -> ErrorCode:
        """One acknowledgement batch: ``types`` holds one type for the whole range or one per
        offset. Validated whole first (Kafka's SharePartition.acknowledge)."""
        if last_offset < first_offset or not types or (len(types) != 1 and
                                                       len(types) != last_offset - first_offset + 1):
            return E.INVALID_REQUEST
        try:
            kinds = [AcknowledgeType(t) for t in types]
        except ValueError:
            return E.INVALID_REQUEST
        self.expire_locks(now)

        def kind_at(off: int) -> AcknowledgeType:
            return kinds[0] if len(kinds) == 1 else kinds[off - first_offset]

        if first_offset < self.start_offset or last_offset >= self.end_offset:
            return E.INVALID_RECORD_STATE
        for off in range(first_offset, last_offset + 1):
            r = self.records.get(off)
            if r is None:
                if kind_at(off) is AcknowledgeType.GAP:
                    continue
                return E.INVALID_RECORD_STATE
            if r.state is not RecordState.ACQUIRED or r.member_id != member_id:
                return E.INVALID_RECORD_STATE
        for off in range(first_offset, last_offset + 1):
            r = self.records.get(off)
            if r is None:
                continue
            k = kind_at(off)
            if k is AcknowledgeType.ACCEPT:
                self._finish(r, RecordState.ACKNOWLEDGED)
            elif k in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                self._finish(r, RecordState.ARCHIVED)
            elif k is AcknowledgeType.RELEASE:
                self._release(r)
            else:   # RENEW
                r.lock_deadline = now + self.record_lock_duration_ms
        self.version += 1
        self.durable_version += 1
        self._advance_start()
        return E.NONE

    def release_member(self, member_id: str, now: int) -> int:
        """Release every record ``member_id`` holds (its share session closed). Returns how many."""
        self.expire_locks(now)
        n = 0
        for r in self.records.values():
            if r.state is RecordState.ACQUIRED and r.member_id == member_id:
                self._release(r)
                n += 1
        if n:
            self.version += 1
            self.durable_version += 1
            self._advance_start()
        return n

    def expire_locks(self, now: int) -> int:
        """Acquisition locks past their deadline: the records go back (or are archived at the
        delivery count limit). Returns how many."""
        n = 0
        for r in self.records.values():
            if r.state is RecordState.ACQUIRED and r.lock_deadline <= now:
                self._release(r)
                n += 1
        if n:
            self.version += 1
            self.durable_version += 1
            self._advance_start()
        return n

    def _release(self, r: InFlightRecord) -> None:
        if r.delivery_count >= self.delivery_count_limit:
            self._finish(r, RecordState.ARCHIVED)
        else:
            r.state = RecordState.AVAILABLE
            r.member_id = None

    @staticmethod
    def _finish(r: InFlightRecord, state: RecordState) -> None:
        r.state = state
        r.member_id = None

    def _advance_start(self) -> None:
        while self.start_offset < self.end_offset:
            r = self.records.get(self.start_offset)
            if r is not None and r.state not in DONE:
                break
            self.records.pop(self.start_offset, None)
            self.start_offset += 1

    # ------------------------------------------------------------------ admin
    def reset(self, start_offset: int) -> None:
        """Start afresh at ``start_offset`` (AlterShareGroupOffsets, a log start offset past ours)."""
        self.records.clear()
        self.start_offset = self.end_offset = start_offset
        self.version += 1
        self.durable_version += 1

    # ------------------------------------------------------------------ durable form
    def state_batches(self) -> list[StateBatch]:
        """The in-flight offsets as runs (acquired ones are written as available: a lock does
        not survive a restart), as Kafka's ShareSnapshot holds them."""
        out: list[StateBatch] = []
        for off in sorted(self.records):
            r = self.records[off]
            st = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
            last = out[-1] if out else None
            if last is not None and last.last_offset == off - 1 and last.delivery_state == st \
                    and last.delivery_count == r.delivery_count:
                out[-1] = StateBatch(last.first_offset, off, st, r.delivery_count)
            else:
                out.append(StateBatch(off, off, int(st), r.delivery_count))
        return out

    def restore(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """Back to a state written by ``state_batches`` (acquired records become available)."""
        self.records.clear()
        self.start_offset = self.end_offset = start_offset
        for b in batches:
            st = RecordState(b.delivery_state)
            if st is RecordState.ACQUIRED:
                st = RecordState.AVAILABLE
            for off in range(max(b.first_offset, start_offset), b.last_offset + 1):
                self.records[off] = InFlightRecord(st, b.delivery_count)
                self.end_offset = max(self.end_offset, off + 1)
        self._advance_start()


def _runs(taken: list[tuple[int, int]], batch_starts: set[int] | None = None,
          batch_size: int = 0) -> list[AcquiredRecords]:
    out: list[AcquiredRecords] = []
    for off, count in taken:
        last = out[-1] if out else None
        cut = (batch_starts is not None and batch_size > 0 and off in batch_starts and last is not None
               and off - last.first_offset >= batch_size)
        if last is not None and not cut and last.last_offset == off - 1 and last.delivery_count == count:
            out[-1] = AcquiredRecords(last.first_offset, off, count)
        else:
            out.append(AcquiredRecords(off, off, count))
    return out
