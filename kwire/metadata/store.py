"""The durable metadata log of a single node: batches of metadata records appended to one
file and fsynced before they are applied (metadata changes are rare and must survive).

Replaced by the Raft quorum's log for clusters; the record format is the same.
"""
from __future__ import annotations

import logging
import os

from kwire.clock import Clock
from kwire.codec import records as RB
from kwire.errors import CorruptRecordBatch

log = logging.getLogger("kwire.metadata")

FILE = "00000000000000000000.log"


class MetadataStore:
    def __init__(self, directory: str, clock: Clock):
        self.dir = directory
        self.clock = clock
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, FILE)
        self.next_offset = 0
        self._f = None

    def replay(self):
        """Yield every committed record's value in order; cut a torn or corrupt tail."""
        data = b""
        if os.path.exists(self.path):
            with open(self.path, "rb") as f:
                data = f.read()
        good = 0
        try:
            for batch in RB.iter_batches(data, allow_partial_tail=True):
                batch.validate()
                batch.validate_crc()
                for rec in batch.records():
                    yield rec.value
                good = batch.end
                self.next_offset = batch.next_offset
        except CorruptRecordBatch as exc:
            log.warning("metadata log %s: corrupt batch at byte %d (%s); truncating", self.path, good, exc)
        if good != len(data):
            log.warning("metadata log %s: truncating %d trailing bytes", self.path, len(data) - good)
            with open(self.path, "r+b") as f:
                f.truncate(good)
        self._f = open(self.path, "ab")

    def append(self, values: list[bytes]) -> int:
        if self._f is None:
            for _ in self.replay():
                pass
        now = self.clock.now_ms()
        batch = RB.build_batch([(None, v, [], now) for v in values], base_offset=self.next_offset)
        self._f.write(batch)
        self._f.flush()
        os.fsync(self._f.fileno())
        base = self.next_offset
        self.next_offset += len(values)
        return base

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
