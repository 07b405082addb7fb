"""Benchmarks of log compaction (kwire/log/cleaner.py). ``run()`` prints rows
``name, value, unit, budget, PASS/MISS``; also runnable as ``python -m bench.compaction_bench``.

* cleaner throughput: a dirty log of ``KEYS`` distinct keys over ``SIZE`` bytes (batches of 50
  records with 100-byte values, keys drawn at random, so most records are superseded) is
  cleaned in one pass (offset map + recopy + swap); MB/s of dirty log processed. The issue
  asks for 1 M keys over 1 GiB; this session's shared 2-core VM runs it scaled down
  (200,000 keys over 128 MiB; ``--quick``: 50,000 over 32 MiB); ``KWIRE_BENCH_FULL=1`` runs
  the full size.
* append p99 while cleaning: 16 KiB appends to another partition on the main thread (the
  event loop's side of a Produce), p99 latency with no cleaner running (the mean of the p99
  before and after: the load of a shared machine moves) and with passes running in a worker
  thread for the whole window (the first compacts the log, the next ones go over it whole) (the GIL is what they share: the C walk releases it,
  kwire/log/cleaner_fast.py); budget: within 2x.
"""
from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
import time

from kwire.codec.records import build_batch
from kwire.log import LogConfig, PartitionLog
from kwire.log.cleaner import OffsetMap
from kwire.log.cleaner_manager import clean_now

NOW = 1_700_000_000_000


def _row(rows, name, value, unit, budget, verdict):
    print(f"{name}, {value:.4g}, {unit}, {budget}, {verdict}", flush=True)
    rows.append((name, value, unit, budget, verdict))


def _dirty_log(path: str, keys: int, size: int) -> PartitionLog:
    cfg = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=64 << 20)
    log = PartitionLog.open(path, cfg, now_ms=NOW)
    rnd = random.Random(7)
    value = os.urandom(100)
    while log.size_in_bytes < size:
        recs = [(b"key-%09d" % rnd.randrange(keys), value, [], NOW) for _ in range(50)]
        log.append(build_batch(recs), now_ms=NOW)
    log.roll(NOW)
    log.update_high_watermark(log.log_end_offset)
    return log


def _p99(samples):
    s = sorted(samples)
    return s[int(len(s) * 0.99)]


def _append_latencies(log, batch, seconds: float, stop=None) -> list[float]:
    out = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and not (stop and stop.is_set()):
        t0 = time.perf_counter()
        log.append(batch, now_ms=NOW)
        out.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.001)   # a produce every ms or so, as a busy connection sends them
    return out


def run(quick: bool = False):
    rows: list = []
    full = os.environ.get("KWIRE_BENCH_FULL")
    keys, size = (1_000_000, 1 << 30) if full else ((50_000, 32 << 20) if quick else (200_000, 128 << 20))
    tmp = tempfile.mkdtemp(prefix="kwire-compaction-bench-")
    try:
        log = _dirty_log(os.path.join(tmp, "dirty-0"), keys, size)
        before = log.size_in_bytes
        t0 = time.perf_counter()
        job = clean_now(log, NOW, omap=OffsetMap.for_buffer(128 << 20))
        dt = time.perf_counter() - t0
        mbps = before / dt / 1e6
        _row(rows, f"cleaner throughput ({keys:,} keys over {before >> 20} MiB)", mbps, "MB/s", "(info)", "info")
        _row(rows, "  of which offset map build", job.stats.map_done_s - job.stats.start_s, "s", "(info)", "info")
        _row(rows, "  log size after cleaning", log.size_in_bytes / before * 100, "% of before", "(info)", "info")
        log.close()

        # append p99 without and with a pass running in a worker thread
        other = PartitionLog.open(os.path.join(tmp, "produce-0"), LogConfig(), now_ms=NOW)
        batch = build_batch([(None, os.urandom(160), [], NOW) for _ in range(100)])
        secs = 2.0 if quick else 4.0
        base = _p99(_append_latencies(other, batch, secs))
        dirty = _dirty_log(os.path.join(tmp, "dirty2-0"), keys, size // 2)
        stop = threading.Event()
        passes = [0]

        def clean():
            # the first pass compacts the dirty log; while the window lasts, more whole passes
            # over it (map, recopy, swap of every segment) keep the cleaner busy, so the p99 is
            # taken over the whole window even when a pass takes well under a second
            while not stop.is_set():
                clean_now(dirty, NOW, omap=OffsetMap.for_buffer(128 << 20))
                passes[0] += 1

        th = threading.Thread(target=clean)
        th.start()
        during = _p99(_append_latencies(other, batch, secs))
        stop.set()
        th.join()
        _row(rows, "cleaning passes during the window", passes[0], "", "(info)", "info")
        # no cleaning again after the pass: on a shared machine the load moves, so the
        # figure without cleaning is the mean of the p99 before and after
        after = _p99(_append_latencies(other, batch, secs))
        _row(rows, "append p99, no cleaning (before)", base, "ms", "(info)", "info")
        _row(rows, "append p99, no cleaning (after)", after, "ms", "(info)", "info")
        base = (base + after) / 2
        _row(rows, "load average (1 min) at the end", os.getloadavg()[0], "", "(info)", "info")
        ratio = during / base if base else float("inf")
        _row(rows, "append p99 while the cleaner runs", during, "ms", "(info)", "info")
        _row(rows, "append p99 with / without cleaning", ratio, "x", "<= 2", "PASS" if ratio <= 2 else "MISS")
        other.close()
        dirty.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
