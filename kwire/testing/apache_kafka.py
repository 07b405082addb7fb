"""``ApacheKafka``: a real Apache Kafka (KRaft, combined broker+controller) as a process, no Docker.

The reference kwire is checked against: the compat suite's ``kafka`` target, the differential
harness and ``python -m bench vs-kafka`` start it. The jars come from Maven Central, pinned in
``jvm/pom.xml`` and copied by ``make kafka`` into ``~/.cache/kwire/kafka-<version>/libs`` (or
``$KWIRE_KAFKA_LIBS``); nothing is downloaded here. A node is started the way Kafka's own
``bin/kafka-storage.sh format`` and ``bin/kafka-server-start.sh`` do it (``java -cp libs/*``
``kafka.tools.StorageTool`` then ``kafka.Kafka server.properties``), with a small heap and the serial
GC on these 2-core machines, a log4j2 configuration writing ``server.log`` in the node's directory,
free loopback ports, and every process stopped by PID (SIGTERM, then SIGKILL) on ``close()`` or at
exit.

    with ApacheKafka(nodes=1) as kafka:
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})

Only the standard library is imported.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import base64
from dataclasses import dataclass, field
from pathlib import Path

from kwire.testing.ports import free_port

__all__ = ["ApacheKafka", "KafkaUnavailable", "KAFKA_VERSION", "kafka_libs", "kafka_classpath", "kafka_client_jars",
           "CLIENT_JARS", "CLIENT_LOGGING_JARS", "java_bin"]

# The Apache Kafka release the project is measured against; jvm/pom.xml pins the same (a test checks).
KAFKA_VERSION = "4.3.1"


class KafkaUnavailable(RuntimeError):
    """No JDK, or the Kafka jars were not resolved (``make kafka``); the message says which."""


def kafka_libs(version: str = KAFKA_VERSION) -> Path:
    """The directory holding Apache Kafka's jars (broker, tools, client and their runtime deps)."""
    env = os.environ.get("KWIRE_KAFKA_LIBS")
    if env:
        libs = Path(env)
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        libs = cache / "kwire" / f"kafka-{version}" / "libs"
    if not (libs / f"kafka_2.13-{version}.jar").is_file():
        raise KafkaUnavailable(f"Apache Kafka {version}'s jars are not in {libs}: run `make kafka` "
                               f"(Maven resolves them from jvm/pom.xml) or set KWIRE_KAFKA_LIBS")
    return libs


def kafka_classpath(version: str = KAFKA_VERSION) -> str:
    """``libs/*`` as java's -cp takes it (every jar of the directory, as kafka-run-class.sh does)."""
    return str(kafka_libs(version) / "*")


# The Java client, kafka-clients, and the jars it needs at run time (its pom's runtime dependencies: the
# compression codecs and slf4j), by file-name prefix. A client JVM takes these, not all of libs/ (the
# broker's ~90 jars cost start-up time and say nothing about the client).
CLIENT_JARS = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-")
# log4j2 as the client's slf4j 1.x logger, for a JVM whose client log lines are kept
CLIENT_LOGGING_JARS = ("log4j-api-", "log4j-core-", "log4j-slf4j-impl-")


def kafka_client_jars(prefixes: tuple[str, ...] = CLIENT_JARS, version: str = KAFKA_VERSION) -> list[Path]:
    """One jar per prefix (``kafka-clients-`` -> ``kafka-clients-4.3.1.jar``) from :func:`kafka_libs`, in
    the order given; raises :class:`KafkaUnavailable` (naming ``make kafka``) when the directory or a jar
    is missing."""
    libs = kafka_libs(version)
    names = sorted(p.name for p in libs.glob("*.jar"))
    jars = []
    for prefix in prefixes:
        # the version follows the prefix: "log4j-slf4j-impl-" must not match "log4j-slf4j2-impl-"
        found = [n for n in names if n.startswith(prefix) and n[len(prefix):len(prefix) + 1].isdigit()]
        if not found:
            raise KafkaUnavailable(f"no {prefix}*.jar in {libs}: run `make kafka` (Maven resolves Apache Kafka "
                                   f"{version} and its client from jvm/pom.xml)")
        jars.append(libs / found[-1])
    return jars


def java_bin() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise KafkaUnavailable("no java on PATH (Apache Kafka needs a JDK 17+; make deps installs one)")
    return found


def jvm_flags(heap: str = "512m", fast_start: bool = True) -> list[str]:
    """Flags for a JVM on a 2-core machine: fixed small heap, the serial GC (G1 and C2 compiler threads
    would take both cores from whatever else runs), C1 only for short-lived test brokers."""
    flags = [f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError",
             "-Djava.awt.headless=true", "-XX:-UsePerfData"]
    if fast_start:
        flags.append("-XX:TieredStopAtLevel=1")
    return flags


def _log4j2_properties(log_file: Path) -> str:
    return "\n".join([
        "status = warn",
        "appender.file.type = File",
        "appender.file.name = FILE",
        f"appender.file.fileName = {log_file}",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = FILE",
        # the request log and the state change log are noisy and say nothing a test reads
        "logger.request.name = kafka.request.logger",
        "logger.request.level = WARN",
        "logger.state.name = state.change.logger",
        "logger.state.level = WARN",
        "",
    ])


def random_cluster_id() -> str:
    """What ``kafka-storage random-uuid`` prints: a random UUID, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


_live: dict[int, subprocess.Popen] = {}


def _stop_all_at_exit() -> None:
    for proc in list(_live.values()):
        _terminate(proc, 5)


atexit.register(_stop_all_at_exit)


def _terminate(proc: subprocess.Popen, timeout: float) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    _live.pop(proc.pid, None)


@dataclass
class KafkaNode:
    node_id: int
    host: str
    port: int
    controller_port: int
    directory: Path
    proc: subprocess.Popen | None = None
    log_handle: object = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.directory / "server.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None


class ApacheKafka:
    """One or three (any n) Apache Kafka KRaft nodes, each a combined broker and controller.

    ``overrides`` are server.properties entries for every node (e.g. ``{"auto.create.topics.enable":
    "false"}``); ``features`` are passed to the storage format (``{"share.version": 1}``).
    ``listener`` is the client (and inter-broker) listener's name and security protocol:
    "PLAINTEXT", or "SSL", "SASL_PLAINTEXT", "SASL_SSL" with the TLS (``ssl.keystore.*``,
    ``ssl.truststore.*``) and SASL settings in ``overrides`` (the controller listener stays
    PLAINTEXT)."""

    def __init__(self, nodes: int = 1, *, overrides: dict | None = None, features: dict | None = None,
                 heap: str = "512m", fast_start: bool = True, directory: str | os.PathLike | None = None,
                 hosts: list[str] | None = None, version: str = KAFKA_VERSION, listener: str = "PLAINTEXT"):
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        self.version = version
        self.classpath = kafka_classpath(version)
        self.java = java_bin()
        self.overrides = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (overrides or {}).items()}
        if listener not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ValueError(f"listener is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not {listener!r}")
        self.listener = listener
        self.features = dict(features or {})
        self.heap = heap
        self.fast_start = fast_start
        self._own_dir = directory is None
        self.directory = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="apache-kafka-"))
        self.cluster_id = random_cluster_id()
        hosts = hosts or ["127.0.0.1"] * nodes
        self.nodes = [KafkaNode(i + 1, hosts[i], free_port(hosts[i]), free_port(hosts[i]),
                                self.directory / f"node-{i + 1}") for i in range(nodes)]

    # ------------------------------------------------------------------ config
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        n = len(self.nodes)
        rf = str(min(3, n))
        L = self.listener
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": ",".join(f"{x.node_id}@{x.host}:{x.controller_port}" for x in self.nodes),
            "listeners": f"{L}://{node.host}:{node.port},CONTROLLER://{node.host}:{node.controller_port}",
            "advertised.listeners": f"{L}://{node.host}:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": L,
            "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,{L}:{L}",
            "log.dirs": str(node.directory / "data"),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": "1" if n == 1 else "2",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": "1" if n == 1 else "2",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "4",
        }
        props.update(self.overrides)
        return props

    def _write_config(self, node: KafkaNode) -> Path:
        node.directory.mkdir(parents=True, exist_ok=True)
        path = node.directory / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self._properties(node).items()))
        (node.directory / "log4j2.properties").write_text(_log4j2_properties(node.log_file))
        return path

    def _java(self, main: str, *args: str, heap: str = "256m") -> list[str]:
        return [self.java, *jvm_flags(heap, True), "-cp", self.classpath, main, *args]

    # ------------------------------------------------------------------ lifecycle
    def format(self, node: KafkaNode) -> None:
        config = self._write_config(node)
        # "--cluster-id=ID", not "-t ID": one id in 64 starts with "-", which argparse4j takes for an option
        cmd = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={self.cluster_id}", "-c", str(config),
                         "--ignore-formatted")
        for name, level in self.features.items():
            cmd += ["--feature", f"{name}={level}"]
        env = dict(os.environ, KAFKA_LOG4J_OPTS="")
        res = subprocess.run(cmd + [], capture_output=True, text=True, timeout=120, env=env,
                             cwd=str(node.directory))
        if res.returncode != 0:
            raise RuntimeError(f"kafka-storage format of node {node.node_id} failed ({res.returncode}): "
                               f"{(res.stderr or res.stdout).strip()[-2000:]}")

    def start_node(self, node: KafkaNode) -> None:
        config = node.directory / "server.properties"
        out = open(node.directory / "stdout.log", "ab")
        cmd = [self.java, *jvm_flags(self.heap, self.fast_start),
               f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
               f"-Dkafka.logs.dir={node.directory}", "-cp", self.classpath, "kafka.Kafka", str(config)]
        node.log_handle = out
        node.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     cwd=str(node.directory), start_new_session=True)
        _live[node.proc.pid] = node.proc

    def start(self, timeout: float = 120.0) -> "ApacheKafka":
        try:
            for node in self.nodes:
                self.format(node)
            for node in self.nodes:
                self.start_node(node)
            deadline = time.monotonic() + timeout
            for node in self.nodes:
                self.wait_ready(node, deadline)
        except BaseException:
            self.close()
            raise
        return self

    def wait_ready(self, node: KafkaNode, deadline: float) -> None:
        """Until the node logged that it started and its client listener accepts connections."""
        while True:
            if node.proc.poll() is not None:
                raise RuntimeError(f"Apache Kafka node {node.node_id} exited with {node.proc.returncode} before "
                                   f"it started; its log: {self._tail(node)}")
            if self._started(node):
                try:
                    with socket.create_connection((node.host, node.port), timeout=0.5):
                        return
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"Apache Kafka node {node.node_id} did not start in time; its log: "
                                   f"{self._tail(node)}")
            time.sleep(0.1)

    @staticmethod
    def _started(node: KafkaNode) -> bool:
        try:
            with open(node.log_file, "rb") as f:
                return b"Kafka Server started" in f.read()
        except OSError:
            return False

    @staticmethod
    def _tail(node: KafkaNode, n: int = 1500) -> str:
        parts = []
        for name in ("stdout.log", "server.log"):
            try:
                parts.append((node.directory / name).read_text(errors="replace")[-n:])
            except OSError:
                pass
        return " | ".join(p.strip() for p in parts if p.strip()) or "(empty)"

    def kill(self, node: KafkaNode, sig: int = signal.SIGKILL) -> None:
        """Signal one node (SIGKILL by default) and wait for it to go."""
        if node.proc is not None and node.proc.poll() is None:
            os.killpg(node.proc.pid, sig)
            node.proc.wait(60)
        if node.proc is not None:
            _live.pop(node.proc.pid, None)

    def restart(self, node: KafkaNode, timeout: float = 120.0) -> None:
        """Start a stopped node again on its data and ports (its log goes on in the same file)."""
        self._close_log(node)
        try:
            node.log_file.rename(node.directory / f"server.log.{int(time.time() * 1000)}")
        except OSError:
            pass
        self.start_node(node)
        self.wait_ready(node, time.monotonic() + timeout)

    @staticmethod
    def _close_log(node: KafkaNode) -> None:
        if node.log_handle is not None:
            node.log_handle.close()
            node.log_handle = None

    def close(self) -> None:
        # every node is asked to stop at once: one at a time, the last ones wait out their controlled
        # shutdown against a quorum that is already gone
        running = [n.proc for n in self.nodes if n.proc is not None and n.proc.poll() is None]
        for proc in running:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for node in self.nodes:
            if node.proc is not None:
                _terminate(node.proc, 15)
            self._close_log(node)
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> "ApacheKafka":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes if n.pid is not None]
