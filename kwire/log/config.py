"""Per-log configuration, with Kafka's topic-level names and defaults."""
from __future__ import annotations

import dataclasses
import functools

LONG_MAX = (1 << 63) - 1


@dataclasses.dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1 << 30  # segment.bytes / log.segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms / log.roll.ms
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms (-1: keep forever)
    retention_bytes: int = -1  # retention.bytes (-1: no size limit)
    max_message_bytes: int = 1048588  # max.message.bytes
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type: CreateTime | LogAppendTime
    flush_messages: int = LONG_MAX  # flush.messages (default: leave it to the OS)
    flush_ms: int = LONG_MAX  # flush.ms
    fsync_per_append: bool = False  # log.flush.per.append (kwire): fdatasync before acknowledging
    cleanup_policy: str = "delete"  # cleanup.policy: "delete", "compact", "compact,delete" or ""
    message_timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms
    message_timestamp_after_max_ms: int = LONG_MAX  # message.timestamp.after.max.ms
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms (segments are unlinked at once;
    # open file objects keep in-flight reads valid, so no delay is needed)

    def __post_init__(self) -> None:
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError(f"message_timestamp_type {self.message_timestamp_type!r}")
        if self.segment_bytes < 14:
            raise ValueError("segment_bytes must be at least 14")
        if self.segment_index_bytes < 8:
            raise ValueError("segment_index_bytes must be at least 8")
        if self.index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must be >= 0")

    @functools.cached_property
    def compact(self) -> bool:
        """cleanup.policy includes compact: records need keys."""
        return "compact" in self.cleanup_policy.replace(" ", "").split(",")

    @functools.cached_property
    def delete(self) -> bool:
        """cleanup.policy includes delete: retention.ms / retention.bytes apply."""
        return "delete" in self.cleanup_policy.replace(" ", "").split(",")

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_kafka(cls, props: dict[str, object], base: "LogConfig | None" = None) -> "LogConfig":
        """Build from Kafka topic config names (segment.bytes, retention.ms, ...)."""
        base = base or cls()
        names = {
            "segment.bytes": ("segment_bytes", int),
            "segment.ms": ("segment_ms", int),
            "segment.index.bytes": ("segment_index_bytes", int),
            "index.interval.bytes": ("index_interval_bytes", int),
            "retention.ms": ("retention_ms", int),
            "retention.bytes": ("retention_bytes", int),
            "max.message.bytes": ("max_message_bytes", int),
            "message.timestamp.type": ("message_timestamp_type", str),
            "flush.messages": ("flush_messages", int),
            "flush.ms": ("flush_ms", int),
            "file.delete.delay.ms": ("file_delete_delay_ms", int),
            "cleanup.policy": ("cleanup_policy", _policy),
            "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", int),
            "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", int),
            "log.flush.per.append": ("fsync_per_append", _bool),
        }
        changes = {}
        for key, value in props.items():
            if key in names and value is not None:
                attr, conv = names[key]
                changes[attr] = conv(value)
        return dataclasses.replace(base, **changes)


def _policy(value) -> str:
    """cleanup.policy as a comma-separated string (a list is accepted too)."""
    if isinstance(value, (list, tuple, set)):
        return ",".join(str(v) for v in value)
    return str(value)


def _bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)
