"""Durable storage of one Raft replica: the log, the quorum-state file and snapshots.

Blocking file I/O, driven by one task at a time (kwire/raft/driver.py runs each Ready's
writes in a worker thread while the core waits); nothing here reads the core's state.

Layout, in the ``__cluster_metadata-0`` directory (as Kafka's KRaft metadata log):

- ``00000000000000000000.log``: one record batch v2 per Raft entry; ``baseOffset`` is the
  entry's offset, ``partitionLeaderEpoch`` its epoch, the control bit marks control entries.
  A data entry's records are the batch's record values (opaque bytes: encoded metadata
  records); a control entry holds one record, key = (version 0, type 2 LEADER_CHANGE), value
  = the control data as JSON. Note: one entry occupies one offset, whatever its record count
  (Kafka counts records; kwire's Raft counts entries).
- ``quorum-state``: :class:`QuorumState` JSON, written to a temp file, fsynced, renamed.
- ``<20-digit end offset>-<10-digit epoch>.checkpoint``: the latest snapshot (temp+fsync+rename).

Recovery validates every batch (CRC), truncates a torn or corrupt tail and drops entries
covered by the snapshot. A log in kwire's first single-node format (batches with no
leader epoch, several records per batch, record offsets) is imported once: each batch
becomes one entry of epoch 0.
"""
from __future__ import annotations

import bisect
import json
import logging
import os

from kwire.atomic import write_atomic
from kwire.codec import records as RB
from kwire.errors import CorruptRecordBatch
from kwire.raft.log import Entry, OffsetAndEpoch, RaftLog
from kwire.raft.quorum_state import QuorumState
from kwire.raft.snapshot import Snapshot

log = logging.getLogger("kwire.raft.storage")

LOG_FILE = "00000000000000000000.log"
QUORUM_STATE_FILE = "quorum-state"
CONTROL_KEY_LEADER_CHANGE = b"\x00\x00\x00\x02"


def encode_entry(e: Entry, timestamp_ms: int = -1) -> bytes:
    if e.control:
        recs = [(CONTROL_KEY_LEADER_CHANGE, json.dumps(e.records, separators=(",", ":")).encode(), [], timestamp_ms)]
    else:
        recs = [(None, bytes(v), [], timestamp_ms) for v in (e.records or ())]
        if not recs:
            raise ValueError("a data entry needs at least one record")
    return RB.build_batch(recs, base_offset=e.offset, partition_leader_epoch=e.epoch, is_control=e.control)


def decode_entry(batch: RB.RecordBatch) -> Entry:
    if batch.is_control:
        recs = list(batch.records())
        data = json.loads(bytes(recs[0].value)) if recs and recs[0].value is not None else {}
        return Entry(batch.base_offset, batch.partition_leader_epoch, data, True)
    values = tuple(bytes(r.value) for r in batch.records())
    return Entry(batch.base_offset, batch.partition_leader_epoch, values, False)


def encode_entries(entries) -> bytes:
    return b"".join(encode_entry(e) for e in entries)


def decode_entries(data) -> list[Entry]:
    out = []
    for batch in RB.iter_batches(data):
        batch.validate_crc()
        out.append(decode_entry(batch))
    return out


class RaftStorage:
    """The files of one replica; :meth:`load` rebuilds what the core needs after a restart."""

    def __init__(self, directory: str):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.log_path = os.path.join(directory, LOG_FILE)
        self.qs_path = os.path.join(directory, QUORUM_STATE_FILE)
        self._f = None
        self._positions: list[tuple[int, int]] = []   # (entry offset, byte position), ascending
        self._size = 0

    # ------------------------------------------------------------------ restart
    def load(self) -> tuple[RaftLog, QuorumState | None, Snapshot | None]:
        snap = self._load_snapshot()
        qs = None
        if os.path.exists(self.qs_path):
            try:
                with open(self.qs_path, "rb") as f:
                    qs = QuorumState.decode(f.read())
            except (ValueError, KeyError) as exc:
                log.warning("%s unreadable (%s); starting unattached", self.qs_path, exc)
        entries, legacy = self._read_log()
        start = snap.snapshot_id.offset if snap else 0
        entries = [e for e in entries if e.offset >= start]
        if entries and entries[0].offset != start:
            log.warning("raft log %s does not continue its snapshot at %d; dropping it", self.log_path, start)
            entries = []
        good: list[Entry] = []
        for e in entries:      # keep the contiguous, epoch-monotonic prefix
            if e.offset != start + len(good) or (good and e.epoch < good[-1].epoch):
                log.warning("raft log %s: entry at %d out of order; truncating", self.log_path, e.offset)
                break
            good.append(e)
        self._rewrite(good)
        if legacy:
            log.info("imported %d entries from a single-node metadata log", len(good))
        return RaftLog(good, snap.snapshot_id if snap else None), qs, snap

    def _read_log(self) -> tuple[list[Entry], bool]:
        if not os.path.exists(self.log_path):
            return [], False
        with open(self.log_path, "rb") as f:
            data = f.read()
        entries: list[Entry] = []
        legacy = False
        try:
            for batch in RB.iter_batches(data, allow_partial_tail=True):
                batch.validate()
                batch.validate_crc()
                if batch.partition_leader_epoch < 0 and not batch.is_control:
                    legacy = True     # first single-node format: one entry per batch, epoch 0
                    values = tuple(bytes(r.value) for r in batch.records())
                    entries.append(Entry(len(entries), 0, values, False))
                else:
                    entries.append(decode_entry(batch))
        except CorruptRecordBatch as exc:
            log.warning("raft log %s: corrupt batch after %d entries (%s); truncating", self.log_path,
                        len(entries), exc)
        return entries, legacy

    def _load_snapshot(self) -> Snapshot | None:
        best = None
        for name in os.listdir(self.dir):
            if name.endswith(".checkpoint"):
                try:
                    off, ep = name[:-len(".checkpoint")].split("-")
                    sid = OffsetAndEpoch(int(off), int(ep))
                except ValueError:
                    continue
                if best is None or sid.offset > best.offset:
                    best = sid
        if best is None:
            return None
        with open(os.path.join(self.dir, self._snap_name(best)), "rb") as f:
            return Snapshot(best, f.read())

    @staticmethod
    def _snap_name(sid: OffsetAndEpoch) -> str:
        return f"{sid.offset:020d}-{sid.epoch:010d}.checkpoint"

    # ------------------------------------------------------------------ writing
    def _rewrite(self, entries: list[Entry]) -> None:
        """Replace the log file by ``entries`` (recovery, trimming, snapshot install)."""
        if self._f is not None:
            self._f.close()
        self._positions = []
        out = bytearray()
        for e in entries:
            self._positions.append((e.offset, len(out)))
            out += encode_entry(e)
        write_atomic(self.log_path, bytes(out))
        self._size = len(out)
        self._f = open(self.log_path, "r+b")
        self._f.seek(self._size)

    def save_quorum_state(self, qs: QuorumState) -> None:
        write_atomic(self.qs_path, qs.encode())

    def save_snapshot(self, snap: Snapshot) -> None:
        write_atomic(os.path.join(self.dir, self._snap_name(snap.snapshot_id)), snap.data)
        for name in os.listdir(self.dir):   # keep only the newest
            if name.endswith(".checkpoint") and name != self._snap_name(snap.snapshot_id):
                try:
                    os.unlink(os.path.join(self.dir, name))
                except OSError:
                    pass

    def truncate_to(self, offset: int) -> None:
        i = bisect.bisect_left(self._positions, (offset, -1))
        if i >= len(self._positions):
            return
        pos = self._positions[i][1]
        del self._positions[i:]
        self._f.truncate(pos)
        self._f.seek(pos)
        self._size = pos

    def append(self, entries: list[Entry], timestamp_ms: int = -1) -> None:
        out = bytearray()
        for e in entries:
            self._positions.append((e.offset, self._size + len(out)))
            out += encode_entry(e, timestamp_ms)
        self._f.write(out)
        self._size += len(out)

    def rewrite(self, entries: list[Entry]) -> None:
        """Replace the log file by ``entries`` (e.g. the log's entries after a trim)."""
        self._rewrite(entries)

    def reset(self) -> None:
        self._rewrite([])

    def flush(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
