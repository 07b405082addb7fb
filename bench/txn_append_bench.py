"""The producer-state side of the append path: idempotent and transactional batches.

``PartitionLog.append`` of one producer's batches (10 records of 100 B each, sequences in
order, origin CLIENT) into a fresh log, measured in this tree and in a baseline tree
(``KWIRE_BASELINE``, default: the merge-base with ``main``; bench.baseline), each in a fresh
subprocess, the trees alternating round by round, best of the rounds (CPU time of the
appending process, so other work on a shared machine counts less):

* idempotent batches, this tree / baseline (budget >= 0.9: tracking transactions may not
  slow down the idempotent produce path, which does per-batch header work only);
* transactional batches with a commit marker (origin COORDINATOR, as WriteTxnMarkers
  appends it) after every 100 and every 10,000 records, this tree, against idempotent
  batches in this tree (the log's share of the issue's transactional / idempotent budgets,
  >= 0.5 and >= 0.9; the coordinator's requests come on top at the broker).

``python -m bench txn_append [--quick]``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.baseline import baseline_tree

ROOT = Path(__file__).resolve().parent.parent
PER_BATCH = 10

_WORKER = r"""
import json, os, sys, tempfile, time
from kwire.codec import records as R
from kwire.log import LogConfig, PartitionLog
mode, total, per_txn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = 10
now = 1_700_000_000_000
pid = 4242
calls = max(50, total // n)
txn = mode == "txn"
value = b"v" * 100
batches = [R.build_batch([(None, value, [], now + i) for i in range(n)], producer_id=pid, producer_epoch=0,
                         base_sequence=c * n, is_transactional=txn) for c in range(calls + 5)]
marker = R.build_control_batch(True, pid, 0, now, coordinator_epoch=0) if txn else None
every = max(1, per_txn // n)
with tempfile.TemporaryDirectory(dir=sys.argv[4]) as d:
    log = PartitionLog.open(os.path.join(d, "t-0"), LogConfig(), now_ms=now)
    for b in batches[:5]:
        log.append(b, now_ms=now, origin="client")
    if txn:
        log.append(marker, now_ms=now, origin="coordinator")
    t0 = time.process_time()   # CPU time: a shared machine's other work does not count
    for i, b in enumerate(batches[5:]):
        log.append(b, now_ms=now, origin="client")
        if txn and (i + 1) % every == 0:
            log.append(marker, now_ms=now, origin="coordinator")
            log.update_high_watermark(log.log_end_offset)
    dt = time.process_time() - t0
    log.close()
print(json.dumps({"records_per_s": calls * n / dt}))
"""


def _measure(tree: str, mode: str, total: int, per_txn: int, scratch: str) -> float:
    r = subprocess.run([sys.executable, "-c", _WORKER, mode, str(total), str(per_txn), scratch],
                       env=dict(os.environ, PYTHONPATH=tree), capture_output=True, text=True, cwd=scratch)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout)["records_per_s"]


def run(quick: bool = False) -> list[tuple]:
    rows: list[tuple] = []
    rounds = 2 if quick else 3
    total = 50_000 if quick else 200_000
    tmp = tempfile.mkdtemp(prefix="kwire-txn-bench-")
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else tmp

    def emit(*row):
        rows.append(row)
        print(", ".join(str(x) for x in row), flush=True)

    try:
        baseline, rev = baseline_tree(tmp)
        best = {"idem": 0.0, "base": 0.0, "txn100": 0.0, "txn10000": 0.0}
        for _ in range(rounds):
            best["idem"] = max(best["idem"], _measure(str(ROOT), "idem", total, 0, scratch))
            if baseline:
                best["base"] = max(best["base"], _measure(baseline, "idem", total, 0, scratch))
            best["txn100"] = max(best["txn100"], _measure(str(ROOT), "txn", total, 100, scratch))
            best["txn10000"] = max(best["txn10000"], _measure(str(ROOT), "txn", total, 10_000, scratch))
        emit("append idempotent 10x100B: this tree", round(best["idem"] / 1e3, 1), "krec/s", "-", "info")
        if baseline:
            emit(f"append idempotent 10x100B: baseline {rev}", round(best["base"] / 1e3, 1), "krec/s", "-", "info")
            ratio = best["idem"] / best["base"]
            emit("append idempotent 10x100B: after/before", round(ratio, 3), "x", ">= 0.9",
                 "PASS" if ratio >= 0.9 else "MISS")
        for per_txn, budget in ((100, 0.5), (10_000, 0.9)):
            v = best[f"txn{per_txn}"]
            emit(f"append transactional 10x100B, {per_txn} records per transaction", round(v / 1e3, 1), "krec/s",
                 "-", "info")
            ratio = v / best["idem"]
            emit(f"append transactional / idempotent, {per_txn} per transaction", round(ratio, 3), "x",
                 f">= {budget}", "PASS" if ratio >= budget else "MISS")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    run("--quick" in sys.argv)
