"""Structured streaming with format("kwire"): availableNow and processing-time triggers while a
producer keeps writing, stop and restart from the checkpoint, partitions and topics that appear
mid-stream; the Parquet sink's output must hold every record exactly once."""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from kwire.spark import offsets_behind_latest
from tests.spark.helpers import produce, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]


class Writer(threading.Thread):
    """Keeps producing numbered records to ``topic`` until stopped: ``batch`` records every
    ``pause`` seconds at most (about 300 a second: at 200 every 20 ms the final availableNow run
    caught up on ~30,000 records, 45 micro-batches of 700, most of the test's minute)."""

    def __init__(self, bootstrap, topic, start=0, batch=50, pause=0.1):
        super().__init__(daemon=True)
        self.b, self.topic, self.next, self.batch, self.pause = bootstrap, topic, start, batch, pause
        self.halt = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.halt.is_set():
                n = self.next
                produce(self.b, self.topic, [(str(i % 13).encode(), str(i).encode(), None)
                                             for i in range(n, n + self.batch)])
                self.next = n + self.batch
                time.sleep(self.pause)
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> int:
        self.halt.set()
        self.join(60)
        assert self.error is None, self.error
        return self.next


def _stream(spark, out, ckpt, trigger, **opts):
    r = spark.readStream.format("kwire")
    for k, v in opts.items():
        r = r.option(k, v)
    q = (r.load().selectExpr("CAST(value AS STRING) AS v", "topic", "partition", "offset")
         .writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt))
    return q.trigger(**trigger).start()


def _values(spark, out) -> Counter:
    return Counter(int(v) for v in spark.read.parquet(out).toArrow()["v"].to_pylist())


def test_available_now_and_processing_time_restart_no_loss_no_dups(kwire_spark, kafka_broker, kafka_topic,
                                                                    tmp_path):
    b = kafka_broker.bootstrap_servers
    topic = kafka_topic + "-s"
    kafka_broker.create_topic(topic, 3)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")
    opts = dict(subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="700")
    produce(b, topic, [(None, str(i).encode(), None) for i in range(1000)])
    w = Writer(b, topic, start=1000)
    w.start()
    try:
        # 1. availableNow while the producer writes: drains what was there at the start, in
        #    several micro-batches (maxOffsetsPerTrigger), and stops.
        q = _stream(kwire_spark, out, ckpt, {"availableNow": True}, **opts)
        q.awaitTermination(120)
        assert q.exception() is None
        first = _values(kwire_spark, out)
        assert max(first.values()) == 1
        assert set(range(1000)) <= set(first)
        batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
        assert len(batches) >= 2 and all(p["numInputRows"] <= 700 for p in batches)
        # the backlog in Spark's Kafka source metrics: behind while maxOffsetsPerTrigger holds
        # the batches back, nothing behind once the last batch reached the end fixed at the start
        lag = [offsets_behind_latest(p["sources"][0]) for p in batches]
        assert int(lag[0]["maxOffsetsBehindLatest"]) > 0 and float(lag[0]["avgOffsetsBehindLatest"]) > 0, lag
        assert lag[-1] == {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "0",
                           "avgOffsetsBehindLatest": "0.0"}, lag
        # 2. processing-time trigger from the checkpoint, stopped mid-stream
        q = _stream(kwire_spark, out, ckpt, {"processingTime": "100 milliseconds"}, **opts)
        wait_until(lambda: len(q.recentProgress) >= 5, 120, "five micro-batches")
        q.stop()
        assert q.exception() is None
        last = w.stop()
        # 3. restart from the checkpoint once more: everything up to the writer's last record
        q = _stream(kwire_spark, out, ckpt, {"availableNow": True}, **opts)
        q.awaitTermination(120)
        assert q.exception() is None
    finally:
        w.halt.set()
    got = _values(kwire_spark, out)
    assert set(got) == set(range(last)), f"missing {sorted(set(range(last)) - set(got))[:10]}"
    dups = {v: c for v, c in got.items() if c > 1}
    assert not dups, f"{len(dups)} duplicated records, e.g. {list(dups.items())[:5]}"


def test_new_partitions_and_pattern_topics_mid_stream(kwire_spark, kafka_broker, kafka_topic, tmp_path):
    b = kafka_broker.bootstrap_servers
    stem = kafka_topic.replace("-", "_")[:40] + "_p"
    first = stem + "_one"
    kafka_broker.create_topic(first, 1)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")
    opts = dict(subscribePattern=stem + "_.*", startingOffsets="earliest")
    q = _stream(kwire_spark, out, ckpt, {"processingTime": "100 milliseconds"}, **opts)
    try:
        produce(b, first, [(None, str(i).encode(), None) for i in range(100)])
        wait_until(lambda: sum(p["numInputRows"] for p in q.recentProgress) >= 100, 120, "the first records")
        admin = AdminClient({"bootstrap.servers": b})
        for f in admin.create_partitions([NewPartitions(first, 3)]).values():
            f.result(30)
        produce(b, first, [(None, str(i).encode(), None) for i in range(100, 150)], partition=2)
        second = stem + "_two"
        kafka_broker.create_topic(second, 2)
        produce(b, second, [(None, str(i).encode(), None) for i in range(150, 200)])
        wait_until(lambda: sum(p["numInputRows"] for p in q.recentProgress) >= 200, 120,
                   "records of the new partition and the new topic")
    finally:
        q.stop()
    assert q.exception() is None
    got = _values(kwire_spark, out)
    assert got == Counter(range(200))
    parts = {(r["topic"], r["partition"]) for r in kwire_spark.read.parquet(out).select("topic", "partition").collect()}
    assert (first, 2) in parts and (second, 0) in parts or (second, 1) in parts
