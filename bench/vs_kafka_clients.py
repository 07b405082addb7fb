"""The clients of ``python -m bench vs-kafka`` (bench/vs_kafka_bench.py), the same for both brokers:
Kafka's own perf tools (one JVM each, from kafka-tools), the fixed-rate end-to-end loop on
librdkafka, the untimed warm-up, and TxnPairBench.java compiled against Kafka's kafka-clients.
"""
from __future__ import annotations

import glob
import os
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.server_bench import _consumer, consume_throughput, produce_throughput
from bench.vs_kafka_lib import parse_consumer_performance, parse_producer_performance
from kwire.testing.apache_kafka import java_bin, jvm_flags, kafka_classpath, kafka_libs

HERE = Path(__file__).resolve().parent
TIMEOUT = 120.0


def create_topic(bootstrap: str, name: str, partitions: int = 1, rf: int = 1, config: dict | None = None) -> None:
    """Create ``name`` and wait until every partition has a leader and a full ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf, config=config or {})])[name].result(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=10).topics.get(name)
        if md and md.error is None and len(md.partitions) == partitions and all(
                p.leader >= 0 and len(p.isrs) == rf for p in md.partitions.values()):
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {name} not ready on {bootstrap}")


def delete_topic(bootstrap: str, name: str) -> None:
    """Delete ``name`` once a scenario is done with it: the full run writes ~15 GB per broker,
    which the brokers' disks need not hold at once."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([name])[name].result(TIMEOUT)


def isolated(name: str, *args) -> float:
    """bench.server_bench's ``name`` (produce_throughput or consume_throughput: seconds, timed
    inside) called with ``args`` in a fresh Python process, as the Java clients run in a fresh JVM
    each: every timed librdkafka run then starts from the same client state. Called in this
    long-lived process one after another (2,500,000 x 100 B, then 1 GB of 1 KB, ...), the client's
    CPU for the same 1 GB read back varied 2.5-3.5 s between runs with its heap's history, and
    the rate with it, more than the broker under test moved it."""
    if name not in ("produce_throughput", "consume_throughput"):
        raise ValueError(f"not a bench.server_bench client run: {name}")
    code = (f"from bench.server_bench import {name}\n"
            f"print(repr({name}(*{args!r})))")
    r = subprocess.run([sys.executable, "-c", code], cwd=HERE.parent, capture_output=True, text=True,
                       timeout=TIMEOUT + 600, stdin=subprocess.DEVNULL)
    if r.returncode:
        raise RuntimeError(f"{name}{args} exited {r.returncode}: {(r.stdout + r.stderr)[-1500:]}")
    return float(r.stdout.strip().splitlines()[-1])


def _java_tool(main: str, *args: str, timeout: float = 600) -> str:
    cmd = [java_bin(), *jvm_flags("512m", fast_start=False), "-cp", kafka_classpath(),
           f"org.apache.kafka.tools.{main}", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if r.returncode:
        raise RuntimeError(f"{main} exited {r.returncode}: {(r.stdout + r.stderr)[-1500:]}")
    return r.stdout


def producer_perf(bootstrap: str, topic: str, count: int, size: int, acks: str = "all"):
    """kafka-producer-perf-test: ``count`` records of ``size`` bytes as fast as it can.

    compression.type stays unset (the Java client's default is none): set explicitly to none, the
    tool ran 3.5-4x slower at 1 KB against either broker (4,000-4,800 against 13,500-19,700 rec/s,
    alternating on one kwire cluster), which had made every perf-test produce row client-bound."""
    out = _java_tool("ProducerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                     "--num-records", str(count), "--record-size", str(size), "--throughput", "-1",
                     "--command-property", f"acks={acks}", "--command-property", "linger.ms=5",
                     "--command-property", "batch.size=1000000")
    return parse_producer_performance(out)


def consumer_perf(bootstrap: str, topic: str, count: int):
    """kafka-consumer-perf-test: read ``count`` records from the start of ``topic`` (in a group)."""
    out = _java_tool("ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                     "--num-records", str(count), "--timeout", "60000",
                     "--command-property", "auto.offset.reset=earliest")
    return parse_consumer_performance(out)


def fixed_rate_latency(bootstrap: str, topic: str, rate: int, seconds: float, warmup: float = 1.0) -> list[float]:
    """End-to-end latencies (ms) at a fixed rate: one thread produces a 100 B record every 1/rate s
    (its send time inside) and between sends polls a consumer already reading the partition; the
    first ``warmup`` seconds are dropped."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "socket.nagle.disable": True,
                  "enable.idempotence": False, "compression.type": "none"})
    c = _consumer(bootstrap, **{"socket.nagle.disable": True})
    c.assign([TopicPartition(topic, 0, 0)])
    # both connected and the consumer's fetch going before the clock: one record there and back
    p.produce(topic, b"warm", partition=0)
    p.flush(TIMEOUT)
    deadline = time.perf_counter() + TIMEOUT
    while True:
        m = c.poll(0.1)
        if m is not None and m.error() is None and m.value() == b"warm":
            break
        if time.perf_counter() > deadline:
            raise RuntimeError("end-to-end: the warm-up record never came back")
    pad = b"x" * (100 - 12)
    total = int(rate * (seconds + warmup))
    skip = int(rate * warmup)
    interval = 1.0 / rate
    out: list[float] = []
    sent = received = 0
    try:
        t0 = time.perf_counter()
        deadline = t0 + seconds + warmup + TIMEOUT
        while received < total:
            now = time.perf_counter()
            if now > deadline:
                raise RuntimeError(f"end-to-end: {received}/{total} received")
            if sent < total and now >= t0 + sent * interval:
                p.produce(topic, struct.pack(">qI", time.perf_counter_ns(), sent) + pad, partition=0)
                p.poll(0)
                sent += 1
                continue
            wait = (t0 + sent * interval - now) if sent < total else 0.1
            m = c.poll(max(0.0, min(wait, 0.1)))
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(f"end-to-end: {m.error()}")
            if len(m.value()) != 100:
                continue
            ns, seq = struct.unpack_from(">qI", m.value())
            if seq >= skip:
                out.append((time.perf_counter_ns() - ns) / 1e6)
            received += 1
        p.flush(TIMEOUT)
        return out
    finally:
        c.close()


def txn_classpath(out_dir: str) -> str:
    """TxnPairBench.java (and TxnBench.java, whose helper it calls) compiled against Kafka's own
    kafka-clients."""
    libs = kafka_libs()
    jars = sorted(glob.glob(str(libs / "kafka-clients-*.jar"))) + sorted(glob.glob(str(libs / "slf4j-api-*.jar")))
    cp = os.pathsep.join(jars)
    subprocess.run(["javac", "-nowarn", "-d", out_dir, "-cp", cp, str(HERE / "java" / "TxnBench.java"),
                    str(HERE / "java" / "TxnPairBench.java")], check=True, timeout=300, capture_output=True)
    return f"{cp}{os.pathsep}{out_dir}"


def warm_up(bootstrap: str, run_id: str, partitions: int = 1, rf: int = 1, config: dict | None = None) -> None:
    """Untimed: 5,000 one-record produce requests, 100 MB in 1 KB records and their read-back, so the
    JVM's JIT has compiled Kafka's produce and fetch paths before anything is measured (kwire gets
    the same, which does nothing for it)."""
    topic = f"vs-warm-{run_id}-{uuid.uuid4().hex[:4]}"
    create_topic(bootstrap, topic, partitions, rf, config)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": False})
    for i in range(5000):
        p.produce(topic, b"w" * 100, partition=i % partitions)
        p.poll(0)
        if i % 100 == 99:
            p.flush(TIMEOUT)
    p.flush(TIMEOUT)
    produce_throughput(bootstrap, topic, 100_000, 1024)
    consume_throughput(bootstrap, topic, partitions, 105_000)
