"""Fault injection for tests, in the spirit of franz-go's kfake control hooks.

A :class:`Faults` object is installed as the server's ``fault_hook``: before each request is
handled it consults its rules (in the order they were added) and may

- answer the request with an error code (``fail_next``): a proper error response for that
  API, built from the request: per-partition (or per-topic, per-group) error codes where the
  API has them, the top-level ``error_code`` otherwise;
- delay it (``delay``), then handle it normally; or handle it and hold the answer
  (``delay_answer``): the work is done at once, the client learns of it later;
- close the connection instead of answering (``drop_connections``);
- handle it, then close the connection so the answer is lost (``drop_after_handling``).

Rules are added from the test's thread and read by the broker's Trio thread under a lock, so
every method here is safe to call from any thread while the broker runs. ``seen(api)`` counts
the requests of an API the broker received, so a test can observe a client's retries.
"""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

from kwire.codec.error_response import error_response
from kwire.errors import ErrorCode

__all__ = ["Faults", "error_response"]


def _api(name_or_key):
    from kwire.codec.apis import APIS, BY_NAME  # noqa: PLC0415 - start-up time: import before a broker starts

    if isinstance(name_or_key, int):
        return APIS[name_or_key]
    a = BY_NAME.get(name_or_key)
    if a is None:  # accept "produce", "PRODUCE", "list_offsets"
        wanted = name_or_key.replace("_", "").lower()
        for cand in BY_NAME.values():
            if cand.name.lower() == wanted:
                return cand
        raise KeyError(f"unknown Kafka API {name_or_key!r}")
    return a


@dataclass
class _Rule:
    api_key: int
    action: str  # "fail" | "delay" | "delay_answer" | "drop" | "drop_after"
    remaining: int | None  # None: until cleared
    error_code: int = 0
    seconds: float = 0.0
    topic: str | None = None


class Faults:
    """Control hooks for one broker (survive its restarts in thread mode)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._seen: Counter = Counter()
        self._injected: Counter = Counter()

    # ------------------------------------------------------------------ rules
    def _add(self, api, action: str, n: int | None, **kw) -> "Faults":
        if n is not None and n <= 0:
            raise ValueError("n must be positive (or None: until cleared)")
        rule = _Rule(_api(api).key, action, n, **kw)
        with self._lock:
            self._rules.append(rule)
        return self

    def fail_next(self, api, n: int = 1, error_code: int = ErrorCode.NOT_LEADER_OR_FOLLOWER, *,
                  topic: str | None = None) -> "Faults":
        """Answer the next ``n`` requests of ``api`` (name like "Produce" or key) with
        ``error_code``; with ``topic`` only requests that name that topic count."""
        return self._add(api, "fail", n, error_code=int(error_code), topic=topic)

    def delay(self, api, seconds: float, n: int | None = 1, *, topic: str | None = None) -> "Faults":
        """Hold the next ``n`` requests of ``api`` for ``seconds`` before handling them."""
        return self._add(api, "delay", n, seconds=float(seconds), topic=topic)

    def delay_answer(self, api, seconds: float, n: int | None = 1, *, topic: str | None = None) -> "Faults":
        """Handle the next ``n`` requests of ``api`` at once, then hold each answer for
        ``seconds`` (a response slow to reach the client: its other connections go on)."""
        return self._add(api, "delay_answer", n, seconds=float(seconds), topic=topic)

    def drop_connections(self, api, n: int = 1, *, topic: str | None = None) -> "Faults":
        """Close the connection instead of answering the next ``n`` requests of ``api``
        (the request is not handled)."""
        return self._add(api, "drop", n, topic=topic)

    def drop_after_handling(self, api, n: int = 1, *, topic: str | None = None) -> "Faults":
        """Handle the next ``n`` requests of ``api`` (the work is done: records appended,
        offsets committed), then close the connection so the client never sees the answer."""
        return self._add(api, "drop_after", n, topic=topic)

    def clear(self) -> None:
        """Remove every pending rule and reset the counters."""
        with self._lock:
            self._rules.clear()
            self._seen.clear()
            self._injected.clear()

    def pending(self) -> int:
        """How many injections are still to come (rules with ``n=None`` count once)."""
        with self._lock:
            return sum(1 if r.remaining is None else r.remaining for r in self._rules)

    def seen(self, api) -> int:
        """Requests of ``api`` the broker received (injected ones included)."""
        with self._lock:
            return self._seen[_api(api).key]

    def injected(self, api) -> int:
        """Requests of ``api`` a rule acted on."""
        with self._lock:
            return self._injected[_api(api).key]

    # ------------------------------------------------------------------ the hook
    def _take(self, api_key: int, req, ctx=None) -> _Rule | None:
        with self._lock:
            self._seen[api_key] += 1
            for i, rule in enumerate(self._rules):
                if rule.api_key != api_key:
                    continue
                if rule.topic is not None and rule.topic not in _topics_of(req, ctx):
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        del self._rules[i]
                self._injected[api_key] += 1
                return rule
        return None

    async def __call__(self, ctx, req):
        """``KafkaServer.fault_hook``: None (handle normally), a response, or "drop"."""
        rule = self._take(ctx.api.key, req, ctx)
        if rule is None:
            return None
        if rule.action == "delay":
            import trio  # noqa: PLC0415 - start-up time: import before a broker starts

            await trio.sleep(rule.seconds)
            return None
        if rule.action == "delay_answer":
            import trio  # noqa: PLC0415 - start-up time: import before a broker starts

            from kwire.handlers import REGISTRY  # noqa: PLC0415 - start-up time: import before a broker starts

            response = await REGISTRY[ctx.api.key].fn(ctx, req)
            await trio.sleep(rule.seconds)
            return response
        if rule.action == "drop":
            return "drop"
        if rule.action == "drop_after":
            from kwire.handlers import REGISTRY  # noqa: PLC0415 - start-up time: import before a broker starts

            try:
                await REGISTRY[ctx.api.key].fn(ctx, req)
            except Exception:  # noqa: BLE001 - the answer is dropped either way
                pass
            return "drop"
        return error_response(ctx.api, ctx.version, req, rule.error_code)


def _topics_of(req, ctx=None) -> set:
    """Topic names a request is about (topic ids, as in Fetch v13+, resolved by the broker)."""
    names = set()
    image = getattr(getattr(ctx, "broker", None), "image", None)
    for attr in ("topic_data", "topics", "topic_names"):
        for t in getattr(req, attr, None) or ():
            if isinstance(t, str):
                names.add(t)
                continue
            for key in ("name", "topic"):
                v = getattr(t, key, None)
                if isinstance(v, str):
                    names.add(v)
            tid = getattr(t, "topic_id", None)
            if tid is not None and image is not None:
                ti = image.topics_by_id.get(tid)
                if ti is not None:
                    names.add(ti.name)
    return names
