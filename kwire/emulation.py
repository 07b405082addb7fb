"""Kafka-version emulation (``kwire.emulate.kafka.version``): which API versions a broker
advertises in ApiVersions and accepts, as the Kafka release it emulates does.

``KAFKA_API_VERSIONS`` holds, per Kafka release, the request versions a KRaft broker listener
of that release serves, as its message definitions declare them (``validVersions`` of
clients/src/main/resources/common/message/*Request.json at the release, for the APIs whose
``listeners`` include ``broker``), checked against the ApiVersions answers of real brokers
that kafka-python records (kafka.protocol.broker_version_data). Kafka 4.x refuses Produce v0-2
but still advertises Produce from v0 (librdkafka turns compression off otherwise): the table
holds what is accepted (3+), and :func:`advertised` applies that one rule.

What kwire serves is the intersection of the table with its handlers' ranges (the handler
registry, kwire.handlers.REGISTRY): an API kwire does not serve is never advertised, whatever
the release (metadata never claims what kwire does not do); :func:`missing` names those gaps
and docs/emulation.md lists them. The default release is the newest one whose APIs kwire serves
in full (every API of that release that kwire serves at all, across the release's whole
range); tests/handlers/test_emulation.py keeps it so.

Under emulation a request at a version outside the emulated range is refused as the emulated
Kafka refuses it: ApiVersions gets UNSUPPORTED_VERSION with the emulated ranges, every other
API closes the connection (kwire.connection).
"""
from __future__ import annotations

from functools import lru_cache

from kwire.value import Value

PRODUCE_KEY = 0

# {release: {api key: (min, max) accepted}}; a KRaft broker listener's APIs (no ZooKeeper-era
# inter-broker APIs: LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, Envelope...).
KAFKA_API_VERSIONS: dict[str, dict[int, tuple[int, int]]] = {
    "3.9": {
        0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (0, 7),
        20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1),
        28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
        36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
        55: (0, 2), 57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 0),
        69: (0, 0), 74: (0, 0), 75: (0, 0),
    },
    # KIP-896: the versions older clients need for message format v0/v1 and ZooKeeper-era
    # semantics are gone (Produce v0-2, Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, ...).
    "4.0": {
        0: (3, 12), 1: (4, 17), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (2, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
        20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 1),
        28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4),
        36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
        55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 1),
        69: (0, 1), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
    },
    # 4.1 brought JoinGroup v0-1 back (clients that never moved past them), Produce v13 (topic
    # ids), Fetch v18, ListTransactions v2, ListConfigResources v1, share groups.
    "4.1": {
        0: (3, 13), 1: (4, 18), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
        20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 1),
        28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4),
        36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
        55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
        69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 1), 79: (1, 1), 80: (0, 0),
        81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 0), 86: (0, 0), 87: (0, 0), 90: (0, 0), 91: (0, 0),
        92: (0, 0),
    },
    # 4.2: ListOffsets v11 (earliest pending upload), OffsetCommit/OffsetFetch v10 (topic ids),
    # WriteTxnMarkers v2; 4.3: DescribeLogDirs v5.
    "4.2": {
        0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
        20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2),
        28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4),
        36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
        55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
        69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 80: (0, 1),
        81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 0), 89: (0, 0),
        90: (0, 1), 91: (0, 0), 92: (0, 0),
    },
    "4.3": {
        0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9),
        12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
        20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2),
        28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5),
        36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
        55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
        69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 80: (0, 1),
        81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 0), 89: (0, 0),
        90: (0, 1), 91: (0, 0), 92: (0, 0),
    },
}
KAFKA_VERSIONS: tuple[str, ...] = tuple(KAFKA_API_VERSIONS)
# The newest release whose APIs kwire serves in full (see the module doc; a test checks it).
DEFAULT_KAFKA_VERSION = "4.3"
CONFIG_KEY = "kwire.emulate.kafka.version"


class ApiVersionTable(Value):   # frozen (kwire.value: no generated code at import)
    """What one broker serves: ``accepted`` {api key: (min, max)} (the requests it handles) and
    ``advertised`` (its ApiVersions entries)."""
    kafka_version: str
    accepted: dict[int, tuple[int, int]]
    advertised: dict[int, tuple[int, int]]

    def serves(self, api_key: int, version: int) -> bool:
        r = self.accepted.get(api_key)
        return r is not None and r[0] <= version <= r[1]


def served_ranges() -> dict[int, tuple[int, int]]:
    """kwire's own ranges: what its handlers can answer."""
    from kwire.served import served_ranges as ranges  # noqa: PLC0415 - emulation is imported by config

    return ranges()


def accepted(kafka_version: str, served: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    table = KAFKA_API_VERSIONS[kafka_version]
    out = {}
    for key, (lo, hi) in table.items():
        s = served.get(key)
        if s is None:
            continue
        lo2, hi2 = max(lo, s[0]), min(hi, s[1])
        if lo2 <= hi2:
            out[key] = (lo2, hi2)
    return out


def advertised(kafka_version: str, acc: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    out = dict(acc)
    if PRODUCE_KEY in out:   # Kafka advertises Produce from v0 whatever it accepts
        out[PRODUCE_KEY] = (0, out[PRODUCE_KEY][1])
    return out


def missing(kafka_version: str, served: dict[int, tuple[int, int]]) -> dict[int, tuple[tuple[int, int], tuple[int, int] | None]]:
    """{api key: (the release's range, what kwire serves of it or None)} where they differ."""
    out = {}
    for key, r in KAFKA_API_VERSIONS[kafka_version].items():
        s = served.get(key)
        got = None if s is None else (max(r[0], s[0]), min(r[1], s[1]))
        if got is not None and got[0] > got[1]:
            got = None
        if got != r:
            out[key] = (r, got)
    return out


@lru_cache(maxsize=None)
def table_for(kafka_version: str | None) -> ApiVersionTable:
    v = kafka_version or DEFAULT_KAFKA_VERSION
    if v not in KAFKA_API_VERSIONS:
        raise ValueError(f"{CONFIG_KEY}={v!r} is not a Kafka version kwire emulates "
                         f"(one of {', '.join(KAFKA_VERSIONS)})")
    acc = accepted(v, served_ranges())
    return ApiVersionTable(v, acc, advertised(v, acc))


def table_of(config) -> ApiVersionTable:
    """The table of a broker config (a BrokerConfig, or None for the default)."""
    v = None
    if config is not None:
        try:
            v = config.get(CONFIG_KEY)
        except KeyError:
            v = None
    return table_for(v)


# ------------------------------------------------------------------------------ docs/emulation.md
# Names of the APIs kwire has no schema for (kwire.codec.apis names the others).
_OTHER_NAMES = {
    34: "AlterReplicaLogDirs", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
    40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 48: "DescribeClientQuotas",
    49: "AlterClientQuotas", 50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials",
    57: "UpdateFeatures", 68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe",
    76: "ShareGroupHeartbeat", 77: "ShareGroupDescribe", 78: "ShareFetch", 79: "ShareAcknowledge",
    80: "AddRaftVoter", 81: "RemoveRaftVoter", 83: "InitializeShareGroupState", 84: "ReadShareGroupState",
    85: "WriteShareGroupState", 86: "DeleteShareGroupState", 87: "ReadShareGroupStateSummary",
    88: "StreamsGroupHeartbeat", 89: "StreamsGroupDescribe", 90: "DescribeShareGroupOffsets",
    91: "AlterShareGroupOffsets", 92: "DeleteShareGroupOffsets",
}


def api_name(key: int) -> str:
    from kwire.codec.apis import APIS  # noqa: PLC0415 - start-up time: kwire.config imports this module

    return APIS[key].name if key in APIS else _OTHER_NAMES.get(key, f"api key {key}")


def _r(r) -> str:
    return "none" if r is None else (f"v{r[0]}" if r[0] == r[1] else f"v{r[0]}-{r[1]}")


def render() -> str:
    """docs/emulation.md: ``python -m kwire.emulation > docs/emulation.md`` (make docs)."""
    served = served_ranges()
    out = ["# Kafka-version emulation", "",
           "Generated from kwire/emulation.py (`make docs`). `kwire.emulate.kafka.version` (default "
           f"`{DEFAULT_KAFKA_VERSION}`) picks the Kafka release whose API versions a broker advertises in "
           "ApiVersions and accepts: one of " + ", ".join(f"`{v}`" for v in KAFKA_VERSIONS) + ". An unknown "
           "value stops `kwire serve` with one line naming the key and the choices.", "",
           "- Under 3.x kwire serves what Kafka 4 removed (KIP-896): Produce v0-2 with message formats v0/v1 "
           "(converted to record batch v2 on append), Fetch v0-3 (v2 batches down-converted: v0-1 read magic 0, "
           "v2-3 magic 1; headers dropped; zstd answered UNSUPPORTED_COMPRESSION_TYPE), ListOffsets v0, "
           "OffsetCommit v0-1 and OffsetFetch v0 (the ZooKeeper versions v0 are answered UNSUPPORTED_VERSION, "
           "as a KRaft 3.x broker answers them), Metadata v0-3, JoinGroup v0-1, SyncGroup/Heartbeat/LeaveGroup "
           "v0, DescribeGroups v0, CreateTopics v0-1, DeleteTopics v0, OffsetForLeaderEpoch v0-1, ACLs v0, "
           "DescribeConfigs v0, DescribeLogDirs v0.",
           "- Under 4.x a request at a version the release removed is refused as Kafka 4 refuses it: the "
           "connection is closed (ApiVersions: UNSUPPORTED_VERSION with the release's ranges). Produce stays "
           "advertised from v0, as Kafka 4 does, and v0-2 are refused.",
           "- An API the release has and kwire does not serve is never advertised; a version range kwire serves "
           "only in part is advertised in that part. Both are listed below. The default is the newest release "
           "with no partial ranges.",
           "- `transaction.version=2` (KIP-890 part 2: Produce v12, EndTxn v5, TxnOffsetCommit v5 and the "
           "finalized feature in ApiVersions) is Kafka 4's: under 3.x emulation the broker offers transaction "
           "version 1 only.",
           "- Version-sniffing clients infer the release from these ranges: kafka-python's check_version says "
           "the emulated release under each of them (it tells 4.1 by Produce v13 and 4.2 by ListOffsets v11).", ""]
    for v in KAFKA_VERSIONS:
        gaps = missing(v, served)
        partial = [(k, r, got) for k, (r, got) in gaps.items() if got is not None]
        absent = [(k, r) for k, (r, got) in gaps.items() if got is None]
        acc = accepted(v, served)
        out += [f"## Kafka {v}", "", f"{len(acc)} APIs advertised; {len(partial)} served in part; "
                f"{len(absent)} not served.", ""]
        if partial:
            out += ["| API | Kafka " + v + " | kwire serves |", "| --- | --- | --- |"]
            out += [f"| {api_name(k)} ({k}) | {_r(r)} | {_r(got)} |" for k, r, got in partial]
            out.append("")
        if absent:
            out += ["Not served: " + ", ".join(f"{api_name(k)} ({k}, {_r(r)})" for k, r in absent) + ".", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(render())
