"""ApiVersions (key 18): versions 0-4.

Ranges come from the handler registry, so an API is advertised exactly when it is served;
ConsumerGroupHeartbeat / ConsumerGroupDescribe only while group.coordinator.rebalance.protocols
lists "consumer" (their handlers answer UNSUPPORTED_VERSION otherwise, as Kafka).
Produce is advertised from v0 (librdkafka disables compression otherwise) although v0-2 are
refused when used. A request at a version we do not know gets UNSUPPORTED_VERSION encoded as v0
(see kwire.connection). Left out: supported/finalized features (KRaft feature
levels) - no stock client needs them, and leaving the tagged fields at their defaults keeps the
response readable by librdkafka 2.0.
"""
from __future__ import annotations

from kwire.codec.apis import Api
from kwire.handlers import REGISTRY, RequestContext, handles


#: APIs served only when a broker setting enables them: api key -> (config key, value it must list)
ENABLED_BY = {68: ("group.coordinator.rebalance.protocols", "consumer"),   # KIP-848
              69: ("group.coordinator.rebalance.protocols", "consumer")}


def disabled_apis(config) -> set[int]:
    """The api keys a broker with this config does not serve (nor advertise)."""
    if config is None:
        return set()
    out = set()
    for key, (name, needed) in ENABLED_BY.items():
        value = config.get(name)
        items = value.split(",") if isinstance(value, str) else list(value or ())
        if needed not in {str(x).strip().lower() for x in items}:
            out.add(key)
    return out


def api_version_entries(api_versions_api: Api, config=None) -> list:
    cls = api_versions_api.response.struct("ApiVersion")
    out = []
    hidden = disabled_apis(config)
    for key, h in sorted(REGISTRY.items()):
        if key in hidden:
            continue
        lo = 0 if key == 0 else h.min_version  # Produce: advertise from v0
        out.append(cls(api_key=key, min_version=lo, max_version=h.max_version))
    return out


@handles("ApiVersions")
async def api_versions(ctx: RequestContext, req):
    return ctx.response(error_code=0, api_keys=api_version_entries(ctx.api, ctx.broker.config),
                        throttle_time_ms=0)
