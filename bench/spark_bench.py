"""kwire.spark: batch read throughput and streaming latency on local[2].

1. Batch: 1,000,000 x 100 B records on 2 partitions (200,000 with --quick) of a kwire broker
   (a subprocess, log on disk). ``spark.read.format("kwire").load().count()`` against a bare
   confluent-kafka consumer reading the same records into memory, in the same run, alternating,
   best of 2 rounds each. Budget: Spark rows/s >= 0.5 x bare consumer rows/s.
2. Streaming: a 100 ms processing-time trigger; a producer writes a record stamped with its
   send time every 50 ms; foreachBatch notes when each record reaches the sink. Reported: p50
   and p95 end-to-end latency per record (info: Spark's per-trigger planning dominates).

``run(quick=False)`` returns rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

import statistics
import sys
import threading
import time
import uuid

from bench.server_bench import _create_topic, _producer, kwire_broker

RATIO_BUDGET = 0.5


def _fill(bootstrap: str, topic: str, n: int) -> None:
    p = _producer(bootstrap)
    value = b"x" * 100
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % 2)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0


def _bare(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"b-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False})
    t0 = time.perf_counter()
    c.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    got = []
    while len(got) < n:
        for m in c.consume(20_000, 1.0):
            if m.error() is None:
                got.append(m.value())
    dt = time.perf_counter() - t0
    c.close()
    return n / dt


def _spark_count(spark, topic: str, n: int) -> float:
    t0 = time.perf_counter()
    count = spark.read.format("kwire").option("subscribe", topic).load().count()
    dt = time.perf_counter() - t0
    assert count == n, (count, n)
    return n / dt


def _latency(spark, bootstrap: str, seconds: float) -> list[float]:
    topic = f"spark-lat-{uuid.uuid4().hex[:6]}"
    _create_topic(bootstrap, topic, 2)
    lat: list[float] = []

    def sink(df, _batch_id):
        now = time.time()
        for r in df.select("value").collect():
            lat.append(now - float(r.value.decode()))

    q = (spark.readStream.format("kwire").option("subscribe", topic).option("startingOffsets", "earliest")
         .load().writeStream.foreachBatch(sink).trigger(processingTime="100 milliseconds").start())
    p = _producer(bootstrap, **{"linger.ms": 0})
    stop = time.monotonic() + seconds
    warm = time.monotonic() + 5      # the first micro-batches start the Python workers
    while time.monotonic() < stop:
        p.produce(topic, f"{time.time():.6f}".encode())
        p.poll(0)
        time.sleep(0.05)
        if warm and time.monotonic() > warm:
            lat.clear()
            warm = 0
    p.flush(30)
    time.sleep(1.5)
    q.stop()
    return sorted(lat)


def run(quick: bool = False) -> list[tuple]:
    from kwire.testing.spark import local_session
    import kwire.spark
    n = 200_000 if quick else 1_000_000
    rows = []
    with kwire_broker() as (bootstrap, _proc):
        topic = f"spark-bench-{uuid.uuid4().hex[:6]}"
        _create_topic(bootstrap, topic, 2)
        _fill(bootstrap, topic, n)
        spark = local_session("kwire-spark-bench")
        try:
            kwire.spark.register(spark, bootstrap_servers=bootstrap)
            _spark_count(spark, topic, n)           # warm-up: JVM, Python workers
            bare, sp = [], []
            for _ in range(2):
                bare.append(_bare(bootstrap, topic, n))
                sp.append(_spark_count(spark, topic, n))
            b, s = max(bare), max(sp)
            ratio = s / b
            print(f"batch read of {n:,} x 100 B: Spark count {s:,.0f} rows/s, bare confluent-kafka consumer "
                  f"{b:,.0f} rows/s, ratio {ratio:.2f} (rounds: spark {[round(x) for x in sp]}, "
                  f"bare {[round(x) for x in bare]})", flush=True)
            rows.append(("spark batch read rows/s", round(s), "rows/s", "info", "info"))
            rows.append(("spark batch read / bare consumer", round(ratio, 2), "x", f">= {RATIO_BUDGET}",
                         "PASS" if ratio >= RATIO_BUDGET else "MISS"))
            lat = _latency(spark, bootstrap, 10 if quick else 30)
            p50 = statistics.median(lat) * 1000
            p95 = lat[int(len(lat) * 0.95)] * 1000
            print(f"streaming end-to-end latency, 100 ms trigger: p50 {p50:.0f} ms, p95 {p95:.0f} ms "
                  f"over {len(lat)} records", flush=True)
            rows.append(("spark streaming latency p50", round(p50), "ms", "info", "info"))
            rows.append(("spark streaming latency p95", round(p95), "ms", "info", "info"))
        finally:
            spark.stop()
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(r)
