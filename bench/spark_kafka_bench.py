"""Spark's own Kafka connector against kwire's data source, side by side on the same data.

``python -m bench spark_kafka`` (needs the ``spark`` extra and ``make spark-kafka``'s jars: the
spark-sql-kafka-0-10 connector PySpark does not ship). One kwire broker (a subprocess, log on
disk), 1,000,000 x 100 B records on 2 partitions (200,000 with --quick), one SparkSession
(``local[2]``) holding both routes; in the same run, alternating, best of 2 rounds each:

1. batch read, ``spark.read.format(F).option("subscribe", t).load()`` then
   ``.agg(sum(length(value)))``: every record's value reaches Spark (a bare ``count()`` lets a
   source skip the value column);
2. batch write, ``spark.range(n)`` as 100 B string values written with ``df.write.format(F)``
   to a fresh topic (librdkafka's producer under kwire's sink, the Java producer under Spark's).

F is ``kafka`` (Spark's connector: the Java consumer/producer in the executor JVM) and ``kwire``
(kwire.spark: confluent-kafka in Python workers, Arrow batches). Reported: rows/s of each route
and their ratio kwire / kafka (info: which route to pick for a job, not a kwire budget; the
connector's JVM path has no Python worker hop).

``run(quick=False)`` returns rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path

from bench.server_bench import _create_topic, kwire_broker
from bench.spark_bench import _fill

ROOT = Path(__file__).resolve().parents[1]
ROUTES = ("kafka", "kwire")


def connector_jars() -> list[str]:
    """make spark-kafka's jars for the pom's pinned connector version (KWIRE_SPARK_KAFKA_LIBS
    overrides the directory), as tests/ecosystem/test_spark_kafka.py finds them."""
    version = re.search(r"<spark.kafka.version>(.*)</spark.kafka.version>",
                        (ROOT / "jvm" / "spark-kafka" / "pom.xml").read_text()).group(1)
    env = os.environ.get("KWIRE_SPARK_KAFKA_LIBS")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    libs = Path(env) if env else cache / "kwire" / f"spark-kafka-{version}" / "libs"
    jars = sorted(str(p) for p in libs.glob("*.jar"))
    if not any(Path(j).name == f"spark-sql-kafka-0-10_2.13-{version}.jar" for j in jars):
        raise RuntimeError(f"Spark's Kafka connector {version} is not in {libs}: run make spark-kafka")
    return jars


def _read(spark, fmt: str, bootstrap: str, topic: str, n: int) -> float:
    import time

    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    df = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0]
    dt = time.perf_counter() - t0
    assert (row.n, row.bytes) == (n, n * 100), (fmt, row, n)
    return n / dt


def _write(spark, fmt: str, bootstrap: str, n: int) -> float:
    import time

    from pyspark.sql import functions as F
    topic = f"spark-kafka-w-{fmt}-{uuid.uuid4().hex[:6]}"
    _create_topic(bootstrap, topic, 2)
    df = spark.range(0, n, numPartitions=2).select(
        F.format_string("%0100d", F.col("id")).alias("value"))
    t0 = time.perf_counter()
    df.write.format(fmt).mode("append").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()
    dt = time.perf_counter() - t0
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4().hex[:6]}"})
    try:
        written = sum(c.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in (0, 1))
    finally:
        c.close()
    assert written == n, (fmt, written, n)
    return n / dt


def run(quick: bool = False) -> list[tuple]:
    import kwire.spark
    from kwire.testing.spark import local_session

    n = 200_000 if quick else 1_000_000
    jars = connector_jars()
    rows: list[tuple] = []
    with kwire_broker() as (bootstrap, _proc):
        topic = f"spark-kafka-bench-{uuid.uuid4().hex[:6]}"
        _create_topic(bootstrap, topic, 2)
        _fill(bootstrap, topic, n, 100)
        spark = local_session("kwire-spark-kafka-bench", extra={"spark.jars": ",".join(jars)})
        try:
            kwire.spark.register(spark)
            for fmt in ROUTES:                      # warm-up: JVM classes, Python workers
                _read(spark, fmt, bootstrap, topic, n)
            for what, fn in (("batch read", lambda f: _read(spark, f, bootstrap, topic, n)),
                             ("batch write", lambda f: _write(spark, f, bootstrap, n))):
                got: dict[str, list[float]] = {f: [] for f in ROUTES}
                for _ in range(2):
                    for fmt in ROUTES:
                        got[fmt].append(fn(fmt))
                best = {f: max(v) for f, v in got.items()}
                ratio = best["kwire"] / best["kafka"]
                print(f"{what} of {n:,} x 100 B: format(\"kafka\") {best['kafka']:,.0f} rows/s, "
                      f"format(\"kwire\") {best['kwire']:,.0f} rows/s, kwire/kafka {ratio:.2f} "
                      f"(rounds: {({f: [round(x) for x in v] for f, v in got.items()})})", flush=True)
                rows.append((f"spark {what} format(kafka) rows/s", round(best["kafka"]), "rows/s", "info", "info"))
                rows.append((f"spark {what} format(kwire) rows/s", round(best["kwire"]), "rows/s", "info", "info"))
                rows.append((f"spark {what} kwire / kafka", round(ratio, 2), "x", "info", "info"))
        finally:
            spark.stop()
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(r)
