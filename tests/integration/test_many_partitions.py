"""5,000 partitions under the common 1,024 open-file limit: a subprocess broker whose soft and
hard RLIMIT_NOFILE are 1,024 creates them, takes records on 400 of them (more than its
open-file cache holds), restarts cleanly and after a SIGKILL, and serves every one of them;
its open descriptors stay far below the limit throughout."""
from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from kwire.codec.apis import api
from kwire.testing.broker import free_port, memory_dir, wait_for_port
from kwire.testing.client import WireClient

LIMIT = 1024
TOPICS = 5
PER_TOPIC = 1000
WRITTEN = [(t, p) for t in range(TOPICS) for p in range(0, PER_TOPIC, 12)][:400]

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")]


def _limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


class _Node:
    def __init__(self, data_dir: str):
        self.data_dir = data_dir
        self.port = free_port()
        self.proc = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{self.port}",
             "--data-dir", self.data_dir, "--log-level", "WARNING"],
            stdin=subprocess.DEVNULL, preexec_fn=_limit)
        wait_for_port("127.0.0.1", self.port, timeout=60, proc=self.proc)

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def client(self) -> WireClient:
        return WireClient(f"127.0.0.1:{self.port}", timeout=60)


def _create_all(c: WireClient) -> None:
    R = api("CreateTopics").request
    T = R.struct("CreatableTopic")
    topics = [T(name=f"many-{t}", num_partitions=PER_TOPIC, replication_factor=1, configs=[]) for t in range(TOPICS)]
    resp = c.request("CreateTopics", 5, topics=topics, timeout_ms=60000, validate_only=False)
    assert [t.error_code for t in resp.topics] == [0] * TOPICS, [(t.name, t.error_message) for t in resp.topics]


def _check_all(node: _Node, rounds: int) -> None:
    with node.client() as c:
        for t in range(TOPICS):
            assert c.partitions(f"many-{t}") == list(range(PER_TOPIC))
        for t, p in WRITTEN:
            got = c.consume(f"many-{t}", rounds, p, timeout=20)
            assert [r.value for r in got] == [f"{t}/{p}/{i}".encode() for i in range(rounds)]
        assert node.fds() < LIMIT // 2


def _write(node: _Node, i: int) -> None:
    with node.client() as c:
        for t, p in WRITTEN:
            assert c.produce(f"many-{t}", [f"{t}/{p}/{i}".encode()], partition=p) == [i]
        assert node.fds() < LIMIT // 2


def test_5000_partitions_restart_under_1024_open_files():
    # on tmpfs where there is one (as the kafka_broker fixture's storage): a clean shutdown
    # flushes 5,000 partitions, seconds of fsync on a disk, and neither the open-file limit nor
    # recovery after a SIGKILL (the page cache outlives the process) depends on the medium
    data_dir = tempfile.mkdtemp(prefix="kwire-many-", dir=memory_dir())
    node = _Node(data_dir)
    try:
        node.start()
        with node.client() as c:
            _create_all(c)
        _write(node, 0)
        _check_all(node, 1)
        node.stop()                          # clean shutdown: checkpoints and marker
        node.start()
        _check_all(node, 1)
        _write(node, 1)
        with node.client() as c:             # a partition never written takes records too
            assert c.produce("many-4", [b"late"], partition=PER_TOPIC - 1) == [0]
        node.stop(signal.SIGKILL)            # a crash: recovery from the recovery points
        node.start()
        _check_all(node, 2)
        with node.client() as c:
            assert [r.value for r in c.consume("many-4", 1, PER_TOPIC - 1)] == [b"late"]
    finally:
        node.stop(signal.SIGKILL)
        shutil.rmtree(data_dir, ignore_errors=True)
