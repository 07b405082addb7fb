"""Time as an input: the only place kwire reads the wall clock or a monotonic clock.

Code that needs time takes a Clock; tests pass a FakeClock and advance it by hand.
"""
from __future__ import annotations

import time


class Clock:
    """The real clock."""

    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (record timestamps, retention)."""
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        """Monotonic milliseconds (timeouts, session expiry)."""
        return time.monotonic_ns() // 1_000_000


class FakeClock(Clock):
    """A clock that moves only when told to."""

    def __init__(self, now_ms: int = 1_700_000_000_000, monotonic_ms: int = 0):
        self._now = now_ms
        self._mono = monotonic_ms

    def now_ms(self) -> int:
        return self._now

    def monotonic_ms(self) -> int:
        return self._mono

    def advance(self, ms: int) -> None:
        self._now += ms
        self._mono += ms


REAL_CLOCK = Clock()
