"""Where the connection edge (kwire.server) and the Fetch handler meet the quota managers.

Per request, once a quota exists (``broker.quotas.enabled``; before that the edge does nothing):
- Produce: the request's size is recorded on producer_byte_rate (KafkaApis.handleProduceRequest
  records ``request.sizeInBytes`` as the answer goes out, acks=0 included);
- consumer Fetch: the Fetch handler caps max_bytes at what the quota window allows, records the
  response's record bytes on consumer_byte_rate and, when throttled, takes them back and answers
  an empty response (:func:`fetch_quota`, as KafkaApis.handleFetchRequest);
- every request but the exempt ones (ApiVersions, SASL, replica fetches, WriteTxnMarkers) records
  the time its handler ran (:class:`kwire.quota.manager.TimedCoroutine`) on request_percentage
  (not Produce with acks=0, as Kafka).
The larger throttle time goes into the response's throttle_time_ms; the edge then sends the
answer and reads nothing more from that connection for that long (Kafka mutes the channel).
Clients too old to throttle themselves (Produce < v6, Fetch < v8: AbstractResponse.
shouldClientThrottle) get the answer held back instead.
"""
from __future__ import annotations

from kwire.quota.manager import ClientQuotas, TimedCoroutine, user_of

_PRODUCE, _FETCH = 0, 1
EXEMPT = frozenset({17, 18, 27, 36})   # SaslHandshake, ApiVersions, WriteTxnMarkers, SaslAuthenticate
_CLIENT_THROTTLES_FROM = {_PRODUCE: 6, _FETCH: 8}


def client_throttles(api_key: int, version: int) -> bool:
    return version >= _CLIENT_THROTTLES_FROM.get(api_key, 0)


def timed(ctx, coro) -> TimedCoroutine:
    """Await the handler's ``coro`` timed (request_percentage); the timer is kept on ``ctx``."""
    ctx.request_timer = TimedCoroutine(coro)
    return ctx.request_timer


def _request_throttle(quotas: ClientQuotas, user: str, client_id: str, timer, now_ms: int) -> int:
    if timer is None:
        return 0
    return quotas.request.record(user, client_id, quotas.request_percentage(timer.elapsed()), now_ms)


def after_request(quotas: ClientQuotas, ctx, req, resp, now_ms: int) -> int:
    """Record a handled request on its quotas; the throttle time (ms), also set in ``resp``."""
    if ctx.throttle_time_ms is not None:    # the handler recorded its quotas (Fetch)
        return ctx.throttle_time_ms
    hdr = req.header
    if hdr.api_key in EXEMPT:
        return 0
    user, client_id = user_of(ctx.principal), hdr.client_id or ""
    timer = ctx.request_timer
    bandwidth = 0
    if hdr.api_key == _PRODUCE:
        bandwidth = quotas.produce.record(user, client_id, req.size, now_ms)
        requested = 0 if resp is None else _request_throttle(quotas, user, client_id, timer, now_ms)
    else:
        requested = _request_throttle(quotas, user, client_id, timer, now_ms)
    throttle = max(bandwidth, requested)
    if throttle > 0:
        (quotas.produce if bandwidth > requested else quotas.request).throttled(user, client_id, throttle, now_ms)
        if resp is not None and hasattr(resp, "throttle_time_ms"):
            resp.throttle_time_ms = max(resp.throttle_time_ms or 0, throttle)
    return throttle


def fetch_max_bytes(quotas: ClientQuotas, ctx, max_bytes: int) -> int:
    """A consumer's max_bytes, capped at what one quota window allows (getMaxValueInQuotaWindow)."""
    if not quotas.fetch.enabled:
        return max_bytes
    cap = quotas.fetch.max_value_in_window(user_of(ctx.principal), ctx.client_id or "")
    return max_bytes if cap >= max_bytes else max(int(cap), 0)


def fetch_quota(quotas: ClientQuotas, ctx, response_bytes: int, now_ms: int) -> int:
    """Record a consumer Fetch's answer (bandwidth and request time); when either quota is
    violated the bytes are taken back and the caller answers an empty response."""
    user, client_id = user_of(ctx.principal), ctx.client_id or ""
    requested = _request_throttle(quotas, user, client_id, ctx.request_timer, now_ms)
    bandwidth = quotas.fetch.record(user, client_id, response_bytes, now_ms)
    throttle = max(bandwidth, requested)
    if throttle > 0:
        quotas.fetch.unrecord(user, client_id, response_bytes, now_ms)
        (quotas.fetch if bandwidth > requested else quotas.request).throttled(user, client_id, throttle, now_ms)
    return throttle
