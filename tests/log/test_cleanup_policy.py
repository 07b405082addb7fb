"""cleanup.policy: time and size retention only for topics whose policy includes delete."""
from __future__ import annotations

import pytest

from kwire.errors import ErrorCode, KafkaError
from kwire.log import LogConfig, LogManager, PartitionLog

from .logutil import make_batch

NOW = 1_700_000_000_000
DAY = 86_400_000


def _filled(path, policy: str) -> PartitionLog:
    log = PartitionLog.open(str(path), LogConfig(cleanup_policy=policy, segment_bytes=300, retention_ms=1000,
                                                 retention_bytes=100), now_ms=NOW)
    for i in range(10):
        log.append(make_batch(2, 100, ts=NOW + i, seed=i), now_ms=NOW + i)
    log.update_high_watermark(log.log_end_offset)
    return log


@pytest.mark.parametrize("policy,kept", [("compact", True), ("", True), ("delete", False),
                                         ("compact,delete", False)])
def test_retention_follows_cleanup_policy(tmp_path, policy, kept):
    log = _filled(tmp_path / "t-0", policy)
    segments = len(log.segments)
    assert segments > 3
    deleted = log.delete_old_segments(NOW + 30 * DAY)
    if kept:
        assert deleted == 0 and len(log.segments) == segments and log.log_start_offset == 0
    else:
        assert deleted >= segments - 1 and log.log_start_offset > 0


def test_delete_records_needs_delete_policy(tmp_path):
    log = _filled(tmp_path / "t-0", "compact")
    with pytest.raises(KafkaError) as e:
        log.delete_records(4)
    assert e.value.code == ErrorCode.POLICY_VIOLATION
    assert _filled(tmp_path / "d-0", "delete").delete_records(4) == 4


def test_manager_retention_keeps_compacted_topics(tmp_path):
    configs = {"connect-offsets": LogConfig(cleanup_policy="compact", segment_bytes=300, retention_ms=1000),
               "events": LogConfig(cleanup_policy="delete", segment_bytes=300, retention_ms=1000)}
    mgr = LogManager(str(tmp_path), topic_configs=configs, now_ms=NOW)
    for topic in configs:
        log = mgr.create(topic, 0, now_ms=NOW)
        for i in range(8):
            log.append(make_batch(2, 100, ts=NOW + i, seed=i), now_ms=NOW + i)
        log.update_high_watermark(log.log_end_offset)
    mgr.run_retention(NOW + 30 * DAY)
    assert mgr.get("connect-offsets", 0).log_start_offset == 0
    assert mgr.get("events", 0).log_start_offset > 0
    mgr.close()
    # and after a restart (as with a short log.retention.ms): still everything
    mgr = LogManager(str(tmp_path), topic_configs=configs, now_ms=NOW + 31 * DAY)
    mgr.run_retention(NOW + 31 * DAY)
    assert mgr.get("connect-offsets", 0).log_start_offset == 0
    assert mgr.get("connect-offsets", 0).log_end_offset == 16
    mgr.close()


def test_config_from_kafka_names():
    cfg = LogConfig.from_kafka({"cleanup.policy": "compact,delete", "message.timestamp.before.max.ms": "5",
                                "message.timestamp.after.max.ms": 7, "log.flush.per.append": "true"})
    assert cfg.compact and cfg.delete and cfg.fsync_per_append
    assert (cfg.message_timestamp_before_max_ms, cfg.message_timestamp_after_max_ms) == (5, 7)
    assert LogConfig.from_kafka({"cleanup.policy": ["compact"]}).compact
    assert not LogConfig.from_kafka({"cleanup.policy": "compact"}).delete
    assert LogConfig().delete and not LogConfig().compact
