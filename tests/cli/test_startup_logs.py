"""Start-up tells the operator what is happening, and the client port answers only when the
node can serve: a node waiting for its quorum refuses connections and says whom it misses;
a restart after SIGKILL announces and times the log recovery."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest

from kwire.testing.broker import free_port, wait_for_port

pytestmark = pytest.mark.slow


def _serve(tmp_path, name: str, *argv: str) -> tuple[subprocess.Popen, object]:
    log = tmp_path / f"{name}.log"
    out = open(log, "w")
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", *argv], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    return proc, log


def _wait_for_text(log, text: str, proc, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = log.read_text()
        if text in got:
            return got
        assert proc.poll() is None, got
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not logged:\n{log.read_text()}")


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True


def test_node_waiting_for_its_quorum_refuses_clients_and_names_missing_voters(tmp_path):
    port, c1, c2, c3 = free_port(), free_port(), free_port(), free_port()
    voters = f"1@127.0.0.1:{c1},2@127.0.0.1:{c2},3@127.0.0.1:{c3}"
    proc, log = _serve(tmp_path, "n1", "--node-id", "1", "--listen", f"127.0.0.1:{port}",
                       "--controller-quorum-voters", voters, "--data-dir", str(tmp_path / "d1"))
    try:
        text = _wait_for_text(log, "waiting for the metadata quorum", proc)
        assert _refused(port)            # bound, not listening: `nc -z` and clients see nothing yet
        line = next(ln for ln in text.splitlines() if "waiting for the metadata quorum" in ln)
        assert "no leader elected yet" in line and "needs 2 of 3 voters" in line, line
        assert f"voter 2 at 127.0.0.1:{c2}" in line and f"voter 3 at 127.0.0.1:{c3}" in line, line
    finally:
        proc.terminate()
        assert proc.wait(20) == 0        # a SIGTERM while waiting is a clean stop


def test_recovery_after_sigkill_is_logged(tmp_path):
    from kwire.testing.client import WireClient

    port = free_port()
    args = ("--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d"))
    proc, log = _serve(tmp_path, "first", *args)
    try:
        wait_for_port("127.0.0.1", port, timeout=30, proc=proc)
        with WireClient(f"127.0.0.1:{port}") as c:
            c.create_topic("orders", 2)
            c.produce("orders", [b"a", b"b"], 0)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert "loaded 0 partition logs" in log.read_text()
    proc, log = _serve(tmp_path, "second", *args)
    try:
        wait_for_port("127.0.0.1", port, timeout=30, proc=proc)
        text = _wait_for_text(log, "ready: serving clients", proc)
    finally:
        proc.terminate()
        proc.wait(20)
    assert "after an unclean shutdown" in text, text
    # orders-0/1 (no group was used: __consumer_offsets is created on a group's first FindCoordinator)
    assert "recovered 2 partition logs" in text, text
    assert text.index("recovered") < text.index("ready: serving clients")


def test_clean_stop_exits_at_once_with_its_log_written(tmp_path):
    # after a clean shutdown `kwire serve` skips the interpreter's teardown (os._exit, issue
    # 32): the exit code, the last log lines and the clean-shutdown marker must all be there
    from kwire.testing.client import WireClient

    port = free_port()
    args = ("--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d"))
    proc, log = _serve(tmp_path, "first", *args)
    try:
        wait_for_port("127.0.0.1", port, timeout=30, proc=proc)
        with WireClient(f"127.0.0.1:{port}") as c:
            c.create_topic("orders", 2)
            c.produce("orders", [b"a", b"b"], 1)
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    assert log.read_text().rstrip().endswith("log checkpoints written"), log.read_text()
    assert (tmp_path / "d" / ".kafka_cleanshutdown").exists()
    proc, log = _serve(tmp_path, "second", *args)
    try:
        wait_for_port("127.0.0.1", port, timeout=30, proc=proc)
        with WireClient(f"127.0.0.1:{port}") as c:
            assert [r.value for r in c.consume("orders", 2, 1)] == [b"a", b"b"]
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    assert "unclean" not in log.read_text()
