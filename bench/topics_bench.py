"""CreateTopics of 100 partitions on one node, this tree side by side with a baseline tree.

The baseline is the kwire tree at ``KWIRE_BASELINE`` (default: the commit before the
open-file / off-the-event-loop work of issue 12), exported with ``git archive`` into a temp
dir. Both brokers run as subprocesses (``python -m kwire serve``, one node, data dir in the
temp dir, i.e. on the same file system), and their requests are interleaved (baseline, this
tree, baseline, ...), so a load change on the shared machine hits both alike. Each request
is one CreateTopics v4 of one new topic with 100 partitions, replication factor 1, answered
when committed and applied (the logs created); the client is kwire's blocking wire client.

Rows: p50 and p90 of each tree on disk and on tmpfs (/dev/shm, where there is one: shows the
broker's own cost without the disk's), and the floor of the disk measured in the same run
(100 x mkdir in a fresh directory: what creating 100 partition directories costs at least).
Budget: this tree's p50 on disk <= 50 ms.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline import baseline_tree
from bench.startup_bench import bench_env

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "19046fa"  # the tree before issue 12; KWIRE_BASELINE picks another
PARTITIONS = 100
BUDGET_MS = 50.0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Node:
    def __init__(self, tree: str, data_dir: str):
        from kwire.testing.broker import wait_for_port

        self.port = _free_port()
        env = bench_env()
        env["PYTHONPATH"] = tree
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{self.port}",
             "--data-dir", data_dir, "--log-level", "WARNING"],
            cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        wait_for_port("127.0.0.1", self.port, timeout=30, proc=self.proc)
        from kwire.testing.client import WireClient

        self.client = WireClient(f"127.0.0.1:{self.port}", timeout=60)
        self.n = 0

    def create(self) -> float:
        self.n += 1
        t0 = time.perf_counter()
        self.client.create_topic(f"bench-{self.n}", PARTITIONS)
        return (time.perf_counter() - t0) * 1000

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _floor_ms(base: str, rounds: int) -> float:
    out = []
    for r in range(rounds):
        d = tempfile.mkdtemp(dir=base)
        t0 = time.perf_counter()
        for i in range(PARTITIONS):
            os.mkdir(os.path.join(d, f"t-{i}"))
        out.append((time.perf_counter() - t0) * 1000)
        shutil.rmtree(d, ignore_errors=True)
    return statistics.median(out)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(quick: bool = False) -> list[tuple]:
    rounds = 8 if quick else 25
    rows: list[tuple] = []
    tmp = tempfile.mkdtemp(prefix="kwire-bench-topics-")
    try:
        baseline, baseline_rev = baseline_tree(tmp, BASELINE)
        places = [("disk", tmp)]
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
            places.append(("tmpfs", tempfile.mkdtemp(prefix="kwire-bench-topics-", dir="/dev/shm")))
        for where, base in places:
            trees = [("this tree", str(ROOT))]
            if baseline is not None:
                trees.insert(0, (f"baseline {baseline_rev}", baseline))
            nodes = [(name, _Node(tree, os.path.join(base, f"data-{i}"))) for i, (name, tree) in enumerate(trees)]
            times: dict[str, list[float]] = {name: [] for name, _ in nodes}
            try:
                for _ in range(3):  # warm up: imports done, first topics created
                    for _, node in nodes:
                        node.create()
                for r in range(rounds):
                    order = nodes if r % 2 == 0 else nodes[::-1]
                    for name, node in order:
                        times[name].append(node.create())
            finally:
                for _, node in nodes:
                    node.stop()
            for name, ts in times.items():
                p50, p90 = statistics.median(ts), _pct(ts, 0.9)
                print(f"  CreateTopics {PARTITIONS} partitions, {name}, {where}: p50 {p50:.1f} ms, "
                      f"p90 {p90:.1f} ms, min {min(ts):.1f} ms ({len(ts)} requests)")
                if name == "this tree" and where == "disk":
                    rows.append((f"topics.create {PARTITIONS} partitions p50 ({where})", round(p50, 1), "ms",
                                 f"<= {BUDGET_MS:.0f} ms", "PASS" if p50 <= BUDGET_MS else "MISS"))
                else:
                    rows.append((f"topics.create {PARTITIONS} partitions p50 ({name}, {where})", round(p50, 1),
                                 "ms", "-", "info"))
                rows.append((f"topics.create {PARTITIONS} partitions p90 ({name}, {where})", round(p90, 1),
                             "ms", "-", "info"))
            floor = _floor_ms(base, 5)
            print(f"  floor, {where}: {PARTITIONS} x mkdir {floor:.1f} ms")
            rows.append((f"topics.floor {PARTITIONS} x mkdir ({where})", round(floor, 1), "ms", "-", "info"))
            if base != tmp:
                shutil.rmtree(base, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
