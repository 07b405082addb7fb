"""The aborted-transactions index of one segment: ``<20-digit base offset>.txnindex``
(Kafka's TransactionIndex).

One entry per transaction aborted by a marker in this segment, Kafka's 34-byte layout:

    version int16 (0) | producer_id int64 | first_offset int64 | last_offset int64 |
    last_stable_offset int64

``first_offset``: the transaction's first record; ``last_offset``: its abort marker;
``last_stable_offset``: the LSO once the marker was written (the first offset of any other
transaction still open then, else last_offset + 1). Entries are in marker order, so a
truncation cuts a tail. A read_committed Fetch asks ``collect`` for the transactions aborted
within what it returns (Kafka's collectAbortedTxns: last_offset >= fetch offset and
first_offset < upper bound), segment after segment until an entry's last_stable_offset
reaches the upper bound.

The file exists only once the segment has an aborted transaction (most segments never do);
entries are kept in memory, read on first use. An append writes its 34 bytes at once (a
killed process loses nothing) and marks the file for the segment's next fsync; the index
is rebuilt from the log, with the producer state, after an unclean shutdown
(kwire.log.producer_log). Small and synchronous: an abort marker is one write of 34 bytes.
"""
from __future__ import annotations

import bisect
import os
import struct
from typing import NamedTuple

from kwire.fds import open_fd, read_file

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0
SUFFIX = ".txnindex"


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    __slots__ = ("path", "base_offset", "_entries", "unsynced")

    def __init__(self, path: str, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None   # None: not read yet
        self.unsynced = False

    def reset(self) -> None:
        """A new segment's index: no entries, and no file left from an earlier segment at this
        base offset. Known now, so no read_committed fetch opens the file later, on the loop."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._entries = []

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> list[AbortedTxn]:
        """The entries in the file: whole entries of version 0 in increasing last offset; a
        torn or corrupt tail (a crash mid-write) is cut from the file."""
        try:
            data = read_file(self.path)
        except FileNotFoundError:
            return []
        out: list[AbortedTxn] = []
        last = -1
        good = 0
        for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
            version, pid, first, last_offset, lso = ENTRY.unpack_from(data, pos)
            if version != VERSION or last_offset <= last or first > last_offset:
                break
            out.append(AbortedTxn(pid, first, last_offset, lso))
            last = last_offset
            good = pos + ENTRY_SIZE
        if good != len(data):
            self._cut_file(good)
        return out

    def _cut_file(self, size: int) -> None:
        if size == 0:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            return
        os.truncate(self.path, size)
        self.unsynced = True

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(f"{self.path}: aborted transaction ending at {txn.last_offset} is not after "
                             f"the last one ({entries[-1].last_offset})")
        fd = open_fd(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, ENTRY.pack(VERSION, *txn))
        finally:
            os.close(fd)
        entries.append(txn)
        self.unsynced = True

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (the log lost it)."""
        entries = self.entries
        keep = len(entries)
        while keep and entries[keep - 1].last_offset >= offset:
            keep -= 1
        if keep == len(entries):
            return
        del entries[keep:]
        self._cut_file(keep * ENTRY_SIZE)

    def collect(self, fetch_offset: int, upper_bound: int, out: list) -> bool:
        """Add to ``out`` the entries overlapping [fetch_offset, upper_bound); True when the
        search is complete (an entry's last stable offset reached the upper bound)."""
        for t in self.entries:
            if t.last_offset >= fetch_offset and t.first_offset < upper_bound:
                out.append(t)
            if t.last_stable_offset >= upper_bound:
                return True
        return False

    def sync_plan(self):
        """The fsync due (a function for a worker thread), or None."""
        if not self.unsynced:
            return None
        self.unsynced = False
        path = self.path

        def run() -> None:
            try:
                fd = open_fd(path, os.O_RDONLY)
            except FileNotFoundError:
                return
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

        return run

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path!r}, {self._entries!r})"


def collect_aborted(segments, bases, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
    """The aborted transactions a read from ``fetch_offset`` up to ``upper_bound`` must tell
    (Kafka's UnifiedLog.collectAbortedTransactions): from the segment holding the fetch
    offset on, until one's search is complete."""
    out: list[AbortedTxn] = []
    i = max(0, bisect.bisect_right(bases, fetch_offset) - 1)
    for seg in segments[i:]:
        if seg.txn_index.collect(fetch_offset, upper_bound, out):
            break
    return out
