"""ApiVersions (key 18): versions 0-4.

Ranges are those of the emulated Kafka release (``kwire.emulate.kafka.version``, see
kwire.emulation) cut to the handler registry, so an API is advertised exactly when it is served.
Produce is advertised from v0 (librdkafka disables compression otherwise), as Kafka 4 does
although it refuses v0-2. A request at a version we do not know gets UNSUPPORTED_VERSION encoded as v0
(see kwire.connection). Left out: supported/finalized features (KRaft feature
levels) - no stock client needs them, and leaving the tagged fields at their defaults keeps the
response readable by librdkafka 2.0.
"""
from __future__ import annotations

from kwire.codec.apis import Api
from kwire.emulation import ApiVersionTable, table_of
from kwire.handlers import RequestContext, handles


def api_version_entries(api_versions_api: Api, versions: ApiVersionTable | None = None) -> list:
    cls = api_versions_api.response.struct("ApiVersion")
    table = versions if versions is not None else table_of(None)
    return [cls(api_key=key, min_version=lo, max_version=hi) for key, (lo, hi) in sorted(table.advertised.items())]


@handles("ApiVersions")
async def api_versions(ctx: RequestContext, req):
    table = table_of(ctx.broker.config)
    return ctx.response(error_code=0, api_keys=api_version_entries(ctx.api, table), throttle_time_ms=0)
