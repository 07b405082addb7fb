"""The reference pipeline (examples/spark_pipeline.py) end to end against kwire: events in,
windowed totals out to a topic and a Parquet table, a restart from the checkpoint, no duplicates."""
from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from examples.spark_pipeline import produce_events, run_available_now, sample_events
from tests.spark.helpers import consume_all

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]

WINDOW_MS, WATERMARK_MS = 10_000, 20_000


def _closed_windows(events, watermark_ms):
    totals = defaultdict(lambda: [0, 0])
    for e in events:
        start = e["ts"] - e["ts"] % WINDOW_MS
        if start + WINDOW_MS <= watermark_ms:
            t = totals[(start, e["user"])]
            t[0] += e["amount"]
            t[1] += 1
    return {k: tuple(v) for k, v in totals.items()}


def test_pipeline_end_to_end_with_restart(kwire_spark, kafka_broker, kafka_topic, tmp_path):
    b = kafka_broker.bootstrap_servers
    events_t, results_t = kafka_topic + "-events", kafka_topic + "-totals"
    kafka_broker.create_topic(events_t, 3)
    kafka_broker.create_topic(results_t, 3)
    t0 = 1_700_000_000_000            # on a window boundary
    kw = dict(events=events_t, results=results_t, table=str(tmp_path / "totals"),
              checkpoint=str(tmp_path / "ckpt"))
    first = sample_events(600, start_ms=t0)
    produce_events(b, events_t, first)
    run_available_now(kwire_spark, **kw)

    def table():
        rows = kwire_spark.read.parquet(kw["table"]).collect()
        keys = Counter((int(r.window_start.timestamp() * 1000), r.user) for r in rows)
        assert max(keys.values()) == 1, f"duplicated windows in the table: {keys.most_common(3)}"
        return {(int(r.window_start.timestamp() * 1000), r.user): (r.total, r.events) for r in rows}

    wm = max(e["ts"] for e in first) - WATERMARK_MS
    assert table() == _closed_windows(first, wm)
    # a second run from the checkpoint with later events closes the windows still open
    second = sample_events(300, start_ms=t0 + 60_000, seed=8)
    produce_events(b, events_t, second)
    run_available_now(kwire_spark, **kw)
    wm = max(e["ts"] for e in second) - WATERMARK_MS
    expected = _closed_windows(first + second, wm)
    assert len(expected) >= 30
    assert table() == expected
    # the topic sink holds every closed window; a clean restart wrote none twice
    out = consume_all(b, results_t, 3)
    seen = Counter()
    for k, v, _h in out:
        doc = json.loads(v)
        assert doc["user"] == k.decode()
        seen[(doc["window_start"], doc["user"], doc["total"], doc["events"])] += 1
    assert len(seen) == len(expected)
    assert max(seen.values()) == 1, f"duplicates in the results topic: {seen.most_common(3)}"
