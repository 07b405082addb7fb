"""Per-log configuration: the topic configs a partition log acts on, by their Kafka names.

Each field names its Kafka config (``kafka("segment.bytes")``) and takes its default from the
one config table (:mod:`kwire.config_keys`); ``LogConfig.from_kafka`` fills the fields from
a dict of Kafka names (typed values or strings). ``fsync_per_append`` is kwire's broker key
``log.flush.per.append``.
"""
from __future__ import annotations

import dataclasses
import functools

from kwire.config_keys import BROKER, TOPIC
from kwire.configdef import LONG_MAX

__all__ = ["LONG_MAX", "LogConfig"]


def kafka(name: str):
    """A LogConfig field that holds Kafka config ``name``, with the table's default."""
    spec = TOPIC.get(name) or BROKER[name]
    default = spec.default
    if isinstance(default, list):
        return dataclasses.field(default=tuple(default), metadata={"kafka": name})
    return dataclasses.field(default=default, metadata={"kafka": name})


@dataclasses.dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = kafka("segment.bytes")
    internal_segment_bytes: int | None = kafka("internal.segment.bytes")  # wins when set (Kafka 4)
    segment_ms: int = kafka("segment.ms")
    segment_index_bytes: int = kafka("segment.index.bytes")
    index_interval_bytes: int = kafka("index.interval.bytes")
    retention_ms: int = kafka("retention.ms")            # -1: keep for ever
    retention_bytes: int = kafka("retention.bytes")      # -1: no size limit
    max_message_bytes: int = kafka("max.message.bytes")
    message_timestamp_type: str = kafka("message.timestamp.type")   # CreateTime | LogAppendTime
    flush_messages: int = kafka("flush.messages")        # default: leave it to the OS
    flush_ms: int = kafka("flush.ms")
    fsync_per_append: bool = kafka("log.flush.per.append")   # kwire: fdatasync before acknowledging
    cleanup_policy: tuple = kafka("cleanup.policy")      # ("delete",), ("compact",), both, or () (a
    # comma-separated string is accepted too)
    message_timestamp_before_max_ms: int = kafka("message.timestamp.before.max.ms")
    message_timestamp_after_max_ms: int = kafka("message.timestamp.after.max.ms")
    # file.delete.delay.ms: segments are unlinked at once; open file objects keep in-flight
    # reads valid, so no delay is needed
    file_delete_delay_ms: int = kafka("file.delete.delay.ms")
    min_insync_replicas: int = kafka("min.insync.replicas")   # for acks=all (the replica manager)
    # compaction (kwire.log.cleaner, kwire.log.cleaner_manager)
    delete_retention_ms: int = kafka("delete.retention.ms")       # tombstones and markers kept so long
    min_compaction_lag_ms: int = kafka("min.compaction.lag.ms")
    max_compaction_lag_ms: int = kafka("max.compaction.lag.ms")
    min_cleanable_dirty_ratio: float = kafka("min.cleanable.dirty.ratio")

    def __post_init__(self) -> None:
        if self.internal_segment_bytes is not None:   # Kafka's LogConfig.segmentSize()
            object.__setattr__(self, "segment_bytes", self.internal_segment_bytes)
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError(f"message_timestamp_type {self.message_timestamp_type!r}")
        if self.segment_bytes < 14:
            raise ValueError("segment_bytes must be at least 14")
        if self.segment_index_bytes < 8:
            raise ValueError("segment_index_bytes must be at least 8")
        if self.index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must be >= 0")

    @functools.cached_property
    def policies(self) -> frozenset:
        p = self.cleanup_policy
        items = p.split(",") if isinstance(p, str) else p
        return frozenset(str(x).strip() for x in items if str(x).strip())

    @property
    def compact(self) -> bool:
        """cleanup.policy includes compact: records need keys."""
        return "compact" in self.policies

    @property
    def delete(self) -> bool:
        """cleanup.policy includes delete: retention.ms / retention.bytes apply."""
        return "delete" in self.policies

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_kafka(cls, props: dict[str, object], base: "LogConfig | None" = None) -> "LogConfig":
        """Build from Kafka config names (segment.bytes, retention.ms, ...); values may be typed
        or strings (parsed by the config table). Names a log does not use are ignored."""
        base = base or cls()
        changes = {}
        for f in _FIELDS:
            name = f.metadata["kafka"]
            value = props.get(name)
            if value is None:
                continue
            if isinstance(value, str):
                value = (TOPIC.get(name) or BROKER[name]).parse(value)
            changes[f.name] = tuple(value) if isinstance(value, list) else value
        return dataclasses.replace(base, **changes)


_FIELDS = [f for f in dataclasses.fields(LogConfig) if "kafka" in f.metadata]
