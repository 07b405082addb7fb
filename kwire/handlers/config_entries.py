"""What DescribeConfigs reports for each config: value, source, read-only flag, synonyms.

Kafka's ConfigHelper rules, over kwire's one config table (:mod:`kwire.config_keys`):
- a broker key's synonyms come, in this order, from the per-broker dynamic configs, the
  cluster-default dynamic configs, the static config (server.properties, --override) and the
  table's defaults, over the key and the keys that set the same thing (log.retention.ms,
  .minutes, .hours); the list starts at the key itself (Kafka's ``dropWhile``);
- a topic key's synonyms are its override (TOPIC_CONFIG) then the synonyms of its broker key;
- a group key's synonyms are its override (GROUP_CONFIG) then the synonyms of the broker key
  that gives its default (a group key of its own: its default);
- the source is the first synonym's, else DEFAULT_CONFIG; read_only is true for broker keys
  that cannot change at run time and false for topic and group keys; PASSWORD values are null.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kwire.config import BROKER, BROKER_SYNONYMS, GROUP, TOPIC, BrokerConfig
from kwire.configdef import ConfigError, Type, to_string

TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG = 4, 5, 6
CLIENT_METRICS_CONFIG, GROUP_CONFIG = 7, 8
DYNAMIC_TOPIC_CONFIG = TOPIC_CONFIG


@dataclass
class Entry:
    name: str
    value: str | None
    source: int
    synonyms: list = field(default_factory=list)   # [(name, value, source)]
    read_only: bool = False
    sensitive: bool = False
    config_type: int = 0
    doc: str | None = None


def config_type(name: str) -> int:
    """Kafka's ConfigType of a broker, topic or group key (0: UNKNOWN)."""
    spec = TOPIC.get(name) or BROKER.get(name) or GROUP.get(name)
    return int(spec.type) if spec is not None else 0


# Kafka's QuotaConfig.brokerQuotaConfigs: keys of DynamicConfig.Broker only, not of KafkaConfig's
# ConfigDef, so ConfigHelper finds no DEFAULT_CONFIG synonym for them (kafka-configs --describe of a
# broker with a --throttle set lists only the DYNAMIC_BROKER_CONFIG one)
_NO_DEFAULT_SYNONYM = frozenset({"leader.replication.throttled.rate", "follower.replication.throttled.rate",
                                 "replica.alter.log.dirs.io.max.bytes.per.second"})


def _sources(cfg: BrokerConfig, per_broker: dict, dyn_default: dict):
    """(source id, {name: value string}) in Kafka's synonym order."""
    defaults = {k.name: k.default_string for k in BROKER.values()
                if k.default is not None and k.name not in _NO_DEFAULT_SYNONYM}
    return ((DYNAMIC_BROKER_CONFIG, per_broker), (DYNAMIC_DEFAULT_BROKER_CONFIG, dyn_default),
            (STATIC_BROKER_CONFIG, cfg.originals), (DEFAULT_CONFIG, defaults))


def config_synonyms(name: str, names: list[str], sensitive: bool, sources) -> list[tuple]:
    out = []
    for source, values in sources:
        for n in names:
            if n in values and values[n] is not None:
                out.append((n, None if sensitive else values[n], source))
    while out and out[0][0] != name:
        out.pop(0)
    return out


class Describer:
    """Builds entries for one DescribeConfigs request against a broker's state."""

    def __init__(self, broker):
        self.b = broker
        self.cfg: BrokerConfig = broker.config
        self.per_broker = broker.image.broker_configs.get(str(broker.node_id), {})
        self.dyn_default = broker.image.broker_configs.get("", {})
        self.sources = _sources(self.cfg, self.per_broker, self.dyn_default)

    # ------------------------------------------------------------------ brokers
    def broker_entries(self, resource_name: str) -> list[Entry]:
        if resource_name == "":
            return [self._broker_entry(n, self.dyn_default[n], per_broker=False) for n in sorted(self.dyn_default)]
        names = {k.name for k in BROKER.values() if not k.hidden}
        names |= set(self.cfg.originals) | set(self.per_broker) | set(self.dyn_default)
        return [self._broker_entry(n, None, per_broker=True) for n in sorted(names)]

    def _broker_entry(self, name: str, raw: str | None, *, per_broker: bool) -> Entry:
        spec = BROKER.get(name)
        sensitive = spec is not None and spec.sensitive
        if raw is None:
            if spec is not None:
                value = to_string(self.cfg.get(name), spec.type)
            else:
                value = self.per_broker.get(name, self.dyn_default.get(name, self.cfg.originals.get(name)))
        else:
            value = raw
        syn = config_synonyms(name, BROKER_SYNONYMS.get(name, [name]), sensitive, self.sources)
        if not per_broker:
            syn = [s for s in syn if s[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        return Entry(name, None if sensitive else value, syn[0][2] if syn else DEFAULT_CONFIG, syn,
                     read_only=spec is None or not spec.dynamic, sensitive=sensitive,
                     config_type=int(spec.type) if spec else 0, doc=spec.doc if spec else None)

    # ------------------------------------------------------------------ topics
    def topic_entries(self, topic, overrides: dict | None = None) -> list[Entry]:
        """``overrides`` stands for the topic's configs when the topic is not created yet."""
        explicit = overrides if overrides is not None else (topic.configs if topic is not None else {})
        out = []
        for name, spec in sorted(TOPIC.items()):
            given = explicit.get(name)
            if spec.hidden and given is None:
                continue
            value = None
            if given is not None:
                try:
                    value = to_string(spec.parse(given), spec.type)
                except ConfigError:
                    value = given
            else:
                value = to_string(self.cfg.topic_default(name), spec.type)
            syn = []
            if given is not None:
                syn.append((name, value, TOPIC_CONFIG))
            if spec.synonyms:
                syn += config_synonyms(spec.synonyms[0], list(spec.synonyms), spec.sensitive, self.sources)
            out.append(Entry(name, value, syn[0][2] if syn else DEFAULT_CONFIG, syn, read_only=False,
                             sensitive=spec.sensitive, config_type=int(spec.type), doc=spec.doc))
        return out

    # ------------------------------------------------------------------ groups
    def group_entries(self, group_id: str) -> list[Entry]:
        explicit = self.b.image.group_configs.get(group_id, {})
        out = []
        for name, spec in sorted(GROUP.items()):
            given = explicit.get(name)
            if spec.hidden and given is None:
                continue
            syn = [(name, given, GROUP_CONFIG)] if given is not None else []
            if spec.synonyms:   # the broker key that gives its default, with that key's synonyms
                syn += config_synonyms(spec.synonyms[0], list(spec.synonyms), spec.sensitive, self.sources)
            elif spec.default is not None:   # a group key of its own: its default
                syn.append((name, spec.default_string, DEFAULT_CONFIG))
            if given is not None:
                value = given
            else:
                value = to_string(self.cfg.get(spec.synonyms[0]) if spec.synonyms else spec.default, spec.type)
            out.append(Entry(name, value, syn[0][2] if syn else DEFAULT_CONFIG, syn, read_only=False,
                             config_type=int(spec.type), doc=spec.doc))
        return out


def describe_topic_entries(b, topic, overrides: dict | None = None) -> list[Entry]:
    return Describer(b).topic_entries(topic, overrides)


__all__ = ["CLIENT_METRICS_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG",
           "DYNAMIC_DEFAULT_BROKER_CONFIG", "DYNAMIC_TOPIC_CONFIG", "Describer", "Entry", "GROUP_CONFIG",
           "STATIC_BROKER_CONFIG", "TOPIC_CONFIG", "Type", "config_type", "describe_topic_entries"]
