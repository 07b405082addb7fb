"""RaftStorage: what a replica persisted comes back after a restart; torn tails are cut;
the single-node metadata log of earlier kwire versions is imported."""
from __future__ import annotations

import os

from kwire.clock import REAL_CLOCK
from kwire.codec import records as RB
from kwire.raft.log import Entry, OffsetAndEpoch
from kwire.raft.quorum_state import QuorumState
from kwire.raft.snapshot import Snapshot
from kwire.raft.storage import LOG_FILE, RaftStorage


def _entries(start, epochs):
    out = []
    for i, ep in enumerate(epochs):
        off = start + i
        if i == 0:
            out.append(Entry(off, ep, {"type": "LeaderChange", "leader_id": 1, "voters": [1, 2, 3]}, True))
        else:
            out.append(Entry(off, ep, (f"rec-{off}-a".encode(), f"rec-{off}-b".encode()), False))
    return out


def test_entries_and_quorum_state_survive_restart(tmp_path):
    st = RaftStorage(str(tmp_path))
    log, qs, snap = st.load()
    assert log.end_offset == 0 and qs is None and snap is None
    es = _entries(0, [1, 1, 1, 2, 2])
    st.append(es)
    st.flush()
    st.save_quorum_state(QuorumState(leader_epoch=2, leader_id=3, voted_id=3, voters=(1, 2, 3)))
    st.close()
    log, qs, snap = RaftStorage(str(tmp_path)).load()
    assert log.entries(0) == es
    assert log.last_epoch == 2 and log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 1)
    assert qs == QuorumState(leader_epoch=2, leader_id=3, voted_id=3, voters=(1, 2, 3))


def test_truncate_then_append(tmp_path):
    st = RaftStorage(str(tmp_path))
    st.load()
    st.append(_entries(0, [1, 1, 1, 1]))
    st.truncate_to(2)
    replacement = [Entry(2, 3, (b"x",), False), Entry(3, 3, (b"y",), False), Entry(4, 3, (b"z",), False)]
    st.append(replacement)
    st.flush()
    st.close()
    log, _, _ = RaftStorage(str(tmp_path)).load()
    assert log.end_offset == 5
    assert log.entries(2) == replacement
    assert [e.epoch for e in log.entries(0)] == [1, 1, 3, 3, 3]


def test_torn_tail_is_cut(tmp_path):
    st = RaftStorage(str(tmp_path))
    st.load()
    es = _entries(0, [1, 1, 1])
    st.append(es)
    st.flush()
    st.close()
    path = os.path.join(str(tmp_path), LOG_FILE)
    good = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x01\x00garbage")
    st = RaftStorage(str(tmp_path))
    log, _, _ = st.load()
    assert log.entries(0) == es
    assert os.path.getsize(path) == good
    st.append([Entry(3, 1, (b"after",), False)])   # and the log goes on from there
    st.flush()
    st.close()
    log, _, _ = RaftStorage(str(tmp_path)).load()
    assert log.end_offset == 4 and log.entry(3).records == (b"after",)


def test_flipped_byte_in_the_middle_keeps_the_prefix(tmp_path):
    st = RaftStorage(str(tmp_path))
    st.load()
    es = _entries(0, [1, 1, 1, 1])
    st.append(es[:2])
    st.flush()
    mid = os.path.getsize(os.path.join(str(tmp_path), LOG_FILE))
    st.append(es[2:])
    st.flush()
    st.close()
    path = os.path.join(str(tmp_path), LOG_FILE)
    with open(path, "r+b") as f:
        f.seek(mid + 70)
        b = f.read(1)
        f.seek(mid + 70)
        f.write(bytes([b[0] ^ 0xFF]))
    log, _, _ = RaftStorage(str(tmp_path)).load()
    assert log.entries(0) == es[:2]


def test_snapshot_trims_the_log(tmp_path):
    st = RaftStorage(str(tmp_path))
    log, _, _ = st.load()
    es = _entries(0, [1, 1, 1, 2, 2, 2])
    st.append(es)
    log.append(es)
    sid = OffsetAndEpoch(4, 2)
    log.trim_prefix(sid)
    st.save_snapshot(Snapshot(sid, b"image-bytes"))
    st.rewrite(log.entries(log.start_offset))   # as RaftDriver persists a new log start
    st.flush()
    st.close()
    log2, _, snap = RaftStorage(str(tmp_path)).load()
    assert snap == Snapshot(sid, b"image-bytes")
    assert log2.start_offset == 4 and log2.entries(4) == es[4:]
    assert log2.end_offset_for_epoch(2) == OffsetAndEpoch(6, 2)


def test_single_node_metadata_log_is_imported(tmp_path):
    # the first single-node format: one batch per commit, no leader epoch, record offsets
    now = REAL_CLOCK.now_ms()
    with open(tmp_path / "00000000000000000000.log", "wb") as f:
        f.write(RB.build_batch([(None, v, [], now) for v in (b"r1", b"r2", b"r3")], base_offset=0))
        f.write(RB.build_batch([(None, b"r4", [], now)], base_offset=3))
    log, qs, _ = RaftStorage(str(tmp_path)).load()
    assert qs is None
    assert [(e.offset, e.epoch, e.records) for e in log.entries(0)] == [(0, 0, (b"r1", b"r2", b"r3")),
                                                                         (1, 0, (b"r4",))]
    log2, _, _ = RaftStorage(str(tmp_path)).load()     # rewritten in the Raft format, once
    assert log2.entries(0) == log.entries(0)
