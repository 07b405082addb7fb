"""A data dir belongs to one broker at a time, and to one node id and cluster."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kwire.testing import Broker, free_port

pytestmark = pytest.mark.slow


def _serve(data_dir: str, *extra: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """Run ``kwire serve`` expecting it to refuse at once (it never gets to serve)."""
    args = [sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{free_port()}",
            "--data-dir", data_dir, *extra]
    return subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def test_second_broker_on_a_data_dir_is_refused_naming_the_holder(tmp_path):
    d = str(tmp_path / "data")
    with Broker(mode="process", data_dir=d) as first:
        got = _serve(d)
        assert got.returncode == 1, got
        line = got.stderr.strip().splitlines()[-1]
        assert "in use by another kwire broker" in line and f"pid {first.proc.pid}" in line, got.stderr
        assert "Traceback" not in got.stderr
        first.create_topic("still-mine")          # the holder is unharmed
        assert first.produce("still-mine", [b"x"]) == [0]


def test_thread_mode_second_broker_is_refused_and_lock_is_released_on_stop(tmp_path):
    d = str(tmp_path / "data")
    first = Broker(data_dir=d).start()
    try:
        with pytest.raises(RuntimeError, match="in use by another kwire broker"):
            Broker(data_dir=d).start()
    finally:
        first.stop()
    again = Broker(data_dir=d).start()        # stop() released the lock
    again.stop()


def test_sigkilled_holder_leaves_no_stale_lock(tmp_path):
    d = str(tmp_path / "data")
    b = Broker(mode="process", data_dir=d).start()
    b.create_topic("t")
    b.produce("t", [b"a", b"b"])
    b.kill()
    b.start()
    try:
        assert [r.value for r in b.consume("t", 2)] == [b"a", b"b"]
    finally:
        b.stop()


def test_wrong_node_id_on_existing_data_dir_is_refused(tmp_path):
    d = str(tmp_path / "data")
    with Broker(mode="process", data_dir=d) as b:
        b.create_topic("t")                   # serving: meta.properties is written
    got = _serve(d, "--node-id", "2")
    assert got.returncode == 1, got
    assert "Stored node id 1 doesn't match previous node id 2" in got.stderr, got.stderr
    assert "Traceback" not in got.stderr
    with open(os.path.join(d, "meta.properties")) as f:
        assert "node.id=1" in f.read()           # nothing was rewritten


def test_wrong_cluster_id_is_refused(tmp_path):
    d = str(tmp_path / "data")
    with Broker(mode="process", data_dir=d, overrides={"cluster.id": "first-cluster-id-00000"}) as b:
        b.create_topic("t")
    got = _serve(d, "--override", "cluster.id=another-cluster-id-0000")
    assert got.returncode == 1, got
    assert "Expected another-cluster-id-0000, but read first-cluster-id-00000" in got.stderr, got.stderr
