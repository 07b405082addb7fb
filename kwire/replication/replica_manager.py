"""The replica manager: what this broker knows and decides about the partitions it hosts
(Kafka's ReplicaManager and Partition, in their sans-I/O part).

Per partition: its log (kwire.log PartitionLog, through the LogManager), its leader epoch and
ISR (read from the metadata image, which the controller's records keep), its high watermark
(decided here, in ``_maybe_increment_high_watermark``, and nowhere else) and its waiters (Fetch
long polls and acks=all produces, kwire.replication.waiters). Partitions whose log could not
be opened are offline here (KAFKA_STORAGE_ERROR) until a restart opens them.

Handlers ask it (``append_records``, ``read``, ``fetch_offset_for_timestamp``,
``plan_delete_records``, ``high_watermark``, ``watch``/``wait_for_high_watermark``) and never
reach into the log; every leader check lives in ``leader_log``, in Kafka's order
(ReplicaManager.getPartitionOrException, then Partition.localLogWithEpochOrThrow):

- not in the image, or the topic is gone: UNKNOWN_TOPIC_OR_PARTITION;
- led by another broker: NOT_LEADER_OR_FOLLOWER;
- led here but its log is offline (could not be opened, or its log dir failed since):
  KAFKA_STORAGE_ERROR;
- a request's current_leader_epoch (Fetch v9+, ListOffsets v4+, OffsetForLeaderEpoch v2+;
  -1 = not checked) newer than ours: UNKNOWN_LEADER_EPOCH (our metadata is behind); older:
  FENCED_LEADER_EPOCH (the client's is).

High watermark: the smallest log end offset in the ISR. This slice keeps one copy of each
partition (followers do not fetch yet), so the leader's log end offset is the only one known
and the high watermark follows it after every append; follower fetch positions will lower
it here. Nothing in this module awaits: waiters are trio.Events a handler awaits at the edge.
"""
from __future__ import annotations

import logging
from typing import Callable

import trio

from kwire.errors import ErrorCode, KafkaError
from kwire.log.validator import COORDINATOR
from kwire.replication.waiters import FetchWaiters, HighWatermarkWaiters, TopicPartition

log = logging.getLogger("kwire.replication")

# ListOffsets' special timestamps (Kafka's ListOffsetsRequest)
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP = -1, -2, -3, -4, -5


class LogReadResult:
    """One partition's answer to a Fetch read (Kafka's LogReadResult): an error code, or the
    offsets the response carries and the records read (file regions; b"" when none)."""

    __slots__ = ("error", "high_watermark", "last_stable_offset", "log_start_offset", "leader_epoch",
                 "records", "size")

    def __init__(self, error: int = 0, high_watermark: int = -1, last_stable_offset: int = -1,
                 log_start_offset: int = -1, leader_epoch: int = -1):
        self.error = error
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.leader_epoch = leader_epoch
        self.records = b""
        self.size = 0


class LogSync:
    """Disk work an append leaves for before its answer: an fdatasync of the segment it wrote
    (log.flush.per.append) or a flush (flush.messages / flush.ms reached). ``run`` in a worker
    thread, then ``error()`` on the loop: the KafkaStorageError to answer, or None."""

    __slots__ = ("_log", "_fd", "_now_ms", "_exc")

    def __init__(self, plog, fd: int | None, now_ms: int):
        self._log = plog
        self._fd = fd
        self._now_ms = now_ms
        self._exc: OSError | None = None

    def run(self) -> None:
        try:
            if self._fd is not None:
                self._log.datasync(self._fd)
            else:
                self._log.flush(now_ms=self._now_ms)
        except OSError as exc:
            self._exc = exc

    def error(self) -> KafkaError | None:
        if self._exc is None:
            return None
        return self._log.storage_failure("fsync" if self._fd is not None else "flush", self._exc)


class ReplicaManager:
    def __init__(self, node_id: int, logs, image: Callable, *, producer_id_expiration_ms: Callable[[], int]):
        """``logs``: the LogManager; ``image()``: the current metadata image (the broker
        replaces it when a snapshot installs); ``producer_id_expiration_ms()``: the config."""
        self.node_id = node_id
        self.logs = logs
        self._image = image
        self._producer_id_expiration_ms = producer_id_expiration_ms
        # partitions led here whose log could not be opened: (topic, p) -> why
        self.offline_partitions: dict[TopicPartition, str] = {}
        self.fetch_waiters = FetchWaiters()
        self.high_watermark_waiters = HighWatermarkWaiters()

    # ------------------------------------------------------------------ metadata
    def _partition_image(self, topic: str, partition: int):
        t = self._image().topics.get(topic)
        return t.partitions.get(partition) if t is not None else None

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch in the metadata image (-1 if unknown)."""
        p = self._partition_image(topic, partition)
        return p.leader_epoch if p is not None else -1

    def isr(self, topic: str, partition: int) -> list[int]:
        """The in-sync replicas as this broker sees them (the image's; [] if unknown)."""
        p = self._partition_image(topic, partition)
        return list(p.isr) if p is not None else []

    def log_offline(self, topic: str, partition: int) -> bool:
        """True if this node's replica of the partition is offline (its log could not be
        opened, or its log dir failed since): Metadata's offline replicas count it."""
        if (topic, partition) in self.offline_partitions:
            return True
        plog = self.logs.get(topic, partition)
        return plog is not None and plog.offline

    def make_leader(self, topic: str, partition: int) -> None:
        """This node leads the partition (a PARTITION record, or replay at start): open or
        create its log. A failure (EMFILE, EACCES, ENOSPC ...) marks it offline instead of
        stopping the metadata replay."""
        try:
            self.logs.open_partition(topic, partition)
        except (OSError, KafkaError) as exc:
            why = f"Error while creating log for {topic}-{partition} in dir {self.logs.data_dir}: {exc}"
            self.offline_partitions[(topic, partition)] = why
            log.error("partition %s-%d is offline: %s", topic, partition, why)
            return
        self.offline_partitions.pop((topic, partition), None)

    def partition_deleted(self, topic: str, partition: int) -> None:
        """The partition's topic was deleted (its log is the LogManager's to remove): wake
        every waiter, so fetches and acks=all produces see it gone."""
        tp = (topic, partition)
        self.offline_partitions.pop(tp, None)
        self.fetch_waiters.wake(tp)
        self.high_watermark_waiters.complete_all(tp)

    # ------------------------------------------------------------------ leader checks
    def leader_log(self, topic: str, partition: int, current_leader_epoch: int = -1, *,
                   check_online: bool = True):
        """This node's log of a partition it leads, or KafkaError with Kafka's code: the one
        leader check (also for OffsetForLeaderEpoch's current_leader_epoch)."""
        return self._leader(topic, partition, current_leader_epoch, check_online)[0]

    def _leader(self, topic: str, partition: int, current_leader_epoch: int, check_online: bool):
        """(log, leader epoch) of a partition this node leads, else KafkaError."""
        p = self._partition_image(topic, partition)
        if p is None:
            raise KafkaError(f"This server does not host this topic-partition {topic}-{partition}.",
                             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if p.leader != self.node_id:
            raise KafkaError(f"Broker {self.node_id} is not the leader of {topic}-{partition} "
                             f"(leader: {p.leader})", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        plog = self.logs.get(topic, partition)
        if plog is None or (check_online and plog.offline):
            why = self.offline_partitions.get((topic, partition))
            if plog is None and why is None:
                raise KafkaError(f"This server does not host this topic-partition {topic}-{partition}.",
                                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            raise KafkaError(why or f"the log dir of {topic}-{partition} is offline", ErrorCode.KAFKA_STORAGE_ERROR)
        if current_leader_epoch != -1 and current_leader_epoch != p.leader_epoch:
            if current_leader_epoch > p.leader_epoch:
                raise KafkaError(f"{topic}-{partition}: leader epoch {current_leader_epoch} is newer than "
                                 f"this broker's {p.leader_epoch}", ErrorCode.UNKNOWN_LEADER_EPOCH)
            raise KafkaError(f"{topic}-{partition}: leader epoch {current_leader_epoch} is older than "
                             f"the current {p.leader_epoch}", ErrorCode.FENCED_LEADER_EPOCH)
        return plog, p.leader_epoch

    def leader_error(self, topic: str, partition: int, current_leader_epoch: int = -1) -> ErrorCode:
        """NONE when this node leads the partition and can serve it, else why not."""
        try:
            self.leader_log(topic, partition, current_leader_epoch)
        except KafkaError as exc:
            return ErrorCode(exc.code)
        return ErrorCode.NONE

    def local_log(self, topic: str, partition: int):
        """The partition's log on this broker, or None (for this broker's own coordinators,
        e.g. the group coordinator's replay of __consumer_offsets)."""
        return self.logs.get(topic, partition)

    def describe_log_dir(self, partitions: set[TopicPartition] | None = None):
        """DescribeLogDirs' view of this broker's one log dir (Kafka's
        ReplicaManager.describeLogDirs): (absolute path, offline?, rows), a row per local log
        in ``partitions`` (None: every one) as (topic, partition, size in bytes, offset lag,
        is future), sorted. The offset lag is the log end offset's lag behind the high
        watermark (0 on a leader); kwire has no future logs (AlterReplicaLogDirs). Reads
        memory only: segment sizes are kept as they are written."""
        rows = []
        for (topic, partition), plog in self.logs:
            if partitions is not None and (topic, partition) not in partitions:
                continue
            lag = max(plog.high_watermark - plog.log_end_offset, 0)
            rows.append((topic, partition, plog.size_in_bytes, lag, False))
        rows.sort()
        return self.logs.log_dir, self.logs.offline, rows

    # ------------------------------------------------------------------ produce
    def append_records(self, topic: str, partition: int, records, now_ms: int, *, origin: str = COORDINATOR):
        """Append to a partition this node leads, through its log's one append path
        (validation, producer-state checks, offsets; ``origin`` CLIENT for Produce, as
        Kafka's AppendOrigin), stamped with the leader epoch; then the high watermark. Raises
        KafkaError (a KafkaStorageError once the log dir is offline)."""
        plog, epoch = self._leader(topic, partition, -1, False)   # offline: the append raises it
        res = plog.append(records, now_ms=now_ms, leader_epoch=epoch, origin=origin,
                          producer_id_expiration_ms=self._producer_id_expiration_ms())
        self._maybe_increment_high_watermark((topic, partition), plog)
        return res

    def log_sync_after_append(self, topic: str, partition: int, acks: int, now_ms: int) -> LogSync | None:
        """The disk work the append just made due before answering: an fdatasync of the
        active segment (log.flush.per.append; not for acks=0, which has no answer to hold
        back), or a flush (flush.messages / flush.ms reached); None when there is none."""
        plog = self.logs.get(topic, partition)
        if plog is None:
            return None
        if plog.config.fsync_per_append and acks != 0:
            return LogSync(plog, plog.dup_active_segment_fd(), now_ms)
        if plog.flush_wanted:
            return LogSync(plog, None, now_ms)
        return None

    def wait_for_high_watermark(self, topic: str, partition: int, offset: int) -> trio.Event | None:
        """For acks=all: None when the high watermark is at ``offset`` or past it already,
        else an event set once it is (or once the partition is deleted)."""
        plog = self.logs.get(topic, partition)
        if plog is None or plog.high_watermark >= offset:
            return None
        return self.high_watermark_waiters.add((topic, partition), offset)

    # ------------------------------------------------------------------ high watermark
    def _maybe_increment_high_watermark(self, tp: TopicPartition, plog) -> None:
        """The one place that decides a partition's high watermark: the smallest log end
        offset in the ISR. With one copy the leader's is the only one, so it is the leader's
        log end offset. Wakes the fetches and acks=all produces waiting on the partition."""
        hw = plog.log_end_offset
        if hw != plog.high_watermark:
            plog.high_watermark = hw
            self.high_watermark_waiters.high_watermark_moved(tp, hw)
            self.fetch_waiters.wake(tp)

    def high_watermark(self, topic: str, partition: int) -> int:
        """The partition's high watermark on this broker (-1 when it has no log here)."""
        plog = self.logs.get(topic, partition)
        return plog.high_watermark if plog is not None else -1

    # ------------------------------------------------------------------ fetch
    def read(self, topic: str, partition: int, fetch_offset: int, max_bytes: int, *,
             current_leader_epoch: int = -1, min_one: bool = True) -> LogReadResult:
        """A consumer's read: records from ``fetch_offset`` below the high watermark, at most
        ``max_bytes`` (the first batch whole when ``min_one``, KIP-74). Errors in the result."""
        try:
            plog, epoch = self._leader(topic, partition, current_leader_epoch, True)
        except KafkaError as exc:
            return LogReadResult(exc.code)
        hw = plog.high_watermark
        res = LogReadResult(0, hw, hw, plog.log_start_offset, epoch)
        try:
            if fetch_offset < plog.log_start_offset or fetch_offset > plog.log_end_offset:
                raise KafkaError(f"offset {fetch_offset} out of range", ErrorCode.OFFSET_OUT_OF_RANGE)
            if fetch_offset < hw:
                data = plog.read(fetch_offset, max_bytes, max_offset=hw, min_one=min_one)
                if data is not None and data.size:
                    res.records = data   # kwire.log FetchData: file regions, sent with sendfile
                    res.size = data.size
        except KafkaError as exc:
            res.error = exc.code
        return res

    def watch(self, tps) -> trio.Event:
        """For a Fetch long poll: an event set when any of ``tps`` changes."""
        return self.fetch_waiters.watch(tps)

    def unwatch(self, ev: trio.Event, tps) -> None:
        self.fetch_waiters.unwatch(ev, tps)

    async def wait_for_data(self, tps, deadline: float) -> None:
        """Wait (at the Trio edge) until any of ``tps`` changes or ``deadline`` passes."""
        ev = self.fetch_waiters.watch(tps)
        try:
            with trio.move_on_at(deadline):
                await ev.wait()
        finally:
            self.fetch_waiters.unwatch(ev, tps)

    # ------------------------------------------------------------------ list offsets
    def fetch_offset_for_timestamp(self, topic: str, partition: int, timestamp: int, *,
                                   current_leader_epoch: int = -1) -> tuple[int, int, int, int]:
        """ListOffsets: (error, offset, timestamp, leader_epoch). -1 latest: the high watermark
        (also the last stable offset: no transactions); -2 earliest and -4 earliest local:
        the log start offset; -3 the record with the largest timestamp (KIP-734); -5 latest
        tiered: -1 (no tiered storage); >= 0 the first offset below the high watermark whose
        timestamp is >= it (-1/-1 when none)."""
        try:
            plog, epoch = self._leader(topic, partition, current_leader_epoch, True)
        except KafkaError as exc:
            return exc.code, -1, -1, -1
        try:
            if timestamp == LATEST_TIMESTAMP:
                return 0, plog.high_watermark, -1, epoch
            if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                return 0, plog.log_start_offset, -1, epoch
            if timestamp == LATEST_TIERED_TIMESTAMP:
                return 0, -1, -1, epoch
            if timestamp == MAX_TIMESTAMP:
                found = plog.max_timestamp_offset()
            elif timestamp >= 0:
                found = plog.offset_for_timestamp(timestamp)
                if found is not None and found[0] >= plog.high_watermark:
                    found = None
            else:
                return ErrorCode.INVALID_REQUEST, -1, -1, epoch
        except KafkaError as exc:
            return exc.code, -1, -1, epoch
        if found is None:
            return 0, -1, -1, epoch
        return 0, found[0], found[1], epoch

    # ------------------------------------------------------------------ delete records
    def plan_delete_records(self, topic: str, partition: int, offset: int):
        """DeleteRecords: move the log start offset up to ``offset`` (-1: the high watermark)
        now; returns the disk work (segment unlinks, checkpoint) to run in a worker thread,
        then ``finish_delete_records``. Raises KafkaError (OFFSET_OUT_OF_RANGE past the high
        watermark)."""
        plog = self.leader_log(topic, partition, check_online=False)
        hw = plog.high_watermark
        if offset == -1:
            offset = hw
        if offset < 0 or offset > hw:
            raise KafkaError(f"cannot delete records of {topic}-{partition} up to {offset}: "
                             f"high watermark is {hw}", ErrorCode.OFFSET_OUT_OF_RANGE)
        _, work = self.logs.plan_delete_records(topic, partition, offset)
        return work

    def finish_delete_records(self, topic: str, partition: int, work) -> int:
        """Apply the effect of the disk work that ran; the new log start offset (the low
        watermark). Raises KafkaStorageError when the work failed."""
        self.logs.finish(work, "DeleteRecords", raise_error=True)
        plog = self.logs.get(topic, partition)
        return plog.log_start_offset if plog is not None else -1
