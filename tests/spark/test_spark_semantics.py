"""Spark's Kafka source semantics kwire.spark follows, checked without a SparkSession: an
ending timestamp with no record that new is the latest offset, Overwrite is refused as Spark
refuses it, and minOffsetsPerTrigger holds a micro-batch back until maxTriggerDelay."""
from __future__ import annotations

import time

import pytest

from kwire.spark.options import read_options

B = {"kafka.bootstrap.servers": "127.0.0.1:9"}


def _schema():
    from pyspark.sql.types import BinaryType, StructField, StructType
    return StructType([StructField("value", BinaryType())])


def test_overwrite_is_refused_with_sparks_words():
    from kwire.spark.source import KwireDataSource

    ds = KwireDataSource({**B, "topic": "t"})
    with pytest.raises(ValueError, match=r"^Save mode Overwrite not allowed for Kafka\. Allowed save modes are "
                                         r"Append and ErrorIfExists \(default\)\.$"):
        ds.writer(_schema(), True)
    assert ds.writer(_schema(), False) is not None


def test_min_offsets_per_trigger_waits_up_to_max_trigger_delay():
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from kwire.spark.source import KafkaStreamReader

    r = KafkaStreamReader(read_options({**B, "subscribe": "t", "minOffsetsPerTrigger": "100",
                                        "maxTriggerDelay": "1h"}, streaming=True), _schema())
    start, few, many = {("t", 0): 0}, {("t", 0): 40}, {("t", 0): 150}
    assert not r._delay(start, few, ReadAllAvailable())      # the first batch goes (as Spark: last trigger 0)
    assert r._delay(start, few, ReadAllAvailable())          # then 40 < 100 new offsets: held back
    assert not r._delay(start, many, ReadAllAvailable())     # enough: it goes
    r._last_trigger_ms = time.time() * 1000 - 3_600_001     # the delay has passed: it goes with what there is
    assert not r._delay(start, few, ReadAllAvailable())
    r._target = {("t", 0): 40}                                # Trigger.AvailableNow never waits
    assert not r._delay(start, few, ReadAllAvailable())
    plain = KafkaStreamReader(read_options({**B, "subscribe": "t"}, streaming=True), _schema())
    assert not plain._delay(start, few, ReadAllAvailable())


@pytest.mark.slow
def test_an_ending_timestamp_past_every_record_is_the_latest_offset():
    from kwire.spark.offsets import OffsetReader
    from kwire.testing import Broker

    with Broker() as kafka:
        kafka.create_topic("ts-end", 1)
        kafka.produce("ts-end", [b"a", b"b", b"c"])
        opts = read_options({"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": "ts-end",
                             "endingTimestamp": str(int(time.time() * 1000) + 3_600_000)}, streaming=False)
        reader = OffsetReader(opts)
        try:
            tps = reader.topic_partitions()
            assert reader.resolve(opts.ending, tps, name="endingOffsets") == {("ts-end", 0): 3}
            late = read_options({"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": "ts-end",
                                 "startingTimestamp": str(int(time.time() * 1000) + 3_600_000)}, streaming=False)
            with pytest.raises(ValueError, match="No offset matched the timestamp given in 'startingOffsets'"):
                reader.resolve(late.starting, tps, name="startingOffsets")     # a start still says so
        finally:
            reader.close()


def test_micro_batch_ids_belong_to_the_query_that_committed_them():
    from confluent_kafka import TopicPartition

    from kwire.spark.writer import CheckpointMismatch, _check_owner

    mine = TopicPartition("out", 0, 8, metadata="kwire.spark query=q-1")
    _check_owner(mine, "job-3", "q-1")                                           # the same checkpoint: fine
    _check_owner(TopicPartition("out", 0, -1001), "job-3", "q-2")                # nothing committed yet
    _check_owner(TopicPartition("out", 0, 8, metadata=""), "job-3", "q-2")       # committed before ids were kept
    with pytest.raises(CheckpointMismatch, match=r"transactionalIdPrefix 'job' already holds micro-batch 7 of "
                                                 r"another streaming query \(query id q-1; this checkpoint's is "
                                                 r"q-2\)"):
        _check_owner(mine, "job-3", "q-2")


def test_the_latest_offsets_reach_the_progress():
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from kwire.spark.source import KafkaStreamReader

    class Offsets:          # the broker's answers
        def topic_partitions(self):
            return [("t", 0), ("t", 1)]

        def latest(self, tps):
            return {("t", 0): 120, ("t", 1): 7}

        def earliest(self, tps):
            return {tp: 0 for tp in tps}

    r = KafkaStreamReader(read_options({**B, "subscribe": "t", "maxOffsetsPerTrigger": "10"}, streaming=True),
                          _schema())
    r._offsets = Offsets()
    assert r.reportLatestOffset() is None                     # nothing asked yet
    from pyspark.sql.streaming.datasource import ReadMaxRows
    end = r.latestOffset({"t": {"0": 100, "1": 7}}, ReadMaxRows(10))
    assert end == {"t": {"0": 110, "1": 7}}                   # the batch is limited ...
    assert r.reportLatestOffset() == {"t": {"0": 120, "1": 7}}   # ... the backlog is reported whole
    r.latestOffset({"t": {"0": 110, "1": 7}}, ReadAllAvailable())


@pytest.mark.slow
def test_an_unreachable_bootstrap_is_named_within_the_querys_timeouts():
    import pyarrow as pa
    from confluent_kafka import KafkaException

    from kwire.spark.offsets import OffsetReader
    from kwire.spark.options import write_options
    from kwire.spark.writer import _write_at_least_once

    opts = read_options({"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.request.timeout.ms": "1500",
                         "subscribe": "t"}, streaming=False)
    t0 = time.monotonic()
    with pytest.raises(ConnectionError, match=r"no broker answered at 127\.0\.0\.1:1 within 1\.5 s"):
        OffsetReader(opts).topic_partitions()
    assert time.monotonic() - t0 < 10
    w = write_options({"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.delivery.timeout.ms": "1500",
                       "topic": "t"})
    batch = pa.RecordBatch.from_arrays([pa.array([b"v"])], names=["value"])
    t0 = time.monotonic()
    with pytest.raises(KafkaException, match=r"not delivered to the brokers at 127\.0\.0\.1:1 within "
                                             r"kafka\.delivery\.timeout\.ms"):
        _write_at_least_once(w, iter([batch]))
    assert time.monotonic() - t0 < 10


def test_offsets_behind_latest_as_sparks_kafka_source_metrics():
    """KafkaMicroBatchStream.metrics: per partition, the log end offset minus the batch's end
    offset; min, max (whole numbers) and avg (a Java double) as strings; {} with no offsets."""
    from kwire.spark import offsets_behind_latest as behind

    # a rate-limited batch; offsets as JSON strings, as PySpark's SourceProgress holds them
    entry = {"endOffset": '{"t": {"0": 100, "1": 7, "2": 50}}',
             "latestOffset": '{"t": {"0": 160, "1": 7, "2": 75}}'}
    assert behind(entry) == {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "60",
                             "avgOffsetsBehindLatest": "28.333333333333332"}
    caught_up = {"endOffset": {"a": {"0": 5}, "b": {"0": 9, "1": 3}}, "latestOffset": {"a": {"0": 5}, "b": {"0": 9, "1": 3}}}
    assert behind(caught_up) == {"minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "0",
                                 "avgOffsetsBehindLatest": "0.0"}
    big = behind({"endOffset": {"t": {"0": 0, "1": 0}}, "latestOffset": {"t": {"0": 20_000_000, "1": 10_000_000}}})
    assert big["avgOffsetsBehindLatest"] == "1.5E7" and big["maxOffsetsBehindLatest"] == "20000000"
    for none in (None, "null", "None", ""):
        assert behind({"endOffset": {"t": {"0": 1}}, "latestOffset": none}) == {}
        assert behind({"endOffset": none, "latestOffset": {"t": {"0": 1}}}) == {}
