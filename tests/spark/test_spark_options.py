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
    ({"subscribe": "t", "maxTriggerDelay": "soon"}, "must be a time like 15m"),
    ({"subscribe": "t", "groupIdPrefix": " "}, "must not be empty"),
    ({"subscribe": "t", "maxRecordsPerPartition": "-3"}, "positive integer"),
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


def test_trigger_options_are_ignored_with_a_warning_in_batch_queries(caplog):
    """Jobs share one options dict between batch and streaming: Spark logs and carries on."""
    with caplog.at_level("WARNING", logger="kwire.spark"):
        o = read_options({**B, "subscribe": "t", "maxOffsetsPerTrigger": "10", "minOffsetsPerTrigger": "5",
                          "maxTriggerDelay": "1m"}, streaming=False)
    assert o.max_offsets_per_trigger is None and o.min_offsets_per_trigger is None
    assert [r.getMessage() for r in caplog.records] == ["minOffsetsPerTrigger option ignored in batch queries",
                                                        "maxOffsetsPerTrigger option ignored in batch queries",
                                                        "maxTriggerDelay option ignored in batch queries"]
    s = read_options({**B, "subscribe": "t", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "30s",
                      "groupIdPrefix": "billing", "maxRecordsPerPartition": "100"}, streaming=True)
    assert (s.min_offsets_per_trigger, s.max_trigger_delay_ms, s.group_id_prefix, s.max_records_per_partition) == \
        (5, 30_000, "billing", 100)
    assert read_options({**B, "subscribe": "t"}, streaming=True).max_trigger_delay_ms == 15 * 60_000


def test_min_partitions_as_spark_rounds():
    """minPartitions=12 over 4 equal partitions gives 12 tasks (Spark's rounding), not 14."""
    start = {("t", p): 0 for p in range(4)}
    end = {("t", p): 1000 for p in range(4)}
    assert len(plan_ranges(start, end, 12)) == 12
    # a small partition stays whole and is left out of the share of the big ones
    skewed = plan_ranges({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10_000, ("t", 1): 10}, 6)
    assert [(r.partition, r.size) for r in skewed] == [(0, 2000)] * 5 + [(1, 10)]
    assert plan_ranges(start, end, 3) == plan_ranges(start, end, None)      # enough partitions already


def test_max_records_per_partition_cuts_ranges():
    ranges = plan_ranges({("t", 0): 0, ("t", 1): 0}, {("t", 0): 250, ("t", 1): 90}, None, 100)
    assert [(r.partition, r.start, r.end) for r in ranges] == [(0, 0, 83), (0, 83, 166), (0, 166, 250),
                                                                (1, 0, 90)]
    # then minPartitions over the pieces: each third rounds to 5/3 -> 2 parts, as Spark's rounding does
    assert len(plan_ranges({("t", 0): 0}, {("t", 0): 250}, 5, 100)) == 6


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


class _FakeAdmin:
    """An AdminClient whose ListOffsets answers are scripted: each call pops a {partition:
    offset or KafkaError} map, as librdkafka answers after a leader's broker died (-1001, no error)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.asked: list = []
        self.refreshed: list = []

    def list_offsets(self, req, isolation_level, request_timeout):
        from concurrent.futures import Future
        from confluent_kafka import KafkaException
        self.asked.append(sorted(tp.partition for tp in req))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        futs = {}
        for tp in req:
            f, a = Future(), answer[tp.partition]
            if isinstance(a, int):
                f.set_result(type("Info", (), {"offset": a})())
            else:
                f.set_exception(KafkaException(a))
            futs[tp] = f
        return futs

    def list_topics(self, topic=None, timeout=None):
        self.refreshed.append(topic)


def _reader(admin, timeout_ms=30_000):
    from kwire.spark.offsets import OffsetReader
    r = OffsetReader(read_options({**B, "subscribe": "t", "kafka.request.timeout.ms": str(timeout_ms)},
                                  streaming=True))
    r._admin = admin
    return r


def test_list_offsets_asks_again_after_fresh_metadata_where_the_leader_gave_no_answer():
    from confluent_kafka import KafkaError
    admin = _FakeAdmin([{0: -1001, 1: 5}, {0: KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)}, {0: 7}])
    assert _reader(admin).latest([("t", 0), ("t", 1)]) == {("t", 0): 7, ("t", 1): 5}
    assert admin.asked == [[0, 1], [0], [0]] and admin.refreshed == ["t", "t"]


def test_list_offsets_without_an_answer_by_the_request_timeout_is_an_error_not_offset_minus_1001():
    with pytest.raises(TimeoutError, match=r"within 0.3 s \(kafka.request.timeout.ms\) for t-0"):
        _reader(_FakeAdmin([{0: -1001, 1: 5}]), timeout_ms=300).latest([("t", 0), ("t", 1)])


def test_list_offsets_fails_at_once_on_an_error_no_retry_can_mend():
    from confluent_kafka import KafkaError, KafkaException
    admin = _FakeAdmin([{0: KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), 1: 5}])
    with pytest.raises(KafkaException):
        _reader(admin).latest([("t", 0), ("t", 1)])
    assert admin.asked == [[0, 1]] and admin.refreshed == []


class _FlakyMetadataAdmin:
    """list_topics fails (librdkafka's timeout, after waiting out the attempt on ``clock``)
    ``fails`` times, then answers topic t of 2 partitions."""

    def __init__(self, fails: int, clock):
        self.fails, self.clock, self.timeouts = fails, clock, []

    def list_topics(self, topic=None, timeout=None):
        from confluent_kafka import KafkaError, KafkaException
        self.timeouts.append(timeout)
        if self.fails:
            self.fails -= 1
            self.clock.now += timeout
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        part = type("P", (), {"leader": 1})()
        t = type("T", (), {"error": None, "partitions": {0: part, 1: part}})()
        broker = type("B", (), {"host": "127.0.0.1", "port": 9092})()
        return type("Md", (), {"topics": {"t": t}, "brokers": {1: broker}})()


class _Clock:
    """kwire.spark.offsets' view of ``time``: monotonic and sleep on a hand-moved clock."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.now += s


@pytest.fixture
def clock(monkeypatch):
    import kwire.spark.offsets as offsets
    c = _Clock()
    monkeypatch.setattr(offsets, "time", c)
    return c


def test_the_partition_listing_asks_again_when_a_metadata_request_is_not_answered(clock):
    # a broker that just died can hold the one Metadata request for the whole timeout: short
    # attempts, each going to a broker librdkafka holds as up, within kafka.request.timeout.ms
    admin = _FlakyMetadataAdmin(2, clock)
    reader = _reader(admin)
    assert reader.topic_partitions() == [("t", 0), ("t", 1)]
    assert admin.timeouts == [2.0, 2.0, 2.0]
    assert reader.leaders == {("t", 0): ("127.0.0.1", 9092), ("t", 1): ("127.0.0.1", 9092)}


def test_the_partition_listing_names_the_bootstrap_when_no_attempt_is_answered_by_the_timeout(clock):
    admin = _FlakyMetadataAdmin(10**6, clock)
    with pytest.raises(ConnectionError, match=r"no broker answered at .* within 5 s \(kafka.request.timeout.ms\)"):
        _reader(admin, timeout_ms=5_000).topic_partitions()
    assert admin.timeouts == [2.0, 2.0, pytest.approx(0.6)] and clock.now == pytest.approx(1005.0)
