"""The produce path's append, before and after record validation, side by side in one run.

``PartitionLog.append`` of produce-shaped batches (what one Produce partition carries) into a
fresh log in a temp dir, measured in this tree (kwire.log.validator walks every record, as
Kafka's LogValidator does) and in a baseline tree (``git archive`` of ``KWIRE_BASELINE``,
default: the merge-base with ``main``; its append checked the header and CRC only). Each
shape runs in a fresh subprocess per tree, the trees alternating round by round, so a load
change on the shared machine hits both alike; best of the rounds. Rows: records/s of each
tree and the ratio after/before per shape (budget: >= 0.5 for uncompressed batches, i.e.
the walk may at most halve the append rate of a log writing to the page cache; the broker's
produce path has frames, handlers and sockets on top, so its ratio is closer to 1).
Compressed shapes are info only: the baseline wrote them without decompressing, which Kafka
(and now kwire) does to check every record (~100 us per 110 KB of records here).

Then the same comparison through the whole broker: two kwire servers (this tree and the
baseline tree, ``python -m kwire serve`` each), confluent-kafka producing 100 B and 10 KB
records with acks=all onto each in turn (bench/server_bench.py's produce_throughput), best of
the rounds, ratio after/before (budget >= 0.8).

``python -m bench append [--quick]``.
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

SHAPES = {  # name: (records per batch, value bytes, codec, sarama-shaped header)
    "1000x100B none": (1000, 100, 0, False),
    "1000x100B none, header max ts -1 (sarama)": (1000, 100, 0, True),
    "100x1000B none": (100, 1000, 0, False),
    "10x100B none": (10, 100, 0, False),
    "1000x100B lz4": (1000, 100, 3, False),
    "1000x100B zstd": (1000, 100, 4, False),
}

_WORKER = r"""
import inspect, json, os, struct, sys, tempfile, time
from kwire.codec import records as R
from kwire.log import LogConfig, PartitionLog
n, size, codec, sarama, total = (int(a) for a in sys.argv[1:6])
now = 1_700_000_000_000
recs = [(b"key-%06d" % i, (b"value-%06d-" % i).ljust(size, b"x"), [], now + i) for i in range(n)]
buf = bytearray(R.build_batch(recs, compression=codec))
if sarama:
    struct.pack_into(">q", buf, R.MAX_TIMESTAMP_OFFSET, -1)
    R._rewrite_crc(buf, 0)
batch = bytes(buf)
kw = {"origin": "client"} if "origin" in inspect.signature(PartitionLog.append).parameters else {}
calls = max(20, total // n)
with tempfile.TemporaryDirectory(dir=sys.argv[6]) as d:
    log = PartitionLog.open(os.path.join(d, "t-0"), LogConfig(), now_ms=now)
    for _ in range(5):
        log.append(batch, now_ms=now, **kw)
    t0 = time.perf_counter()
    for _ in range(calls):
        log.append(batch, now_ms=now, **kw)
    dt = time.perf_counter() - t0
    log.close()
print(json.dumps({"records_per_s": calls * n / dt, "bytes_per_s": calls * len(batch) / dt}))
"""


def _measure(tree: str, shape, total: int, scratch: str) -> dict:
    n, size, codec, sarama = shape
    env = dict(os.environ, PYTHONPATH=tree)
    r = subprocess.run([sys.executable, "-c", _WORKER, str(n), str(size), str(codec), str(int(sarama)),
                        str(total), scratch], env=env, capture_output=True, text=True, cwd=scratch)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout)


def _server(tree: str, scratch: str):
    from bench import server_bench as sb

    port = sb._free_port()
    data = tempfile.mkdtemp(prefix="kwire-append-bench-", dir=scratch)
    bootstrap = f"127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", bootstrap, "--data-dir", data,
                             "--log-level", "WARNING"], stdout=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=tree), cwd=scratch)
    sb._wait_ready(bootstrap, proc)
    return bootstrap, proc, data


def server_rows(baseline: str, rev: str, quick: bool, scratch: str) -> list[tuple]:
    from bench import server_bench as sb

    rows = []
    servers = {}
    try:
        servers["after"] = _server(str(ROOT), scratch)
        servers["before"] = _server(baseline, scratch)
        scale = 10 if quick else 1
        for count, size, parts in ((200_000 // scale, 100, 1), (200_000 // scale, 100, 8),
                                   (20_000 // scale, 10_240, 1)):
            best = {"after": 0.0, "before": 0.0}
            for rnd in range(2 if quick else 3):
                for name in ("after", "before"):
                    bootstrap = servers[name][0]
                    topic = f"append-bench-{size}-{parts}-{rnd}-{name}"
                    sb._create_topic(bootstrap, topic, parts)
                    best[name] = max(best[name], count / sb.produce_throughput(bootstrap, topic, count, size))
            label = f"server produce {count}x{size}B p{parts}"
            ratio = best["after"] / best["before"]
            rows += [(f"{label}: this tree", round(best["after"] / 1e3, 1), "krec/s", "-", "info"),
                     (f"{label}: baseline {rev}", round(best["before"] / 1e3, 1), "krec/s", "-", "info"),
                     (f"{label}: after/before", round(ratio, 3), "x", ">= 0.8", "PASS" if ratio >= 0.8 else "MISS")]
            for r in rows[-3:]:
                print(", ".join(str(x) for x in r), flush=True)
    finally:
        for _, proc, data in servers.values():
            sb._stop(proc)
            shutil.rmtree(data, ignore_errors=True)
    return rows


def run(quick: bool = False) -> list[tuple]:
    rows: list[tuple] = []
    rounds = 2 if quick else 3
    total = 100_000 if quick else 300_000
    tmp = tempfile.mkdtemp(prefix="kwire-append-bench-")
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else tmp
    try:
        baseline, rev = baseline_tree(tmp)
        for name, shape in SHAPES.items():
            best = {"after": 0.0, "before": 0.0}
            for _ in range(rounds):
                best["after"] = max(best["after"], _measure(str(ROOT), shape, total, scratch)["records_per_s"])
                if baseline:
                    best["before"] = max(best["before"], _measure(baseline, shape, total, scratch)["records_per_s"])
            rows.append((f"append {name}: this tree", round(best["after"] / 1e3, 1), "krec/s", "-", "info"))
            if baseline:
                rows.append((f"append {name}: baseline {rev}", round(best["before"] / 1e3, 1), "krec/s", "-", "info"))
                ratio = best["after"] / best["before"]
                if shape[2]:  # the baseline never decompressed: Kafka does, so must we (info only)
                    rows.append((f"append {name}: after/before (decompression)", round(ratio, 3), "x", "-",
                                 "info"))
                else:
                    rows.append((f"append {name}: after/before", round(ratio, 3), "x", ">= 0.5",
                                 "PASS" if ratio >= 0.5 else "MISS"))
            for r in rows[-3:] if baseline else rows[-1:]:
                print(", ".join(str(x) for x in r), flush=True)
        if baseline and os.environ.get("KWIRE_APPEND_BENCH_SERVER", "1") != "0":
            rows += server_rows(baseline, rev, quick, scratch)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
