"""Option parsing and offset planning of kwire.spark, without a SparkSession."""
from __future__ import annotations

import pytest

from kwire.spark.offsets import DataLossError, Range, check_data_loss, plan_ranges, rate_limit
from kwire.spark.options import OptionError, read_options, write_options

B = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_exactly_one_strategy_and_bootstrap():
    with pytest.raises(OptionError, match="kafka.bootstrap.servers"):
        read_options({"subscribe": "t"}, streaming=False)
    with pytest.raises(OptionError, match="got 0"):
        read_options(B, streaming=False)
    with pytest.raises(OptionError, match=r"got 2 \(subscribe, assign\)"):
        read_options({**B, "subscribe": "t", "assign": '{"t": [0]}'}, streaming=False)
    o = read_options({"subscribe": "a, b"}, streaming=True, defaults=B)
    assert o.topics == ("a", "b") and o.starting.kind == "latest" and o.client == {"bootstrap.servers": "127.0.0.1:9092"}
    assert read_options({**B, "subscribe": "a"}, streaming=False).starting.kind == "earliest"
    assert read_options({**B, "ASSIGN": '{"t": [1, 0]}'}, streaming=False).assign == {"t": [0, 1]}


@pytest.mark.parametrize("opts, match", [
    ({"subscribePattern": "("}, "not a valid regular expression"),
    ({"assign": "[1]"}, "must be JSON like"),
    ({"subscribe": "t", "startingOffsets": "{bad"}, "not valid JSON"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": "x"}}'}, "integer"),
    ({"subscribe": "t", "failOnDataLoss": "maybe"}, "true or false"),
    ({"subscribe": "t", "minPartitions": "0"}, "positive integer"),
    ({"subscribe": "t", "maxOffsetsPerTrigger": "10"}, "only valid in streaming"),
    ({"subscribe": "t", "endingOffsets": "earliest"}, "cannot be 'earliest'"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": -1}}'}, "cannot use -1"),
    ({"subscribe": "t", "kafka.enable.auto.commit": "true"}, "not supported"),
    ({"subscribe": "t", "startingTimestamp": "soon"}, "timestamp in ms"),
])
def test_bad_read_options(opts, match):
    with pytest.raises(OptionError, match=match):
        read_options({**B, **opts}, streaming=False)


def test_streaming_refuses_ending_offsets():
    with pytest.raises(OptionError, match="not valid in streaming"):
        read_options({**B, "subscribe": "t", "endingOffsets": "latest"}, streaming=True)


def test_write_options():
    assert write_options({"topic": "t"}, B).topic == "t"
    with pytest.raises(OptionError, match="transactionalIdPrefix"):
        write_options({"exactlyOnce": "true"}, B)
    with pytest.raises(OptionError, match="exactlyOnce"):
        write_options({"kafka.transactional.id": "x"}, B)
    o = write_options({"exactlyOnce": "true", "transactionalIdPrefix": "job"}, B)
    assert o.exactly_once and o.transactional_id_prefix == "job"


def test_plan_ranges_splits_big_partitions():
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 5}
    end = {("t", 0): 1000, ("t", 1): 10, ("t", 2): 5}
    assert plan_ranges(start, end, None) == [Range("t", 0, 0, 1000), Range("t", 1, 0, 10)]
    ranges = plan_ranges(start, end, 10)
    assert len(ranges) >= 10
    for tp_end in ((0, 1000), (1, 10)):
        parts = sorted((r.start, r.end) for r in ranges if r.partition == tp_end[0])
        assert parts[0][0] == 0 and parts[-1][1] == tp_end[1]
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))   # contiguous, no overlap


def test_rate_limit_shares_by_backlog():
    start = {("t", 0): 0, ("t", 1): 100}
    latest = {("t", 0): 900, ("t", 1): 200}
    end = rate_limit(start, latest, 100)
    assert end == {("t", 0): 90, ("t", 1): 110}
    assert rate_limit(start, latest, 10_000) == latest
    assert sum(e - start[tp] for tp, e in rate_limit(start, latest, 3).items()) <= 4


def test_data_loss_fails_or_skips():
    with pytest.raises(DataLossError, match="records 3-9 are gone.*failOnDataLoss"):
        check_data_loss({("t", 0): 3}, {("t", 0): 10}, fail=True, what="x")
    assert check_data_loss({("t", 0): 3}, {("t", 0): 10}, fail=False, what="x") == {("t", 0): 10}
