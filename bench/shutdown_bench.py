"""Clean shutdown with 5,000 partitions (issue 32): SIGTERM to exit, on a real disk.

A ``kwire serve`` subprocess on a data dir in the system temp dir (a real file system, not
tmpfs: the fsyncs are the cost) creates 5 topics x 1,000 partitions, takes one 100 B record
on each (one Produce per topic), then gets SIGTERM; the figure is the wall time from the
signal to the process's exit (flush of every log, producer-state snapshots, leader-epoch
and offset checkpoints, the clean-shutdown marker). Budget: <= 5 s (a 30 s grace period
with room to spare). The broker is started again on the same dir to check the shutdown was
clean: no recovery at start-up (its log says so), every record readable; that start's time
is shown too. Best and median of 3 runs (1 quick), a fresh data dir each.

``KWIRE_BENCH_SHUTDOWN_KAFKA=1``: the same fill and SIGTERM -> exit on Apache Kafka 4.3.1
(kwire.testing.apache_kafka, one combined node, heap 1 GB), a run after each kwire run, so
both see the same machine load; an info row. Kafka elects the new partitions' leaders after
CreateTopics answers, so its produce is retried per partition (up to 300 s).

``run(quick=False)`` -> rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPICS = 5
PER_TOPIC = 1000
BUDGET_S = 5.0


def _start(data_dir: str, port: int, log_path: str) -> subprocess.Popen:
    from kwire.testing.broker import wait_for_port

    out = open(log_path, "ab")
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{port}",
                             "--data-dir", data_dir, "--log-level", "INFO", "--override", "metrics.listen="],
                            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    out.close()
    wait_for_port("127.0.0.1", port, timeout=120, proc=proc)
    return proc


def _fill(port: int, retry_s: float = 0.0) -> None:
    """The topics and one record on each partition; a partition's produce error fails at once,
    or is retried for up to ``retry_s`` (Kafka, whose leaders come after CreateTopics)."""
    from kwire.codec.apis import api
    from kwire.codec.records import build_batch
    from kwire.testing.client import WireClient

    with WireClient(f"127.0.0.1:{port}", timeout=120) as c:
        C = api("CreateTopics").request
        topics = [C.struct("CreatableTopic")(name=f"sd-{t}", num_partitions=PER_TOPIC, replication_factor=1,
                                             configs=[]) for t in range(TOPICS)]
        r = c.request("CreateTopics", 5, topics=topics, timeout_ms=120000, validate_only=False)
        assert [t.error_code for t in r.topics] == [0] * TOPICS
        P = api("Produce").request
        todo = {t: list(range(PER_TOPIC)) for t in range(TOPICS)}
        deadline = time.monotonic() + retry_s
        while True:
            for t in list(todo):
                data = [P.struct("TopicProduceData")(name=f"sd-{t}", partition_data=[
                    P.struct("PartitionProduceData")(index=p, records=build_batch([(None, b"v" * 100)]))
                    for p in todo[t]])]
                r = c.request("Produce", 9, transactional_id=None, acks=-1, timeout_ms=60000, topic_data=data)
                todo[t] = [p.index for x in r.responses for p in x.partition_responses if p.error_code != 0]
                if not todo[t]:
                    del todo[t]
            if not todo:
                return
            assert time.monotonic() < deadline, f"{sum(map(len, todo.values()))} partitions not produced to"
            time.sleep(1)


def _check(port: int) -> None:
    from kwire.testing.client import WireClient

    with WireClient(f"127.0.0.1:{port}", timeout=120) as c:
        for t in range(TOPICS):
            for p in (0, PER_TOPIC // 2, PER_TOPIC - 1):
                assert [r.value for r in c.consume(f"sd-{t}", 1, p)] == [b"v" * 100]


def _stop(proc: subprocess.Popen) -> float:
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return float("inf")
    return time.perf_counter() - t0


def one_run() -> tuple[float, float, bool]:
    """(SIGTERM -> exit s, restart s, restart needed no recovery)"""
    from kwire.testing.broker import free_port

    data_dir = tempfile.mkdtemp(prefix="kwire-shutdown-bench-")
    log_path = data_dir + ".log"
    proc = None
    try:
        port = free_port()
        proc = _start(data_dir, port, log_path)
        _fill(port)
        stop_s = _stop(proc)
        t0 = time.perf_counter()
        proc = _start(data_dir, port, log_path)
        restart_s = time.perf_counter() - t0
        _check(port)
        _stop(proc)
        proc = None
        text = Path(log_path).read_text(errors="replace")
        clean = "unclean shutdown" not in text
        return stop_s, restart_s, clean
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
        if not os.environ.get("KWIRE_BENCH_KEEP_LOG"):
            try:
                os.unlink(log_path)
            except FileNotFoundError:
                pass


def kafka_one_run() -> float:
    """SIGTERM -> exit of one Apache Kafka 4.3.1 node after the same fill (s)."""
    from kwire.testing.apache_kafka import ApacheKafka

    k = ApacheKafka(heap="1g")
    k.start()
    try:
        node = k.nodes[0]
        _fill(node.port, retry_s=300)
        return _stop(node.proc)
    finally:
        k.close()


def run(quick: bool = False):
    with_kafka = os.environ.get("KWIRE_BENCH_SHUTDOWN_KAFKA") == "1"
    runs, kafka = [], []
    for i in range(1 if quick else 3):
        la = os.getloadavg()[0]
        runs.append(one_run())
        s, r, c = runs[-1]
        print(f"run {i}: SIGTERM -> exit {s:.2f} s, restart {r:.2f} s, clean {c} (load {la:.1f})", flush=True)
        if with_kafka:
            la = os.getloadavg()[0]
            kafka.append(kafka_one_run())
            print(f"run {i}: Apache Kafka 4.3.1 SIGTERM -> exit {kafka[-1]:.2f} s (load {la:.1f})", flush=True)
    stops = [r[0] for r in runs]
    best, med = min(stops), statistics.median(stops)
    extra = [("Apache Kafka 4.3.1 shutdown 5,000 partitions (median)", round(statistics.median(kafka), 2), "s", "-",
              "info")] if kafka else []
    return extra + [
        ("shutdown 5,000 partitions (best)", round(best, 2), "s", f"<= {BUDGET_S}", "PASS" if best <= BUDGET_S else "MISS"),
        ("shutdown 5,000 partitions (median)", round(med, 2), "s", f"<= {BUDGET_S}", "PASS" if med <= BUDGET_S else "MISS"),
        ("restart after it, no recovery", all(r[2] for r in runs), "", "True", "PASS" if all(r[2] for r in runs) else "MISS"),
        ("restart 5,000 partitions (median)", round(statistics.median(r[1] for r in runs), 2), "s", "-", "info"),
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
