"""Batch reads and writes with format("kwire") on a local SparkSession against kwire."""
from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka import TopicPartition

from tests.spark.helpers import CODECS, consume_all, produce

# one xdist group with the other Spark modules: one worker, one SparkSession. Split in two groups
# (two sessions) make test took as long (518-537 s of pytest against 501): its four workers are
# busy to the end either way (2 cores, CPU-bound), and a second session is one more JVM start
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]

N = 100_000


def _records(n, start=0):
    for i in range(start, start + n):
        h = [("seq", str(i).encode()), ("parity", b"odd" if i % 2 else b"even")] if i % 3 else None
        yield (f"key-{i % 1000}".encode(), f"value-{i}-".encode() * 3, h)


def _as_set(rows):
    return Counter((k, v, tuple((h["key"], h["value"]) for h in hs) if hs else ()) for k, v, hs in rows)


def test_round_trip_100k_every_codec(kwire_spark, kafka_broker, kafka_topic):
    b = kafka_broker.bootstrap_servers
    topic = kafka_topic
    kafka_broker.create_topic(topic + "-3p", 3)
    src = topic + "-3p"
    per = N // len(CODECS)
    expected = []
    for i, codec in enumerate(CODECS):
        recs = list(_records(per, i * per))
        produce(b, src, recs, codec=codec)
        expected += recs
    df = kwire_spark.read.format("kwire").option("subscribe", src).option("includeHeaders", "true").load()
    table = df.toArrow()
    assert table.num_rows == N
    got = _as_set(zip(table["key"].to_pylist(), table["value"].to_pylist(), table["headers"].to_pylist()))
    assert got == Counter((k, v, tuple(h or ())) for k, v, h in expected)
    assert sorted(set(table["partition"].to_pylist())) == [0, 1, 2]
    assert set(table["topic"].to_pylist()) == {src}
    assert set(table["timestampType"].to_pylist()) == {0}
    # offsets are dense per partition (no control records here)
    offs = Counter(table["partition"].to_pylist())
    for p, count in offs.items():
        ps = sorted(o for o, q in zip(table["offset"].to_pylist(), table["partition"].to_pylist()) if q == p)
        assert ps == list(range(count))
    # write back through the sink (keys, values and headers columns), read with a stock consumer
    dst = topic + "-out"
    kafka_broker.create_topic(dst, 3)
    df.select("key", "value", "headers").write.format("kwire").mode("append").option("topic", dst).save()
    back = consume_all(b, dst, 3)
    assert Counter((k, v, h) for k, v, h in back) == Counter((k, v, tuple(h or ())) for k, v, h in expected)


def test_offsets_by_json_timestamp_and_ending(kwire_spark, kafka_broker, kafka_topic):
    b = kafka_broker.bootstrap_servers
    topic = kafka_topic
    kafka_broker.create_topic(topic + "-2p", 2)
    t = topic + "-2p"
    for p in (0, 1):
        produce(b, t, [(None, f"{p}-{i}".encode(), None) for i in range(50)], partition=p)
    time.sleep(0.05)
    cut_ms = int(time.time() * 1000)
    time.sleep(0.05)
    for p in (0, 1):
        produce(b, t, [(None, f"{p}-{i}".encode(), None) for i in range(50, 80)], partition=p)

    def values(**opts):
        r = kwire_spark.read.format("kwire")
        if "assign" not in opts:
            r = r.option("subscribe", t)
        for k, v in opts.items():
            r = r.option(k, v)
        return sorted(x.decode() for x in r.load().toArrow()["value"].to_pylist())

    got = values(startingOffsets=json.dumps({t: {"0": 10, "1": -2}}),
                 endingOffsets=json.dumps({t: {"0": 20, "1": 5}}))
    assert got == sorted([f"0-{i}" for i in range(10, 20)] + [f"1-{i}" for i in range(5)])
    got = values(startingOffsetsByTimestamp=json.dumps({t: {"0": cut_ms, "1": cut_ms}}))
    assert got == sorted(f"{p}-{i}" for p in (0, 1) for i in range(50, 80))
    got = values(startingTimestamp=str(cut_ms), endingOffsets=json.dumps({t: {"0": 60, "1": -1}}))
    assert got == sorted([f"0-{i}" for i in range(50, 60)] + [f"1-{i}" for i in range(50, 80)])
    assert values(assign=json.dumps({t: [1]}), endingOffsets="latest") == sorted(f"1-{i}" for i in range(80))
    # a timestamp past every record: error by default, the end with the 'latest' strategy
    future = str(int(time.time() * 1000) + 3_600_000)
    with pytest.raises(Exception, match="No offset matched the timestamp"):
        values(startingTimestamp=future)
    assert values(startingTimestamp=future, startingOffsetsByTimestampStrategy="latest") == []


def test_min_partitions_splits_ranges(kwire_spark, kafka_broker, kafka_topic):
    produce(kafka_broker.bootstrap_servers, kafka_topic, [(None, str(i).encode(), None) for i in range(1000)])
    df = kwire_spark.read.format("kwire").option("subscribe", kafka_topic).option("minPartitions", "8").load()
    assert df.rdd.getNumPartitions() >= 8
    assert sorted(int(v) for v in df.toArrow()["value"].to_pylist()) == list(range(1000))
    one = kwire_spark.read.format("kwire").option("subscribe", kafka_topic).load()
    assert one.rdd.getNumPartitions() == 1


def test_fail_on_data_loss_after_delete_records(kwire_spark, kafka_broker, kafka_topic):
    b = kafka_broker.bootstrap_servers
    produce(b, kafka_topic, [(None, str(i).encode(), None) for i in range(100)])
    admin = AdminClient({"bootstrap.servers": b})
    fut = admin.delete_records([TopicPartition(kafka_topic, 0, 40)])
    for f in fut.values():
        f.result(30)
    start = json.dumps({kafka_topic: {"0": 10}})
    reader = (kwire_spark.read.format("kwire").option("subscribe", kafka_topic)
              .option("startingOffsets", start))
    with pytest.raises(Exception, match="failOnDataLoss") as info:
        reader.load().count()
    assert "records 10-39 are gone" in str(info.value)
    got = reader.option("failOnDataLoss", "false").load().toArrow()["offset"].to_pylist()
    assert sorted(got) == list(range(40, 100))


def test_bad_options_name_the_problem(kwire_spark, kafka_topic):
    r = kwire_spark.read.format("kwire")
    with pytest.raises(Exception, match="Exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"):
        r.load().count()
    with pytest.raises(Exception, match="cannot be 'latest' for batch"):
        r.option("subscribe", kafka_topic).option("startingOffsets", "latest").load().count()
    with pytest.raises(Exception, match="kafka.auto.offset.reset"):
        r.option("subscribe", kafka_topic).option("kafka.auto.offset.reset", "earliest").load().count()
    df = kwire_spark.createDataFrame([(1,)], "value int")
    with pytest.raises(Exception, match="Value attribute type must be a string or binary"):
        df.write.format("kwire").mode("append").option("topic", kafka_topic).save()
    df = kwire_spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="topic option required"):
        df.write.format("kwire").mode("append").save()


def test_writer_columns_topic_partition_and_strings(kwire_spark, kafka_broker, kafka_topic):
    b = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(kafka_topic + "-a", 2)
    kafka_broker.create_topic(kafka_topic + "-b", 2)
    rows = [(kafka_topic + ("-a" if i % 2 else "-b"), f"k{i}", f"v{i}", i % 2) for i in range(200)]
    df = kwire_spark.createDataFrame(rows, "topic string, key string, value string, partition int")
    df.write.format("kwire").mode("append").save()
    for suffix, parity in (("-a", 1), ("-b", 0)):
        got = kwire_spark.read.format("kwire").option("subscribe", kafka_topic + suffix).load().toArrow()
        assert sorted(v.decode() for v in got["value"].to_pylist()) == sorted(
            f"v{i}" for i in range(200) if i % 2 == parity)
        assert set(got["partition"].to_pylist()) == {parity}


def test_readme_fixture_example(kwire_spark, kafka_broker, kafka_topic):
    kafka_broker.produce(kafka_topic, [b"a", b"b"])
    assert kwire_spark.read.format("kwire").option("subscribe", kafka_topic).load().count() == 2
