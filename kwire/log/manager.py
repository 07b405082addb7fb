"""LogManager: every partition log under one data directory.

Layout (as Kafka's log.dirs)::

    <data dir>/
      <topic>-<partition>/00000000000000000000.{log,index,timeindex} ...
      recovery-point-offset-checkpoint
      log-start-offset-checkpoint
      .kafka_cleanshutdown          (present only between a clean shutdown and the next open)

A clean shutdown flushes every log, writes both checkpoints, then the marker; an open that
finds the marker trusts the checkpoints and scans nothing (indexes load lazily). Without the
marker each log is CRC-checked from its recovery point.
"""
from __future__ import annotations

import os
import re
import shutil
import time
import uuid

from kwire.atomic import fsync_dir, write_atomic
from kwire.log.checkpoint import read_checkpoint, write_checkpoint
from kwire.log.config import LogConfig
from kwire.log.dir_failure import LogDirFailureChannel
from kwire.log.errors import KafkaStorageError
from kwire.log.partition_log import PartitionLog

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_DELETE_SUFFIX = "-delete"
# directories in the data dir that are not partition logs of this manager (KRaft metadata log)
RESERVED_TOPICS = frozenset({"__cluster_metadata"})


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    if name.startswith(".") or name.endswith(_DELETE_SUFFIX):
        return None
    m = _PARTITION_DIR.match(name)
    if not m:
        return None
    return m.group(1), int(m.group(2))


class LogManager:
    """``LogManager(data_dir, config, clock=...)`` opens every partition directory found
    (``config``: a LogConfig, or a callable topic -> LogConfig | dict of Kafka topic config
    names); then ``get``/``open_partition``/``delete_partition`` logs, ``run_retention(now_ms)``
    (retention pass + flush of rolled segments + checkpoints), ``close()`` at shutdown."""

    def __init__(self, data_dir: str, config=None, *, clock=None,
                 topic_configs: dict[str, LogConfig] | None = None, now_ms: int | None = None):
        self.data_dir = data_dir
        self.clock = clock
        if config is None or isinstance(config, LogConfig):
            self.default_config = config or LogConfig()
            self._config_source = None
        else:
            self.default_config = LogConfig()
            self._config_source = config
        self.topic_configs: dict[str, LogConfig] = dict(topic_configs or {})
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.closed = False
        self.was_clean_shutdown = False
        self.failure_channel = LogDirFailureChannel()  # an I/O error takes the data dir offline
        os.makedirs(data_dir, exist_ok=True)
        self._open_all(self._now(now_ms))

    def _now(self, now_ms: int | None = None) -> int:
        if now_ms is not None:
            return now_ms
        if self.clock is not None:
            return self.clock.now_ms()
        return int(time.time() * 1000)

    # --- startup ------------------------------------------------------------------------
    def _open_all(self, now_ms: int) -> None:
        marker = os.path.join(self.data_dir, CLEAN_SHUTDOWN_MARKER)
        clean = os.path.exists(marker)
        recovery_points = read_checkpoint(os.path.join(self.data_dir, RECOVERY_POINT_CHECKPOINT)) or {}
        start_offsets = read_checkpoint(os.path.join(self.data_dir, LOG_START_OFFSET_CHECKPOINT)) or {}
        for entry in os.scandir(self.data_dir):
            if not entry.is_dir():
                continue
            if entry.name.endswith(_DELETE_SUFFIX):
                shutil.rmtree(entry.path, ignore_errors=True)  # a deletion cut short
                continue
            tp = parse_partition_dir(entry.name)
            if tp is None or tp[0] in RESERVED_TOPICS:
                continue
            rp = recovery_points.get(tp)
            self.logs[tp] = PartitionLog.open(
                entry.path, self.config_for(tp[0]), recovery_point=rp,
                log_start_offset=start_offsets.get(tp), clean=clean and rp is not None,
                now_ms=now_ms, topic=tp[0], partition=tp[1], failure_channel=self.failure_channel)
        self.was_clean_shutdown = clean
        if clean:
            # from now on a crash must be detected: the marker goes before anything is written
            os.unlink(marker)
            fsync_dir(self.data_dir)

    # --- partitions ---------------------------------------------------------------------
    def config_for(self, topic: str) -> LogConfig:
        cfg = self.topic_configs.get(topic)
        if cfg is not None:
            return cfg
        if self._config_source is not None:
            got = self._config_source(topic)
            if isinstance(got, LogConfig):
                return got
            return LogConfig.from_kafka(got or {}, self.default_config)
        return self.default_config

    def set_topic_config(self, topic: str, config: LogConfig) -> None:
        """Apply a topic's config to its existing logs and to logs created later."""
        self.topic_configs[topic] = config
        self.reconfigure(topic)

    def reconfigure(self, topic: str) -> None:
        """Re-read a topic's config (after AlterConfigs) into its open logs."""
        config = self.config_for(topic)
        for (t, _), log in self.logs.items():
            if t == topic:
                log.config = config
                for seg in log.segments:
                    seg.config = config

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get((topic, partition))

    def create(self, topic: str, partition: int, config: LogConfig | None = None, *,
               now_ms: int | None = None) -> PartitionLog:
        if config is not None:
            self.topic_configs.setdefault(topic, config)
        log = self.logs.get((topic, partition))
        if log is not None:
            cfg = config or self.config_for(topic)
            if cfg != log.config:
                log.config = cfg
                for seg in log.segments:
                    seg.config = cfg
            return log
        path = os.path.join(self.data_dir, partition_dir_name(topic, partition))
        log = PartitionLog.open(path, config or self.config_for(topic), now_ms=self._now(now_ms),
                                topic=topic, partition=partition, failure_channel=self.failure_channel)
        fsync_dir(self.data_dir)
        self.logs[(topic, partition)] = log
        return log

    get_or_create = create
    open_partition = create

    def delete(self, topic: str, partition: int) -> bool:
        """Delete a partition's log: rename the directory aside (so a crash mid-delete never
        resurrects it), then remove it. Open FileRegions stay readable."""
        log = self.logs.pop((topic, partition), None)
        if log is None:
            return False
        aside = f"{log.dir}.{uuid.uuid4().hex}{_DELETE_SUFFIX}"
        os.rename(log.dir, aside)
        fsync_dir(self.data_dir)
        log.dir = aside
        log.delete()
        return True

    delete_partition = delete

    def delete_topic(self, topic: str) -> int:
        parts = [p for (t, p) in self.logs if t == topic]
        for p in parts:
            self.delete(topic, p)
        self.topic_configs.pop(topic, None)
        return len(parts)

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords on one partition; the new log start offset is checkpointed at once."""
        log = self.logs[(topic, partition)]
        lso = log.delete_records(offset)
        try:
            self.checkpoint_log_start_offsets()
        except OSError as exc:
            raise log.storage_failure("checkpoint", exc) from exc
        return lso

    # --- periodic work --------------------------------------------------------------------
    def delete_old_segments(self, now_ms: int) -> int:
        """Retention pass over every log (log.retention.check.interval.ms)."""
        deleted = sum(log.delete_old_segments(now_ms) for log in self.logs.values())
        if deleted:
            self.checkpoint_log_start_offsets()
        return deleted

    def flush_due(self, now_ms: int) -> int:
        """Flush logs that rolled or whose flush.ms elapsed (log.flush.scheduler.interval.ms).
        fsyncs: a caller on an event loop may run this in a worker thread."""
        return sum(1 for log in list(self.logs.values()) if log.flush_if_due(now_ms))

    def run_retention(self, now_ms: int) -> int:
        """The periodic duty: retention pass, flush of rolled segments (and flush.ms), and
        both checkpoints. fsyncs; returns the number of segments deleted. Retention follows
        each topic's cleanup.policy (PartitionLog.delete_old_segments). Nothing runs in an
        offline log dir; an I/O error here takes the dir offline (logged once)."""
        if self.offline:
            return 0
        try:
            deleted = sum(log.delete_old_segments(now_ms) for log in list(self.logs.values()))
            self.flush_due(now_ms)
            self.checkpoint()
        except KafkaStorageError:
            if self.offline:
                return 0
            raise
        except OSError as exc:
            self.failure_channel.maybe_add_offline_log_dir(os.path.abspath(self.data_dir), "checkpoint", exc)
            return 0
        return deleted

    @property
    def offline(self) -> bool:
        """True once an I/O error took the data dir offline (kwire.log.dir_failure)."""
        return self.failure_channel.is_offline(os.path.abspath(self.data_dir))

    def checkpoint(self) -> None:
        """Write both checkpoint files (log.flush.offset.checkpoint.interval.ms)."""
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()

    def checkpoint_recovery_points(self) -> None:
        write_checkpoint(os.path.join(self.data_dir, RECOVERY_POINT_CHECKPOINT),
                         {tp: log.recovery_point for tp, log in self.logs.items()})

    def checkpoint_log_start_offsets(self) -> None:
        write_checkpoint(os.path.join(self.data_dir, LOG_START_OFFSET_CHECKPOINT),
                         {tp: log.log_start_offset for tp, log in self.logs.items()})

    def close(self) -> None:
        """Clean shutdown: flush and close every log, write the checkpoints, then the marker."""
        if self.closed:
            return
        for log in self.logs.values():
            log.close()
        if self.offline:  # nothing more is written to a failed disk; the next open recovers
            self.closed = True
            return
        self.checkpoint()
        marker = os.path.join(self.data_dir, CLEAN_SHUTDOWN_MARKER)
        write_atomic(marker, b"")
        self.closed = True

    def __iter__(self):
        return iter(self.logs.items())

    def __len__(self) -> int:
        return len(self.logs)
