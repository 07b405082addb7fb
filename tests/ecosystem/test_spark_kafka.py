"""Spark's own Kafka connector (spark-sql-kafka-0-10, ``format("kafka")``) from PySpark against kwire
and against Apache Kafka 4.3.1, with the same results (issue 30, deliverable 4).

The connector's jars come from ``make spark-kafka`` (jvm/spark-kafka/pom.xml, pinned; the jars PySpark
does not ship: the connector, its token provider, kafka-clients and commons-pool2) and go to Spark
with ``spark.jars``. PySpark here is 4.3.0 and Maven serves the connector up to 4.2.0 for Scala 2.13:
the 4.2.0 connector runs on Spark 4.3 (the DataSource V2 API it implements is unchanged); the pom
says which version to move to once a 4.3 connector is served.

One SparkSession (local[2], the serial GC) for both clusters; on each:

- batch read with startingOffsets/endingOffsets (earliest/latest and per-partition JSON),
  startingOffsetsByTimestamp and includeHeaders, of records written by librdkafka with keys,
  headers and set timestamps;
- batch write (key, value, headers, an explicit partition) read back;
- a transactional topic (a committed, an aborted and a committed transaction): read_committed
  through ``kafka.isolation.level`` sees the committed records only, the default sees all;
- a structured streaming query (Kafka to Kafka, checkpointLocation, trigger availableNow) run,
  fed more records, and run again from its checkpoint: each input record once in the output.

Every result is compared between the two clusters. Spark's JVM start takes most of the time (its
driver needs ~450 MB: Spark refuses a smaller heap)."""
from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 3
N = 300
BASE_TS = (int(time.time() * 1000) - 3600_000) // 1000 * 1000   # an hour back, whole seconds


def spark_kafka_libs() -> Path:
    """make spark-kafka's cache (KWIRE_SPARK_KAFKA_LIBS overrides), for the pom's pinned version."""
    version = re.search(r"<spark.kafka.version>(.*)</spark.kafka.version>",
                        (ROOT / "jvm" / "spark-kafka" / "pom.xml").read_text()).group(1)
    env = os.environ.get("KWIRE_SPARK_KAFKA_LIBS")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    libs = Path(env) if env else cache / "kwire" / f"spark-kafka-{version}" / "libs"
    assert list(libs.glob(f"spark-sql-kafka-0-10_2.13-{version}.jar")), \
        f"Spark's Kafka connector {version} is not in {libs}: run make spark-kafka"
    return libs


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    pyspark = pytest.importorskip("pyspark", reason="the spark extra (make .venv) installs PySpark")
    from pyspark.sql import SparkSession

    jars = ",".join(str(p) for p in sorted(spark_kafka_libs().glob("*.jar")))
    session = (SparkSession.builder.master("local[2]").appName("kwire-spark-kafka")
               .config("spark.jars", jars)
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "512m")
               .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    assert pyspark.__version__.split(".")[0] == "4"
    yield session
    session.stop()


def _setup(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in
                                  ("events", "txn", "spark-out", "stream-out")]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(N):
        p.produce("events", key=f"k{i % 17}", value=f"event-{i:04d}", partition=i % PARTITIONS,
                  timestamp=BASE_TS + i * 1000, headers=[("seq", str(i).encode()), ("src", b"librdkafka")])
    assert p.flush(30) == 0
    t = Producer({"bootstrap.servers": bootstrap, "transactional.id": "spark-txn", "linger.ms": 5})
    t.init_transactions(30)
    for batch, commit in ((range(0, 100), True), (range(100, 150), False), (range(150, 200), True)):
        t.begin_transaction()
        for i in batch:
            t.produce("txn", key=str(i), value=f"txn-{i:04d}", partition=i % PARTITIONS, timestamp=BASE_TS + i)
        # sent before the abort: librdkafka purges what is still queued when it aborts, and the
        # aborted records must be in the log for read_uncommitted to see them
        assert t.flush(30) == 0
        t.commit_transaction(30) if commit else t.abort_transaction(30)


def _rows(df) -> list[tuple]:
    cols = [c for c in ("topic", "partition", "offset", "key", "value", "timestamp", "headers") if c in df.columns]
    out = []
    for r in df.select(*cols).collect():
        d = r.asDict(recursive=True)
        if "headers" in d and d["headers"] is not None:
            d["headers"] = tuple((h["key"], bytes(h["value"])) for h in d["headers"])
        for k in ("key", "value"):
            if isinstance(d.get(k), (bytes, bytearray)):
                d[k] = bytes(d[k]).decode()
        if "timestamp" in d:
            d["timestamp"] = int(d["timestamp"].timestamp() * 1000)
        out.append(tuple(d[c] for c in cols))
    return sorted(out, key=lambda r: (r[1], r[2]))


def run_spark(spark, bootstrap: str, work: Path) -> dict:
    _setup(bootstrap)
    res: dict = {}

    def read(topic: str, **opts):
        r = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load()

    res["all"] = _rows(read("events", startingOffsets="earliest", endingOffsets="latest", includeHeaders="true"))
    res["range"] = _rows(read("events", includeHeaders="false",
                              startingOffsets=json.dumps({"events": {"0": 10, "1": 20, "2": -2}}),
                              endingOffsets=json.dumps({"events": {"0": 50, "1": -1, "2": 30}})))
    # the first offset at or after a timestamp, per partition (ListOffsets by timestamp)
    ts = BASE_TS + 150 * 1000
    res["by_timestamp"] = _rows(read("events", startingOffsetsByTimestamp=json.dumps(
        {"events": {str(p): ts for p in range(PARTITIONS)}})))
    res["committed"] = _rows(read("txn", startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"}))
    res["uncommitted"] = _rows(read("txn", startingOffsets="earliest"))

    # batch write: key, value, headers and a partition from columns
    from pyspark.sql import functions as F
    out = (spark.range(0, 120)
           .select(F.concat(F.lit("key-"), F.col("id").cast("string")).alias("key"),
                   F.concat(F.lit("spark-"), F.format_string("%04d", F.col("id"))).alias("value"),
                   (F.col("id") % PARTITIONS).cast("int").alias("partition"),
                   F.array(F.struct(F.lit("writer").alias("key"), F.lit(b"spark").alias("value"))).alias("headers")))
    out.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", "spark-out").save()
    # the two write tasks interleave in a partition: compared as sets of (partition, record)
    res["written"] = sorted(r[:2] + r[3:5] + r[6:] for r in
                            _rows(read("spark-out", startingOffsets="earliest", includeHeaders="true")))

    # structured streaming, Kafka to Kafka, twice from one checkpoint
    checkpoint = str(work / "checkpoint")

    def stream_once() -> None:
        q = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "events").option("startingOffsets", "earliest").load()
             .selectExpr("key", "upper(CAST(value AS STRING)) AS value", "partition")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", "stream-out").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None, q.exception()

    stream_once()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(N, N + 60):
        p.produce("events", key=f"k{i % 17}", value=f"event-{i:04d}", partition=i % PARTITIONS,
                  timestamp=BASE_TS + i * 1000)
    assert p.flush(30) == 0
    stream_once()
    res["streamed"] = sorted(Counter((r[1], r[3], r[4]) for r in
                                     _rows(read("stream-out", startingOffsets="earliest"))).items())
    return res


@pytest.fixture(scope="module")
def kwire_results(spark, kwire_one, tmp_path_factory):
    return run_spark(spark, kwire_one.bootstrap_servers, tmp_path_factory.mktemp("spark-kwire"))


@pytest.fixture(scope="module")
def kafka_results(spark, kafka_one, tmp_path_factory):
    return run_spark(spark, kafka_one.bootstrap_servers, tmp_path_factory.mktemp("spark-kafka"))


def test_format_kafka_on_kwire(kwire_results):
    r = kwire_results
    assert len(r["all"]) == N
    assert r["all"][0][3:] == ("k0", "event-0000", BASE_TS, (("seq", b"0"), ("src", b"librdkafka")))
    # per-partition ranges (-2 earliest, -1 latest): [10, 50) of 0, [20, end) of 1, [0, 30) of 2
    assert Counter(row[1] for row in r["range"]) == {0: 40, 1: N // PARTITIONS - 20, 2: 30}
    assert {row[4] for row in r["by_timestamp"]} == {f"event-{i:04d}" for i in range(150, N)}
    assert sorted(row[4] for row in r["committed"]) == [f"txn-{i:04d}" for i in (*range(100), *range(150, 200))]
    assert sorted(row[4] for row in r["uncommitted"]) == [f"txn-{i:04d}" for i in range(200)]
    assert len(r["written"]) == 120 and all(row[-1] == (("writer", b"spark"),) for row in r["written"])
    assert all(int(row[3][6:]) % PARTITIONS == row[1] for row in r["written"])
    # each input record once in the stream's output, across the two runs of the checkpointed query
    assert sum(c for _, c in r["streamed"]) == N + 60
    assert all(c == 1 for _, c in r["streamed"])


def test_the_same_results_as_on_apache_kafka(kwire_results, kafka_results):
    for k in kafka_results:
        assert kwire_results[k] == kafka_results[k], k
