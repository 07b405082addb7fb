"""Snapshots: an opaque image of the state machine at an end offset, served in chunks.

Raft does not look inside ``data``; the state machine produced it and can load it. A
snapshot's id is (end offset, epoch of the entry just below it), as in Kafka's
``<endOffset>-<epoch>.checkpoint`` files.
"""
from __future__ import annotations


from kwire.raft.log import OffsetAndEpoch
from kwire.value import Value


class Snapshot(Value):   # frozen (kwire.value: no generated code at import)
    snapshot_id: OffsetAndEpoch
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    def chunk(self, position: int, max_bytes: int) -> bytes:
        if not 0 <= position <= len(self.data):
            raise ValueError(f"position {position} outside snapshot of {len(self.data)} bytes")
        return self.data[position:position + max(1, max_bytes)]


class SnapshotAssembler:
    """A follower's partial download of the leader's snapshot."""

    def __init__(self, snapshot_id: OffsetAndEpoch):
        self.snapshot_id = snapshot_id
        self.buf = bytearray()
        self.size: int | None = None

    @property
    def position(self) -> int:
        return len(self.buf)

    def add(self, position: int, data: bytes, size: int) -> bool:
        """Add a chunk; False if it does not start where the download stands (stale)."""
        if position != len(self.buf) or (self.size is not None and size != self.size):
            return False
        self.size = size
        self.buf += data
        if len(self.buf) > size:
            raise ValueError("snapshot chunk runs past the announced size")
        return True

    @property
    def complete(self) -> bool:
        return self.size is not None and len(self.buf) == self.size

    def snapshot(self) -> Snapshot:
        return Snapshot(self.snapshot_id, bytes(self.buf))
