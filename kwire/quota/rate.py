"""Kafka's windowed statistics (org.apache.kafka.common.metrics: SampledStat, Rate, Avg) with
the clock passed in: nothing here reads time.

A stat keeps ``samples`` windows of ``window_ms`` each (plus one, as Kafka keeps one extra so a
window that started before the monitored span still counts). A sample is complete once
``window_ms`` has passed since it started; recording then starts the next one. A sample whose
last event is ``samples * window_ms`` old is reset (purged).

:class:`Rate` measures the sum of the samples over the elapsed span, where a span shorter than
``samples - 1`` whole windows is taken as that long (Kafka's Rate.windowSize: a first burst is
spread over the whole quota window, not charged as an instant rate); at least 1 ms.

:func:`throttle_time_ms` is ClientQuotaManager.throttleTime: for an observed rate O over a
window W and a bound T, the delay X with O * W / (W + X) = T, i.e. X = (O - T) / T * W, rounded.
"""
from __future__ import annotations


class _Sample:
    __slots__ = ("value", "count", "start_ms", "last_event_ms")

    def __init__(self, now_ms: int) -> None:
        self.value = 0.0
        self.count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class SampledStat:
    __slots__ = ("samples", "window_ms", "_list", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(1, int(samples))
        self.window_ms = max(1, int(window_ms))
        self._list: list[_Sample] = []
        self._current = 0

    def _sample(self, now_ms: int) -> _Sample:
        if not self._list:
            self._list.append(_Sample(now_ms))
        return self._list[self._current]

    def record(self, value: float, now_ms: int) -> None:
        s = self._sample(now_ms)
        if now_ms - s.start_ms >= self.window_ms:
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._list):
                s = _Sample(now_ms)
                self._list.append(s)
            else:
                s = self._list[self._current]
                s.reset(now_ms)
        s.value += value
        s.count += 1
        s.last_event_ms = now_ms

    def purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._list:
            if now_ms - s.last_event_ms >= expire:
                s.reset(now_ms)

    def oldest_start(self, now_ms: int) -> int:
        if not self._list:
            self._list.append(_Sample(now_ms))
        return min(s.start_ms for s in self._list)

    def total(self, now_ms: int) -> float:
        self.purge(now_ms)
        return sum(s.value for s in self._list)

    def count(self, now_ms: int) -> int:
        self.purge(now_ms)
        return sum(s.count for s in self._list)


class Rate(SampledStat):
    """Per second."""

    __slots__ = ()

    def window_size_ms(self, now_ms: int) -> int:
        self.purge(now_ms)
        return self._window(now_ms)

    def _window(self, now_ms: int) -> int:
        elapsed = now_ms - self.oldest_start(now_ms)
        full = elapsed // self.window_ms
        min_full = self.samples - 1
        if full < min_full:
            elapsed += (min_full - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        return self.measure_and_window(now_ms)[0]

    def measure_and_window(self, now_ms: int) -> tuple[float, int]:
        """(rate per second, window ms), purging once."""
        self.purge(now_ms)
        w = self._window(now_ms)
        return sum(s.value for s in self._list) / (w / 1000.0), w


class Avg(SampledStat):
    """The mean of the values recorded in the retained samples (0 when none)."""

    __slots__ = ()

    def measure(self, now_ms: int) -> float:
        n = self.count(now_ms)
        return self.total(now_ms) / n if n else 0.0


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    if bound <= 0:
        return int(window_ms)   # a zero quota: every byte is over it; throttle a whole window
    # Java's Math.round: half up
    x = (observed - bound) / bound * window_ms
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


class QuotaSensor:
    """A Rate with an upper bound: :meth:`record` returns the throttle time (ms) when the rate
    after recording is above the bound (Sensor.record with checkQuotas), 0 otherwise."""

    __slots__ = ("rate", "bound", "last_record_ms")

    def __init__(self, samples: int, window_ms: int, bound: float | None) -> None:
        self.rate = Rate(samples, window_ms)
        self.bound = bound
        self.last_record_ms = 0

    def record(self, value: float, now_ms: int, check: bool = True) -> int:
        self.rate.record(value, now_ms)
        self.last_record_ms = now_ms
        if not check or self.bound is None:
            return 0
        observed, window = self.rate.measure_and_window(now_ms)
        if observed <= self.bound:
            return 0
        return throttle_time_ms(observed, self.bound, window)
