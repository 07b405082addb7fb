"""Open files: the bounded LRU of segment files, regions that outlive an eviction, index files
made only when they have entries, partitions made before a create commits, and the split of
periodic disk work into decisions (here) and DiskWork (a worker thread in the broker)."""
import errno
import gc
import os
import socket
import weakref

import pytest

from kwire.log import LogConfig, LogManager, PartitionLog
from kwire.log.errors import KafkaStorageError
from kwire.log.regions import OPEN_FILES, default_capacity

from .logutil import make_batch, read_all, stored

NOW = 1_700_000_000_000


@pytest.fixture
def small_cache():
    """Shrink the process-wide cache for a test, then restore it."""
    old = OPEN_FILES.capacity
    OPEN_FILES.resize(4)
    yield OPEN_FILES
    OPEN_FILES.resize(old)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_capacity_follows_the_soft_limit():
    assert default_capacity(1024) == 256
    assert default_capacity(64) == 32
    assert default_capacity(1 << 20) == 4096


def test_open_segment_files_stay_bounded(tmp_path, small_cache):
    logs = [PartitionLog.open(str(tmp_path / f"t-{p}"), LogConfig(), now_ms=NOW) for p in range(20)]
    before = _open_fds()
    for round_ in range(3):
        for p, log in enumerate(logs):
            log.append(make_batch(2, 50, seed=p * 10 + round_), now_ms=NOW)
            assert len(small_cache) <= 4
    assert _open_fds() - before <= 4
    for p, log in enumerate(logs):   # every partition still reads back whole (files reopened)
        assert len(read_all(log)) == 3
        assert len(small_cache) <= 4
    assert small_cache.evictions > 0
    for log in logs:
        log.close()


def test_region_outlives_eviction_until_sent(tmp_path, small_cache):
    a = PartitionLog.open(str(tmp_path / "a-0"), LogConfig(), now_ms=NOW)
    batch = make_batch(3, 100, seed=1)
    a.append(batch, now_ms=NOW)
    data = a.read(0, 1 << 20)
    region = data.regions[0]
    held = weakref.ref(region.file)
    others = [PartitionLog.open(str(tmp_path / f"b-{p}"), LogConfig(), now_ms=NOW) for p in range(6)]
    for log in others:   # every one opens its file: a's is evicted from the cache
        log.append(make_batch(1, 10), now_ms=NOW)
    assert OPEN_FILES.peek(a.segments[0]) is None
    assert not region.file.closed
    # the region is still readable and sendable from its own descriptor
    assert bytes(region) == stored(batch, 0)
    s1, s2 = socket.socketpair()
    with s1, s2:
        sent = os.sendfile(s1.fileno(), region.fileno(), region.position, region.length)
        assert sent == region.length
        got = b""
        while len(got) < sent:
            got += s2.recv(65536)
    assert got == stored(batch, 0)
    # once the fetch is answered and the region dropped, the descriptor is closed
    del data, region
    gc.collect()
    assert held() is None
    assert read_all(a) == [stored(batch, 0)]   # and the log reopens the file on its next read
    for log in [a, *others]:
        log.close()


def test_new_segments_have_no_index_files_until_entries(tmp_path):
    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(segment_bytes=4000, index_interval_bytes=100),
                            now_ms=NOW)
    files = set(os.listdir(log.dir))
    assert not any(f.endswith((".index", ".timeindex")) for f in files)
    assert not any(f.endswith(".log") for f in files)   # an empty log: its file comes with data
    for i in range(30):
        log.append(make_batch(1, 200, ts=1000 + i, seed=i), now_ms=NOW)
    assert len(log.segments) > 1
    log.close()
    names = sorted(os.listdir(log.dir))
    rolled = f"{0:020d}"
    assert f"{rolled}.index" in names and f"{rolled}.timeindex" in names
    reopened = PartitionLog.open(log.dir, LogConfig(segment_bytes=4000, index_interval_bytes=100), now_ms=NOW)
    assert len(read_all(reopened)) == 30
    assert reopened.offset_for_timestamp(1015)[0] == 15
    reopened.close()


def test_make_logs_is_all_or_nothing(tmp_path, monkeypatch):
    m = LogManager(str(tmp_path), LogConfig(), now_ms=NOW)
    real_mkdir = os.mkdir

    def failing_mkdir(path, *a, **kw):
        if path.endswith("-7"):
            raise OSError(errno.EMFILE, "Too many open files")
        return real_mkdir(path, *a, **kw)

    monkeypatch.setattr(os, "mkdir", failing_mkdir)
    with pytest.raises(KafkaStorageError) as exc:
        m.make_logs("t", list(range(10)))
    assert "Error while creating log for t-7" in str(exc.value)
    assert "Too many open files" in str(exc.value)
    assert not [d for d in os.listdir(tmp_path) if d.startswith("t-")]
    monkeypatch.setattr(os, "mkdir", real_mkdir)
    made = m.make_logs("t", list(range(10)))
    assert m.stage(made) == made and not m.logs
    log = m.open_partition("t", 3)           # the records applied: the staged log is adopted
    assert log is made[3] and m.get("t", 3) is log
    dirs = m.unstage(made)                  # the rest never applied: removed
    m.remove_dirs(dirs)
    assert "t-3" in os.listdir(tmp_path)
    assert not [d for d in os.listdir(tmp_path) if d.startswith("t-") and d != "t-3"]
    m.close()


def test_retention_work_splits_decision_from_disk(tmp_path):
    m = LogManager(str(tmp_path), LogConfig(segment_bytes=300, retention_ms=10), now_ms=NOW)
    log = m.create("t", 0, now_ms=NOW)
    for i in range(4):
        log.append(make_batch(1, 250, ts=1, seed=i), now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    old = os.path.join(log.dir, f"{0:020d}.log")
    assert os.path.exists(old)
    work = m.plan_retention(NOW + 1000)
    assert work.deleted >= 3
    assert log.log_start_offset >= 3            # decided: the log moved on at once
    assert os.path.exists(old)                   # the disk work has not run yet
    rp = log.recovery_point
    work.run()                                   # (a worker thread in the broker)
    assert not os.path.exists(old)
    assert log.recovery_point == rp              # in-memory effects wait for commit()
    work.commit()
    assert log.recovery_point == log.segments[-1].base_offset
    m.close()
    m2 = LogManager(str(tmp_path), LogConfig(segment_bytes=300, retention_ms=10), now_ms=NOW)
    assert m2.get("t", 0).log_start_offset == log.log_start_offset
    m2.close()


def test_flush_work_keeps_the_recovery_point_after_a_truncation(tmp_path):
    m = LogManager(str(tmp_path), LogConfig(segment_bytes=300), now_ms=NOW)
    log = m.create("t", 0, now_ms=NOW)
    for i in range(4):
        log.append(make_batch(1, 250, ts=1, seed=i), now_ms=NOW)
    work = m.plan_flush(NOW)
    assert work
    log.truncate_to(1)                           # a follower's truncation while the fsync runs
    work.run()
    work.commit()
    assert log.recovery_point <= log.log_end_offset == 1
    m.close()


# --- the descriptor budget and EMFILE (issue 32) ----------------------------------------

def _logs_with_one_batch(tmp_path, n):
    logs = [PartitionLog.open(str(tmp_path / f"m-{p}"), LogConfig(), now_ms=NOW) for p in range(n)]
    batches = [make_batch(1, 20, seed=p) for p in range(n)]
    for log, b in zip(logs, batches):
        log.append(b, now_ms=NOW)
    return logs, batches


def test_a_read_over_many_partitions_pins_at_most_the_budget(tmp_path, small_cache):
    # one Fetch over every partition holds all its answers until it is sent: past the pin
    # budget the reads copy their bytes, so the open segment files stay under cache + budget
    from kwire.log.regions import FileRegion, SegmentFile

    logs, batches = _logs_with_one_batch(tmp_path, 30)
    base_live = SegmentFile.live
    answers = [log.read(0, 1 << 20) for log in logs]     # held, as a response being built
    regions = [r for a in answers for r in a.regions if isinstance(r, FileRegion)]
    assert len(regions) == small_cache.pin_budget == 2
    assert SegmentFile.live - base_live <= small_cache.capacity + small_cache.pin_budget
    assert [bytes(a) for a in answers] == [stored(b, 0) for b in batches]
    for log in logs:
        log.close()


def _emfile_on(monkeypatch, suffixes, times=None):
    """os.open fails with EMFILE for paths ending in ``suffixes`` (``times`` times, or always)."""
    real = os.open
    left = [times]

    def fake(path, flags, mode=0o777, **kw):
        if str(path).endswith(suffixes) and (left[0] is None or left[0] > 0):
            if left[0] is not None:
                left[0] -= 1
            raise OSError(errno.EMFILE, "Too many open files", str(path))
        return real(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", fake)


def test_emfile_on_a_read_is_retriable_and_the_dir_stays_online(tmp_path, small_cache, monkeypatch):
    from kwire.errors import ErrorCode
    from kwire.log.errors import TooManyOpenFiles

    logs, batches = _logs_with_one_batch(tmp_path, 6)     # the first two were evicted
    _emfile_on(monkeypatch, (".log",))
    with pytest.raises(TooManyOpenFiles) as e:
        logs[0].read(0, 1 << 20)
    assert e.value.code == ErrorCode.REPLICA_NOT_AVAILABLE    # retriable, not KAFKA_STORAGE_ERROR
    assert not logs[0].offline and logs[0].failure_channel.offline_dirs == {}
    assert logs[0].failure_channel.descriptor_errors == 1
    with pytest.raises(TooManyOpenFiles):   # an append too, and nothing is written
        logs[1].append(make_batch(1, 20, seed=99), now_ms=NOW)
    monkeypatch.undo()
    assert read_all(logs[0]) == [stored(batches[0], 0)]       # served again once descriptors are back
    logs[1].append(make_batch(1, 20, seed=99), now_ms=NOW)
    assert len(read_all(logs[1])) == 2
    for log in logs:
        log.close()


def test_emfile_once_sheds_the_cache_and_the_read_succeeds(tmp_path, small_cache, monkeypatch):
    logs, batches = _logs_with_one_batch(tmp_path, 6)
    assert len(small_cache) == 4
    _emfile_on(monkeypatch, (".log",), times=1)
    assert bytes(logs[0].read(0, 1 << 20)) == stored(batches[0], 0)
    assert len(small_cache) == 1      # the idle files were closed to make room
    assert logs[0].failure_channel.offline_dirs == {}
    for log in logs:
        log.close()


def test_emfile_on_the_txnindex_is_retriable(tmp_path, monkeypatch):
    from kwire.log.errors import TooManyOpenFiles
    from kwire.log.txn_index import AbortedTxn

    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(), now_ms=NOW)
    log.append(make_batch(2, 20), now_ms=NOW)
    seg = log.segments[0]
    seg.txn_index.append(AbortedTxn(7, 0, 1, 2))
    seg.txn_index._entries = None        # not read yet, as after a restart
    _emfile_on(monkeypatch, (".txnindex",))
    with pytest.raises(TooManyOpenFiles):
        log.aborted_transactions(0, 2)
    assert not log.offline
    monkeypatch.undo()
    assert log.aborted_transactions(0, 2) == [AbortedTxn(7, 0, 1, 2)]
    log.close()


def test_emfile_in_disk_work_keeps_the_dir_online(tmp_path, monkeypatch):
    from kwire.log.errors import TooManyOpenFiles

    mgr = LogManager(str(tmp_path))
    log = mgr.create("t", 0)
    log.append(make_batch(1, 20), now_ms=NOW)
    work = mgr.plan_checkpoint()
    _emfile_on(monkeypatch, (".tmp",))      # the checkpoint's temporary file
    work.run()
    with pytest.raises(TooManyOpenFiles):
        mgr.finish(work, "checkpoint", raise_error=True)
    assert not mgr.offline and not log.offline
    monkeypatch.undo()
    mgr.run_retention(NOW)
    assert not mgr.offline
    mgr.close()


def test_eio_still_takes_the_dir_offline(tmp_path, monkeypatch):
    logs, _ = _logs_with_one_batch(tmp_path, 1)
    logs[0].segments[0].close()
    real = os.open

    def fake(path, flags, mode=0o777, **kw):
        if str(path).endswith(".log"):
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", fake)
    with pytest.raises(KafkaStorageError):
        logs[0].read(0, 1 << 20)
    assert logs[0].offline
