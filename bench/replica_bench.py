"""The replica manager refactor, before and after, side by side in one run: the data path now
goes through kwire.replication.ReplicaManager (leader checks against the metadata image, the
high watermark decided in one place, waiters kept there) instead of the handlers reaching
into the broker and the log. It must cost nothing measurable.

Two kwire servers (``python -m kwire serve``, each writing to its own data dir): this tree and
a baseline tree (``git archive`` of ``KWIRE_BASELINE``, default: the merge-base with ``main``).
bench/server_bench.py's scenarios run on both, each scenario on one then the other
(``server_bench.measure``), three times with the order alternating (``KWIRE_REPLICA_BENCH_RUNS``),
best of all rounds (the machine is shared: the best is the least disturbed): confluent-kafka producing 100 B and 10 KB records with
acks=all onto 1 and 8 partitions, consuming them back from the start, end-to-end latency
(a polling consumer woken by the produce: the Fetch long poll's waiters) and single-record
produce latency. Rows: each tree's figure and the ratio after/before (throughput: >= 0.9;
latency: before/after, >= 0.8, since a millisecond of noise is 20% of a 5 ms p50 here).

``python -m bench replica [--quick]``.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench.baseline import baseline_tree

ROOT = Path(__file__).resolve().parent.parent


def run(quick: bool = False) -> list[tuple]:
    from bench import append_bench as ab, server_bench as sb

    tmp = tempfile.mkdtemp(prefix="kwire-replica-bench-")
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else tmp
    servers = {}
    rows: list[tuple] = []
    try:
        baseline, rev = baseline_tree(tmp)
        if baseline is None:
            return [("replica manager before/after", 0, "-", "a baseline tree", "MISS")]
        servers["after"] = ab._server(str(ROOT), scratch)
        servers["before"] = ab._server(baseline, scratch)
        res: dict[str, dict[str, float]] = {"after": {}, "before": {}}
        runs = int(os.environ.get("KWIRE_REPLICA_BENCH_RUNS", "1" if quick else "3"))
        for i in range(runs):   # the order alternates run by run: neither tree always goes first
            order = ("after", "before") if i % 2 == 0 else ("before", "after")
            got = sb.measure({name: servers[name][0] for name in order}, quick)
            for name in order:
                for key, value in got[name].items():
                    best = min if key.startswith(("e2e", "single")) else max
                    res[name][key] = best(res[name].get(key, value), value)
        for key in res["after"]:
            after, before = res["after"][key], res["before"][key]
            latency = key.startswith(("e2e", "single"))
            unit = "ms" if latency else "krec/s"
            scale = 1 if latency else 1e-3
            ratio = before / after if latency else after / before
            budget = 0.8 if latency else 0.9
            rows += [(f"{key}: this tree", round(after * scale, 2), unit, "-", "info"),
                     (f"{key}: baseline {rev}", round(before * scale, 2), unit, "-", "info"),
                     (f"{key}: {'before/after' if latency else 'after/before'}", round(ratio, 3), "x",
                      f">= {budget}", "PASS" if ratio >= budget else "MISS")]
            for r in rows[-3:]:
                print(", ".join(str(x) for x in r), flush=True)
    finally:
        for _, proc, data in servers.values():
            sb._stop(proc)
            shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
