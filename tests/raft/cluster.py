"""A real kwire cluster of N processes on loopback, for tests and benchmarks.

Each node is ``python -m kwire serve --node-id N --listen ... --controller-listen ...
--controller-quorum-voters ...`` with its own data directory; processes are tracked by PID
and killed by PID. ``WireClient`` speaks kwire's own codec over a blocking socket.
"""
from __future__ import annotations

import functools

import os
import signal
import subprocess
import sys
import time

from kwire.codec.apis import api
from kwire.testing.broker import free_port
from kwire.testing.client import WireClient as _WireClient
from kwire.testing.wait import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def WireClient(port: int, timeout: float = 10.0) -> _WireClient:
    return _WireClient(f"127.0.0.1:{port}", timeout)


def call(port: int, api_name: str, version: int, timeout: float = 10.0, **fields):
    c = WireClient(port, timeout)
    try:
        return c.request(api_name, version, **fields)
    finally:
        c.close()


def metadata(port: int) -> tuple[list[int], int, dict[str, dict[int, int]]]:
    """(live broker ids, controller id, {topic: {partition: leader}}) as node ``port`` sees it."""
    r = call(port, "Metadata", 9, topics=None, allow_auto_topic_creation=False,
             include_topic_authorized_operations=False)
    topics = {t.name: {p.partition_index: p.leader_id for p in t.partitions} for t in r.topics}
    return sorted(b.node_id for b in r.brokers), r.controller_id, topics


def describe_quorum(port: int):
    """The DescribeQuorum partition answer of node ``port``."""
    a = api("DescribeQuorum")
    part = a.request.struct("PartitionData")(partition_index=0)
    r = call(port, "DescribeQuorum", 1, topics=[a.request.struct("TopicData")(topic_name="__cluster_metadata",
                                                                                  partitions=[part])])
    return r.topics[0].partitions[0]


def create_topic(port: int, name: str, partitions: int = 3) -> int:
    a = api("CreateTopics")
    ct = a.request.struct("CreatableTopic")(name=name, num_partitions=partitions, replication_factor=1,
                                            assignments=[], configs=[])
    r = call(port, "CreateTopics", 5, timeout=30.0, topics=[ct], timeout_ms=15000, validate_only=False)
    return r.topics[0].error_code


def produce(port: int, topic: str, partition: int, value: bytes = b"v") -> int:
    """Produce one record (acks=all); the partition's error code."""
    from kwire.codec import records as RB  # noqa: PLC0415

    a = api("Produce")
    Req = a.request
    data = Req.struct("TopicProduceData")(name=topic, partition_data=[Req.struct("PartitionProduceData")(
        index=partition, records=RB.build_batch([(None, value, [], int(time.time() * 1000))]))])
    r = call(port, "Produce", 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[data])
    return r.responses[0].partition_responses[0].error_code


class Node:
    def __init__(self, node_id: int, port: int, controller_port: int, data_dir: str, log_dirs: int = 1):
        self.node_id = node_id
        self.port = port
        self.controller_port = controller_port
        self.data_dir = data_dir
        # log.dirs: the data dir, then <data dir>-<i> for each further one (JBOD)
        self.log_dirs = [data_dir] + [f"{data_dir}-{i}" for i in range(1, log_dirs)]
        self.proc: subprocess.Popen | None = None
        self._log = None

    def start(self, voters: str, extra_args: tuple[str, ...] = ()) -> None:
        os.makedirs(os.path.dirname(self.data_dir), exist_ok=True)
        self._log = open(self.data_dir + ".log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kwire", "serve", "--node-id", str(self.node_id),
             "--listen", f"127.0.0.1:{self.port}", "--controller-listen", f"127.0.0.1:{self.controller_port}",
             "--controller-quorum-voters", voters, "--data-dir", ",".join(self.log_dirs), *extra_args],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 4000) -> str:
        try:
            with open(self.data_dir + ".log", "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""


# A new cluster's voters wait an election timeout (Kafka's default 1,000 ms, randomised up to
# twice that) before the first election: ~1.5 s of every cluster start and of every restart of
# a whole quorum. Test clusters use 300 ms unless a test sets the key itself; the fetch timeout,
# which decides when a leader is given up, keeps its default.
ELECTION_TIMEOUT = ("--override", "controller.quorum.election.timeout.ms=300")


class Cluster:
    def __init__(self, base_dir: str, size: int = 3, extra_args: tuple[str, ...] = (), log_dirs: int = 1):
        extra_args = tuple(extra_args)
        if not any(a.startswith("controller.quorum.election.timeout.ms=") for a in extra_args):
            extra_args = ELECTION_TIMEOUT + extra_args
        self.extra_args = extra_args
        self.nodes = {i: Node(i, free_port(), free_port(), os.path.join(base_dir, f"node{i}"), log_dirs)
                      for i in range(1, size + 1)}
        self.voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())

    def start(self, timeout: float = 30.0) -> "Cluster":
        for n in self.nodes.values():
            n.start(self.voters, self.extra_args)
        for n in self.nodes.values():
            self.wait_serving(n, timeout)
        return self

    def restart(self, node_id: int, timeout: float = 30.0) -> None:
        n = self.nodes[node_id]
        n.start(self.voters, self.extra_args)
        self.wait_serving(n, timeout)

    @staticmethod
    def wait_serving(n: Node, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not n.alive:
                raise RuntimeError(f"node {n.node_id} exited:\n{n.log_tail()}")
            try:     # the port is bound early; a node answers once it has caught up and registered
                call(n.port, "ApiVersions", 0, timeout=1.0)
                return
            except (OSError, ConnectionError):
                time.sleep(0.05)
        raise TimeoutError(f"node {n.node_id} did not serve within {timeout}s:\n{n.log_tail()}")

    def stop(self) -> None:
        for n in self.nodes.values():
            n.kill()


# polling a cluster: nodes may be down or not agreed yet
wait_for = functools.partial(wait_until, ignore=(OSError, ConnectionError, AssertionError, IndexError))
