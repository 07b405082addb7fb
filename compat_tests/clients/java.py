"""The Apache Kafka Java client (kafka-clients 4.x) adapter, through a driver JVM.

The jars are Apache Kafka's own, resolved from Maven Central by ``make kafka`` (pinned in jvm/pom.xml, the
same release the ``kafka`` target runs): kafka-clients, its runtime jars (lz4-java, snappy-java, zstd-jni,
slf4j-api) and log4j2 for its logging, taken one by one from ``kwire.testing.apache_kafka.kafka_libs()`` so
that the JVM starts without the broker's other ~85 jars; nothing is downloaded at test time.
The driver, ``compat_tests/java/KwireDriver.java`` and ``Json.java`` (our code), is compiled with javac once,
into a cache directory keyed on the hash of the sources, the jars' names and the flags, and run as one
long-lived JVM per test session (per xdist worker), which speaks one JSON object per line over stdin/stdout
(the protocol is described at the top of KwireDriver.java). Every call waits at most its own timeout plus a margin, so a stuck client never hangs the suite; the
JVM exits when its stdin closes and is killed by PID at session end.

A missing java/javac or jar directory makes every Java row ERROR (never a silent skip), with a message that
names ``make kafka`` (which resolves the jars) or the JDK (.ci/run installs openjdk-17-jdk-headless).
"""
from __future__ import annotations

import atexit
import base64
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from kwire.testing.apache_kafka import CLIENT_JARS, CLIENT_LOGGING_JARS, KafkaUnavailable, kafka_client_jars

from .base import Acked, Client, GroupMember, Got, KafkaOpError, Rec

SOURCES = sorted((Path(__file__).resolve().parent.parent / "java").glob("*.java"))  # KwireDriver.java, Json.java
_MARGIN = 15.0  # seconds a call may take beyond the client's own timeout before we stop waiting for it


class JavaUnavailable(RuntimeError):
    """The Java column cannot run here (no JDK, no jars: make kafka): the rows fail with this message."""


def classpath_jars() -> list[Path]:
    """kafka-clients first, then its runtime jars and log4j2 (the driver's log4j2.properties)."""
    try:
        return kafka_client_jars(CLIENT_JARS + CLIENT_LOGGING_JARS)
    except KafkaUnavailable as exc:
        raise JavaUnavailable(str(exc)) from exc


def kafka_clients_version() -> str | None:
    try:
        return classpath_jars()[0].name.removeprefix("kafka-clients-").removesuffix(".jar")
    except JavaUnavailable:
        return None


def _tools() -> tuple[str, str]:
    java, javac = shutil.which("java"), shutil.which("javac")
    if not java or not javac:
        raise JavaUnavailable("the Java column needs a JDK 17+ (java and javac on PATH; "
                              "apt-get install openjdk-17-jdk-headless)")
    return java, javac


_LOG4J = """status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %d{HH:mm:ss.SSS} %-5level [%t] %c{1}: %msg%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = err
"""


def build(javac: str, jars: list[Path]) -> Path:
    """Compile the driver once per source/jar set; returns the directory holding KwireDriver.class."""
    h = hashlib.sha256()
    for src in SOURCES:
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    for part in [j.name for j in jars] + [_LOG4J, "--release 17"]:
        h.update(part.encode())
    out = Path(tempfile.gettempdir()) / "kwire-java-driver" / h.hexdigest()[:16]
    if (out / "KwireDriver.class").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=out.parent))
    proc = subprocess.run([javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-d", str(work),
                           "-cp", os.pathsep.join(map(str, jars)), *map(str, SOURCES)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise JavaUnavailable(f"javac failed: {proc.stderr.strip()[-2000:]}")
    (work / "log4j2.properties").write_text(_LOG4J)
    try:
        os.rename(work, out)  # atomic: a concurrent worker's build of the same source wins equally
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
    return out


class Driver:
    """One driver JVM; ``call`` is thread-safe and answers are matched to calls by id."""

    def __init__(self, log_name: str | None = None):
        java, javac = _tools()
        jars = classpath_jars()
        classes = build(javac, jars)
        # the JVM's stderr (the client's WARN/ERROR log lines): one file per pytest-xdist worker, rewritten each run
        log_name = log_name or f"driver-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
        self.log_path = Path(tempfile.gettempdir()) / "kwire-java-driver" / f"{log_name}.log"
        self._log = open(self.log_path, "wb")
        cp = os.pathsep.join([str(classes)] + [str(j) for j in jars])
        self.proc = subprocess.Popen(
            [java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx768m",
             f"-Dlog4j2.configurationFile={classes / 'log4j2.properties'}", "-cp", cp, "KwireDriver"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[int, list] = {}  # id -> [event, answer]
        self._dead: str | None = None
        hello = threading.Event()
        self._pending[0] = [hello, None]
        threading.Thread(target=self._read, name="java-driver-reader", daemon=True).start()
        if not hello.wait(60):
            self.stop()
            raise JavaUnavailable(f"the driver JVM did not start within 60 s ({self._tail()})")
        answer = self._pending.pop(0)[1]
        if answer is None or "result" not in answer:
            raise JavaUnavailable(f"the driver JVM did not start: {self._dead or answer} ({self._tail()})")
        self.versions: dict = answer["result"]

    def _tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace").strip()[-1500:]
        except OSError:
            return ""

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                slot = self._pending.get(msg.get("id"))
            if slot is not None:
                slot[1] = msg
                slot[0].set()
        self._dead = f"the driver JVM exited (code {self.proc.wait()})"
        with self._lock:
            for slot in self._pending.values():
                slot[0].set()

    def call(self, op: str, timeout: float, **args):
        if self._dead:
            raise KafkaOpError("JAVA_DRIVER_DIED", f"{self._dead}: {self._tail()}")
        i = next(self._ids)
        slot = [threading.Event(), None]
        with self._lock:
            self._pending[i] = slot
            try:
                self.proc.stdin.write((json.dumps({"id": i, "op": op, **args}) + "\n").encode())
                self.proc.stdin.flush()
            except (OSError, ValueError) as exc:  # the JVM is gone (broken pipe) or stopped (closed stdin)
                self._pending.pop(i, None)
                raise KafkaOpError("JAVA_DRIVER_DIED", f"{self._dead or exc}: {self._tail()}") from exc
        try:
            if not slot[0].wait(timeout + _MARGIN):
                raise KafkaOpError("REQUEST_TIMED_OUT", f"the Java driver did not answer {op} within "
                                                        f"{timeout + _MARGIN:.0f} s")
        finally:
            with self._lock:
                self._pending.pop(i, None)
        msg = slot[1]
        if msg is None:
            raise KafkaOpError("JAVA_DRIVER_DIED", f"{self._dead}: {self._tail()}")
        if "error" in msg:
            raise KafkaOpError(msg["error"], msg.get("detail", ""))
        return msg.get("result")

    def stop(self):
        try:
            self.proc.stdin.close()  # the driver halts when its stdin closes
        except OSError:
            pass
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # by PID, this process only
            self.proc.wait(5)
        self._log.close()


_driver: Driver | None = None
versions_seen: dict | None = None  # what the driver JVM reported (kafka-clients, Java), kept for the report
_driver_error: JavaUnavailable | None = None  # a failed start fails every later row at once, with its reason
_driver_lock = threading.Lock()


def driver() -> Driver:
    global _driver, _driver_error, versions_seen
    with _driver_lock:
        if _driver_error is not None:
            raise _driver_error
        if _driver is None:
            try:
                _driver = Driver()
                versions_seen = _driver.versions
            except JavaUnavailable as exc:
                _driver_error = exc
                raise
        return _driver


@atexit.register
def stop_driver() -> None:
    global _driver
    with _driver_lock:
        if _driver is not None:
            _driver.stop()
            _driver = None


# ---------------------------------------------------------------- value encoding
def _b64(v: bytes | None) -> str | None:
    return None if v is None else base64.b64encode(v).decode()


def _bytes(v: str | None) -> bytes | None:
    return None if v is None else base64.b64decode(v)


def _rec(r: Rec) -> dict:
    return {"k": _b64(r.key), "v": _b64(r.value), "h": [[k, _b64(v)] for k, v in r.headers],
            "ts": r.timestamp, "p": r.partition}


def _got(g: dict) -> Got:
    return Got(g["t"], g["p"], g["o"], _bytes(g["k"]), _bytes(g["v"]), [(k, _bytes(v)) for k, v in g["h"]],
               g["ts"], g["tt"])


class JavaClient(Client):
    name = "java"

    def __init__(self, bootstrap: str):
        super().__init__(bootstrap)
        self.d = driver()  # raises JavaUnavailable: the row errors, it is not skipped

    def _call(self, op: str, timeout: float = 20.0, **args):
        return self.d.call(op, timeout, bootstrap=self.bootstrap, **args)

    # ------------------------------------------------------------ produce
    def _produce(self, conf: dict, topic, records, timeout) -> list[Acked]:
        acked = self._call("produce", timeout, topic=topic, records=[_rec(r) for r in records],
                           timeout_ms=int(timeout * 1000), conf=conf)
        return [Acked(p, o if o >= 0 else None) for p, o in acked]

    def produce(self, topic, records, codec="none", *, max_request_size=None, timeout=20.0):
        conf = {"compression.type": codec, "enable.idempotence": "false"}
        if max_request_size:
            conf["max.request.size"] = max_request_size
        return self._produce(conf, topic, records, timeout)

    def produce_idempotent(self, topic, records, timeout=20.0):
        return self._produce({"enable.idempotence": "true"}, topic, records, timeout)

    def produce_transactional(self, topic, txn_id, committed, aborted, timeout=20.0):
        self._call("produce_transactional", timeout * 3, topic=topic, timeout_ms=int(timeout * 1000),
                   committed=[_rec(r) for r in committed], aborted=[_rec(r) for r in aborted],
                   conf={"transactional.id": txn_id, "transaction.timeout.ms": 60000})

    # ------------------------------------------------------------ consume
    def consume(self, topic, partitions=(0,), start="beginning", *, count, timeout=15.0, on_positioned=None,
                read_committed=False, max_fetch_bytes=None):
        conf = {"isolation.level": "read_committed" if read_committed else "read_uncommitted"}
        if max_fetch_bytes:
            conf["fetch.max.bytes"] = max_fetch_bytes
        where = {"timestamp": start[1]} if isinstance(start, tuple) else start
        opened = self._call("consumer_open", timeout, topic=topic, partitions=list(partitions), start=where,
                            conf=conf)
        h = opened["h"]
        try:
            if on_positioned is not None:
                on_positioned()  # consumer_open resolved every partition's position (KafkaConsumer.position)
            got = self._call("consumer_read", timeout, h=h, count=count, timeout_ms=int(timeout * 1000))
            return [_got(g) for g in got]
        finally:
            self.d.call("close", 15, h=h)

    def offset_for_time(self, topic, partition, ts):
        return self._call("offset_for_time", 15, topic=topic, partition=partition, ts=ts)

    def watermarks(self, topic, partition):
        low, high = self._call("watermarks", 25, topic=topic, partition=partition)
        return low, high

    # ------------------------------------------------------------ groups
    def group_member(self, group, topics, **kw):
        h = self._call("member_open", 15, group=group, topics=list(topics), conf=kw)
        return _Member(self, h)

    # ------------------------------------------------------------ admin
    def create_topic(self, topic, partitions=1, configs=None):
        self._call("create_topic", 20, topic=topic, partitions=partitions, configs=dict(configs or {}))

    def delete_topic(self, topic):
        self._call("delete_topic", 20, topic=topic)

    def list_topics(self):
        return set(self._call("list_topics", 20))

    def partition_count(self, topic):
        return self._call("partition_count", 20, topic=topic)

    def create_partitions(self, topic, total):
        self._call("create_partitions", 20, topic=topic, total=total)

    def describe_configs(self, topic):
        return self._call("describe_configs", 20, topic=topic)

    def alter_configs(self, topic, configs):
        self._call("alter_configs", 20, topic=topic, configs=configs)

    def delete_records(self, topic, partition, before):
        return self._call("delete_records", 20, topic=topic, partition=partition, before=before)


class _Member(GroupMember):
    def __init__(self, client: JavaClient, h: int):
        self.d = client.d
        self.h = h
        self._assigned: set[tuple[str, int]] = set()

    def poll(self, timeout=0.2):
        res = self.d.call("member_poll", timeout + 30, h=self.h, timeout_ms=int(timeout * 1000))
        self._assigned = {(t, p) for t, p in res["assignment"]}
        return [_got(g) for g in res["records"]]

    def assignment(self):
        return set(self._assigned)

    def commit(self, offsets):
        self.d.call("member_commit", 15, h=self.h, offsets=[[t, p, o] for (t, p), o in offsets.items()])

    def committed(self, tp):
        return self.d.call("member_committed", 10, h=self.h, topic=tp[0], partition=tp[1])

    def close(self):
        self.d.call("close", 10, h=self.h)
