"""The producer-state snapshot file, declared with construct: round trips, the byte layout of
the format as it was written before construct described it (struct by hand), corrupt files,
and the fsync a roll leaves to the next flush."""
from __future__ import annotations

import os
import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.log import LogConfig, LogManager
from kwire.log import producer_log as PL
from kwire.log import producer_state as PS
from kwire.log.manager import DiskWork
from kwire.log.producer_state import ProducerStateManager

from .logutil import make_batch

NOW = 1_700_000_000_000

batch_st = st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1), st.integers(0, 2**62),
                     st.integers(0, 2**62), st.integers(-1, 2**62))
producer_st = st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(-1, 2**62),
                        st.lists(batch_st, min_size=1, max_size=5))


def _by_hand(producers, version=101) -> bytes:
    """The v101 layout (v100: without the transaction fields), packed field by field (the
    format's definition in the module doc). A producer of ours has no marker yet
    (coordinator epoch -1) and no transaction open (-1)."""
    body = struct.pack(">i", len(producers))
    for pid, epoch, last_ts, batches in producers:
        if version == 101:
            body += struct.pack(">qhqiqb", pid, epoch, last_ts, -1, -1, len(batches))
        else:
            body += struct.pack(">qhqb", pid, epoch, last_ts, len(batches))
        for b in batches:
            body += struct.pack(">iiqqq", *b)
    return struct.pack(">hI", version, crc32c(body)) + body


def _manager(producers) -> ProducerStateManager:
    m = ProducerStateManager(None)
    for pid, epoch, last_ts, batches in producers:
        m.producers[pid] = PS.ProducerStateEntry(pid, epoch, [PS.BatchMetadata(*b) for b in batches], last_ts)
    return m


@settings(max_examples=60, deadline=None)
@given(st.lists(producer_st, max_size=8, unique_by=lambda p: p[0]))
def test_snapshot_bytes_match_the_format_and_round_trip(producers):
    m = _manager(producers)
    data = m.encode_snapshot()
    assert data == _by_hand(producers)
    want = {pid: (epoch, last_ts, [tuple(b) for b in batches]) for pid, epoch, last_ts, batches in producers}
    for version in (101, 100):   # v100 files (before transactions) are still read
        back = ProducerStateManager.decode_snapshot(_by_hand(producers, version))
        assert {pid: (e.epoch, e.last_timestamp, [b._tuple() for b in e.batches]) for pid, e in back.items()} == want
        assert all(e.current_txn_first_offset == -1 and e.coordinator_epoch == -1 for e in back.values())


def test_snapshot_keeps_open_transactions():
    m = ProducerStateManager(None)
    m.update_batch(7, 2, 0, 10, 14, 99, True)       # a transaction opens at 10
    m.update_batch(8, 1, -1, 15, 15, 99, True)      # a coordinator's batch (no sequence) at 15
    m.update_marker(8, 1, 16, 100, True, 5)         # 8 commits
    body = m.encode_snapshot()
    back = ProducerStateManager(None)
    back.producers = ProducerStateManager.decode_snapshot(body)
    back._index_transactions()
    assert back.ongoing_txns == {10: 7}
    assert (back.producers[7].current_txn_first_offset, back.producers[8].coordinator_epoch) == (10, 5)
    assert back.last_stable_offset(50) == 10


@pytest.mark.parametrize("damage", ["short", "version", "crc", "trailing", "truncated"])
def test_corrupt_snapshots_are_refused(damage):
    good = _by_hand([(7, 1, 99, [(0, 4, 10, 14, 99)])])
    bad = {
        "short": good[:5],
        "version": struct.pack(">h", 2) + good[2:],
        "crc": good[:2] + b"\0\0\0\0" + good[6:],
        "trailing": good[:2] + struct.pack(">I", crc32c(good[6:] + b"x")) + good[6:] + b"x",
        "truncated": good[:2] + struct.pack(">I", crc32c(good[6:-3])) + good[6:-3],
    }[damage]
    with pytest.raises(ValueError):
        ProducerStateManager.decode_snapshot(bad)


def test_roll_snapshot_is_fsynced_by_the_next_flush(tmp_path, monkeypatch):
    m = LogManager(str(tmp_path), LogConfig(), now_ms=NOW)
    log = m.create("t", 0, now_ms=NOW)
    log.append(make_batch(1), now_ms=NOW)
    ps = PL.producer_state_of(log)
    path = ps.take_snapshot(1)           # as a roll does: renamed into place, not fsynced
    assert os.path.exists(path) and ps.unsynced == [path]
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    work = DiskWork()
    m._plan_log_flush(work, log, None, NOW)   # the log's next flush (LogManager.plan_flush)
    assert ps.unsynced == []
    work.run_here()
    assert path in synced and log.recovery_point == 1
    m.close()
