"""Typed broker and topic configuration with Kafka's own key names and defaults.

``BrokerConfig.from_properties`` accepts a server.properties text and ``key=value``
overrides; unknown keys are kept (and shown by DescribeConfigs) but do nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DAY_MS = 24 * 3600 * 1000

# Topic-level configs: Kafka name -> (broker-level default key, default value, type)
TOPIC_CONFIGS: dict[str, tuple[str, Any, type]] = {
    "cleanup.policy": ("log.cleanup.policy", "delete", str),
    "compression.type": ("compression.type", "producer", str),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", DAY_MS, int),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms", 60000, int),
    "flush.messages": ("log.flush.interval.messages", 9223372036854775807, int),
    "flush.ms": ("log.flush.interval.ms", 9223372036854775807, int),
    "index.interval.bytes": ("log.index.interval.bytes", 4096, int),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", 9223372036854775807, int),
    "max.message.bytes": ("message.max.bytes", 1048588, int),
    "message.timestamp.type": ("log.message.timestamp.type", "CreateTime", str),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms", 9223372036854775807, int),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms", 9223372036854775807, int),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", 0.5, float),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", 0, int),
    "min.insync.replicas": ("min.insync.replicas", 1, int),
    "preallocate": ("log.preallocate", False, bool),
    "retention.bytes": ("log.retention.bytes", -1, int),
    "retention.ms": ("log.retention.ms", 7 * DAY_MS, int),
    "segment.bytes": ("log.segment.bytes", 1073741824, int),
    "segment.index.bytes": ("log.index.size.max.bytes", 10485760, int),
    "segment.jitter.ms": ("log.roll.jitter.ms", 0, int),
    "segment.ms": ("log.roll.ms", 7 * DAY_MS, int),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", False, bool),
}

# Broker-level settings kwire uses (Kafka names), with Kafka's defaults.
BROKER_DEFAULTS: dict[str, Any] = {
    "node.id": 1,
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "advertised.listeners": "",
    "log.dirs": "./kwire-data",
    "num.partitions": 1,
    "default.replication.factor": 1,
    "auto.create.topics.enable": True,
    "delete.topic.enable": True,
    "socket.request.max.bytes": 104857600,
    # connection limits (kwire/server.py); request.timeout.ms: patience for a half-sent request
    "max.connections": 2147483647,
    "max.connections.per.ip": 2147483647,
    "max.connections.per.ip.overrides": "",
    "connections.max.idle.ms": 600000,
    "queued.max.requests": 500,
    "request.timeout.ms": 30000,
    "log.retention.check.interval.ms": 300000,
    "offsets.topic.num.partitions": 50,
    "offsets.topic.replication.factor": 1,
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600000,
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "group.max.size": 2147483647,
    "transactional.id.expiration.ms": 604800000,
    "producer.id.expiration.ms": 86400000,
    "log.flush.per.append": False,  # kwire's own: fsync before every acknowledgement
    "controller.quorum.voters": "",
    "controller.listener": "",
    "cluster.id": "",
    "broker.rack": None,
}
for _name, (_bkey, _dflt, _t) in TOPIC_CONFIGS.items():
    BROKER_DEFAULTS.setdefault(_bkey, _dflt)


def _coerce(value: Any, t: type) -> Any:
    if value is None or isinstance(value, t):
        return value
    s = str(value).strip()
    if t is bool:
        if s.lower() in ("true", "1", "yes"):
            return True
        if s.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"not a boolean: {value!r}")
    return t(s)


def parse_properties(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            out[line] = ""
            continue
        out[line[:sep].strip()] = line[sep + 1:].strip()
    return out


def broker_type(key: str) -> type:
    d = BROKER_DEFAULTS.get(key)
    if isinstance(d, bool):
        return bool
    if isinstance(d, int):
        return int
    if isinstance(d, float):
        return float
    return str


@dataclass
class BrokerConfig:
    values: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_properties(cls, text: str = "", overrides: dict[str, str] | None = None) -> "BrokerConfig":
        raw = parse_properties(text)
        raw.update(overrides or {})
        cfg = cls()
        for k, v in raw.items():
            cfg.set(k, v)
        return cfg

    def set(self, key: str, value: Any) -> None:
        if key == "broker.id":
            key = "node.id"
        if key == "log.dir":
            key = "log.dirs"
        t = broker_type(key)
        self.values[key] = _coerce(value, t) if key in BROKER_DEFAULTS else value

    def get(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        return BROKER_DEFAULTS.get(key)

    def is_default(self, key: str) -> bool:
        return key not in self.values

    def __getitem__(self, key: str) -> Any:
        return self.get(key)

    # convenient typed views
    @property
    def node_id(self) -> int:
        return int(self.get("node.id"))

    @property
    def data_dir(self) -> str:
        return str(self.get("log.dirs")).split(",")[0]

    def topic_default(self, name: str) -> Any:
        bkey, dflt, t = TOPIC_CONFIGS[name]
        v = self.get(bkey)
        if name == "retention.ms" and self.is_default("log.retention.ms"):
            if not self.is_default("log.retention.minutes"):
                return int(self.get("log.retention.minutes")) * 60000
            if not self.is_default("log.retention.hours"):
                return int(self.get("log.retention.hours")) * 3600000
        if name == "segment.ms" and self.is_default("log.roll.ms") and not self.is_default("log.roll.hours"):
            return int(self.get("log.roll.hours")) * 3600000
        return _coerce(v, t) if v is not None else dflt


def validate_topic_config(name: str, value: str | None) -> Any:
    """Check one topic config; raises ValueError with Kafka-like wording."""
    if name not in TOPIC_CONFIGS:
        raise KeyError(name)
    if value is None:
        return None
    t = TOPIC_CONFIGS[name][2]
    try:
        v = _coerce(value, t)
    except ValueError:
        raise ValueError(f"Invalid value {value} for configuration {name}") from None
    if name == "message.timestamp.type" and v not in ("CreateTime", "LogAppendTime"):
        raise ValueError(f"Invalid value {value} for configuration {name}: String must be one of: CreateTime, LogAppendTime")
    if name == "cleanup.policy" and not set(str(v).split(",")) <= {"delete", "compact"}:
        raise ValueError(f"Invalid value {value} for configuration {name}")
    if name == "compression.type" and v not in ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"):
        raise ValueError(f"Invalid value {value} for configuration {name}")
    return v
