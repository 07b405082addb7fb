"""The pure parts of ``python -m bench spark`` (bench/spark_bench.py): the verdict rows and the
first batch's end read from a streaming query's progress. The benchmark itself never runs here."""
from __future__ import annotations

import datetime as dt

from bench.spark_bench import FIRST_BATCH_BUDGET_S, RATIO_BUDGET, first_batch_end, latency_row, ratio_row


def test_ratio_row_against_the_budget():
    assert RATIO_BUDGET == 1.5
    assert ratio_row("r", 150.0, 100.0) == ("r", 1.5, "x", ">= 1.5", "PASS")
    assert ratio_row("r", 149.0, 100.0) == ("r", 1.49, "x", ">= 1.5", "MISS")
    assert ratio_row("r", 10.0, 0.0)[-1] == "MISS"


def test_latency_row_against_the_budget():
    assert FIRST_BATCH_BUDGET_S == 3.0
    assert latency_row("l", 3.0) == ("l", 3.0, "s", "<= 3.0", "PASS")
    assert latency_row("l", 3.004)[-1] == "MISS"


def test_first_batch_end_is_the_first_batch_with_rows():
    start = dt.datetime(2026, 11, 28, 1, 2, 3, 250000, tzinfo=dt.timezone.utc).timestamp()
    progresses = [
        {"numInputRows": 0, "timestamp": "2026-11-28T01:02:00.000Z", "durationMs": {"triggerExecution": 900}},
        {"numInputRows": 100, "timestamp": "2026-11-28T01:02:03.250Z", "durationMs": {"triggerExecution": 1500}},
        {"numInputRows": 5, "timestamp": "2026-11-28T01:02:09.000Z", "durationMs": {"triggerExecution": 10}},
    ]
    assert first_batch_end(progresses) == start + 1.5
    assert first_batch_end(progresses[:1]) is None
    assert first_batch_end([]) is None
