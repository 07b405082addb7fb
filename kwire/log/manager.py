"""LogManager: every partition log under the broker's log dirs (Kafka's log.dirs, JBOD).

Layout of each log dir (as Kafka's)::

    <log dir>/
      <topic>-<partition>/00000000000000000000.{log,index,timeindex} ...
      recovery-point-offset-checkpoint
      log-start-offset-checkpoint
      replication-offset-checkpoint (the high watermarks)
      .kafka_cleanshutdown          (present only between a clean shutdown and the next open)

Several log dirs (KIP-112 / KIP-858): a new partition goes to the online dir holding the
fewest partitions (Kafka's LogManager.nextLogDirs); checkpoints and the clean-shutdown marker
are per dir, each holding only its own logs. A dir that fails (kwire.log.dir_failure) takes
only its own partitions offline; nothing is written there again. ``move_to`` (with
``finish_move``) replaces a partition's log by a copy made in another dir, for
AlterReplicaLogDirs (kwire.replication.log_dir_mover). The first dir also holds the KRaft
metadata log (Kafka's metadata.log.dir defaults to it).

A clean shutdown flushes every log, writes the checkpoints, then the marker; an open that
finds the marker trusts the checkpoints and scans nothing (indexes load lazily). Without the
marker each log is CRC-checked from its recovery point.

Blocking disk work of the periodic duties comes in two halves (``plan_retention``,
``plan_flush``, ``plan_checkpoint`` return a :class:`DiskWork`): the decisions and every
in-memory change happen on the caller's thread (the event loop), ``DiskWork.run`` does the
unlinks, fsyncs and file writes and touches no log state (a worker thread may run it), and
``DiskWork.commit`` applies what the disk work made true (recovery points) back on the
owner's thread. New partitions can be made the same way: ``make_logs`` (disk only, any
thread) then ``stage``; ``create``/``open_partition`` adopt a staged log.
"""
from __future__ import annotations

import bisect
import logging
import os
import re
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from kwire.atomic import fsync_dir, write_atomic
from kwire.fds import out_of_descriptors
from kwire.log import producer_state
from kwire.log.checkpoint import read_checkpoint, write_checkpoint
from kwire.log.config import LogConfig
from kwire.log.dir_failure import LogDirFailureChannel
from kwire.log.errors import KafkaStorageError, TooManyOpenFiles
from kwire.log.partition_log import PartitionLog
from kwire.log.regions import deferred_deletes, unlink_all
from kwire.log.segment import LogSegment

_log = logging.getLogger("kwire.log")

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"   # Kafka's name: the high watermarks
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
CLOSE_THREADS = 32   # logs closed at once at shutdown: waiting on fsyncs, not on the CPU
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_DELETE_SUFFIX = "-delete"
FUTURE_SUFFIX = "-future"   # a copy being made by AlterReplicaLogDirs (Kafka's future log)
# directories in the data dir that are not partition logs of this manager (KRaft metadata log)
RESERVED_TOPICS = frozenset({"__cluster_metadata"})


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class DiskWork:
    """Disk work planned on the owner's thread: ``run()`` (any thread) runs each job, then
    ``commit()`` (the owner's thread) applies the in-memory effect of each job that
    succeeded and raises the first failure, if any."""

    def __init__(self) -> None:
        self.jobs: list[tuple] = []   # (disk function, commit function or None, log dir or None)
        self.deleted = 0              # segments a retention pass removed from the logs
        self._done: list[bool] = []
        self._error: BaseException | None = None
        self.error_dir: str | None = None   # the log dir of the first failed job, when known

    def add(self, job, commit=None, log_dir: str | None = None) -> None:
        self.jobs.append((job, commit, log_dir))

    def extend(self, other: "DiskWork") -> None:
        self.jobs += other.jobs
        self.deleted += other.deleted

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def run(self) -> None:
        done = []
        for job, _, log_dir in self.jobs:
            try:
                job()
                done.append(True)
            except OSError as exc:   # one failed file must not stop the others
                done.append(False)
                if self._error is None:
                    self._error = exc
                    self.error_dir = log_dir
        self._done = done

    def commit(self) -> None:
        for (_, commit, _), ok in zip(self.jobs, self._done):
            if ok and commit is not None:
                commit()
        if self._error is not None:
            raise KafkaStorageError(f"disk work failed: {self._error}") from self._error

    def run_here(self) -> "DiskWork":
        self.run()
        self.commit()
        return self


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    if name.startswith(".") or name.endswith(_DELETE_SUFFIX) or name.endswith(FUTURE_SUFFIX):
        return None
    m = _PARTITION_DIR.match(name)
    if not m:
        return None
    return m.group(1), int(m.group(2))


class LogManager:
    """``LogManager(data_dir, config, clock=..., log_dirs=[...])`` opens every partition
    directory found in each log dir (``data_dir`` is the first; ``config``: a LogConfig, or a
    callable topic -> LogConfig | dict of Kafka topic config names); then
    ``get``/``open_partition``/``delete_partition`` logs, ``run_retention(now_ms)`` (retention
    pass + flush of rolled segments + checkpoints), ``close()`` at shutdown."""

    def __init__(self, data_dir: str, config=None, *, clock=None,
                 topic_configs: dict[str, LogConfig] | None = None, now_ms: int | None = None,
                 log_dirs: list[str] | None = None):
        self.data_dir = data_dir
        first = os.path.abspath(data_dir)
        # every log dir, absolute (Kafka names them so), the data dir first
        self.log_dirs: list[str] = [first] + [d for d in dict.fromkeys(os.path.abspath(x) for x in log_dirs or ())
                                              if d != first]
        self.clock = clock
        if config is None or isinstance(config, LogConfig):
            self.default_config = config or LogConfig()
            self._config_source = None
        else:
            self.default_config = LogConfig()
            self._config_source = config
        self.topic_configs: dict[str, LogConfig] = dict(topic_configs or {})
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self._staged: dict[tuple[str, int], PartitionLog] = {}  # made for a pending create
        self._opening: dict[tuple[str, int], str] = {}   # opens in a worker thread: their log dir (plan_open)
        self.moving: dict[tuple[str, int], PartitionLog] = {}   # future logs (AlterReplicaLogDirs)
        self.closed = False
        self.was_clean_shutdown = False
        self.close_threads = CLOSE_THREADS
        self.failure_channel = LogDirFailureChannel()  # an I/O error takes its log dir offline
        for d in self.log_dirs:
            os.makedirs(d, exist_ok=True)
        self._open_all(self._now(now_ms))

    def _now(self, now_ms: int | None = None) -> int:
        if now_ms is not None:
            return now_ms
        if self.clock is not None:
            return self.clock.now_ms()
        return int(time.time() * 1000)

    # --- startup ------------------------------------------------------------------------
    def _open_all(self, now_ms: int) -> None:
        clean_all = True
        found: dict[tuple[str, int], str] = {}
        for d in self.log_dirs:
            clean_all &= self._open_dir(d, now_ms, found)
        self.was_clean_shutdown = clean_all

    def _open_dir(self, log_dir: str, now_ms: int, found: dict) -> bool:
        """Open the logs of one log dir; True when it was shut down cleanly."""
        marker = os.path.join(log_dir, CLEAN_SHUTDOWN_MARKER)
        clean = os.path.exists(marker)
        recovery_points = read_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT)) or {}
        start_offsets = read_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT)) or {}
        high_watermarks = read_checkpoint(os.path.join(log_dir, HIGH_WATERMARK_CHECKPOINT))
        if high_watermarks is None and not clean:
            # a crash before the first checkpoint: no replica's high watermark is known (0, as
            # Kafka); counting the whole log would let a leader that restarts in the same epoch
            # serve records no other replica has yet
            high_watermarks = {}
        for entry in os.scandir(log_dir):
            if not entry.is_dir():
                continue
            if entry.name.endswith(_DELETE_SUFFIX) or entry.name.endswith(FUTURE_SUFFIX):
                # a deletion cut short; a copy for AlterReplicaLogDirs not finished (the move
                # is asked again; Kafka resumes it)
                shutil.rmtree(entry.path, ignore_errors=True)
                continue
            tp = parse_partition_dir(entry.name)
            if tp is None or tp[0] in RESERVED_TOPICS:
                continue
            rp = recovery_points.get(tp)
            log = PartitionLog.open(
                entry.path, self.config_for(tp[0]), recovery_point=rp,
                log_start_offset=start_offsets.get(tp), clean=clean and rp is not None,
                now_ms=now_ms, topic=tp[0], partition=tp[1], failure_channel=self.failure_channel)
            if high_watermarks is not None:
                # a replica's high watermark as last checkpointed (0 when unknown, as Kafka);
                # data dirs from before the checkpoint existed (shut down cleanly) held one
                # copy: all of it counted
                log.update_high_watermark(high_watermarks.get(tp, 0))
            other = self.logs.get(tp)
            if other is not None:
                # a crash between the two renames that end a move between dirs: both copies hold
                # every record (the new one was caught up and flushed first); keep the longer
                keep, drop = (other, log) if other.log_end_offset >= log.log_end_offset else (log, other)
                self._set_aside(drop)
                log = keep
            self.logs[tp] = log
            found[tp] = log_dir
        if clean:
            # from now on a crash must be detected: the marker goes before anything is written
            os.unlink(marker)
            fsync_dir(log_dir)
        return clean

    @staticmethod
    def _set_aside(log: PartitionLog) -> None:
        log.close()
        aside = f"{log.dir}.{uuid.uuid4().hex}{_DELETE_SUFFIX}"
        os.rename(log.dir, aside)
        shutil.rmtree(aside, ignore_errors=True)

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
        if log is None:
            log = self._staged.pop((topic, partition), None)
            if log is not None:  # made for this create with the topic's config of then
                self.logs[(topic, partition)] = log
                return log
        if log is not None:
            cfg = config or self.config_for(topic)
            if cfg != log.config:
                log.config = cfg
                for seg in log.segments:
                    seg.config = cfg
            return log
        path = os.path.join(self.next_log_dir(), partition_dir_name(topic, partition))
        log = PartitionLog.open(path, config or self.config_for(topic), now_ms=self._now(now_ms),
                                topic=topic, partition=partition, failure_channel=self.failure_channel)
        self.logs[(topic, partition)] = log   # no directory fsync: see make_logs
        return log

    get_or_create = create
    open_partition = create

    # --- opening partitions off the event loop --------------------------------------------
    def is_open(self, topic: str, partition: int) -> bool:
        """True when the partition's log is open here or made for a pending create
        (``create`` adopts it without any disk work)."""
        return (topic, partition) in self.logs or (topic, partition) in self._staged

    def plan_open(self, topic: str, partition: int) -> tuple:
        """On the owner's thread: what ``open_planned`` needs to open (or create) a
        partition's log in any thread: its directory, in the log dir chosen now (counted by
        ``next_log_dir`` until ``adopt`` or ``drop_plan``), its config and the time.
        KafkaStorageError when every log dir is offline."""
        path = os.path.join(self.next_log_dir(), partition_dir_name(topic, partition))
        self._opening[(topic, partition)] = os.path.dirname(path)
        return (topic, partition, path, self.config_for(topic), self._now())

    def open_planned(self, plan: tuple) -> PartitionLog:
        """The disk work of ``plan_open`` (any thread; no state of this manager changes):
        Kafka's LogManager.getOrCreateLog, recovering what the directory holds."""
        topic, partition, path, config, now_ms = plan
        return PartitionLog.open(path, config, now_ms=now_ms, topic=topic, partition=partition,
                                 failure_channel=self.failure_channel)

    def adopt(self, log: PartitionLog) -> bool:
        """On the owner's thread: the log ``open_planned`` opened becomes the partition's,
        with the topic's config of now; False (the log is closed) when the partition has
        one already or this manager is closed."""
        tp = (log.topic, log.partition)
        self._opening.pop(tp, None)
        if self.closed or tp in self.logs:
            log.close()
            return False
        config = self.config_for(log.topic)
        if config != log.config:
            log.config = config
            for seg in log.segments:
                seg.config = config
        self.logs[tp] = log
        return True

    def drop_plan(self, topic: str, partition: int) -> None:
        """A planned open that failed or is not wanted any more."""
        self._opening.pop((topic, partition), None)

    def discard(self, log: PartitionLog) -> str | None:
        """A log ``open_planned`` opened for a partition not hosted here any more: closed
        and renamed aside as ``delete_later`` does; the directory for ``remove_deleted``."""
        self._opening.pop((log.topic, log.partition), None)
        aside = f"{log.dir}.{uuid.uuid4().hex}{_DELETE_SUFFIX}"
        with log.lock:
            try:
                os.rename(log.dir, aside)
            except OSError:
                aside = None
            else:
                log.dir = aside
            with deferred_deletes():
                for seg in log.segments:
                    seg.delete()
            log.closed = True
        return aside

    def online_log_dirs(self) -> list[str]:
        return [d for d in self.log_dirs if not self.failure_channel.is_offline(d)]

    def partition_counts(self) -> dict[str, int]:
        """Partitions per online log dir (logs, staged logs and copies being made)."""
        counts = dict.fromkeys(self.online_log_dirs(), 0)
        for log in [*self.logs.values(), *self._staged.values(), *self.moving.values()]:
            if log.log_dir in counts:
                counts[log.log_dir] += 1
        for d in self._opening.values():
            if d in counts:
                counts[d] += 1
        return counts

    def next_log_dir(self) -> str:
        """Where a new partition goes: the online log dir holding the fewest partitions, the
        first listed on a tie (Kafka's LogManager.nextLogDirs). KafkaStorageError when every
        dir is offline."""
        counts = self.partition_counts()
        if not counts:
            raise KafkaStorageError(f"No log directories available. Tried {', '.join(self.log_dirs)}")
        return min(counts, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def log_dir_of(self, topic: str, partition: int) -> str | None:
        log = self.logs.get((topic, partition))
        return log.log_dir if log is not None else None

    # --- creating partitions off the event loop -------------------------------------------
    def make_logs(self, topic: str, partitions, config: LogConfig | None = None,
                  now_ms: int | None = None) -> list[PartitionLog]:
        """Create the directories and first segments of new partitions (disk work only: no
        state of this manager changes, so any thread may call it). All or nothing: on a
        failure (EMFILE, EACCES, ENOSPC ...) what was made is removed and
        KafkaStorageError says why, in Kafka's words."""
        now_ms = self._now(now_ms)
        config = config or self.config_for(topic)  # pass it from the owner's thread
        made: list[PartitionLog] = []
        p = None
        counts = self.partition_counts()
        where = self.data_dir
        try:
            for p in partitions:
                if not counts:
                    raise OSError(f"No log directories available. Tried {', '.join(self.log_dirs)}")
                if (topic, p) in self.logs:
                    continue  # opened as the records apply
                where = min(counts, key=lambda d: (counts[d], self.log_dirs.index(d)))
                counts[where] += 1
                path = os.path.join(where, partition_dir_name(topic, p))
                try:
                    os.mkdir(path)
                except FileExistsError:
                    continue  # not ours to take or remove: opened as the records apply
                try:  # a new, empty log: one empty segment at 0, its file made on first write
                    seg = LogSegment.create(path, 0, config, now_ms, lazy=True)
                    made.append(PartitionLog(path, config, [seg], log_start_offset=0, recovery_point=0,
                                             now_ms=now_ms, topic=topic, partition=p,
                                             failure_channel=self.failure_channel))
                except BaseException:
                    shutil.rmtree(path, ignore_errors=True)
                    raise
            # No fsync of the data dir: a new log is empty, so a crash that loses its directory
            # loses no record, and the next start makes it again from the metadata (which is
            # durable: committed through the Raft log).
        except OSError as exc:
            for log in made:
                shutil.rmtree(log.dir, ignore_errors=True)
            raise KafkaStorageError(f"Error while creating log for {topic}-{p} in dir {where}: "
                                    f"{exc.strerror or exc}") from exc
        return made

    def stage(self, logs: list[PartitionLog]) -> list[PartitionLog]:
        """Keep logs made by ``make_logs`` until their partition records apply (``create``
        adopts them). ``make_logs`` made only directories that did not exist, so none of
        them is open already."""
        for log in logs:
            self._staged[(log.topic, log.partition)] = log
        return logs

    def unstage(self, logs: list[PartitionLog]) -> list[str]:
        """Drop staged logs that were never adopted: each directory is renamed aside at once
        (so a record that applies later makes a fresh one, and a crash leaves only a
        ``-delete`` directory that the next start removes); returns them for
        ``remove_dirs`` (disk work, any thread)."""
        out = []
        for log in logs:
            tp = (log.topic, log.partition)
            if self._staged.get(tp) is log:
                del self._staged[tp]
                with deferred_deletes():
                    for seg in log.segments:
                        seg.delete()
                log.closed = True
                aside = f"{log.dir}.{uuid.uuid4().hex}{_DELETE_SUFFIX}"
                try:
                    os.rename(log.dir, aside)
                except OSError:
                    continue  # gone already, or not ours to move
                out.append(aside)
        return out

    @staticmethod
    def remove_dirs(dirs) -> None:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)

    def delete(self, topic: str, partition: int) -> bool:
        """Delete a partition's log: rename the directory aside (so a crash mid-delete never
        resurrects it), then remove it. Open FileRegions stay readable."""
        aside = self.delete_later(topic, partition)
        if aside is None:
            return False
        self.remove_deleted([aside])
        return True

    delete_partition = delete

    def delete_later(self, topic: str, partition: int) -> str | None:
        """The first half of ``delete``: the log leaves this manager and its directory is
        renamed aside (``<dir>.<uuid>-delete``, removed at the next start if a crash comes
        first). Returns that directory for ``remove_deleted`` (disk work, any thread), or
        None when there is no such log."""
        log = self.logs.pop((topic, partition), None)
        if log is None:
            return None
        aside = f"{log.dir}.{uuid.uuid4().hex}{_DELETE_SUFFIX}"
        with log.lock:   # not in the middle of a cleaner's swap (kwire.log.cleaner_swap)
            os.rename(log.dir, aside)
            log.dir = aside
            with deferred_deletes():   # forget the open files; the tree goes in remove_deleted
                for seg in log.segments:
                    seg.delete()
            log.closed = True
        return aside

    def remove_deleted(self, dirs) -> None:
        """Make the renames of ``delete_later`` durable and remove the directories."""
        for parent in {os.path.dirname(d) for d in dirs}:
            fsync_dir(parent)
        self.remove_dirs(dirs)

    def delete_topic(self, topic: str) -> int:
        parts = [p for (t, p) in self.logs if t == topic]
        for p in parts:
            self.delete(topic, p)
        self.topic_configs.pop(topic, None)
        return len(parts)

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords on one partition, here and now; the new log start offset is
        checkpointed at once. On an event loop use ``plan_delete_records``."""
        lso, work = self.plan_delete_records(topic, partition, offset)
        work.run()
        self.finish(work, "DeleteRecords", raise_error=True)
        return lso

    def plan_delete_records(self, topic: str, partition: int, offset: int) -> tuple[int, DiskWork]:
        """Move the log start offset now; the unlinks of whole segments below it and the
        log-start-offset checkpoint are the DiskWork (any thread), then ``finish`` it."""
        log = self.logs[(topic, partition)]
        with deferred_deletes() as doomed:
            lso = log.delete_records(offset)
        work = DiskWork()
        if doomed:
            work.add(lambda: unlink_all(doomed), log_dir=log.log_dir)
        work.extend(self.plan_checkpoint(recovery_points=False))
        return lso, work

    # --- periodic work --------------------------------------------------------------------
    def delete_old_segments(self, now_ms: int) -> int:
        """Retention pass over every log (log.retention.check.interval.ms)."""
        work = self.plan_retention(now_ms, checkpoint=False)
        if work.deleted:
            work.extend(self.plan_checkpoint(recovery_points=False))
        work.run()
        self.finish(work)
        return work.deleted

    def run_retention(self, now_ms: int) -> int:
        """The periodic duty: retention pass, flush of rolled segments (and flush.ms), and
        both checkpoints, here and now; returns the number of segments deleted. On an event
        loop use ``plan_retention``, run its DiskWork in a worker thread, then ``finish`` it.
        Retention follows each topic's cleanup.policy (PartitionLog.delete_old_segments).
        Nothing runs in an offline log dir; an I/O error takes the dir offline (logged once)."""
        work = self.plan_retention(now_ms)
        work.run()
        self.finish(work)
        return work.deleted

    def finish(self, work: DiskWork, what: str = "retention", *, raise_error: bool = False) -> None:
        """Apply the effect of disk work that ran (any thread); a failure takes the data dir
        offline (KAFKA_STORAGE_ERROR to clients) and, with ``raise_error``, is raised as
        KafkaStorageError for the request that caused the work."""
        try:
            work.commit()
        except KafkaStorageError as exc:
            log_dir = work.error_dir or os.path.abspath(self.data_dir)
            if not self.failure_channel.maybe_add_offline_log_dir(log_dir, what, exc.__cause__ or exc) \
                    and out_of_descriptors(exc):
                if raise_error:   # out of descriptors, not a disk failure (kwire.fds)
                    raise TooManyOpenFiles(f"{what}: out of file descriptors") from exc
                return
            if raise_error:
                raise self.failure_channel.error_for(log_dir, what) from exc

    def plan_retention(self, now_ms: int, *, checkpoint: bool = True) -> DiskWork:
        """Retention decisions now (segments leave their logs, log start offsets move), the
        unlinks in the DiskWork; then the flushes that are due and both checkpoints."""
        work = DiskWork()
        deleted = 0
        for log_dir in self.online_log_dirs():
            logs = [log for log in list(self.logs.values()) if log.log_dir == log_dir]
            try:
                with deferred_deletes() as doomed:
                    deleted += sum(log.delete_old_segments(now_ms) for log in logs)
            except KafkaStorageError:
                if self.failure_channel.is_offline(log_dir):   # the log took its dir offline and said so
                    continue
                raise
            except OSError as exc:
                self.failure_channel.maybe_add_offline_log_dir(log_dir, "retention", exc)
                continue
            if doomed:
                work.add(lambda doomed=doomed: unlink_all(doomed), log_dir=log_dir)
        work.deleted = deleted
        if checkpoint:
            work.extend(self.plan_flush(now_ms))
            work.extend(self.plan_checkpoint())
        return work

    def plan_flush(self, now_ms: int) -> DiskWork:
        """Flushes of logs that rolled since their last flush (Kafka flushes a rolled
        segment in the background) or whose flush.ms elapsed."""
        work = DiskWork()
        for log in self.logs.values():
            if log.closed or log.offline:
                continue
            rolled = log.recovery_point < log.segments[-1].base_offset
            due = (now_ms - log.last_flush_ms >= log.config.flush_ms
                   and log.recovery_point < log.log_end_offset)
            if rolled or due or log.flush_wanted:
                self._plan_log_flush(work, log, log.segments[-1].base_offset if rolled else None, now_ms)
        return work

    @staticmethod
    def _plan_log_flush(work: DiskWork, log: PartitionLog, up_to: int | None, now_ms: int) -> None:
        """PartitionLog.flush split in two: fsync the segments holding offsets from the
        recovery point to ``up_to`` (default: the log end) and unsynced producer-state
        snapshots; then advance the recovery point unless the log was truncated meanwhile."""
        leo = log.log_end_offset
        target = leo if up_to is None else min(up_to, leo)
        rp = log.recovery_point
        generation = log._truncations
        jobs = []
        if target > rp:
            segs = list(log.segments)
            first = max(0, bisect.bisect_right([s.base_offset for s in segs], rp) - 1)
            for seg in segs[first:]:
                if seg.base_offset >= target:
                    break
                jobs.append((seg, seg.sync_plan()))
        snapshots = producer_state.unsynced_snapshots(log)
        epochs = log.leader_epoch_cache
        new_segment = any(seg.base_offset >= rp for seg, _ in jobs)

        def run() -> None:
            with log._flush_lock:   # not during a cleaner's swap, which marks what it replaces
                for seg, job in jobs:
                    if not seg.removed:   # replaced meanwhile: its index must not be written
                        job()
            # the epochs of the records below the new recovery point; a segment flushed for
            # the first time may be a new file: its directory too (Kafka's LocalLog.flush)
            dir_due = epochs.make_durable(sync_dir=False) or new_segment
            if snapshots:
                producer_state.sync_files(snapshots, log.dir)
            elif dir_due and os.path.isdir(log.dir):
                fsync_dir(log.dir)

        def commit() -> None:
            if target > rp and log._truncations == generation and log.recovery_point == rp:
                log.recovery_point = target
            log.last_flush_ms = now_ms   # unflushed_messages and flush_wanted follow the recovery point

        work.add(run, commit, log.log_dir)

    def plan_checkpoint(self, *, recovery_points: bool = True, log_start_offsets: bool = True) -> DiskWork:
        """The checkpoint files (log.flush.offset.checkpoint.interval.ms) of each online log
        dir, as of now, each holding its own logs: recovery points and high watermarks, and
        log start offsets."""
        work = DiskWork()
        by_dir: dict[str, dict] = {d: {} for d in self.online_log_dirs()}
        for tp, log in self.logs.items():
            if log.log_dir in by_dir:
                by_dir[log.log_dir][tp] = log
        for log_dir, logs in by_dir.items():
            if recovery_points:
                hws = {tp: log.high_watermark for tp, log in logs.items()}
                path3 = os.path.join(log_dir, HIGH_WATERMARK_CHECKPOINT)
                work.add(lambda path3=path3, hws=hws: write_checkpoint(path3, hws), log_dir=log_dir)
                rps = {tp: log.recovery_point for tp, log in logs.items()}
                path = os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT)
                work.add(lambda path=path, rps=rps: write_checkpoint(path, rps), log_dir=log_dir)
            if log_start_offsets:
                lsos = {tp: log.log_start_offset for tp, log in logs.items()}
                path2 = os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT)
                work.add(lambda path2=path2, lsos=lsos: write_checkpoint(path2, lsos), log_dir=log_dir)
        return work

    @property
    def log_dir(self) -> str:
        """The data dir's absolute path (Kafka names log dirs by it, e.g. in DescribeLogDirs)."""
        return os.path.abspath(self.data_dir)

    @property
    def offline(self) -> bool:
        """True once I/O errors took every log dir offline (kwire.log.dir_failure)."""
        return all(self.failure_channel.is_offline(d) for d in self.log_dirs)

    def checkpoint(self) -> None:
        """Write both checkpoint files (log.flush.offset.checkpoint.interval.ms)."""
        self.plan_checkpoint().run_here()

    def checkpoint_recovery_points(self) -> None:
        self.plan_checkpoint(log_start_offsets=False).run_here()

    def checkpoint_log_start_offsets(self) -> None:
        self.plan_checkpoint(recovery_points=False).run_here()

    @staticmethod
    def write_epoch_checkpoints(logs) -> int:
        """Write the changed leader-epoch checkpoints of ``logs`` without fsync (disk work
        only, any thread; the broker calls it after leader changes, kwire.broker): the next
        flush or the close only fsyncs them (LeaderEpochCache.make_durable), so a clean
        shutdown creates no file for them. A failure leaves the cache dirty for that flush,
        which reports it. Returns the number written."""
        written = 0
        for log in logs:
            if log.closed or log.offline:
                continue
            try:
                written += log.leader_epoch_cache.write_if_dirty(sync=False)
            except OSError as exc:   # a deleted log, or a failing disk: the flush says which
                _log.debug("leader epoch checkpoint of %s not written now: %s", log.topic_partition, exc)
        return written

    def close(self) -> None:
        """Clean shutdown: flush and close every log, write the checkpoints, then the marker."""
        if self.closed:
            return
        self.remove_dirs(self.unstage(list(self._staged.values())))
        t0 = time.monotonic()
        for log in self.moving.values():   # copies not finished: removed at the next open
            log.close()
        self._close_logs()
        t1 = time.monotonic()
        # nothing more is written to a failed disk; the next open recovers its logs
        online = self.online_log_dirs()
        if online:
            self.checkpoint()
        for log_dir in online:
            write_atomic(os.path.join(log_dir, CLEAN_SHUTDOWN_MARKER), b"")
        self.closed = True
        _log.info("closed %d partition logs in %.2f s, checkpoints and marker in %.2f s",
                  len(self.logs), t1 - t0, time.monotonic() - t1)

    def _close_logs(self) -> None:
        """Close every log (flush, producer snapshot, leader-epoch checkpoint), many at once.
        The work is fsyncs, five or so a partition: one thread after another, 5,000
        partitions took 8-80 s on a shared disk; threads waiting together let the file system
        fold their fsyncs into shared journal commits (Kafka's LogManager.shutdown closes
        logs in a pool too, of num.recovery.threads.per.data.dir threads). The logs are
        independent, so the order does not matter; the first error is raised once all are
        done (and then the caller writes no clean-shutdown marker)."""
        logs = list(self.logs.values())
        workers = min(self.close_threads, len(logs))
        if workers <= 1:
            for log in logs:
                log.close()
            return
        with ThreadPoolExecutor(workers, thread_name_prefix="kwire-log-close") as pool:
            futures = [pool.submit(log.close) for log in logs]
            errors = [f.exception() for f in futures]
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first

    def __iter__(self):
        return iter(self.logs.items())

    def __len__(self) -> int:
        return len(self.logs)
