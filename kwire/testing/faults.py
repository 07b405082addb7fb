"""Fault injection for tests, in the spirit of franz-go's kfake control hooks.

A :class:`Faults` object is installed as the server's ``fault_hook``: before each request is
handled it consults its rules (in the order they were added) and may

- answer the request with an error code (``fail_next``): a proper error response for that
  API, built from the request: per-partition (or per-topic, per-group) error codes where the
  API has them, the top-level ``error_code`` otherwise;
- delay it (``delay``), then handle it normally;
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

from kwire.errors import ErrorCode

__all__ = ["Faults", "error_response"]


def _api(name_or_key):
    from kwire.codec.apis import APIS, BY_NAME

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
    action: str  # "fail" | "delay" | "drop" | "drop_after"
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
            import trio

            await trio.sleep(rule.seconds)
            return None
        if rule.action == "drop":
            return "drop"
        if rule.action == "drop_after":
            from kwire.handlers import REGISTRY

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


# ---------------------------------------------------------------------- error responses
# Request and response field names that carry the same thing (a topic name, a partition index).
_ALIASES = [
    {"name", "topic", "topic_name"},
    {"index", "partition", "partition_index"},
]
# Offsets in an error answer are -1 (unknown), as Kafka answers them.
_MINUS_ONE = {"base_offset", "high_watermark", "last_stable_offset", "log_start_offset", "offset",
              "committed_offset", "log_append_time_ms", "leader_id", "timestamp"}


def _same(a: str, b: str) -> bool:
    return a == b or any(a in g and b in g for g in _ALIASES)


def _has_error_code(fields, v: int) -> bool:
    """Does this struct, or one nested in it, carry an error_code?"""
    for f in fields:
        if not f.present(v):
            continue
        if f.name == "error_code":
            return True
        if f.is_struct and f.is_array and _has_error_code(f.fields, v):
            return True
    return False


def _mirror(msg, struct_name: str, fields, req, req_fields, code: int, v: int, top: bool):
    """Build one response struct for request struct ``req``: key fields copied (by name or
    alias), error codes set at the deepest level that has them, arrays mirrored element by
    element from the request's matching array."""
    kw = {}
    def answered(f):  # a nested array that will carry the error for at least one element
        rf = _match_array(f, req_fields, v)
        return rf is not None and req is not None and bool(getattr(req, rf.name, None))

    nested_errors = any(f.is_struct and f.is_array and f.present(v) and _has_error_code(f.fields, v)
                        and answered(f) for f in fields)
    for f in fields:
        if not f.present(v):
            continue
        if f.name == "error_code" and f.type == "int16":
            if not (top and nested_errors):
                kw[f.name] = code
            continue
        if f.is_struct and f.is_array:
            rf = _match_array(f, req_fields, v)
            if rf is None or not _has_error_code(f.fields, v):
                continue
            items = getattr(req, rf.name, None) or []
            out = []
            for item in items:
                if rf.is_struct:
                    out.append(_mirror(msg, f.elem, f.fields, item, rf.fields, code, v, False))
                else:  # a list of names or indexes becomes a list of result structs
                    key = next((g for g in f.fields if g.present(v) and not g.is_struct
                                and g.type == rf.elem and any(_same(g.name, n) for n in ("name", "index"))), None)
                    if key is None:
                        continue
                    sub = {key.name: item}
                    if any(g.name == "error_code" for g in f.fields if g.present(v)):
                        sub["error_code"] = code
                    out.append(msg.struct(f.elem)(**sub))
            kw[f.name] = out
            continue
        if f.is_struct:
            continue
        rf = next((g for g in req_fields if g.present(v) and not g.is_struct and g.type == f.type
                   and _same(g.name, f.name)), None)
        if rf is not None and req is not None:
            kw[f.name] = getattr(req, rf.name)
        elif f.name in _MINUS_ONE and f.type in ("int32", "int64"):
            kw[f.name] = -1
        elif f.type == "records":
            kw[f.name] = b""  # empty, not null: librdkafka cannot parse a null MessageSet
    return msg.struct(struct_name)(**kw)


def _match_array(f, req_fields, v: int):
    """The request array a response array answers: same name, else the first request array
    (of structs, or of names/indexes) whose elements share a key field with ``f``'s."""
    cands = [g for g in req_fields if g.present(v) and g.is_array]
    for g in cands:
        if g.name == f.name:
            return g
    keys = {g.name for g in f.fields if g.present(v)}
    for g in cands:
        if g.is_struct:
            if any(_same(a.name, k) for a in g.fields if a.present(v) for k in keys):
                return g
        elif g.elem in ("string", "int32") and any(_same(k, "name") or _same(k, "index") for k in keys):
            return g
    return None


def error_response(api, version: int, req, error_code: int):
    """An error answer to ``req`` (a decoded request of ``api`` at ``version``)."""
    msg = api.response
    return _mirror(msg, msg.name, msg.fields, req, api.request.fields, int(error_code), version, True)
