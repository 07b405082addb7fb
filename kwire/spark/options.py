"""The options of the ``kwire`` data source, parsed and checked the way Spark's Kafka source
does (spark-sql-kafka-0-10's KafkaSourceProvider), so that a job moves between the two by a
change of format name.

Everything here runs on the driver or in a Python worker and must stay picklable: plain data.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Mapping

log = logging.getLogger("kwire.spark")

EARLIEST = -2   # Spark's per-partition JSON: -2 is earliest, -1 is latest
LATEST = -1

# Kafka consumer settings the source owns (Spark refuses them too, with the same reasons).
_OWNED = {
    "auto.offset.reset": "Set 'startingOffsets' instead; the source manages offsets itself.",
    "enable.auto.commit": "The source does not commit offsets to Kafka; offsets live in Spark's checkpoint.",
    "key.deserializer": "Keys are always read as bytes; cast the key column in the DataFrame.",
    "value.deserializer": "Values are always read as bytes; cast the value column in the DataFrame.",
    "interceptor.classes": "Interceptors are not supported.",
}


class OptionError(ValueError):
    """A bad option: the message names the option and what it accepts."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def client_config(opts: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``kafka.*`` options without their prefix: the settings handed to confluent-kafka."""
    conf = {k[len("kafka."):]: v for k, v in _lower(defaults or {}).items() if k.startswith("kafka.")}
    conf.update({k[len("kafka."):]: v for k, v in _lower(opts).items() if k.startswith("kafka.")})
    if not conf.get("bootstrap.servers"):
        raise OptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka "
                          "(or pass bootstrap_servers= to kwire.spark.register)")
    return conf


def _parse_bool(name: str, raw: str | None, default: bool) -> bool:
    if raw is None:
        return default
    low = raw.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise OptionError(f"Option '{name}' must be true or false, got {raw!r}")


def _parse_positive_int(name: str, raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        n = int(raw)
    except ValueError:
        raise OptionError(f"Option '{name}' must be a positive integer, got {raw!r}") from None
    if n <= 0:
        raise OptionError(f"Option '{name}' must be a positive integer, got {raw!r}")
    return n


def _parse_partition_json(name: str, raw: str, *, what: str = "offset") -> dict[str, dict[int, int]]:
    """``{"topicA": {"0": 23, "1": -1}}`` -> ``{"topicA": {0: 23, 1: -1}}``."""
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f"Option '{name}' is not valid JSON ({exc.msg}): expected "
                          f'{{"topic": {{"0": {what}, ...}}}}, got {raw!r}') from None
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise OptionError(f"Option '{name}' must map each topic to {{partition: {what}}}, got {raw!r}")
    out: dict[str, dict[int, int]] = {}
    for topic, parts in doc.items():
        for p, off in parts.items():
            try:
                pi, oi = int(p), int(off)
            except (TypeError, ValueError):
                raise OptionError(f"Option '{name}': partition {p!r} of topic {topic!r} needs an integer "
                                  f"partition and {what}, got {off!r}") from None
            out.setdefault(topic, {})[pi] = oi
    return out


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends: ``kind`` is earliest, latest, json (per-partition offsets)
    or timestamp (per-partition or global timestamps, resolved by ListOffsets)."""
    kind: str
    offsets: dict = field(default_factory=dict)      # {topic: {partition: offset}} for json
    timestamps: dict = field(default_factory=dict)   # {topic: {partition: ts}} for timestamp
    global_ts: int | None = None                      # startingTimestamp / endingTimestamp
    strategy: str = "error"                           # ...ByTimestampStrategy: error | latest


def _offset_spec(opts: dict, prefix: str, default: str) -> OffsetSpec:
    ts_name = f"{prefix}offsetsbytimestamp"
    global_name = f"{prefix}timestamp"
    strategy = opts.get(f"{prefix}offsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise OptionError(f"Option '{prefix}OffsetsByTimestampStrategy' must be error or latest, got {strategy!r}")
    if global_name in opts:
        try:
            ts = int(opts[global_name])
        except ValueError:
            raise OptionError(f"Option '{prefix}Timestamp' must be a timestamp in ms, got {opts[global_name]!r}") from None
        return OffsetSpec("timestamp", global_ts=ts, strategy=strategy)
    if ts_name in opts:
        return OffsetSpec("timestamp", timestamps=_parse_partition_json(f"{prefix}OffsetsByTimestamp",
                                                                        opts[ts_name], what="timestamp"),
                          strategy=strategy)
    raw = opts.get(f"{prefix}offsets", default).strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetSpec(raw.lower())
    return OffsetSpec("json", offsets=_parse_partition_json(f"{prefix}Offsets", raw))


_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _parse_duration_ms(name: str, raw: str | None, default: int) -> int:
    """Spark's time strings (JavaUtils.timeStringAsMs): ``15m``, ``30s``, ``100ms``, ``2h``, a bare
    number of milliseconds."""
    if raw is None:
        return default
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", raw.lower())
    if m is None or (m.group(2) and m.group(2) not in _TIME_UNITS):
        raise OptionError(f"Option '{name}' must be a time like 15m, 30s or 500ms, got {raw!r}")
    return int(int(m.group(1)) * _TIME_UNITS.get(m.group(2) or "ms", 1))


@dataclass(frozen=True)
class ReadOptions:
    client: dict
    strategy: str          # subscribe | subscribePattern | assign
    topics: tuple = ()     # subscribe
    pattern: str = ""      # subscribePattern
    assign: dict = field(default_factory=dict)   # {topic: [partitions]}
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000      # Spark's maxTriggerDelay default: 15m
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    group_id_prefix: str = "spark-kafka-source"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000


def read_options(options: Mapping[str, str], *, streaming: bool,
                 defaults: Mapping[str, str] | None = None) -> ReadOptions:
    opts = {**_lower(defaults or {}), **_lower(options)}
    client = client_config(opts)
    for key, why in _OWNED.items():
        if key in client:
            raise OptionError(f"Kafka option 'kafka.{key}' is not supported: {why}")
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        raise OptionError("Exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be "
                          f"specified, got {len(given)}" + (f" ({', '.join(given)})" if given else ""))
    kind = given[0]
    kw: dict = {}
    if kind == "subscribe":
        topics = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not topics:
            raise OptionError("Option 'subscribe' needs a comma-separated list of topics, got an empty value")
        kw["topics"] = topics
        strategy = "subscribe"
    elif kind == "subscribepattern":
        try:
            re.compile(opts["subscribepattern"])
        except re.error as exc:
            raise OptionError(f"Option 'subscribePattern' is not a valid regular expression: {exc}") from None
        kw["pattern"] = opts["subscribepattern"]
        strategy = "subscribePattern"
    else:
        try:
            doc = json.loads(opts["assign"])
            kw["assign"] = {t: sorted(int(p) for p in ps) for t, ps in doc.items()}
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            raise OptionError('Option \'assign\' must be JSON like {"topicA": [0, 1], "topicB": [2]}, '
                              f"got {opts['assign']!r}") from None
        strategy = "assign"
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending = _offset_spec(opts, "ending", "latest")
    if streaming and any(k.startswith("ending") for k in opts):
        raise OptionError("Options 'endingOffsets' / 'endingOffsetsByTimestamp' are not valid in streaming queries")
    if not streaming:
        if starting.kind == "latest":
            raise OptionError("Option 'startingOffsets' cannot be 'latest' for batch queries")
        if ending.kind == "earliest":
            raise OptionError("Option 'endingOffsets' cannot be 'earliest' for batch queries")
        if starting.kind == "json" and any(o == LATEST for ps in starting.offsets.values() for o in ps.values()):
            raise OptionError("Option 'startingOffsets' cannot use -1 (latest) for a partition in batch queries")
        if ending.kind == "json" and any(o == EARLIEST for ps in ending.offsets.values() for o in ps.values()):
            raise OptionError("Option 'endingOffsets' cannot use -2 (earliest) for a partition in batch queries")
    if not streaming:    # KafkaSourceProvider.validateBatchOptions: logged and ignored (jobs share options)
        for key, name in (("minoffsetspertrigger", "minOffsetsPerTrigger"),
                          ("maxoffsetspertrigger", "maxOffsetsPerTrigger"), ("maxtriggerdelay", "maxTriggerDelay")):
            if key in opts:
                log.warning("%s option ignored in batch queries", name)
    poll = _parse_positive_int("kafkaConsumer.pollTimeoutMs", opts.get("kafkaconsumer.polltimeoutms"))
    prefix = opts.get("groupidprefix", "spark-kafka-source")
    if not prefix.strip():
        raise OptionError("Option 'groupIdPrefix' must not be empty")
    return ReadOptions(
        client=client, strategy=strategy, starting=starting, ending=ending,
        max_offsets_per_trigger=_parse_positive_int("maxOffsetsPerTrigger", opts.get("maxoffsetspertrigger"))
        if streaming else None,
        min_offsets_per_trigger=_parse_positive_int("minOffsetsPerTrigger", opts.get("minoffsetspertrigger"))
        if streaming else None,
        max_trigger_delay_ms=_parse_duration_ms("maxTriggerDelay", opts.get("maxtriggerdelay"), 15 * 60_000),
        min_partitions=_parse_positive_int("minPartitions", opts.get("minpartitions")),
        max_records_per_partition=_parse_positive_int("maxRecordsPerPartition",
                                                      opts.get("maxrecordsperpartition")),
        group_id_prefix=prefix,
        fail_on_data_loss=_parse_bool("failOnDataLoss", opts.get("failondataloss"), True),
        include_headers=_parse_bool("includeHeaders", opts.get("includeheaders"), False),
        poll_timeout_ms=poll or 120_000, **kw)


@dataclass(frozen=True)
class WriteOptions:
    client: dict
    topic: str | None
    exactly_once: bool = False
    transactional_id_prefix: str | None = None


def write_options(options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> WriteOptions:
    opts = {**_lower(defaults or {}), **_lower(options)}
    client = client_config(opts)
    for key in ("key.serializer", "value.serializer"):
        if key in client:
            raise OptionError(f"Kafka option 'kafka.{key}' is not supported: write binary or string columns")
    eos = _parse_bool("exactlyOnce", opts.get("exactlyonce"), False)
    prefix = opts.get("transactionalidprefix")
    if eos and not prefix:
        raise OptionError("Option 'exactlyOnce' needs 'transactionalIdPrefix': a name unique to this query, "
                          "kept across restarts (each writer task uses <prefix>-<partition>)")
    if "transactional.id" in client:
        raise OptionError("Kafka option 'kafka.transactional.id' is not supported: use exactlyOnce=true "
                          "with transactionalIdPrefix")
    return WriteOptions(client=client, topic=opts.get("topic") or None, exactly_once=eos,
                        transactional_id_prefix=prefix)
