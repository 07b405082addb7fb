"""What the leader epoch cache costs the append path, side by side with a tree without it.

``PartitionLog.append`` of small produce-shaped batches (10 x 100 B, where a per-append cost
shows most) into a fresh log on /dev/shm, in this tree and in a baseline tree (``git
archive`` of ``KWIRE_BASELINE``, default: the merge-base with ``main``), each in a fresh
subprocess, the trees alternating round by round; best of many 1,000-append loops. Two ways of calling
append: with a steady ``leader_epoch`` (what the broker's Produce path does: one compare per
append) and without one (a follower's or coordinator's append: each batch's own epoch is
compared). Budget: after/before >= 0.95 for both, i.e. no measurable cost while the epoch
does not change.

Info rows (this tree only): an append that starts a new epoch (the entry made in memory; the
checkpoint file follows at the next flush, in a worker thread); that file write itself
(fsynced), on /dev/shm and on the data disk; ``end_offset_for`` lookups/s on a cache of
1,000 epochs; opening a log of 100,000 batches whose checkpoint file is missing (rebuilt
from the batch headers).

``python -m bench leader_epoch [--quick]``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline import baseline_tree

ROOT = Path(__file__).resolve().parent.parent

_WORKER = r"""
import inspect, json, os, sys, tempfile, time
from kwire.codec import records as R
from kwire.log import LogConfig, PartitionLog
mode, total = sys.argv[1], int(sys.argv[2])
now = 1_700_000_000_000
batch = R.build_batch([(b"key-%06d" % i, (b"value-%06d-" % i).ljust(100, b"x"), [], now + i) for i in range(10)])
kw = {"origin": "client"} if "origin" in inspect.signature(PartitionLog.append).parameters else {}
if mode == "steady":
    kw["leader_epoch"] = 3
calls = 1000
best = float("inf")
with tempfile.TemporaryDirectory(dir=sys.argv[3]) as d:
    log = PartitionLog.open(os.path.join(d, "t-0"), LogConfig(), now_ms=now)
    for _ in range(50):
        log.append(batch, now_ms=now, **kw)
    for _ in range(max(1, total // 10 // calls)):  # best of many short loops: load spikes drop out
        t0 = time.perf_counter()
        for _ in range(calls):
            log.append(batch, now_ms=now, **kw)
        best = min(best, time.perf_counter() - t0)
    log.close()
print(json.dumps({"us_per_append": best / calls * 1e6}))
"""


def _measure(tree: str, mode: str, total: int, scratch: str) -> float:
    env = dict(os.environ, PYTHONPATH=tree)
    r = subprocess.run([sys.executable, "-c", _WORKER, mode, str(total), scratch], env=env,
                       capture_output=True, text=True, cwd=scratch)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout)["us_per_append"]


def _epoch_change_us(dir: str, n: int) -> float:
    from kwire.codec import records as R
    from kwire.log import LogConfig, PartitionLog

    now = 1_700_000_000_000
    batch = R.build_batch([(b"k", b"v" * 100, [], now)] * 10)
    with tempfile.TemporaryDirectory(dir=dir) as d:
        log = PartitionLog.open(os.path.join(d, "t-0"), LogConfig(), now_ms=now)
        t0 = time.perf_counter()
        for epoch in range(n):
            log.append(batch, now_ms=now, leader_epoch=epoch)
        dt = time.perf_counter() - t0
        log.close()
    return dt / n * 1e6


def _checkpoint_write_us(dir: str, n: int) -> float:
    from kwire.log.leader_epoch import CHECKPOINT_FILE, LeaderEpochCache

    with tempfile.TemporaryDirectory(dir=dir) as d:
        c = LeaderEpochCache(os.path.join(d, CHECKPOINT_FILE), [(e, e * 100) for e in range(5)])
        t0 = time.perf_counter()
        for _ in range(n):
            c.write()
        return (time.perf_counter() - t0) / n * 1e6


def _lookups_per_s(n: int) -> float:
    from kwire.log.leader_epoch import LeaderEpochCache

    c = LeaderEpochCache(None, [(e * 2, e * 1000) for e in range(1000)])
    t0 = time.perf_counter()
    for i in range(n):
        c.end_offset_for(i % 2001, 10**7)
    return n / (time.perf_counter() - t0)


def _rebuild_s(dir: str, batches: int) -> float:
    from kwire.codec import records as R
    from kwire.log import LogConfig, PartitionLog
    from kwire.log.leader_epoch import CHECKPOINT_FILE

    now = 1_700_000_000_000
    batch = R.build_batch([(b"k", b"v" * 10, [], now)])
    with tempfile.TemporaryDirectory(dir=dir) as d:
        path = os.path.join(d, "t-0")
        log = PartitionLog.open(path, LogConfig(), now_ms=now)
        for i in range(batches):
            log.append(batch, now_ms=now, leader_epoch=i // 1000)
        end = log.log_end_offset
        log.close()
        os.unlink(os.path.join(path, CHECKPOINT_FILE))
        t0 = time.perf_counter()
        again = PartitionLog.open(path, LogConfig(), now_ms=now, recovery_point=end, clean=True)
        dt = time.perf_counter() - t0
        assert len(again.leader_epoch_cache) == batches // 1000
        again.close()
    return dt


def run(quick: bool = False) -> list[tuple]:
    rows: list[tuple] = []
    rounds = 4 if quick else 8
    total = 200_000 if quick else 300_000
    tmp = tempfile.mkdtemp(prefix="kwire-epoch-bench-")
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else tmp
    try:
        baseline, rev = baseline_tree(tmp)
        for mode, what in (("steady", "leader_epoch given (Produce)"), ("none", "batch epochs kept")):
            best = {"after": float("inf"), "before": float("inf")}
            for _ in range(rounds):
                best["after"] = min(best["after"], _measure(str(ROOT), mode, total, scratch))
                if baseline:
                    best["before"] = min(best["before"], _measure(baseline, mode, total, scratch))
            rows.append((f"append 10x100B, {what}: this tree", round(best["after"], 2), "us/append", "-", "info"))
            if baseline:
                rows.append((f"append 10x100B, {what}: baseline {rev}", round(best["before"], 2), "us/append",
                             "-", "info"))
                ratio = best["before"] / best["after"]  # rate after / rate before
                rows.append((f"append 10x100B, {what}: after/before (rate)", round(ratio, 3), "x", ">= 0.95",
                             "PASS" if ratio >= 0.95 else "MISS"))
            for r in rows[-3:] if baseline else rows[-1:]:
                print(", ".join(str(x) for x in r), flush=True)
        n = 50 if quick else 200
        rows.append(("append starting a new epoch (entry in memory)", round(_epoch_change_us(scratch, n), 1),
                     "us/append", "-", "info"))
        print(", ".join(str(x) for x in rows[-1]), flush=True)
        for where, d in (("/dev/shm", scratch), ("data disk (temp dir)", tmp)):
            rows.append((f"leader-epoch-checkpoint write + fsync (flush thread), {where}",
                         round(_checkpoint_write_us(d, n), 1), "us", "-", "info"))
            print(", ".join(str(x) for x in rows[-1]), flush=True)
        rows.append(("end_offset_for, 1,000 epochs cached", round(_lookups_per_s(200_000) / 1e6, 2), "M/s", "-",
                     "info"))
        print(", ".join(str(x) for x in rows[-1]), flush=True)
        batches = 20_000 if quick else 100_000
        rows.append((f"open with the checkpoint missing: rebuild from {batches} batches",
                     round(_rebuild_s(scratch, batches) * 1e3, 1), "ms", "-", "info"))
        print(", ".join(str(x) for x in rows[-1]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
