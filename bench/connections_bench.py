"""Memory given back after many connections close (issue 32).

A ``kwire serve`` subprocess (data dir in the temp dir) with one topic; the bench opens
5,000 client connections at once (raised soft RLIMIT_NOFILE on both sides), each sends
ApiVersions v3 and Metadata v9 with its own client id and reads both answers, then all are
closed. The broker's RSS (``VmRSS`` of /proc/PID/status) is read at idle before, with the
5,000 connections open, and after they closed (once /proc/PID/fd is back to what it was
and 5 s later). Budget: RSS after close within 20 MiB of the idle figure before (the issue
saw +39 MiB kept: 78 MiB, where Tansu went back to 19 MiB; what is left is pymalloc arena
fragmentation, see kwire/memory.py). One round quick, two otherwise
(the second shows whether memory kept by the first is reused or grows).

``run(quick=False)`` -> rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 5000
BUDGET_MIB = 20


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _requests(i: int) -> bytes:
    from kwire.codec import frame as FR
    from kwire.codec.apis import api

    cid = f"bench-client-{i}"
    av, md = api("ApiVersions"), api("Metadata")
    return (FR.encode_request(av, 3, 1, av.request.cls(client_software_name="bench", client_software_version="1"), cid)
            + FR.encode_request(md, 9, 2, md.request.cls(topics=None, allow_auto_topic_creation=False,
                                                         include_cluster_authorized_operations=False,
                                                         include_topic_authorized_operations=False), cid))


def _read_answers(s: socket.socket, n: int) -> None:
    buf = b""
    while n:
        chunk = s.recv(1 << 16)
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
        while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
            buf = buf[4 + int.from_bytes(buf[:4], "big"):]
            n -= 1


def _round(pid: int, port: int) -> tuple[float, float, float]:
    """(RSS with every connection open, RSS after they closed, seconds until closed)"""
    base_fds = _fds(pid)
    socks = []
    for i in range(CONNECTIONS):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(_requests(i))
        socks.append(s)
    for s in socks:
        _read_answers(s, 2)
    open_rss = _rss_mib(pid)
    t0 = time.monotonic()
    for s in socks:
        s.close()
    socks.clear()
    while _fds(pid) > base_fds and time.monotonic() - t0 < 120:
        time.sleep(0.05)
    closed_s = time.monotonic() - t0
    time.sleep(5)
    return open_rss, _rss_mib(pid), closed_s


def run(quick: bool = False):
    from kwire.testing.broker import free_port, wait_for_port
    from kwire.testing.client import WireClient

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < CONNECTIONS + 200:
        return [("RSS after 5,000 connections", "n/a", "", f"hard open-file limit {hard}", "n/a")]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    data_dir = tempfile.mkdtemp(prefix="kwire-conn-bench-")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{port}",
                             "--data-dir", data_dir, "--log-level", "WARNING", "--override", "metrics.listen=",
                             "--override", f"max.connections.per.ip={CONNECTIONS * 2}"],
                            stdin=subprocess.DEVNULL, cwd=ROOT)
    rows = []
    try:
        wait_for_port("127.0.0.1", port, timeout=60, proc=proc)
        with WireClient(f"127.0.0.1:{port}") as c:
            c.create_topic("conn-bench", 4)
            c.produce("conn-bench", [b"x" * 100])
        time.sleep(2)
        idle = _rss_mib(proc.pid)
        print(f"idle RSS {idle:.1f} MiB", flush=True)
        last = idle
        for r in range(1 if quick else 2):
            open_rss, after, closed_s = _round(proc.pid, port)
            print(f"round {r}: {CONNECTIONS} open {open_rss:.1f} MiB, after close {after:.1f} MiB "
                  f"(closed in {closed_s:.1f} s)", flush=True)
            last = after
            rows.append((f"RSS with {CONNECTIONS:,} connections open (round {r})", round(open_rss, 1), "MiB", "-", "info"))
            rows.append((f"RSS after they closed (round {r})", round(after, 1), "MiB", "-", "info"))
        kept = last - idle
        rows.insert(0, ("idle RSS before", round(idle, 1), "MiB", "-", "info"))
        rows.append(("RSS kept after close", round(kept, 1), "MiB", f"<= {BUDGET_MIB}",
                     "PASS" if kept <= BUDGET_MIB else "MISS"))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
