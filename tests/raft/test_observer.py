"""A broker that is not a voter (process.roles=broker in Kafka's terms) joins a three-voter
cluster as an observer: it follows the metadata log, registers, serves clients, forwards
metadata changes, and DescribeQuorum lists it among the observers."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kwire.errors import ErrorCode

from .cluster import ROOT, Cluster, create_topic, describe_quorum, free_port, metadata, wait_for

pytestmark = pytest.mark.slow


def test_observer_broker_follows_and_serves(tmp_path):
    cluster = Cluster(str(tmp_path)).start()
    port = free_port()
    log = open(tmp_path / "node4.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--node-id", "4", "--listen", f"127.0.0.1:{port}",
                             "--controller-quorum-voters", cluster.voters, "--data-dir", str(tmp_path / "node4")],
                            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        ports = [n.port for n in cluster.nodes.values()] + [port]
        agreed = wait_for(lambda: all(metadata(p)[0] == [1, 2, 3, 4] for p in ports), 20)
        assert agreed, (tmp_path / "node4.log").read_text()[-2000:]
        assert create_topic(port, "via-observer", 4) == ErrorCode.NONE
        spread = wait_for(lambda: (lambda v: v if all(metadata(p)[2].get("via-observer") == v for p in ports)
                                   and v and len(v) == 4 else None)(metadata(port)[2].get("via-observer")), 10)
        assert spread and set(spread.values()) == {1, 2, 3, 4}  # the observer leads partitions too
        dq = wait_for(lambda: (lambda d: d if d.error_code == 0 and any(o.replica_id == 4 for o in d.observers)
                               else None)(describe_quorum(ports[0])), 10)
        assert dq is not None
        assert sorted(v.replica_id for v in dq.current_voters) == [1, 2, 3]
    finally:
        proc.kill()
        proc.wait()
        log.close()
        cluster.stop()
