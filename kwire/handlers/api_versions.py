"""ApiVersions (key 18): versions 0-4.

Ranges are those of the emulated Kafka release (``kwire.emulate.kafka.version``, see
kwire.emulation) cut to the handler registry, so an API is advertised exactly when it is served;
ConsumerGroupHeartbeat / ConsumerGroupDescribe only while group.coordinator.rebalance.protocols
lists "consumer" (their handlers answer UNSUPPORTED_VERSION otherwise, as Kafka).
Produce is advertised from v0 (librdkafka disables compression otherwise), as Kafka 4 does
although it refuses v0-2. A request at a version we do not know gets UNSUPPORTED_VERSION encoded
as v0 (see kwire.connection).

Features (v3+, KIP-584): ``transaction.version`` and ``share.version`` (broker configs of
the same names are the finalized levels). transaction.version is 1 or 2; unset, the emulated
release's default: 2 under 4.x, as Kafka 4 formats a new cluster, 1 under 3.x. At level 2 it
is sent as supported
(0-2) and finalized (2), with Produce v12, EndTxn v5 and TxnOffsetCommit v5 (KIP-890 part 2:
the Java client 4.x then uses transaction version 2) when the emulated release has them (4.0+;
under 3.x emulation the level is taken as 1); at level 1 those three stop at v11 / v4 / v4.
share.version (KIP-932, 0 or 1, default 1): at 1 sent as supported (0-1) and finalized (1)
when the emulated release has share groups (4.1+); at 0 the share-group APIs (76-79, 90-92)
are neither served nor advertised. With no feature to send the tagged fields stay at their
defaults, which keeps the response readable by librdkafka 2.0 (under 4.1+ emulation
share.version is sent: share.version=0 leaves it out). Left out: metadata.version and the
other KRaft features, which no stock client reads.
"""
from __future__ import annotations

import re

from kwire.codec.apis import Api
from kwire.errors import ErrorCode
from kwire.emulation import ApiVersionTable, table_of
from kwire.handlers import RequestContext, handles

#: the last version of each API before transaction version 2 (Kafka's LAST_BEFORE_TRANSACTION_V2_VERSION)
TV1_MAX_VERSIONS = {0: 11, 26: 4, 28: 4}
TRANSACTION_VERSION = "transaction.version"

#: APIs served only when a broker setting enables them: api key -> (config key, value it must list)
ENABLED_BY = {68: ("group.coordinator.rebalance.protocols", "consumer"),   # KIP-848
              69: ("group.coordinator.rebalance.protocols", "consumer")}


#: the share-group APIs (KIP-932), served while the share.version feature is finalized at 1+
SHARE_APIS = (76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92)
SHARE_VERSION = "share.version"


def share_version(config) -> int:
    try:
        return int(config.get(SHARE_VERSION) if config is not None else 1)
    except (TypeError, ValueError):
        return 0


def disabled_apis(config) -> set[int]:
    """The api keys a broker with this config does not serve (nor advertise)."""
    if config is None:
        return set()
    out = set() if share_version(config) >= 1 else set(SHARE_APIS)
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


#: what Kafka's ApiVersionsRequest.isValid accepts as client_software_name / _version (v3+, KIP-511)
SOFTWARE_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


@handles("ApiVersions")
async def api_versions(ctx: RequestContext, req):
    if ctx.version >= 3 and not (SOFTWARE_NAME.fullmatch(req.client_software_name or "")
                                 and SOFTWARE_NAME.fullmatch(req.client_software_version or "")):
        # as Kafka: INVALID_REQUEST and no ranges (found by the differential harness)
        return ctx.response(error_code=ErrorCode.INVALID_REQUEST, api_keys=[], throttle_time_ms=0)
    config = ctx.broker.config
    table = table_of(config)
    tv = transaction_version(config, table)
    extra = {}
    features = []   # (name, max supported, finalized level)
    sv = share_version(config)
    if sv >= 1 and 76 in table.accepted:   # the emulated release has share groups (4.1+)
        features.append((SHARE_VERSION, 1, sv))
    if tv >= 2:
        features.append((TRANSACTION_VERSION, 2, tv))
    if features and ctx.version >= 3:
        features.sort()
        extra = dict(
            supported_features=[ctx.struct("SupportedFeatureKey")(name=n, min_version=0, max_version=hi)
                                for n, hi, _lvl in features],
            finalized_features_epoch=0,
            finalized_features=[ctx.struct("FinalizedFeatureKey")(name=n, max_version_level=lvl,
                                                                  min_version_level=lvl)
                                for n, _hi, lvl in features])
    return ctx.response(error_code=0, api_keys=api_version_entries(ctx.api, tv, table, ctx.broker.config),
                        throttle_time_ms=0, **extra)
