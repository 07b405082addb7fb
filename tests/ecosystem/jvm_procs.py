"""Long-running JVMs for the Connect and MirrorMaker 2 tests (issue 30): a Kafka Connect worker
(distributed or standalone) and MirrorMaker 2's dedicated mode, each a ``java -cp libs/* <main>``
as ``bin/connect-distributed.sh``, ``bin/connect-standalone.sh`` and ``bin/connect-mirror-maker.sh``
run them, with a small heap and the serial GC; started, SIGKILLed and stopped by PID.

Also the few calls of Connect's REST API the tests make (urllib: no extra package)."""
from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from kwire.testing import free_port
from kwire.testing.apache_kafka import java_bin, jvm_flags, kafka_classpath, kafka_libs

CONNECT_DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"
CONNECT_STANDALONE = "org.apache.kafka.connect.cli.ConnectStandalone"
MIRROR_MAKER = "org.apache.kafka.connect.mirror.MirrorMaker"

# WARN and up from everything, INFO from the herders (joins, assignments, task starts): what a
# failure needs to show, without Connect's per-config INFO dumps
LOG4J2 = """rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1} %m%n
logger.herder.name = org.apache.kafka.connect.runtime.distributed.DistributedHerder
logger.herder.level = INFO
logger.mm2.name = org.apache.kafka.connect.mirror.MirrorMaker
logger.mm2.level = INFO
"""


def write_properties(path: Path, props: dict[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def require_jars(*prefixes: str) -> None:
    libs = kafka_libs()
    for p in prefixes:
        assert list(libs.glob(f"{p}-*.jar")), f"no {p} jar in {libs}: run make kafka (jvm/pom.xml lists it)"


class JavaProcess:
    """One JVM running ``main args``; its stdout and stderr appended to ``log``; stopped by PID."""

    def __init__(self, main: str, args: list[str], log: Path, heap: str = "256m"):
        conf = log.with_suffix(".log4j2.properties")
        conf.write_text(LOG4J2)
        self.args = [java_bin(), *jvm_flags(heap, True), f"-Dlog4j2.configurationFile={conf}",
                     "-cp", kafka_classpath(), main, *args]
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> "JavaProcess":
        with open(self.log, "ab") as f:
            self.proc = subprocess.Popen(self.args, stdout=f, stderr=subprocess.STDOUT)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is flushed or committed on the way out."""
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


class ConnectWorker(JavaProcess):
    """A Connect worker: distributed (group.id, the three compacted internal topics) unless
    ``standalone`` names the connector property files to run. The REST port is fixed at
    construction so a restart after SIGKILL is the same worker (the same worker id)."""

    def __init__(self, work: Path, name: str, props: dict[str, object], standalone: list[Path] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        props = {
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "listeners": self.url,
            # the connectors are on the classpath with their META-INF/services manifests: no scan of
            # the hundred jars for plugins (seconds of CPU at every start)
            "plugin.discovery": "service_load",
            "offset.flush.interval.ms": 500,
            **props,
        }
        conf = write_properties(work / f"{name}.properties", props)
        main = CONNECT_STANDALONE if standalone is not None else CONNECT_DISTRIBUTED
        super().__init__(main, [str(conf), *map(str, standalone or [])], work / f"{name}.log")

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 30.0):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return json.loads(raw) if raw else None

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Until the REST server answers and the herder has joined its group (GET /connectors
        answers 200 only then in distributed mode)."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.alive(), f"the worker exited:\n{self.tail()}"
            try:
                self.request("GET", "/connectors", timeout=5)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            assert time.monotonic() < deadline, f"the worker never came up:\n{self.tail()}"
            time.sleep(0.5)

    def create(self, name: str, config: dict[str, object], timeout: float = 60.0) -> None:
        """POST /connectors, retried while the herder answers 409 (a rebalance in progress)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.request("POST", "/connectors", {"name": name, "config": {k: str(v) for k, v in config.items()}})
                return
            except urllib.error.HTTPError as e:
                if e.code != 409 or time.monotonic() > deadline:
                    raise AssertionError(f"POST /connectors {name}: {e.code} {e.read()!r}\n{self.tail()}") from None
                time.sleep(0.5)

    def wait_running(self, names: list[str], timeout: float = 90.0) -> dict:
        """Until each connector and each of its tasks is RUNNING: the expanded status."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                st = self.request("GET", "/connectors?expand=status", timeout=5)
            except (urllib.error.URLError, OSError):
                st = {}
            if all(n in st and st[n]["status"]["connector"]["state"] == "RUNNING" and st[n]["status"]["tasks"]
                   and all(t["state"] == "RUNNING" for t in st[n]["status"]["tasks"]) for n in names):
                return st
            failed = [t for n in names if n in st for t in st[n]["status"]["tasks"] if t["state"] == "FAILED"]
            assert not failed, f"failed tasks: {failed}\n{self.tail()}"
            assert time.monotonic() < deadline, f"not all RUNNING: {st}\n{self.tail()}"
            time.sleep(0.5)
