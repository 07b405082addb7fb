"""Broker configuration read through one table (:mod:`kwire.config_keys`).

``BrokerConfig.from_properties`` reads a server.properties text (Java properties syntax, with
javaproperties: continuations, ``\\`` escapes, ``\\uXXXX``, ``:`` separators) and
``key=value`` overrides; each known key is parsed and checked against the table, and a bad
value raises ``ValueError`` naming the key and value. Unknown keys are kept as strings (and
described) but do nothing, as in Kafka.

``BrokerConfig.get(key)`` is the effective typed value: a dynamic value (AlterConfigs,
per broker then cluster default) when the broker attached its metadata image, else the static
value, else the table's default. ``topic_default`` derives a topic config's default from its
broker synonyms the way Kafka's KafkaConfig does (log.retention.hours -> retention.ms ...).
"""
from __future__ import annotations

from typing import Any, Callable

from kwire.config_keys import BROKER, BROKER_SYNONYMS, GROUP, TOPIC
from kwire.configdef import ConfigError, ConfigKey, Type, to_string

__all__ = ["BROKER", "BROKER_DEFAULTS", "BROKER_SYNONYMS", "GROUP", "TOPIC", "TOPIC_CONFIGS", "BrokerConfig", "ConfigError",
           "ConfigKey", "Type", "parse_properties", "topic_configs_for_log", "validate_group_config",
           "validate_topic_config"]

# Name -> default (the table's), for callers that only want the defaults.
BROKER_DEFAULTS: dict[str, Any] = {k.name: k.default for k in BROKER.values()}
# Topic configs: name -> ConfigKey (synonyms: the broker keys behind the default).
TOPIC_CONFIGS = TOPIC


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties text -> {key: value}, as java.util.Properties.load reads it."""
    import javaproperties  # noqa: PLC0415 - ~30 ms (it pulls in urllib and xml); only a --config needs it

    return dict(javaproperties.loads(text))


def _unit_ms(key: str) -> int:
    return 3600000 if key.endswith(".hours") else 60000 if key.endswith(".minutes") else 1


class BrokerConfig:
    """The static config (server.properties + overrides) and, once attached, the dynamic one."""

    def __init__(self, values: dict[str, Any] | None = None):
        self.values: dict[str, Any] = {}       # static, typed (unknown keys: as given)
        self.originals: dict[str, str] = {}    # static, as written (DescribeConfigs shows these)
        self.dynamic: Callable[[], tuple[dict, dict]] | None = None   # () -> (per broker, cluster default)
        self._parsed: dict[tuple[str, str], Any] = {}
        for k, v in (values or {}).items():
            self.set(k, v)

    @classmethod
    def from_properties(cls, text: str = "", overrides: dict[str, str] | None = None) -> "BrokerConfig":
        raw = parse_properties(text) if text else {}
        raw.update(overrides or {})
        cfg = cls()
        for k, v in raw.items():
            cfg.set(k, v)
        return cfg

    def set(self, key: str, value: Any) -> None:
        """Set a static value; a known key's value is parsed and validated (ValueError if bad)."""
        spec = BROKER.get(key)
        if spec is None:
            self.values[key] = value
        else:
            self.values[key] = spec.parse(value)
        self.originals[key] = value if isinstance(value, str) else to_string(value, spec.type if spec else Type.STRING)

    def _dynamic_raw(self, key: str) -> str | None:
        if self.dynamic is None:
            return None
        spec = BROKER.get(key)
        if spec is None or not spec.dynamic:
            return None
        per, dflt = self.dynamic()
        raw = per.get(key)
        return raw if raw is not None else dflt.get(key)

    def _parse_dynamic(self, key: str, raw: str) -> Any:
        got = self._parsed.get((key, raw), self._parsed)
        if got is self._parsed:
            try:
                got = BROKER[key].parse(raw)
            except ConfigError:
                got = None   # checked when altered; an old stored value Kafka would refuse is ignored
            self._parsed[(key, raw)] = got
        return got

    def get(self, key: str) -> Any:
        raw = self._dynamic_raw(key)
        if raw is not None:
            v = self._parse_dynamic(key, raw)
            if v is not None:
                return v
        if key in self.values:
            return self.values[key]
        spec = BROKER.get(key)
        return spec.default if spec is not None else None

    def is_default(self, key: str) -> bool:
        return key not in self.values and self._dynamic_raw(key) is None

    def is_static(self, key: str) -> bool:
        return key in self.values

    def __getitem__(self, key: str) -> Any:
        return self.get(key)

    # ------------------------------------------------------------------ typed views
    @property
    def node_id(self) -> int:
        if "node.id" not in self.values and "broker.id" in self.values:
            return int(self.values["broker.id"])
        return int(self.get("node.id"))

    @property
    def log_dirs(self) -> list[str]:
        dirs = self.get("log.dirs")
        return list(dirs) if dirs else list(self.get("log.dir"))

    @property
    def data_dir(self) -> str:
        return self.log_dirs[0]

    # ------------------------------------------------------------------ topic defaults
    def topic_default(self, name: str) -> Any:
        """The broker's default for topic config ``name``, from its synonyms (Kafka's
        KafkaConfig getters: retention.ms from log.retention.ms, else minutes, else hours)."""
        spec = TOPIC[name]
        if not spec.synonyms:
            return spec.default
        for key in spec.synonyms:
            v = self.get(key)
            if v is None:
                continue
            if spec.type in (Type.LONG, Type.INT) and spec.synonyms[0] != key:
                v = int(v) * _unit_ms(key)
            if name == "retention.ms" and v < 0:
                return -1
            return v
        return spec.default


def topic_configs_for_log(cfg: BrokerConfig, overrides: dict[str, str] | None) -> dict[str, Any]:
    """Every topic config's effective typed value: the topic's override, else the broker's
    default (dynamic, static, Kafka's). Stored overrides Kafka would refuse are skipped."""
    out = {}
    for name, spec in TOPIC.items():
        raw = (overrides or {}).get(name)
        if raw is not None:
            try:
                out[name] = spec.parse(raw)
                continue
            except ConfigError:
                pass
        out[name] = cfg.topic_default(name)
    return out


def _validate(table: dict, name: str, value: str | None) -> Any:
    spec = table.get(name)
    if spec is None:
        raise KeyError(name)
    if value is None:
        return None
    return spec.parse(value)


def validate_topic_config(name: str, value: str | None) -> Any:
    """Check one topic config; KeyError if unknown, ValueError (Kafka's wording) if bad."""
    return _validate(TOPIC, name, value)


def validate_group_config(name: str, value: str | None) -> Any:
    """Check one group config (resource type 32), as validate_topic_config."""
    return _validate(GROUP, name, value)

