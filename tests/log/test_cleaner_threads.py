"""The cleaner's swap off the event loop: cleaned segments go in from a worker thread under the
log's lock while the owner thread appends, rolls and reads; the broker's cleaner swaps in a
worker thread and only cleans segments below the recovery point (flushed, so no flush in
another thread touches a segment the swap removes)."""
from __future__ import annotations

import os
import sys
import threading

import trio

from kwire.codec.records import build_batch, iter_batches
from kwire.log import cleaner as cleaner_mod
from kwire.log.cleaner import OffsetMap
from kwire.log.cleaner_manager import clean_now
from kwire.log.config import LogConfig
from kwire.log.log_cleaner import LogCleaner
from kwire.log.manager import LogManager
from kwire.log.partition_log import PartitionLog

NOW = 1_700_000_000_000


def _read_all(log):
    out = []
    off = log.log_start_offset
    end = log.log_end_offset
    while off < end:
        data = bytes(log.read(off, 1 << 20))
        if not data:
            break
        for b in iter_batches(data):
            b.validate_crc()
            for r in b.records():
                out.append((r.offset, r.key, r.value))
            off = b.next_offset
    return out


def test_swaps_in_a_worker_while_the_owner_appends_and_reads(tmp_path):
    cfg = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=600)
    log = PartitionLog.open(str(tmp_path / "t-0"), cfg, now_ms=NOW)
    written = {}

    def put(i):
        k, v = b"k%d" % (i % 7), b"v%d" % i
        res = log.append(build_batch([(k, v, [], NOW)]), now_ms=NOW)
        log.update_high_watermark(log.log_end_offset)
        written[res.base_offset] = (k, v)

    for i in range(200):
        put(i)
    stop = threading.Event()
    passes = []
    errors = []

    def cleaner():
        try:
            while not stop.is_set():
                job = clean_now(log, NOW, omap=OffsetMap(1000))
                if job is not None:
                    passes.append(job.swapped)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    th = threading.Thread(target=cleaner)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # the threads take turns at every few bytecodes: races show
    th.start()
    try:
        i = 200
        for _ in range(60):
            for _ in range(10):
                put(i)
                i += 1
            rs = _read_all(log)
            offsets = [o for o, _, _ in rs]
            assert offsets == sorted(set(offsets)), "offsets only increase"
            for o, k, v in rs:
                assert written[o] == (k, v)
            latest = {}
            for o, k, v in rs:
                latest[k] = v
            want = {}
            for o in sorted(written):
                want[written[o][0]] = written[o][1]
            assert latest == want, "the latest value of every key is read, whatever the swaps"
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert sum(passes) > 0, "the cleaner swapped segments in meanwhile"
    assert not log.offline
    assert not [n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap", ".deleted"))]
    log.close()


def test_broker_cleaner_swaps_in_a_worker_thread(tmp_path, monkeypatch):
    cfg = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=600, min_cleanable_dirty_ratio=0.01)
    logs = LogManager(str(tmp_path), cfg)
    log = logs.create("t", 0, cfg, now_ms=NOW)
    for i in range(120):
        log.append(build_batch([(b"k%d" % (i % 5), b"v%d" % i, [], NOW)]), now_ms=NOW)
    log.roll(NOW)
    log.update_high_watermark(log.log_end_offset)
    cleaner = LogCleaner(logs)
    swap_threads = []
    real_swap_in = cleaner_mod.swap_in

    def spy(*args, **kwargs):
        swap_threads.append(threading.current_thread())
        assert log.lock._is_owned() and log._flush_lock._is_owned()
        return real_swap_in(*args, **kwargs)

    monkeypatch.setattr(cleaner_mod, "swap_in", spy)

    async def main():
        assert await cleaner.round()

    trio.run(main)
    assert swap_threads and all(t is not threading.main_thread() for t in swap_threads)
    assert cleaner.checkpoints[("t", 0)] == log.segments[-1].base_offset
    rs = _read_all(log)
    assert {k: v for _, k, v in rs} == {b"k%d" % j: b"v%d" % (115 + j) for j in range(5)}
    log.close()


def test_a_flush_planned_before_a_swap_skips_the_replaced_segments(tmp_path):
    cfg = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=600)
    logs = LogManager(str(tmp_path), cfg)
    log = logs.create("t", 0, cfg, now_ms=NOW)
    for i in range(120):
        log.append(build_batch([(b"k%d" % (i % 5), b"v%d" % i, [], NOW)]), now_ms=NOW)
    log.roll(NOW)
    log.update_high_watermark(log.log_end_offset)
    for seg in log.segments:
        seg.ensure_loaded()
    work = logs.plan_flush(NOW)          # every rolled segment, not flushed yet
    assert work.jobs
    job = clean_now(log, NOW, omap=OffsetMap(1000))   # the swap comes first
    assert job.swapped > 0
    new = log.segments[0]

    def index_files():
        out = {}
        for path in (new.index.path, new.time_index.path):
            try:
                with open(path, "rb") as f:
                    out[path] = f.read()
            except FileNotFoundError:
                out[path] = None
        return out

    after_swap = index_files()
    work.run()                           # the stale plan: nothing of the replaced segments
    logs.finish(work, "flush")
    assert index_files() == after_swap, "a replaced segment's index was written over its successor's"
    names = set(os.listdir(log.dir))
    for seg in log.segments:
        assert os.path.basename(seg.log_path) in names
    stems = {n.split(".")[0] for n in names if n[:20].isdigit()}
    assert stems == {os.path.basename(s.log_path)[:20] for s in log.segments}, "no file of a replaced segment"
    want = _read_all(log)
    log.close()
    again = PartitionLog.open(log.dir, cfg, now_ms=NOW)
    assert _read_all(again) == want
    again.close()


def test_a_pass_whose_segments_retention_deleted_is_dropped_not_failed(tmp_path, monkeypatch):
    """compact,delete: retention may delete segments a pass is reading; the pass is dropped
    and the log stays cleanable (not marked uncleanable as a failed pass would)."""
    cfg = LogConfig(cleanup_policy=("compact", "delete"), internal_segment_bytes=600, min_cleanable_dirty_ratio=0.01)
    logs = LogManager(str(tmp_path), cfg)
    log = logs.create("t", 0, cfg, now_ms=NOW)
    for i in range(120):
        log.append(build_batch([(b"k%d" % (i % 5), b"v%d" % i, [], NOW)]), now_ms=NOW)
    log.roll(NOW)
    log.update_high_watermark(log.log_end_offset)
    cleaner = LogCleaner(logs)
    real_run = cleaner_mod.CleanJob.run

    def run_after_retention(job):
        log.delete_records(log.segments[2].base_offset)   # as retention would, meanwhile
        return real_run(job)

    monkeypatch.setattr(cleaner_mod.CleanJob, "run", run_after_retention)

    async def main():
        assert await cleaner.round()

    trio.run(main)
    assert ("t", 0) not in cleaner.uncleanable and cleaner.passes == 0
    monkeypatch.setattr(cleaner_mod.CleanJob, "run", real_run)
    trio.run(main)
    assert cleaner.passes == 1
    assert {k for _, k, _ in _read_all(log)} == {b"k%d" % j for j in range(5)}
    log.close()
