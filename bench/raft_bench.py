"""KRaft metadata quorum: CreateTopics round trip on 1 and 3 voters, election time after the
leader is SIGKILLed (real ``kwire serve`` processes on loopback, default Raft timeouts:
fetch timeout 2 s, election timeout 1-2 s)."""
from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.raft.cluster import Cluster, create_topic, describe_quorum, wait_for  # noqa: E402


def _create_rtt(port: int, n: int, prefix: str) -> float:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        code = create_topic(port, f"{prefix}-{i}", 1)
        times.append((time.perf_counter() - t0) * 1000)
        assert code == 0, code
    return statistics.median(times)


def _leader(port: int) -> tuple[int, int]:
    d = wait_for(lambda: (lambda q: q if q.error_code == 0 and q.leader_id > 0 else None)(describe_quorum(port)), 15)
    return d.leader_id, d.leader_epoch


def run(quick: bool = False) -> list:
    rows: list = []
    n_create = 5 if quick else 30
    n_elect = 3 if quick else 10
    tmp = tempfile.mkdtemp(prefix="kwire-raft-bench-")
    try:
        one = Cluster(f"{tmp}/one", size=1).start()
        try:
            port = one.nodes[1].port
            _create_rtt(port, 2, "warm")
            ms = _create_rtt(port, n_create, "t")
            rows.append(("CreateTopics round trip, 1 voter (median)", round(ms, 2), "ms", "-", "info"))
        finally:
            one.stop()

        three = Cluster(f"{tmp}/three", size=3).start()
        try:
            nodes = three.nodes
            leader, epoch = _leader(nodes[1].port)
            follower = next(n for n in nodes.values() if n.node_id != leader)
            _create_rtt(nodes[leader].port, 2, "warm")
            ms = _create_rtt(nodes[leader].port, n_create, "lead")
            rows.append(("CreateTopics round trip, 3 voters, via the leader (median)", round(ms, 2), "ms", "-",
                         "info"))
            ms = _create_rtt(follower.port, n_create, "fwd")
            rows.append(("CreateTopics round trip, 3 voters, via a follower (median)", round(ms, 2), "ms", "-",
                         "info"))
            elections = []
            for _ in range(n_elect):
                leader, epoch = _leader(nodes[1].port if nodes[1].alive else nodes[2].port)
                survivor = next(n for n in nodes.values() if n.node_id != leader)
                t0 = time.monotonic()
                nodes[leader].kill()
                got = wait_for(lambda: (lambda q: q if q.leader_id not in (-1, leader) and q.leader_epoch > epoch
                                        else None)(describe_quorum(survivor.port)), 15, interval=0.02)
                if got is None:
                    raise RuntimeError("no new leader within 15 s")
                elections.append((time.monotonic() - t0) * 1000)
                three.restart(leader)
                # the next kill only once the restarted voter has caught up with the leader
                wait_for(lambda: (lambda q: q if q.error_code == 0 and len(q.current_voters) == 3 and all(
                    v.log_end_offset >= q.high_watermark for v in q.current_voters) else None)(
                    describe_quorum(nodes[leader].port)), 15)
            rows.append((f"election after leader SIGKILL, median of {len(elections)}",
                         round(statistics.median(elections)), "ms", "-", "info"))
            rows.append((f"election after leader SIGKILL, max of {len(elections)}", round(max(elections)), "ms",
                         "-", "info"))
        finally:
            three.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for r in rows:
        print(f"{r[0]:<62} {r[1]:>9} {r[2]}")
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
