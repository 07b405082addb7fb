"""The Raft log in memory: entries (offset, epoch, records) above a snapshot, with an epoch
cache (Kafka's leader-epoch checkpoint) for diverging-epoch lookups.

One entry occupies one offset. ``records`` is opaque to Raft (the metadata layer decides what
it holds); ``control`` marks KRaft control entries such as LeaderChange, which state machines
skip. The log's durable copy is the driver's business: the core tells it, through
:class:`kwire.raft.core.Ready`, what to truncate, append and trim, and a restarted driver
rebuilds a :class:`RaftLog` from what it persisted.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Iterable

from kwire.value import Value


class OffsetAndEpoch(Value):   # frozen (kwire.value: no generated code at import)
    """An end offset and the epoch of the entry just below it (a snapshot id, a diverging epoch)."""
    offset: int
    epoch: int


NO_EPOCH = OffsetAndEpoch(-1, -1)


@dataclass(frozen=True, slots=True)
class Entry:
    offset: int
    epoch: int
    records: Any = None
    control: bool = False


class LogError(Exception):
    """An append or truncation that would break the log's shape (a bug in the caller)."""


class RaftLog:
    """Entries at offsets ``[start_offset, end_offset)`` above a snapshot ending at ``start_offset``."""

    def __init__(self, entries: Iterable[Entry] = (), snapshot_id: OffsetAndEpoch | None = None):
        self.snapshot_id = snapshot_id or OffsetAndEpoch(0, 0)
        self.start_offset = self.snapshot_id.offset
        self._entries: list[Entry] = []
        self._epoch_epochs: list[int] = []   # epochs in ascending order ...
        self._epoch_starts: list[int] = []   # ... and the offset each begins at
        self.append(list(entries))

    # -- reading ---------------------------------------------------------------------------
    @property
    def end_offset(self) -> int:
        return self.start_offset + len(self._entries)

    @property
    def last_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else self.snapshot_id.epoch

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, offset: int) -> Entry:
        if not self.start_offset <= offset < self.end_offset:
            raise IndexError(f"offset {offset} outside [{self.start_offset}, {self.end_offset})")
        return self._entries[offset - self.start_offset]

    def epoch_at(self, offset: int) -> int:
        """Epoch of the entry at ``offset``; the snapshot's epoch for ``start_offset - 1``."""
        if offset == self.start_offset - 1:
            return self.snapshot_id.epoch
        return self.entry(offset).epoch

    def entries(self, start: int, end: int | None = None) -> list[Entry]:
        end = self.end_offset if end is None else min(end, self.end_offset)
        if start < self.start_offset:
            raise IndexError(f"offset {start} below log start {self.start_offset}")
        return self._entries[start - self.start_offset:max(start, end) - self.start_offset]

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= ``epoch`` this log knows and the offset where it ends.

        ``NO_EPOCH`` if every epoch known is greater (the answer lies below the snapshot).
        """
        i = bisect.bisect_right(self._epoch_epochs, epoch) - 1
        if i < 0:
            if self.snapshot_id.epoch <= epoch:
                return OffsetAndEpoch(self.start_offset, self.snapshot_id.epoch)
            return NO_EPOCH
        end = self._epoch_starts[i + 1] if i + 1 < len(self._epoch_starts) else self.end_offset
        return OffsetAndEpoch(end, self._epoch_epochs[i])

    # -- writing ---------------------------------------------------------------------------
    def append(self, entries: list[Entry]) -> None:
        for e in entries:
            if e.offset != self.end_offset:
                raise LogError(f"append at {e.offset}, log ends at {self.end_offset}")
            if e.epoch < self.last_epoch:
                raise LogError(f"epoch {e.epoch} after epoch {self.last_epoch}")
            if not self._epoch_epochs or self._epoch_epochs[-1] != e.epoch:
                self._epoch_epochs.append(e.epoch)
                self._epoch_starts.append(e.offset)
            self._entries.append(e)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry at ``offset`` and above."""
        if offset < self.start_offset:
            raise LogError(f"truncate to {offset} below log start {self.start_offset}")
        if offset >= self.end_offset:
            return
        del self._entries[offset - self.start_offset:]
        i = bisect.bisect_left(self._epoch_starts, offset)
        del self._epoch_epochs[i:]
        del self._epoch_starts[i:]

    def trim_prefix(self, snapshot_id: OffsetAndEpoch) -> None:
        """Forget entries below ``snapshot_id.offset``, now covered by that snapshot."""
        if snapshot_id.offset <= self.start_offset:
            return
        if snapshot_id.offset > self.end_offset:
            raise LogError(f"snapshot at {snapshot_id.offset} beyond log end {self.end_offset}")
        del self._entries[:snapshot_id.offset - self.start_offset]
        self.snapshot_id = snapshot_id
        self.start_offset = snapshot_id.offset
        # keep the epoch that covers the new start, clipped to it
        i = bisect.bisect_right(self._epoch_starts, self.start_offset) - 1
        if i > 0:
            del self._epoch_epochs[:i]
            del self._epoch_starts[:i]
        if self._entries:
            self._epoch_starts[0] = self.start_offset
        else:
            self._epoch_epochs.clear()
            self._epoch_starts.clear()

    def reset_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Replace the whole log by a snapshot (a follower installing the leader's)."""
        self._entries.clear()
        self._epoch_epochs.clear()
        self._epoch_starts.clear()
        self.snapshot_id = snapshot_id
        self.start_offset = snapshot_id.offset
