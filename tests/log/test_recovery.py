"""Corrupt, then recover: every acknowledged batch must read back unchanged."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from kwire.codec.records import RecordBatch
from kwire.log import LogConfig, LogManager, PartitionLog

from .logutil import batch_map, make_batch, seg_files, stored

NOW = 1_700_000_000_000
CFG = LogConfig(segment_bytes=3000, index_interval_bytes=300, retention_ms=-1)


def filled(tmp_path, n=40):
    log = PartitionLog.open(str(tmp_path / "t-0"), CFG, now_ms=NOW)
    acked = {}
    for i in range(n):
        b = make_batch(1 + i % 3, 50 + 7 * i, ts=NOW + i, seed=i)
        r = log.append(b, now_ms=NOW)
        acked[r.base_offset] = stored(b, r.base_offset)
    assert len(log.segments) > 3
    return log, acked


def reopen(log, **kw):
    return PartitionLog.open(log.dir, CFG, now_ms=NOW, **kw)


def check(log, acked, leo):
    assert log.log_end_offset == leo
    assert batch_map(log) == acked
    for off, data in acked.items():  # random access through the (rebuilt) indexes
        assert bytes(log.read(off, 1)) == data
    # appends continue at the log end offset
    assert log.append(make_batch(1, seed=999), now_ms=NOW).base_offset == leo


@pytest.mark.parametrize("clean_close", [True, False])
def test_garbage_tail(tmp_path, clean_close):
    log, acked = filled(tmp_path)
    leo, rp = log.log_end_offset, log.recovery_point
    if clean_close:
        log.close()
        rp = log.recovery_point
    last = seg_files(log.dir, "log")[-1]
    with open(last, "ab") as f:
        f.write(os.urandom(1000))
    check(reopen(log, recovery_point=rp), acked, leo)


def test_half_written_batch(tmp_path):
    log, acked = filled(tmp_path)
    leo = log.log_end_offset
    torn = stored(make_batch(3, 400, seed=77), leo)
    with open(seg_files(log.dir, "log")[-1], "ab") as f:
        f.write(torn[: len(torn) // 2])
    size_before = os.path.getsize(seg_files(log.dir, "log")[-1])
    again = reopen(log, recovery_point=0)
    assert os.path.getsize(seg_files(log.dir, "log")[-1]) == size_before - len(torn) // 2
    check(again, acked, leo)


def test_torn_header_only(tmp_path):
    log, acked = filled(tmp_path)
    leo = log.log_end_offset
    with open(seg_files(log.dir, "log")[-1], "ab") as f:
        f.write(stored(make_batch(1), leo)[:30])
    check(reopen(log, recovery_point=log.recovery_point), acked, leo)


def test_truncated_index(tmp_path):
    log, acked = filled(tmp_path)
    leo = log.log_end_offset
    log.close()
    for path in seg_files(log.dir, "index"):
        with open(path, "r+b") as f:
            f.truncate(max(0, os.path.getsize(path) - 3))
    check(reopen(log, recovery_point=leo, clean=True), acked, leo)


def test_zeroed_time_index(tmp_path):
    log, acked = filled(tmp_path)
    leo = log.log_end_offset
    log.close()
    for path in seg_files(log.dir, "timeindex"):
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.write(bytes(size))
    again = reopen(log, recovery_point=leo, clean=True)
    recs = [(r.offset, r.timestamp) for o in sorted(acked) for r in RecordBatch(acked[o]).records()]
    for target in (NOW - 5, NOW + 20, NOW + 33, NOW + 41):
        assert again.offset_for_timestamp(target) == next(((o, t) for o, t in recs if t >= target), None)
    check(again, acked, leo)


def test_garbage_index_entries(tmp_path):
    log, acked = filled(tmp_path)
    leo = log.log_end_offset
    log.close()
    for path in seg_files(log.dir, "index"):
        with open(path, "wb") as f:
            f.write(bytes.fromhex("00000003 7fffff00 00000001 00000010"))  # beyond / decreasing
    check(reopen(log, recovery_point=leo, clean=True), acked, leo)


def test_missing_indexes_and_checkpoint(tmp_path):
    log, acked = filled(tmp_path)
    leo = log.log_end_offset
    log.close()
    for path in seg_files(log.dir, "index") + seg_files(log.dir, "timeindex"):
        os.unlink(path)
    check(reopen(log), acked, leo)  # no recovery point: full recovery


def test_corrupt_batch_after_recovery_point_truncates(tmp_path):
    log, acked = filled(tmp_path)
    log.flush()
    rp = log.recovery_point
    extra = {}
    for i in range(10):
        b = make_batch(2, 100, seed=100 + i)
        r = log.append(b, now_ms=NOW)
        extra[r.base_offset] = stored(b, r.base_offset)
    bad = sorted(extra)[6]
    seg = log.segments[[s.base_offset <= bad for s in log.segments].count(True) - 1]
    pos = seg.translate(bad).position
    with open(seg.log_path, "r+b") as f:
        f.seek(pos + 70)
        f.write(b"\xff\xff")
    again = reopen(log, recovery_point=rp)
    acked.update({o: d for o, d in extra.items() if o < bad})
    check(again, acked, bad)


def test_crash_recovery_only_scans_tail(tmp_path, monkeypatch):
    log, acked = filled(tmp_path, 60)
    log.flush()
    rp = log.recovery_point
    b = make_batch(1, seed=5)
    r = log.append(b, now_ms=NOW)
    acked[r.base_offset] = stored(b, r.base_offset)
    from kwire.log import segment as segmod

    checked = []
    real = segmod.RecordBatch.validate_crc
    monkeypatch.setattr(segmod.RecordBatch, "validate_crc", lambda self: (checked.append(1), real(self))[1])
    again = reopen(log, recovery_point=rp)
    assert 1 <= len(checked) <= 10  # the unflushed tail plus at most one index interval
    monkeypatch.undo()
    check(again, acked, r.base_offset + 1)


def test_manager_clean_shutdown_and_crash(tmp_path):
    d = str(tmp_path / "data")
    m = LogManager(d, CFG, now_ms=NOW)
    os.makedirs(os.path.join(d, "__cluster_metadata-0"))  # not ours: must be left alone
    acked = {}
    for p in range(3):
        log = m.create("my-topic", p)
        for i in range(20):
            b = make_batch(1, 200, seed=p * 100 + i)
            r = log.append(b, now_ms=NOW)
            acked[(p, r.base_offset)] = stored(b, r.base_offset)
        log.update_high_watermark(log.log_end_offset)
    m.get("my-topic", 1).delete_records(5)
    m.close()
    assert os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
    m = LogManager(d, CFG, now_ms=NOW)
    assert m.was_clean_shutdown and not os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
    assert sorted(m.logs) == [("my-topic", 0), ("my-topic", 1), ("my-topic", 2)]
    assert m.get("my-topic", 1).log_start_offset == 5
    for (p, off), data in acked.items():
        if p != 1 or off >= 5:
            assert bytes(m.get("my-topic", p).read(off, 1)) == data
    # crash: no close; the next open recovers and still has every batch
    log = m.get("my-topic", 2)
    b = make_batch(1, seed=1234)
    r = log.append(b, now_ms=NOW)
    acked[(2, r.base_offset)] = stored(b, r.base_offset)
    del m
    m = LogManager(d, CFG, now_ms=NOW)
    assert not m.was_clean_shutdown
    for (p, off), data in acked.items():
        if p != 1 or off >= 5:
            assert bytes(m.get("my-topic", p).read(off, 1)) == data
    assert m.delete_partition("my-topic", 0)
    assert not os.path.exists(os.path.join(d, "my-topic-0"))
    assert m.run_retention(NOW) == 0
    m.close()
    assert os.path.isdir(os.path.join(d, "__cluster_metadata-0"))


def _fill_many(d: str, n: int):
    from kwire.log.producer_log import producer_state_of

    m = LogManager(d, CFG, now_ms=NOW)
    acked = {}
    for p in range(n):
        log = m.create("many", p)
        for i in range(1 + p % 3):
            b = make_batch(1, 100, seed=p * 10 + i)
            r = log.append(b, now_ms=NOW)
            acked[(p, r.base_offset)] = stored(b, r.base_offset)
        log.leader_epoch_cache.assign(0, 0, write=False)
        log.update_high_watermark(log.log_end_offset)
        producer_state_of(log)    # as the broker's Produce path builds it: a snapshot at close
    return m, acked


def test_parallel_clean_shutdown_of_many_partitions_needs_no_recovery(tmp_path, monkeypatch):
    # LogManager.close closes the logs in a thread pool (issue 32: 5,000 partitions took up to
    # 37 s one after another): every log is flushed, snapshotted and checkpointed before the
    # marker, so the next open trusts every log and checks no batch
    from kwire.log.checkpoint import read_checkpoint
    from kwire.log.producer_state import snapshot_name

    d = str(tmp_path / "data")
    m, acked = _fill_many(d, 300)
    assert m.close_threads > 1
    leos = {tp: log.log_end_offset for tp, log in m.logs.items()}
    m.close()
    assert os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
    assert read_checkpoint(os.path.join(d, "recovery-point-offset-checkpoint")) == leos
    for (t, p), leo in leos.items():
        part = os.path.join(d, f"{t}-{p}")
        assert os.path.exists(os.path.join(part, snapshot_name(leo)))
        assert os.path.exists(os.path.join(part, "leader-epoch-checkpoint"))
    checked = []
    real = RecordBatch.validate_crc
    monkeypatch.setattr(RecordBatch, "validate_crc", lambda self: (checked.append(1), real(self))[1])
    m = LogManager(d, CFG, now_ms=NOW)
    assert m.was_clean_shutdown
    assert {tp: log.recovery_point for tp, log in m.logs.items()} == leos
    for (p, off), data in acked.items():
        assert bytes(m.get("many", p).read(off, 1)) == data
    assert checked == []     # no recovery: not one batch validated
    monkeypatch.undo()
    m.close()


def _record_syncs(monkeypatch) -> list[str]:
    """The paths of every descriptor fsynced or fdatasynced from now on (any thread)."""
    synced: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def rec(fd, real=real):
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
            return real(fd)
        monkeypatch.setattr(os, name, rec)
    return synced


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names descriptors through /proc")
def test_close_syncs_what_changed_and_nothing_else(tmp_path, monkeypatch):
    # issue 32: leader-epoch checkpoints written without fsync after a leader change (the
    # broker's worker thread) are fsynced by the close with the log and its directory, once;
    # a close with nothing changed since the last one fsyncs no partition file at all
    from kwire.log.leader_epoch import read_checkpoint

    d = str(tmp_path / "data")
    m, acked = _fill_many(d, 12)
    assert LogManager.write_epoch_checkpoints(list(m.logs.values())) == 12
    for log in m.logs.values():
        assert log.leader_epoch_cache.unsynced and not log.leader_epoch_cache.dirty
        assert read_checkpoint(os.path.join(log.dir, "leader-epoch-checkpoint")) == [(0, 0)]
    assert LogManager.write_epoch_checkpoints(list(m.logs.values())) == 0   # nothing dirty now
    synced = _record_syncs(monkeypatch)
    m.close()
    for log in m.logs.values():
        assert not log.leader_epoch_cache.unsynced
        mine = [p for p in synced if p == log.dir or p.startswith(log.dir + os.sep)]
        assert os.path.join(log.dir, "leader-epoch-checkpoint") in mine
        assert os.path.join(log.dir, "00000000000000000000.log") in mine
        assert mine.count(log.dir) == 1, mine     # one directory fsync serves every file
    monkeypatch.undo()
    m = LogManager(d, CFG, now_ms=NOW)
    assert m.was_clean_shutdown
    for (p, off), data in acked.items():
        assert bytes(m.get("many", p).read(off, 1)) == data
    assert all(log.leader_epoch_cache.entries() == [(0, 0)] for log in m.logs.values())
    synced = _record_syncs(monkeypatch)
    m.close()
    assert not [p for p in synced if os.path.dirname(p) != d and p != d], synced   # checkpoints and marker only
    monkeypatch.undo()
    assert LogManager(d, CFG, now_ms=NOW).was_clean_shutdown


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names descriptors through /proc")
def test_flush_syncs_the_directory_of_a_new_segment_once(tmp_path, monkeypatch):
    # Kafka's LocalLog.flush: a segment flushed for the first time may be a new file, so its
    # directory entry is made durable too; later flushes of the same segment need no more
    log = PartitionLog.open(str(tmp_path / "t-0"), CFG, now_ms=NOW)
    log.append(make_batch(1, 100, seed=1), now_ms=NOW)
    synced = _record_syncs(monkeypatch)
    log.flush()
    assert synced.count(log.dir) == 1
    del synced[:]
    log.append(make_batch(1, 100, seed=2), now_ms=NOW)
    log.flush()
    assert log.dir not in synced and synced, synced
    del synced[:]
    while len(log.segments) == 1:   # a roll: the new segment's directory entry again
        log.append(make_batch(1, 200, seed=3), now_ms=NOW)
    log.flush()
    assert synced.count(log.dir) == 1
    monkeypatch.undo()
    log.close()


def test_a_failed_close_writes_no_marker(tmp_path):
    d = str(tmp_path / "data")
    m, acked = _fill_many(d, 40)
    bad = m.get("many", 17)

    def fail(*a, **kw):
        raise OSError(5, "Input/output error")

    bad.flush = fail
    with pytest.raises(OSError):
        m.close()
    assert not os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
    assert all(log.closed for tp, log in m.logs.items() if tp != ("many", 17))   # the others did close
    m = LogManager(d, CFG, now_ms=NOW)
    assert not m.was_clean_shutdown
    for (p, off), data in acked.items():
        assert bytes(m.get("many", p).read(off, 1)) == data
    m.close()


CHILD = textwrap.dedent(
    """
    import hashlib, sys
    from kwire.log import LogConfig, LogManager
    from kwire.codec.records import build_batch
    cfg = LogConfig(segment_bytes=20000, index_interval_bytes=512, retention_ms=-1)
    m = LogManager(sys.argv[1], cfg, now_ms=1)
    log = m.create("kill", 0)
    rnd = int(sys.argv[2])
    i = 0
    while True:
        recs = [(b"k", (b"%d-%d-%d" % (rnd, i, j)) * (1 + (i * 7 + j) % 40), [], 1000 + i) for j in range(1 + i % 4)]
        b = build_batch(recs)
        r = log.append(b, now_ms=1)
        log.update_high_watermark(log.log_end_offset)
        data = bytearray(b)
        data[0:8] = r.base_offset.to_bytes(8, "big")
        print(r.base_offset, r.last_offset, hashlib.sha256(data).hexdigest(), flush=True)
        if i % 50 == 49:
            m.run_retention(1)
        i += 1
    """
)


@pytest.mark.slow
def test_sigkill_three_times(tmp_path):
    import hashlib

    d = str(tmp_path / "data")
    acked = {}
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for rnd, stop_after in enumerate((150, 90, 230)):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, d, str(rnd)], stdout=subprocess.PIPE,
                                env=env, text=True)
        n = 0
        try:
            for line in proc.stdout:
                base, last, digest = line.split()
                acked[int(base)] = (int(last), digest)
                n += 1
                if n >= stop_after:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
        finally:
            proc.kill()
            proc.wait()
        # an ack printed after we stopped reading may still be in the pipe: take it too
        # (only whole lines: the child may have died in the middle of printing one)
        for line in proc.stdout.read().splitlines(keepends=True):
            parts = line.split()
            if line.endswith("\n") and len(parts) == 3 and len(parts[2]) == 64:
                acked[int(parts[0])] = (int(parts[1]), parts[2])
        proc.stdout.close()
    m = LogManager(d, LogConfig(segment_bytes=20000, index_interval_bytes=512, retention_ms=-1), now_ms=1)
    log = m.get("kill", 0)
    assert not m.was_clean_shutdown
    assert log.log_end_offset >= max(last for last, _ in acked.values()) + 1
    assert sorted(acked)[0] == 0
    for base, (last, digest) in acked.items():
        data = bytes(log.read(base, 1))
        b = RecordBatch(data)
        assert (b.base_offset, b.last_offset) == (base, last)
        assert hashlib.sha256(data[: b.size]).hexdigest() == digest
    # the log is contiguous across the three lives (a batch written but killed before its
    # ack was printed may sit between two lives' acks)
    everything = batch_map(log)
    bases = sorted(everything)
    assert all(RecordBatch(everything[a]).next_offset == b for a, b in zip(bases, bases[1:]))
    assert set(acked) <= set(everything)
    m.close()
