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
driver needs ~450 MB: Spark refuses a smaller heap).

A broker failover mid-stream (KWIRE_SPARK_FAILOVER=0 leaves it out): three kwire nodes,
a format("kafka") -> format("kafka") streaming query and the same pipeline through format("kwire")
running side by side, the leader of an input partition SIGKILLed while a producer writes; both
queries carry on and write every record exactly once, the two outputs equal. 66-145 s of its own on
2 shared cores (load average 7-20 from other work), most of it the two queries' starts. Of six
runs on 2026-11-28 five passed; in one (the whole module, load average ~20) the format("kwire")
query stopped after the kill: its latestOffset's Metadata call (kwire.spark.offsets.topic_partitions)
had no answer within 30 s from the two live nodes, which answered the Java client meanwhile; not
reproduced with kwire.spark's OffsetReader alone through the same kill (it recovers in ~4 s). Since
then that call asks again in 2 s attempts within kafka.request.timeout.ms, as its ListOffsets did
(tests/spark/test_spark_options.py), so one request held by a dead broker no longer fails the query."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
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

    # format("kwire") runs in Python workers: this interpreter (kwire and PySpark installed)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    jars = ",".join(str(p) for p in sorted(spark_kafka_libs().glob("*.jar")))
    session = (SparkSession.builder.master("local[2]").appName("kwire-spark-kafka")
               .config("spark.jars", jars)
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "512m")
               .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
               .config("spark.sql.session.timeZone", "UTC")
               # a Python worker (format("kwire")) starting on a loaded machine connects back late
               .config("spark.python.authenticate.socketTimeout", "120s")
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


# ------------------------------------------------------------------ broker failover mid-stream
# Three kwire nodes (tests/raft/cluster.py's ``kwire serve`` processes), topics of replication
# factor 3. Two streaming queries run side by side on the one SparkSession, the same pipeline
# through both routes: format("kafka") -> format("kafka") and format("kwire") -> format("kwire"),
# 200 ms processing-time triggers, maxOffsetsPerTrigger. Once both have read the first records, a
# producer writes more (acks=all, idempotent, paced) and the leader of in-0 is SIGKILLed a third
# of the way through them. Both queries must carry on (no exception, still active) and write every
# input record, upper-cased, exactly once: Spark's Kafka sink and kwire's are at least once, but
# both producers are idempotent and no task fails, so a duplicate would be a record replayed by
# the broker side. The two outputs are compared as multisets of (key, value).
# Minutes, not seconds (three kwire processes, two queries of which one starts Python workers);
# tests/ecosystem is not in make test, so it runs unless KWIRE_SPARK_FAILOVER=0 asks otherwise
FAILOVER = pytest.mark.skipif(os.environ.get("KWIRE_SPARK_FAILOVER") == "0",
                              reason="KWIRE_SPARK_FAILOVER=0 leaves the three-node failover out")
FO_FIRST = 900           # records before the kill, read by both queries first
FO_SECOND = 2100         # records written around the kill
FO_PER_TRIGGER = 500


def _fo_values(i: int) -> tuple[str, str]:
    return f"k{i % 23}", f"rec-{i:05d}"


def _fo_produce(bootstrap: str, lo: int, hi: int, pace: float = 0.0, on_progress=None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                  "acks": "all", "message.timeout.ms": 90_000})
    errors = []
    for i in range(lo, hi):
        k, v = _fo_values(i)
        p.produce("in", key=k, value=v, partition=i % PARTITIONS,
                  on_delivery=lambda err, _m: errors.append(err) if err else None)
        p.poll(0)
        if pace and i % 100 == 99:
            time.sleep(pace)
        if on_progress is not None:
            on_progress(i - lo + 1)
    assert p.flush(120) == 0
    assert not errors, errors[:3]


def _fo_read(bootstrap: str, topic: str) -> Counter:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"fo-{time.time()}", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got: Counter = Counter()
        eof: set = set()
        deadline = time.monotonic() + 60
        while len(eof) < PARTITIONS and time.monotonic() < deadline:
            for m in c.consume(5000, 0.5):
                if m.error():
                    if m.error().code() == m.error()._PARTITION_EOF:
                        eof.add(m.partition())
                    continue
                eof.discard(m.partition())
                got[(m.key().decode(), m.value().decode())] += 1
        return got
    finally:
        c.close()


_FAILOVER_FAILED: list[str] = []


@pytest.fixture(scope="module")
def failover(spark, tmp_path_factory):
    import threading

    import kwire.spark
    from tests.raft.cluster import Cluster, wait_for
    from tests.raft.test_grp_coordinator_failover import partitions_of

    if _FAILOVER_FAILED:     # a failed module fixture runs again for the next test: minutes, not again
        pytest.fail(f"the failover scenario failed for an earlier test: {_FAILOVER_FAILED[0]}")
    work = tmp_path_factory.mktemp("spark-failover")
    cluster = Cluster(str(work / "kwire"), 3, extra_args=(
        "--override", "broker.session.timeout.ms=2000", "--override", "replica.lag.time.max.ms=3000",
        "--override", "kwire.emulate.kafka.version=4.3", "--override", "metrics.listen="))
    queries = []
    t0 = time.monotonic()
    try:
        cluster.start()
        ports = {i: n.port for i, n in cluster.nodes.items()}
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == 3, 20)
        for t in ("in", "out-kafka", "out-kwire"):
            # a broker fenced for a moment on a loaded machine refuses replication factor 3: again
            def created(t=t):
                try:
                    admin.create_topics([NewTopic(t, PARTITIONS, 3)])[t].result(15)
                except KafkaException as e:
                    if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        raise AssertionError(str(e)) from None
                return True
            wait_for(created, 30)
        wait_for(lambda: all(len(isr) == 3 for _, _, isr in partitions_of(ports[1], "in").values()), 20)
        _fo_produce(bootstrap, 0, FO_FIRST)

        kwire.spark.register(spark)

        def start(fmt: str):
            return (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", "in").option("startingOffsets", "earliest")
                    .option("maxOffsetsPerTrigger", str(FO_PER_TRIGGER)).load()
                    .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
                    .writeStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                    .option("topic", f"out-{fmt}").option("checkpointLocation", str(work / f"ckpt-{fmt}"))
                    .queryName(f"failover-{fmt}").trigger(processingTime="200 milliseconds").start())

        def rows_in(q) -> int:
            return sum(p["numInputRows"] for p in q.recentProgress)

        def running(want: int) -> bool:
            for q in queries:
                assert q.isActive and q.exception() is None, q.exception()
            return all(rows_in(q) >= want for q in queries)

        # format("kwire") first, alone: Spark gives its streaming source's Python worker a fixed 10 s
        # to start and connect back (PythonWorkerFactory.createSimpleWorker), which a loaded 2-core
        # machine can miss with a JVM query starting beside it
        queries.append(start("kwire"))
        wait_for(lambda: running(FO_FIRST), 180)
        queries.insert(0, start("kafka"))
        # both queries running and through the first records
        wait_for(lambda: running(FO_FIRST), 180)
        t_first = time.monotonic() - t0
        sent = [0]
        writer = threading.Thread(target=_fo_produce, args=(bootstrap, FO_FIRST, FO_FIRST + FO_SECOND, 0.1),
                                  kwargs={"on_progress": lambda n: sent.__setitem__(0, n)})
        writer.start()
        wait_for(lambda: sent[0] >= FO_SECOND // 3, 60)
        victim = partitions_of(ports[1], "in")[0][0]
        cluster.nodes[victim].kill()
        killed_at = sent[0]
        writer.join(180)
        assert not writer.is_alive(), "the producer did not finish around the kill"
        live = next(p for i, p in ports.items() if i != victim)
        new_leader = partitions_of(live, "in")[0][0]
        total = FO_FIRST + FO_SECOND
        wait_for(lambda: running(total), 180)
        live_boot = ",".join(f"127.0.0.1:{p}" for i, p in ports.items() if i != victim)
        out = {fmt: _fo_read(live_boot, f"out-{fmt}") for fmt in ("kafka", "kwire")}
        yield {"victim": victim, "new_leader": new_leader, "killed_at": killed_at,
               "rows": [rows_in(q) for q in queries], "out": out, "first": t_first,
               "seconds": time.monotonic() - t0}
    except BaseException as e:
        _FAILOVER_FAILED.append(f"{type(e).__name__}: {str(e)[:500]}")
        raise
    finally:
        for q in queries:
            try:
                q.stop()
            except Exception:  # noqa: BLE001 - a failed query has stopped already
                pass
        cluster.stop()


@FAILOVER
def test_format_kafka_query_survives_a_leader_sigkill_on_three_kwire_nodes(failover):
    f = failover
    print(f"failover scenario: {f['seconds']:.0f} s ({f['first']:.0f} s to the first records read)")
    assert f["new_leader"] not in (f["victim"], -1)
    # the kill came mid-stream: the producer was part way through its records
    assert 0 < f["killed_at"] < FO_SECOND, f["killed_at"]
    # each query read every input record once (no batch replanned)
    assert f["rows"] == [FO_FIRST + FO_SECOND] * 2, f["rows"]
    want = Counter((k, v.upper()) for k, v in map(_fo_values, range(FO_FIRST + FO_SECOND)))
    got = f["out"]["kafka"]
    assert got == want, f"lost {len(want - got)}, duplicated {sum((got - want).values())}"


@FAILOVER
def test_format_kwire_gives_the_same_results_through_the_failover(failover):
    assert failover["out"]["kwire"] == failover["out"]["kafka"]
