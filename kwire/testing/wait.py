"""``wait_until``: poll a condition with a deadline instead of sleeping a fixed time."""
from __future__ import annotations

import time
from typing import Any, Callable


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05, *,
               message: str | None = None, ignore: tuple[type[BaseException], ...] = ()) -> Any:
    """Call ``predicate`` every ``interval`` seconds until it returns something truthy, and
    return that value. Exceptions of the ``ignore`` types count as "not yet". After
    ``timeout`` seconds raise AssertionError naming ``message`` and the last value or error."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except ignore as exc:
            value = exc
        else:
            if value:
                return value
        if time.monotonic() >= deadline:
            what = message or getattr(predicate, "__name__", "condition")
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {value!r})")
        time.sleep(interval)
