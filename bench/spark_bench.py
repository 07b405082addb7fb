"""kwire.spark: batch read throughput against a bare consumer, and a streaming query's time to
its first batch, on ``local[2]``.

1. Batch, side by side in one run: 100 B and 1 KB records on 2 partitions of a kwire broker (a
   subprocess, log on disk). For each size, rounds alternate three readers of the same records:
   - ``count``: ``spark.read.format("kwire").load().count()``;
   - ``sum(length(value))``: the same read with the value column materialised (rows are built
     and each value is looked at, not only counted);
   - ``bare``: one confluent-kafka consumer (both partitions) appending each value to a list.
   Each reader's median over the rounds is taken; budget: each Spark reader (two tasks) >= 1.5x
   the bare consumer's rows/s.
2. Streaming, with the session up: a new topic holding a few records, then
   ``readStream.format("kwire")...writeStream.format("noop").start()``; the time from just before
   ``start()`` to the end of the first batch that read the records (its progress's trigger start
   plus its triggerExecution time). Measured first as the first query of a fresh session (no
   query has run: the Python workers, the py4j paths and the source's code all start cold), and
   then again after the batch reads. Budget: <= 3 s, each.

``run(quick=False)`` returns rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import time
import uuid

from bench.server_bench import _create_topic, _producer, kwire_broker

RATIO_BUDGET = 1.5           # Spark rows/s over bare consumer rows/s, two tasks
FIRST_BATCH_BUDGET_S = 3.0   # streaming start() -> first batch in the sink


def ratio_row(name: str, spark_rps: float, bare_rps: float, budget: float = RATIO_BUDGET) -> tuple:
    """A ``(name, ratio, "x", ">= budget", PASS/MISS)`` row."""
    ratio = spark_rps / bare_rps if bare_rps else 0.0
    return (name, round(ratio, 2), "x", f">= {budget}", "PASS" if ratio >= budget else "MISS")


def latency_row(name: str, seconds: float, budget: float = FIRST_BATCH_BUDGET_S) -> tuple:
    """A ``(name, seconds, "s", "<= budget", PASS/MISS)`` row."""
    return (name, round(seconds, 2), "s", f"<= {budget}", "PASS" if seconds <= budget else "MISS")


def first_batch_end(progresses: list[dict]) -> float | None:
    """The wall-clock time (epoch seconds) at which the first batch that read rows finished:
    its progress's ``timestamp`` (trigger start, ISO 8601 UTC) plus ``durationMs.triggerExecution``."""
    for p in progresses:
        if p.get("numInputRows", 0) > 0:
            start = dt.datetime.strptime(p["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
            return start.timestamp() + p.get("durationMs", {}).get("triggerExecution", 0) / 1000.0
    return None


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _fill(bootstrap: str, topic: str, n: int, size: int) -> None:
    p = _producer(bootstrap)
    value = b"x" * size
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
    dt_ = time.perf_counter() - t0
    c.close()
    return n / dt_


def _spark_count(spark, topic: str, n: int) -> float:
    t0 = time.perf_counter()
    count = spark.read.format("kwire").option("subscribe", topic).load().count()
    dt_ = time.perf_counter() - t0
    assert count == n, (count, n)
    return n / dt_


def _spark_sum(spark, topic: str, n: int, size: int) -> float:
    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    row = (spark.read.format("kwire").option("subscribe", topic).load()
           .agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0])
    dt_ = time.perf_counter() - t0
    assert (row.n, row.bytes) == (n, n * size), (row, n, size)
    return n / dt_


def _first_batch(spark, bootstrap: str) -> float:
    """Seconds from just before ``start()`` to the end of the first batch that read rows."""
    topic = f"spark-first-{uuid.uuid4().hex[:6]}"
    _create_topic(bootstrap, topic, 2)
    _fill(bootstrap, topic, 100, 100)
    t0 = time.time()
    q = (spark.readStream.format("kwire").option("subscribe", topic).option("startingOffsets", "earliest")
         .load().writeStream.format("noop").trigger(processingTime="100 milliseconds").start())
    try:
        deadline = time.monotonic() + 120
        end = None
        while end is None and time.monotonic() < deadline:
            time.sleep(0.05)
            end = first_batch_end(q.recentProgress)
        if end is None:
            raise RuntimeError(f"no batch within 120 s: {q.exception()}")
        return end - t0
    finally:
        q.stop()


def _batch(spark, bootstrap: str, size: int, n: int, rounds: int) -> list[tuple]:
    topic = f"spark-bench-{size}-{uuid.uuid4().hex[:6]}"
    _create_topic(bootstrap, topic, 2)
    _fill(bootstrap, topic, n, size)
    _spark_count(spark, topic, n)             # warm-up: the page cache, the Python workers
    bare, count, summed = [], [], []
    for _ in range(rounds):
        bare.append(_bare(bootstrap, topic, n))
        count.append(_spark_count(spark, topic, n))
        summed.append(_spark_sum(spark, topic, n, size))
    b, c, s = (statistics.median(x) for x in (bare, count, summed))
    label = f"{size} B" if size < 1000 else f"{size // 1000} KB"
    print(f"batch read of {n:,} x {label} (load {load_average()}): bare consumer {b:,.0f} rows/s, "
          f"Spark count {c:,.0f} rows/s ({c / b:.2f}x), Spark sum(length(value)) {s:,.0f} rows/s "
          f"({s / b:.2f}x); rounds bare {[round(x) for x in bare]}, count {[round(x) for x in count]}, "
          f"sum {[round(x) for x in summed]}", flush=True)
    return [(f"spark {label} bare consumer rows/s", round(b), "rows/s", "info", "info"),
            (f"spark {label} count rows/s", round(c), "rows/s", "info", "info"),
            (f"spark {label} sum(length(value)) rows/s", round(s), "rows/s", "info", "info"),
            ratio_row(f"spark {label} count / bare consumer", c, b),
            ratio_row(f"spark {label} sum(length(value)) / bare consumer", s, b)]


def run(quick: bool = False) -> list[tuple]:
    from kwire.testing.spark import local_session
    import kwire.spark
    rounds = 3 if quick else 5
    sizes = [(100, 300_000 if quick else 1_000_000), (1000, 100_000 if quick else 400_000)]
    rows: list[tuple] = []
    print(f"load average at start: {load_average()}", flush=True)
    with kwire_broker() as (bootstrap, _proc):
        t0 = time.perf_counter()
        spark = local_session("kwire-spark-bench")
        up = time.perf_counter() - t0
        try:
            kwire.spark.register(spark, bootstrap_servers=bootstrap)
            cold = _first_batch(spark, bootstrap)
            print(f"session up in {up:.1f} s; first streaming query of the session: first batch "
                  f"{cold:.2f} s after start() (load {load_average()})", flush=True)
            rows.append(("spark session up (before the first query)", round(up, 1), "s", "info", "info"))
            rows.append(latency_row("spark first batch, first query of a session", cold))
            for size, n in sizes:
                rows += _batch(spark, bootstrap, size, n, rounds)
            warm = [_first_batch(spark, bootstrap) for _ in range(3)]
            print(f"later streaming queries: first batch {[round(x, 2) for x in warm]} s after start() "
                  f"(load {load_average()})", flush=True)
            rows.append(latency_row("spark first batch, later query (max of 3)", max(warm)))
        finally:
            spark.stop()
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(r)
