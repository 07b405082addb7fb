"""A share group's settings: its group configs (IncrementalAlterConfigs on a GROUP resource:
share.record.lock.duration.ms, share.delivery.count.limit, share.partition.max.record.locks,
share.auto.offset.reset, share.isolation.level) over the broker's group.share.* defaults."""
from __future__ import annotations

from kwire.share.manager import ShareSettings


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def share_settings(config, image, group_id: str) -> ShareSettings:
    over = image.group_configs.get(group_id, {}) if image is not None else {}
    lock = _int(config.get("group.share.record.lock.duration.ms"), 30000)
    limit = _int(config.get("group.share.delivery.count.limit"), 5)
    locks = _int(config.get("group.share.partition.max.record.locks"), 2000)
    reset = str(over.get("share.auto.offset.reset") or "latest").strip().lower()
    return ShareSettings(
        record_lock_duration_ms=_int(over.get("share.record.lock.duration.ms"), lock),
        delivery_count_limit=_int(over.get("share.delivery.count.limit"), limit),
        max_in_flight=_int(over.get("share.partition.max.record.locks"), locks),
        auto_offset_reset="latest" if reset == "latest" else "earliest",
        read_committed=str(over.get("share.isolation.level") or "").strip().lower() == "read_committed")
