"""The windowed Rate and throttle time, against Kafka's formulas, with the clock as an input."""
from __future__ import annotations

from kwire.quota.rate import Avg, QuotaSensor, Rate, throttle_time_ms


def test_first_burst_is_spread_over_the_whole_quota_window():
    r = Rate(11, 1000)
    r.record(1000, 0)
    # fewer than samples-1 whole windows so far: the span counts as 10 s (Rate.windowSize)
    assert r.window_size_ms(0) == 10000
    assert r.measure(0) == 100.0
    assert r.window_size_ms(2500) == 2500 + 8000   # 2 whole windows: 8 more added
    r.record(1000, 2500)
    assert abs(r.measure(2500) - 2000 / 10.5) < 1e-9


def test_span_grows_past_the_minimum_and_old_samples_are_purged():
    r = Rate(3, 1000)
    for t in range(0, 5000, 100):
        r.record(10, t)
    # samples older than samples * window since their last event are reset
    assert r.window_size_ms(4950) >= 2000
    rate = r.measure(4950)
    assert 80 <= rate <= 110, rate          # ~100 per second
    assert r.measure(20000) == 0.0          # all purged after a long silence


def test_throttle_time_is_kafkas_formula():
    # X = (O - T) / T * W
    assert throttle_time_ms(150.0, 100.0, 10000) == 5000
    assert throttle_time_ms(100.5, 100.0, 1001) == 5       # rounded half up, as Math.round
    assert throttle_time_ms(1.0, 0.0, 1000) == 1000        # a zero quota throttles a whole window


def test_sensor_throttles_once_over_the_bound_and_recovers():
    s = QuotaSensor(11, 1000, bound=1000.0)        # 1000 bytes/s
    assert s.record(5000, 0) == 0                   # 5000 / 10 s = 500/s
    assert s.record(5000, 0) == 0                   # 1000/s: at the bound, not over it
    t = s.record(5000, 0)                           # 1500/s over 10 s: 5 s to come back
    assert t == 5000
    # within the first 10 windows the span is still taken as 10 s (Kafka's Rate), so the
    # rate is unchanged and a request then is throttled again
    assert s.record(0, t) == 5000
    # once the burst's sample expires (samples * window after its last event) it is forgotten
    assert s.record(0, 11000) == 0
    # steady state: 1000 bytes every 100 ms = 10000/s against a 1000/s bound, well past 10 s
    s2 = QuotaSensor(11, 1000, bound=1000.0)
    for t in range(0, 20000, 100):
        got = s2.record(1000, t)
    w = s2.rate.window_size_ms(19900)
    assert 10000 <= w <= 12000
    assert got == throttle_time_ms(s2.rate.measure(19900), 1000.0, w) > 0
    assert QuotaSensor(11, 1000, None).record(1e12, 0) == 0   # no bound: never throttled


def test_unrecord_takes_back_what_was_recorded():
    s = QuotaSensor(11, 1000, bound=100.0)
    s.record(500, 0)
    before = s.rate.measure(10)
    assert s.record(5000, 10) > 0
    s.record(-5000, 10, check=False)
    assert s.rate.measure(10) == before


def test_avg():
    a = Avg(2, 30000)
    assert a.measure(0) == 0.0
    a.record(100, 0)
    a.record(300, 10)
    assert a.measure(20) == 200.0
    assert a.measure(200000) == 0.0
