"""The pure parts of ``python -m bench vs-kafka`` (bench/vs_kafka_lib.py): reading Kafka's perf
tools' output and /proc, and the ratio / verdict rows. The benchmark itself never runs here."""
from __future__ import annotations

import math
import os

import pytest

from bench import vs_kafka_bench
from bench.vs_kafka_lib import (CpuMeter, Line, busy, cpu_seconds, parse_consumer_performance, parse_producer_performance,
                                parse_stat_cpu_seconds, parse_status_kib, percentile, rss_mib, verdict)

# As ProducerPerformance (Kafka 4.3.1) prints them: a deprecation note, interval lines, the totals.
PRODUCER_OUT = """\
Option --producer-props has been deprecated and will be removed in a future version. Use --command-property instead.
476953 records sent, 95371.5 records/sec (9.10 MB/sec), 120.3 ms avg latency, 818.0 ms max latency.
1000000 records sent, 264830.508475 records/sec (25.26 MB/sec), 41.65 ms avg latency, 546.00 ms max latency, \
40 ms 50th, 99 ms 95th, 109 ms 99th, 116 ms 99.9th.
"""

CONSUMER_OUT = """\
Warning: --messages is deprecated. Use --num-records instead.
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-27 13:08:13:479, 2026-11-27 13:08:18:586, 95.4046, 18.6811, 1000390, 195886.0388, 2491, 2616, \
36.4697, 382412.0795
"""


def test_producer_performance_takes_the_totals_line():
    r = parse_producer_performance(PRODUCER_OUT)
    assert r.records == 1_000_000
    assert r.records_per_s == pytest.approx(264830.508475)
    assert r.mb_per_s == pytest.approx(25.26)
    assert (r.p50_ms, r.p99_ms, r.p999_ms) == (40, 109, 116)


def test_producer_performance_without_totals_is_an_error():
    with pytest.raises(ValueError, match="totals"):
        parse_producer_performance(PRODUCER_OUT.splitlines()[1])


def test_consumer_performance_reads_the_rate_after_the_group_join():
    r = parse_consumer_performance(CONSUMER_OUT)
    assert r.records == 1_000_390
    assert r.rebalance_ms == 2491
    assert r.fetch_records_per_s == pytest.approx(382412.0795)   # not nMsg.sec, which counts the join
    assert r.fetch_mb_per_s == pytest.approx(36.4697)


def test_consumer_performance_without_a_row_is_an_error():
    with pytest.raises(ValueError):
        parse_consumer_performance(CONSUMER_OUT.splitlines()[1])
    with pytest.raises(ValueError):
        parse_consumer_performance("nothing here\n")


def test_stat_cpu_counts_after_the_command_name_even_with_spaces_and_parentheses():
    fields = ["S"] + ["0"] * 10 + ["250", "150"] + ["0"] * 30   # state, ..., utime (14), stime (15)
    stat = "4242 (java (main) x) " + " ".join(fields)
    assert parse_stat_cpu_seconds(stat, ticks=100) == pytest.approx(4.0)


def test_this_process_is_measurable_from_proc():
    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        pytest.skip("no /proc")
    assert cpu_seconds(os.getpid()) > 0
    assert rss_mib(os.getpid()) > 1
    assert rss_mib(os.getpid(), "VmHWM") >= rss_mib(os.getpid()) - 1


def test_status_field():
    assert parse_status_kib("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n", "VmRSS") == 1024
    with pytest.raises(ValueError):
        parse_status_kib("Name:\tx\n", "VmRSS")


def test_percentile_nearest_rank():
    xs = [float(i) for i in range(1, 1001)]
    assert percentile(xs, 0.5) == 501.0 or percentile(xs, 0.5) == 500.0
    assert percentile(xs, 0.99) == 990.0
    assert percentile(xs, 0.999) == 999.0
    assert percentile([3.0], 0.999) == 3.0
    assert math.isnan(percentile([], 0.5))


def test_verdicts():
    assert verdict(1.0, ">=", 1.0) == "PASS"
    assert verdict(0.99, ">=", 1.0) == "MISS"
    assert verdict(0.1, "<=", 0.1) == "PASS"
    assert verdict(0.11, "<=", 0.1) == "MISS"
    assert verdict(5.0, None, None) == "info"
    assert verdict(float("nan"), ">=", 1.0) == "n/a"


def test_line_ratio_row_and_budget():
    tp = Line("produce 1 KB librdkafka", "rec/s", 150_000.0, 100_000.0, ">=", 1.0)
    assert tp.ratio == pytest.approx(1.5) and tp.verdict == "PASS"
    name, value, unit, budget, v = tp.row()
    assert name.startswith("vs-kafka.produce 1 KB librdkafka") and "150,000" in name
    assert (value, unit, budget, v) == (1.5, "x", "kwire/kafka >= 1", "PASS")
    rss = Line("broker RSS", "MiB", 80.0, 600.0, "<=", 0.1)
    assert rss.verdict == "MISS"          # 0.133 > 1/10
    assert Line("e2e p50", "ms", 1.0, 2.0).verdict == "info"


def test_busy_measures_broker_and_client_cores():
    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        pytest.skip("no /proc")
    import time

    meter = CpuMeter([os.getpid()])      # this process plays both sides
    out: dict = {}
    t0 = os.times()
    w0 = time.perf_counter()
    with busy(meter, "produce", out):
        # spin until this process has used 0.3 s of CPU, however long the shared machine makes it
        while (os.times().user + os.times().system) - (t0.user + t0.system) < 0.3 \
                and time.perf_counter() - w0 < 30:
            pass
    used = (os.times().user + os.times().system) - (t0.user + t0.system)
    wall = time.perf_counter() - w0
    assert used >= 0.3
    assert meter.seconds["produce"] == pytest.approx(used, abs=0.05)   # /proc counts in 10 ms ticks
    assert out["broker"] == pytest.approx(used / wall, abs=0.1)
    assert out["client"] == pytest.approx(used / wall, abs=0.1)


def test_paired_line_judges_the_median_of_its_paired_rounds():
    ln = Line.paired("produce 100 B librdkafka", "rec/s", [100.0, 300.0, 200.0], [200.0, 100.0, 200.0], ">=", 1.0)
    assert (ln.kwire, ln.kafka) == (200.0, 200.0)
    assert ln.rounds == (0.5, 3.0, 1.0) and ln.spread == "0.50 / 3.00 / 1.00"
    assert ln.ratio == 1.0 and ln.verdict == "PASS"
    # medians of each side say 1.29, but two of three rounds, each paired in time, had kwire behind
    drift = Line.paired("produce 1 KB java", "rec/s", [69.0, 74.0, 60.0], [72.0, 57.0, 61.0], ">=", 1.0)
    assert drift.kwire / drift.kafka > 1.0 and drift.ratio < 1.0 and drift.verdict == "MISS"
    single = Line.paired("x", "ms", [1.0], [2.0])
    assert single.spread == "-" and single.ratio == 0.5


def test_the_page_cache_warm_up_writes_its_bytes_and_leaves_nothing(tmp_path, monkeypatch):
    """bench vs-kafka's untimed warm-up before each throughput run: ``nbytes`` written (a last
    partial chunk included) to one file in the directory given, which is gone afterwards."""
    written = []
    real_write = os.write

    def counting_write(fd, data):
        n = real_write(fd, data)
        written.append(n)
        return n

    monkeypatch.setattr(vs_kafka_bench.os, "write", counting_write)
    seconds = vs_kafka_bench.warm_page_cache(tmp_path, 3 * (1 << 20) + 12345)
    assert sum(written) == 3 * (1 << 20) + 12345 and len(written) == 4
    assert seconds >= 0 and list(tmp_path.iterdir()) == []
