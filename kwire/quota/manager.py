"""Quota sensors per quota type, as Kafka's ClientQuotaManager / ClientRequestQuotaManager.

One :class:`ClientQuotaManager` per type (Produce: producer_byte_rate, bytes of each Produce
request; Fetch: consumer_byte_rate, bytes of each consumer Fetch response; Request:
request_percentage, the time the broker spent on a request as a percentage of one thread).
A manager is ``enabled`` once a quota of its key has been configured (and stays so until
restart, as Kafka's ``quotasEnabled``): until then it costs the request path one attribute
check. Sensors are keyed by the metric tags :meth:`ClientQuotaStore.resolve` gives, hold a
windowed Rate (quota.window.num samples of quota.window.size.seconds) and the average throttle
time, and are dropped after an hour unused. Nothing here reads a clock: callers pass ``now_ms``.

:class:`TimedCoroutine` measures "request handler thread time" for request_percentage: the
edge awaits the handler through it once a request quota exists, and it adds up the time the
handler's coroutine runs between its awaits (waiting, e.g. a long-poll Fetch or acks=all, is
not counted, as in Kafka's purgatory).
"""
from __future__ import annotations

import time

from kwire.quota.rate import Avg, QuotaSensor
from kwire.quota.store import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, ClientQuotaStore

INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000
THROTTLE_AVG_SAMPLES, THROTTLE_AVG_WINDOW_MS = 2, 30000   # Kafka's default MetricConfig for throttle-time
NANOS_TO_PERCENTAGE = 100.0 / 1e9
INT32_MAX = 2**31 - 1


class ClientSensors:
    __slots__ = ("tags", "quota", "throttle", "throttle_total_ms", "value_total")

    def __init__(self, tags, samples: int, window_ms: int, bound: float | None) -> None:
        self.tags = tags
        self.quota = QuotaSensor(samples, window_ms, bound)
        self.throttle = Avg(THROTTLE_AVG_SAMPLES, THROTTLE_AVG_WINDOW_MS)
        self.throttle_total_ms = 0
        self.value_total = 0.0


class ClientQuotaManager:
    def __init__(self, quota_type: str, key: str, store_fn, samples: int = 11, window_s: int = 1) -> None:
        self.quota_type = quota_type     # Produce / Fetch / Request (Kafka's QuotaType)
        self.key = key
        self._store_fn = store_fn        # () -> ClientQuotaStore (the image's, which a snapshot replaces)
        self.samples = samples
        self.window_ms = window_s * 1000
        self.enabled = False
        self.sensors: dict[tuple[str, str], ClientSensors] = {}
        self._resolved: dict[tuple[str, str], tuple] = {}
        self._seen: tuple = (None, -1)
        self._swept_ms = 0

    def refresh(self) -> None:
        """Quotas changed: re-resolve, and give existing sensors their new bounds."""
        store: ClientQuotaStore = self._store_fn()
        self._seen = (store, store.version)
        self._resolved.clear()
        if store.has_key(self.key):
            self.enabled = True
        for tags, s in self.sensors.items():
            s.quota.bound = store.limit(tags, self.key)

    def _sensors(self, user: str, client_id: str) -> ClientSensors:
        store = self._store_fn()
        if self._seen[0] is not store or self._seen[1] != store.version:
            self.refresh()
        got = self._resolved.get((user, client_id))
        if got is None:
            got = self._resolved[(user, client_id)] = store.resolve(user, client_id, self.key)
        tags, bound = got
        s = self.sensors.get(tags)
        if s is None:
            s = self.sensors[tags] = ClientSensors(tags, self.samples, self.window_ms, bound)
        return s

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value``; the throttle time (ms) when the quota is now violated, else 0."""
        if not self.enabled:
            return 0
        s = self._sensors(user, client_id)
        s.value_total += value
        throttle = s.quota.record(value, now_ms)
        self._maybe_sweep(now_ms)   # after the record: a sensor made just now is not inactive
        return min(throttle, INT32_MAX)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """A throttled Fetch sends no records: take its bytes back (unrecordQuotaSensor)."""
        if self.enabled:
            s = self._sensors(user, client_id)
            s.value_total -= value
            s.quota.record(-value, now_ms, check=False)

    def throttled(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        """The connection is muted for ``throttle_ms`` because of this quota (the throttle-time metric)."""
        if self.enabled and throttle_ms > 0:
            s = self._sensors(user, client_id)
            s.throttle.record(throttle_ms, now_ms)
            s.throttle_total_ms += throttle_ms

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """The most that one request may record without being throttled for sure
        (getMaxValueInQuotaWindow: bound * (samples - 1) * window); caps a consumer's Fetch."""
        if not self.enabled:
            return float("inf")
        bound = self._sensors(user, client_id).quota.bound
        if bound is None:
            return float("inf")
        return bound * (self.samples - 1) * self.window_ms / 1000

    def _maybe_sweep(self, now_ms: int) -> None:
        if now_ms - self._swept_ms < 60000:
            return
        self._swept_ms = now_ms
        expired = [t for t, s in self.sensors.items()
                   if now_ms - s.quota.last_record_ms >= INACTIVE_SENSOR_EXPIRATION_MS]
        if not expired:
            return
        for tags in expired:
            del self.sensors[tags]
        # what was resolved for each (user, client id) goes with its sensor: it grew with every
        # client id ever seen (issue 32: 5,000 clients with their own ids). Both tables are
        # rebuilt: a dict keeps the hash table of its peak when entries are deleted.
        sensors = self.sensors
        self._resolved = {k: v for k, v in self._resolved.items() if v[0] in sensors}
        self.sensors = dict(sensors)


class TimedCoroutine:
    """Await a handler's coroutine, adding up the time it runs (each step between its awaits):
    Kafka's request handler thread time. Only the request's own steps are timed; Trio's traps
    pass through unchanged."""

    __slots__ = ("_coro", "spent", "_t0")

    def __init__(self, coro) -> None:
        self._coro = coro
        self.spent = 0.0
        self._t0 = 0.0     # start of the step running now (0: none)

    def elapsed(self) -> float:
        """Seconds run so far, the current step included."""
        return self.spent + (time.perf_counter() - self._t0 if self._t0 else 0.0)

    def __await__(self):
        coro, clock = self._coro, time.perf_counter
        send, error = None, None
        while True:
            self._t0 = clock()
            try:
                trap = coro.send(send) if error is None else coro.throw(error)
            except StopIteration as stop:
                self.spent += clock() - self._t0
                self._t0 = 0.0
                return stop.value
            except BaseException:
                self.spent += clock() - self._t0
                self._t0 = 0.0
                raise
            self.spent += clock() - self._t0
            self._t0 = 0.0
            try:
                send, error = (yield trap), None
            except BaseException as exc:  # noqa: BLE001 - handed to the coroutine (Cancelled included)
                send, error = None, exc


def user_of(principal: str) -> str:
    """The principal's name (KafkaPrincipal.getName): ``User:alice`` -> ``alice``."""
    return principal.partition(":")[2] or principal


class ClientQuotas:
    """The broker's three quota managers (``broker.quotas``); a metadata publisher (Kafka's
    DynamicClientQuotaPublisher): a batch that changed the client quotas refreshes them."""
    name = "ClientQuotas"

    def __init__(self, store_fn, samples: int = 11, window_s: int = 1) -> None:
        self.produce = ClientQuotaManager("Produce", PRODUCER_BYTE_RATE, store_fn, samples, window_s)
        self.fetch = ClientQuotaManager("Fetch", CONSUMER_BYTE_RATE, store_fn, samples, window_s)
        self.request = ClientQuotaManager("Request", REQUEST_PERCENTAGE, store_fn, samples, window_s)
        self.enabled = False

    @property
    def managers(self) -> tuple[ClientQuotaManager, ...]:
        return (self.produce, self.fetch, self.request)

    def refresh(self) -> None:
        for m in self.managers:
            m.refresh()
        self.enabled = any(m.enabled for m in self.managers)

    def on_metadata_update(self, delta, image) -> None:
        if delta.client_quotas_changed:
            self.refresh()

    def request_percentage(self, seconds: float) -> float:
        return seconds * 1e9 * NANOS_TO_PERCENTAGE
