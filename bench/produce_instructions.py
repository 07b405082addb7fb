"""Broker instructions per produced record and per Produce request, load-independent (issue #29).

``python -m bench.produce_instructions [--tree DIR] [--workload W] [--count N] [--size B]
[--batch K] [--version V] [--native | --profile FILE]``

On the 2-core bench machine the client and the broker share the CPU, so the broker's CPU per
produce request and per record decides vs-kafka's small-record produce rows; wall-clock rates
are noise while other work runs. This starts ``python -m kwire serve`` of ``--tree`` (default:
this checkout) under valgrind's callgrind with instrumentation off, creates a one-partition
topic, warms the produce path up (untimed, uncounted), then turns instrumentation on for the
workload alone (``callgrind_control -i on/off``) and reports the instructions the broker
executed (Ir), per record and per Produce request (counted as the calls of the C record walk,
one per batch: one partition, one batch per request, as both clients send here). The broker
runs with vs-kafka's settings (no metrics endpoint, whose per-request counting would add to
the figures); a ``--native`` run counts the requests with the metrics endpoint instead.

Workloads (``--workload``):

- ``rdkafka``: confluent-kafka with vs-kafka's producer settings (bench.server_bench
  produce_throughput: acks=all, linger.ms=5, batch.size 1 MB, no compression, not idempotent);
- ``java``: Kafka's ProducerPerformance as vs-kafka runs it (acks=all, linger.ms=5,
  batch.size=1000000);
- ``replay``: deterministic: pre-built Produce requests (``--version``, default 10 as
  librdkafka 2.16 sends; 13, with topic ids, as the Java producer), one batch of ``--batch``
  records each (default 3,000: librdkafka's ~2,900 per request at native speed here; the Java
  tool's were ~1,500), up to 5 in flight, acks=-1, not idempotent. The real clients batch by time (linger.ms, and how fast the broker answers), so under
  callgrind's slowdown their requests carry many more records than at native speed; replay
  keeps records per request fixed, so two trees are compared on the same requests.

``--native`` runs without valgrind (records per request at native speed, to choose ``--batch``,
and the broker's utime/stime); ``--profile FILE`` cProfiles the broker's loop thread (CPU
time) over the workload alone. Callgrind counts vary by a few percent run to run (how the
bytes arrive: recv sizes, loop turns); compare trees over more than one run.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu(pid: int) -> tuple[float, float]:
    """utime and stime (s) of ``pid``, every thread."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return int(f[11]) / tck, int(f[12]) / tck


def _walk_calls(text: str) -> int:
    """Calls of kwire.log._walk's walk_records in a callgrind dump (names are compressed:
    ``cfn=(id) name`` once, ``cfn=(id)`` after; each followed by ``calls=N ...``)."""
    names: dict[str, str] = {}
    n = 0
    current = None
    for line in text.splitlines():
        if line.startswith(("fn=(", "cfn=(")):
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
            if m.group(2):
                names[m.group(1)] = m.group(2)
            current = names.get(m.group(1), "") if line.startswith("cfn") else None
        elif line.startswith("calls=") and current is not None:
            if current.endswith("walk_records") or current.startswith("walk_records"):
                n += int(line[6:].split()[0])
            current = None
    return n


def _produce_requests(metrics_port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=60).read().decode()
    out = {}
    for m in re.finditer(r'^kafka_network_requestmetrics_requests_total\{request="Produce",version="(\d+)"\} (\S+)$',
                         text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


class Broker:
    def __init__(self, tree: Path, callgrind: bool, profile: str | None = None):
        # the metrics endpoint counts requests in a native run only: under callgrind it would
        # add its per-request counting to the instructions (the bench's brokers run without)
        self.tree = tree
        self.port, self.mport = _free_port(), _free_port()
        self.data = tempfile.mkdtemp(prefix="kwire-instr-")
        self.out = os.path.join(self.data, "callgrind.out") if callgrind else None
        self.profile = profile
        cmd = [sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{self.port}",
               "--data-dir", os.path.join(self.data, "d"), "--log-level", "WARNING",
               "--override", "group.initial.rebalance.delay.ms=0",
               *(() if callgrind else ("--override", f"metrics.listen=127.0.0.1:{self.mport}"))]
        if profile:   # cProfile of the whole run (start-up and warm-up included), written at exit
            # (kwire serve ends with os._exit after the atexit hooks: the dump is one of them)
            # the workload alone: SIGUSR1 enables, SIGUSR2 disables (instr()); CPU time of the
            # loop's thread, not the wall clock the machine's load inflates
            cmd[1:3] = ["-c", "import atexit, cProfile, runpy, signal, sys, time; "
                        "p = cProfile.Profile(time.thread_time_ns, 1e-9); "
                        "signal.signal(signal.SIGUSR1, lambda *_: p.enable()); "
                        "signal.signal(signal.SIGUSR2, lambda *_: p.disable()); "
                        f"atexit.register(p.dump_stats, {profile!r}); sys.argv[0] = 'kwire'; "
                        "runpy.run_module('kwire', run_name='__main__', alter_sys=True)"]
        elif callgrind:
            cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={self.out}", *cmd]
        env = dict(os.environ, PYTHONPATH=str(tree))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "kwire-bench-pycache")
        self.log = open(os.path.join(self.data, "broker.log"), "wb")
        self.proc = subprocess.Popen(cmd, cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 600
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"broker did not start: {self.tail()}")
                time.sleep(0.5)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def tail(self) -> str:
        self.log.flush()
        return Path(self.data, "broker.log").read_bytes()[-2000:].decode(errors="replace")

    def instr(self, on: bool) -> None:
        if self.profile:
            os.kill(self.proc.pid, signal.SIGUSR1 if on else signal.SIGUSR2)
            time.sleep(0.2)
            return
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(self.proc.pid)], check=True,
                       capture_output=True, timeout=300)

    def close(self) -> tuple[int, int] | None:
        """Stop it by PID; under callgrind, the instructions counted (its final dump) and the
        calls of the C record walk counted (one per record batch: the Produce requests here,
        one partition and one batch each)."""
        self.proc.terminate()
        try:
            self.proc.wait(300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)
        self.log.close()
        total = None
        if self.out:
            total = (0, 0)
            for f in sorted(Path(self.data).glob("callgrind.out*")):
                text = f.read_text(errors="replace")
                m = re.search(r"^totals: (\d+)", text, re.M)
                total = (total[0] + (int(m.group(1)) if m else 0), total[1] + _walk_calls(text))
            keep = os.environ.get("KWIRE_INSTR_KEEP")
            if keep:
                for f in Path(self.data).glob("callgrind.out*"):
                    shutil.copy(f, os.path.join(keep, f.name))
        shutil.rmtree(self.data, ignore_errors=True)
        return total


def _topic_id(bootstrap: str, topic: str):
    import uuid

    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    d = admin.describe_topics(TopicCollection([topic]))[topic].result(60)
    tid = d.topic_id
    return uuid.UUID(int=((tid.get_most_significant_bits() & (2**64 - 1)) << 64)
                     | (tid.get_least_significant_bits() & (2**64 - 1)))


def _replay_requests(topic: str, count: int, size: int, batch: int, version: int, topic_id=None):
    """A client connection and its pre-encoded Produce requests: one batch of ``batch`` records each."""
    from kwire.codec.apis import api
    from kwire.codec.records import build_batch
    from kwire.connection import KafkaClientConnection

    conn = KafkaClientConnection("rdkafka")
    a = api("Produce")
    R = a.request   # noqa: N806
    value = b"x" * size
    now = int(time.time() * 1000)
    reqs = []
    for i in range(0, count, batch):
        records = build_batch([(None, value, [], now) for _ in range(min(batch, count - i))])
        pd = R.struct("PartitionProduceData")(index=0, records=records)
        td = (R.struct("TopicProduceData")(topic_id=topic_id, partition_data=[pd]) if version >= 13
              else R.struct("TopicProduceData")(name=topic, partition_data=[pd]))
        reqs.append(conn.send_request(a, version, R.cls(transactional_id=None, acks=-1, timeout_ms=30000,
                                                         topic_data=[td]))[1])
    return conn, reqs


def replay(bootstrap: str, conn, reqs: list[bytes], in_flight: int = 5) -> None:
    """Send ``reqs`` with up to ``in_flight`` unanswered (as a producer's max.in.flight); every
    partition answer must be NONE."""
    from kwire.connection import NEED_DATA  # noqa: PLC0415

    host, port = bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent = answered = 0
    try:
        while answered < len(reqs):
            while sent < len(reqs) and sent - answered < in_flight:
                s.sendall(reqs[sent])
                sent += 1
            while (ev := conn.next_response()) is NEED_DATA:
                data = s.recv(1 << 16)
                if not data:
                    raise RuntimeError("broker closed the connection")
                conn.receive_data(data)
            for t in ev.body.responses:
                for pr in t.partition_responses:
                    if pr.error_code:
                        raise RuntimeError(f"produce answered error {pr.error_code}")
            answered += 1
    finally:
        s.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=str(ROOT))
    ap.add_argument("--workload", default="rdkafka", choices=("rdkafka", "java", "replay"))
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=3000)
    ap.add_argument("--version", type=int, default=10)
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--profile", help="cProfile the broker (no valgrind) into this file")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from confluent_kafka import Producer

    from bench.server_bench import produce_throughput
    from bench.vs_kafka_clients import create_topic, producer_perf

    if a.profile:
        a.native = True
    b = Broker(Path(a.tree).resolve(), callgrind=not a.native, profile=a.profile and os.path.abspath(a.profile))
    try:
        topic = "instr"
        create_topic(b.bootstrap, topic)
        # warm-up (uncounted): the produce path imported and run, as the vs-kafka warm-up does
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": False})
        for i in range(2000):
            p.produce(topic, b"w" * a.size)
            if i % 200 == 199:
                p.flush(120)
        p.flush(120)
        # and the workload's own first requests: the Java client's InitProducerId and Produce
        # v13, a replay's version (each API version's codec is generated on its first use)
        if a.workload == "java":
            producer_perf(b.bootstrap, topic, 2000, a.size)
        elif a.workload == "replay":
            tid = _topic_id(b.bootstrap, topic) if a.version >= 13 else None
            replay(b.bootstrap, *_replay_requests(topic, 3 * a.batch, a.size, a.batch, a.version, tid))
        conn, reqs = (_replay_requests(topic, a.count, a.size, a.batch, a.version, tid) if a.workload == "replay"
                      else (None, None))
        before = _produce_requests(b.mport) if a.native else {}
        cpu0 = _cpu(b.proc.pid)
        if not a.native or a.profile:
            b.instr(True)
        t0 = time.perf_counter()
        if a.workload == "rdkafka":
            produce_throughput(b.bootstrap, topic, a.count, a.size)
        elif a.workload == "java":
            producer_perf(b.bootstrap, topic, a.count, a.size)
        else:
            replay(b.bootstrap, conn, reqs)
        dt = time.perf_counter() - t0
        if not a.native or a.profile:
            b.instr(False)
        cpu1 = _cpu(b.proc.pid)
        after = _produce_requests(b.mport) if a.native else {}
    except BaseException:
        print(b.tail(), file=sys.stderr)
        b.close()
        raise
    total = b.close()
    reqs_n = sum(after.values()) - sum(before.values()) if a.native else total[1]
    versions = {v: after[v] - before.get(v, 0) for v in after if after[v] - before.get(v, 0)}
    line = (f"tree={a.tree} workload={a.workload} count={a.count} size={a.size} "
            f"{'batch=' + str(a.batch) + ' ' if a.workload == 'replay' else ''}"
            f"produce requests={reqs_n:.0f} (versions {versions}) records/request={a.count / max(reqs_n, 1):.1f} "
            f"wall={dt:.1f}s")
    if a.native:
        line += f" broker utime={cpu1[0] - cpu0[0]:.2f}s stime={cpu1[1] - cpu0[1]:.2f}s"
    if total is not None:
        line += f" Ir={total[0]:,} Ir/record={total[0] / a.count:,.0f} Ir/request={total[0] / max(reqs_n, 1):,.0f}"
    print(line, flush=True)


if __name__ == "__main__":
    main()
