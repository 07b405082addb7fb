"""ApiVersions (key 18): versions 0-4.

Ranges are those of the emulated Kafka release (``kwire.emulate.kafka.version``, see
kwire.emulation) cut to the handler registry, so an API is advertised exactly when it is served;
ConsumerGroupHeartbeat / ConsumerGroupDescribe only while group.coordinator.rebalance.protocols
lists "consumer" (their handlers answer UNSUPPORTED_VERSION otherwise, as Kafka).
Produce is advertised from v0 (librdkafka disables compression otherwise), as Kafka 4 does
although it refuses v0-2. A request at a version we do not know gets UNSUPPORTED_VERSION encoded
as v0 (see kwire.connection).

Features (v3+, KIP-584): the one kwire has is ``transaction.version`` (the broker config of the
same name is the finalized level, 1 or 2; unset, the emulated release's default: 2 under 4.x,
as Kafka 4 formats a new cluster, 1 under 3.x). At level 2 the response carries it as supported
(0-2) and finalized (2), with Produce v12, EndTxn v5 and TxnOffsetCommit v5 (KIP-890 part 2:
the Java client 4.x then uses transaction version 2) when the emulated release has them (4.0+;
under 3.x emulation the level is taken as 1); at
level 1 those three stop at v11 / v4 / v4 and no feature is sent (the tagged fields stay at
their defaults, which keeps the response readable by librdkafka 2.0). Left out:
metadata.version and the other KRaft features, which no stock client reads.
"""
from __future__ import annotations

from kwire.codec.apis import Api
from kwire.emulation import ApiVersionTable, table_of
from kwire.handlers import RequestContext, handles

#: the last version of each API before transaction version 2 (Kafka's LAST_BEFORE_TRANSACTION_V2_VERSION)
TV1_MAX_VERSIONS = {0: 11, 26: 4, 28: 4}
TRANSACTION_VERSION = "transaction.version"

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


def api_version_entries(api_versions_api: Api, transaction_version: int = 1,
                        versions: ApiVersionTable | None = None, config=None) -> list:
    cls = api_versions_api.response.struct("ApiVersion")
    table = versions if versions is not None else table_of(None)
    out = []
    hidden = disabled_apis(config)
    for key, (lo, hi) in sorted(table.advertised.items()):
        if key in hidden:
            continue
        if transaction_version < 2 and key in TV1_MAX_VERSIONS:
            hi = min(hi, TV1_MAX_VERSIONS[key])
        out.append(cls(api_key=key, min_version=lo, max_version=hi))
    return out


def transaction_version(config, table: ApiVersionTable) -> int:
    """The finalized transaction.version level: the config's, else the emulated release's default
    (Kafka's TransactionVersion.TV_2 bootstraps with metadata version 4.0-IV2, so kafka-storage
    format gives a new 4.x cluster level 2); always 1 under a release without EndTxn v5 (3.x)."""
    if table.accepted.get(26, (0, 0))[1] < 5:
        return 1   # the emulated release (3.x) predates transaction version 2: not offered
    configured = config.get(TRANSACTION_VERSION) if config is not None else None
    return 2 if configured is None else int(configured)


@handles("ApiVersions")
async def api_versions(ctx: RequestContext, req):
    config = ctx.broker.config
    table = table_of(config)
    tv = transaction_version(config, table)
    extra = {}
    if tv >= 2 and ctx.version >= 3:
        extra = dict(
            supported_features=[ctx.struct("SupportedFeatureKey")(name=TRANSACTION_VERSION, min_version=0,
                                                                  max_version=2)],
            finalized_features_epoch=0,
            finalized_features=[ctx.struct("FinalizedFeatureKey")(name=TRANSACTION_VERSION, max_version_level=tv,
                                                                  min_version_level=tv)])
    return ctx.response(error_code=0, api_keys=api_version_entries(ctx.api, tv, table, ctx.broker.config),
                        throttle_time_ms=0, **extra)
