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
