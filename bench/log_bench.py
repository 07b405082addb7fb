"""Benchmarks of the partition log (kwire/log). ``run()`` prints rows
``name, value, unit, budget, PASS/MISS``; also runnable as ``python -m bench.log_bench``."""
from __future__ import annotations

import os
import random
import shutil
import tempfile
import time

from kwire.codec.records import build_batch
from kwire.log import LogConfig, LogManager, PartitionLog

NOW = 1_700_000_000_000


def _batch(total_size: int, record_size: int) -> bytes:
    n = max(1, total_size // (record_size + 12))
    value = os.urandom(record_size)
    return build_batch([(None, value, [], NOW + i) for i in range(n)])


def _row(rows, name, value, unit, budget, ok):
    line = f"{name}, {value:.4g}, {unit}, {budget}, {'PASS' if ok else 'MISS'}"
    print(line, flush=True)
    rows.append((name, value, unit, budget, "PASS" if ok else "MISS"))


def bench_append(tmp: str, rows: list) -> None:
    # 1 MiB batches: bytes per second into the page cache
    big = _batch(1 << 20, 1000)
    log = PartitionLog.open(os.path.join(tmp, "big-0"), LogConfig(), now_ms=NOW)
    total = 0
    t0 = time.perf_counter()
    while total < 512 << 20:
        log.append(big, now_ms=NOW)
        total += len(big)
    dt = time.perf_counter() - t0
    log.close()
    gbps = total / dt / 1e9
    _row(rows, "log append 1 MiB batches", gbps, "GB/s", ">= 1.0", gbps >= 1.0)
    # context: the same volume with bare pwrite (the machine's page cache speed right now)
    fd = os.open(os.path.join(tmp, "raw"), os.O_RDWR | os.O_CREAT, 0o644)
    t0 = time.perf_counter()
    pos = 0
    while pos < total:
        os.pwrite(fd, big, pos)
        pos += len(big)
    raw = total / (time.perf_counter() - t0) / 1e9
    os.close(fd)
    os.unlink(os.path.join(tmp, "raw"))
    _row(rows, "bare pwrite 1 MiB (baseline, same volume)", raw, "GB/s", "(info)", True)
    shutil.rmtree(os.path.join(tmp, "big-0"))
    # 16 KiB batches: batches per second
    small = _batch(16 << 10, 200)
    log = PartitionLog.open(os.path.join(tmp, "small-0"), LogConfig(), now_ms=NOW)
    n = 30000
    t0 = time.perf_counter()
    for _ in range(n):
        log.append(small, now_ms=NOW)
    dt = time.perf_counter() - t0
    rate = n / dt
    _row(rows, "log append 16 KiB batches", rate, "batches/s", ">= 30000", rate >= 30000)
    # random offset lookups (translate offset -> file position via the sparse index) and reads
    leo = log.log_end_offset
    rnd = random.Random(1)
    offsets = [rnd.randrange(leo) for _ in range(100000)]
    seg = log.segments[-1]
    t0 = time.perf_counter()
    for off in offsets:
        seg.translate(off)  # sparse index + batch headers: offset -> file position
    dt = time.perf_counter() - t0
    rate = len(offsets) / dt
    _row(rows, "log offset lookups at random offsets", rate, "lookups/s", ">= 100000", rate >= 100000)
    t0 = time.perf_counter()
    for off in offsets:
        log.read(off, 1 << 20)
    dt = time.perf_counter() - t0
    rate = len(offsets) / dt
    _row(rows, "log read(offset, 1 MiB) at random offsets", rate, "reads/s", "(info)", True)
    log.close()
    shutil.rmtree(os.path.join(tmp, "small-0"))


def _fill_sparse_log(path: str, segments: int, segment_bytes: int) -> None:
    """A log of ``segments`` segments of ``segment_bytes`` each (1 MiB batches)."""
    batch = _batch(min(1 << 20, segment_bytes), 1000)
    cfg = LogConfig(segment_bytes=segment_bytes)
    log = PartitionLog.open(path, cfg, now_ms=NOW)
    per = max(1, segment_bytes // len(batch))
    for _ in range(segments * per):
        log.append(batch, now_ms=NOW)
    log.close()


def bench_reopen(tmp: str, rows: list) -> None:
    data = os.path.join(tmp, "data")
    seg_bytes = 1 << 20  # 1,000 segments of ~1 MiB: a 1 GiB log
    cfg = LogConfig(segment_bytes=seg_bytes + 4096)
    m = LogManager(data, cfg, now_ms=NOW)
    log = m.create("reopen", 0)
    batch = _batch(1 << 20, 1000)
    while len(log.segments) < 1000:
        log.append(batch, now_ms=NOW)
    size = log.size_in_bytes
    m.close()
    t0 = time.perf_counter()
    m = LogManager(data, cfg, now_ms=NOW)
    dt = time.perf_counter() - t0
    log = m.get("reopen", 0)
    assert m.was_clean_shutdown and len(log.segments) == 1000, (len(log.segments), m.was_clean_shutdown)
    _row(rows, f"log reopen after clean shutdown ({size / 2**30:.2f} GiB, {len(log.segments)} segments)",
         dt, "s", "<= 0.2", dt <= 0.2)
    # crash: unflushed tails of growing size; recovery time must follow the tail, not the log
    results = []
    for tail_mib in (8, 32, 64):
        m.checkpoint()  # recovery points as of now (everything flushed at the last open/close)
        log.flush()
        m.checkpoint()
        for _ in range(tail_mib):
            log.append(batch, now_ms=NOW)
        del m  # crash: no close, no marker
        t0 = time.perf_counter()
        m = LogManager(data, cfg, now_ms=NOW)
        dt = time.perf_counter() - t0
        log = m.get("reopen", 0)
        results.append((tail_mib, dt))
    per_mib = [dt / mib for mib, dt in results]
    # proportional: time per MiB of tail roughly constant, and tiny versus a full-log scan
    ok = max(per_mib) <= 3 * min(per_mib) + 0.002
    _row(rows, "log reopen after crash, 8 MiB unflushed tail", results[0][1], "s", "~ tail", ok)
    _row(rows, "log reopen after crash, 64 MiB unflushed tail", results[2][1], "s", "~ tail", ok)
    m.close()
    shutil.rmtree(data)


def run() -> list:
    rows: list = []
    base = os.environ.get("KWIRE_BENCH_DIR") or None
    tmp = tempfile.mkdtemp(prefix="kwire-log-bench-", dir=base)
    try:
        bench_append(tmp, rows)
        bench_reopen(tmp, rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    run()
