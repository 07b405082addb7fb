"""The replica manager: what this broker knows and decides about the partitions it hosts
(Kafka's ReplicaManager and Partition, in their sans-I/O part).

Per partition: its log (kwire.log PartitionLog, through the LogManager), its leader epoch and
ISR (read from the metadata image, which the controller's records keep), its high watermark
(decided here, in ``_maybe_increment_high_watermark``, and nowhere else) and its waiters (Fetch
long polls and acks=all produces, kwire.replication.waiters). Partitions whose log could not
be opened are offline here (KAFKA_STORAGE_ERROR) until a restart opens them.

Every writer appends through ``append`` (Produce, WriteTxnMarkers, the group, transaction
and share coordinators; Kafka's ReplicaManager.appendRecords) and awaits its outcome with
``await_appends`` (Kafka's DelayedProduce); handlers also ask ``read``,
``fetch_offset_for_timestamp``, ``plan_delete_records``, ``high_watermark`` and ``watch``, and
never reach into the log; every leader check lives in ``leader_log``, in Kafka's order
(ReplicaManager.getPartitionOrException, then Partition.localLogWithEpochOrThrow):

- not in the image, or the topic is gone: UNKNOWN_TOPIC_OR_PARTITION;
- led by another broker: NOT_LEADER_OR_FOLLOWER;
- led here but its log is offline (could not be opened, or its log dir failed since):
  KAFKA_STORAGE_ERROR;
- a request's current_leader_epoch (Fetch v9+, ListOffsets v4+, OffsetForLeaderEpoch v2+;
  -1 = not checked) newer than ours: UNKNOWN_LEADER_EPOCH (our metadata is behind); older:
  FENCED_LEADER_EPOCH (the client's is).

A consumer's Fetch v11+ (Kafka's ClientMetadata) may be served by a follower too (``_replica``,
KIP-392), up to the follower's high watermark; on the leader the ``replica_selector``
(replica.selector.class) may send it to a preferred read replica instead.

Roles: ``apply_partition`` makes this broker leader or follower of a partition as the
metadata image says (after each applied PartitionRecord / PartitionChangeRecord): a leader
keeps per-follower state (kwire.replication.partition) from their fetches
(``read_for_follower``), a follower appends its leader's batches (``append_as_follower``,
kwire.replication.follower drives it from the fetcher). High watermark: the smallest log end
offset in the ISR, decided in ``_maybe_increment_high_watermark`` and nowhere else. acks=all:
``append(acks=-1)`` refuses NOT_ENOUGH_REPLICAS when the ISR is smaller than
min.insync.replicas; its outcome completes once the high watermark passes the records, then
says NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND or NOT_LEADER_OR_FOLLOWER (the leadership, or
its epoch, moved meanwhile), or REQUEST_TIMED_OUT. Only ``await_appends`` awaits (the disk
work in a worker thread, the replication waiters); everything else here is sans-I/O.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

import trio

from kwire.codec.records import BATCH_HEADER_SIZE, COMPRESSION_MASK, HEADER
from kwire.errors import ErrorCode, KafkaError
from kwire.log import producer_log
from kwire.log.producer_log import NOT_VERIFIED
from kwire.log.validator import COORDINATOR
from kwire.metadata.config_control import elr_enabled
from kwire.replication.partition import Partition
from kwire.replication.replica_selector import NO_PREFERRED_REPLICA, Selector, preferred_read_replica
from kwire.replication.waiters import FetchWaiters, HighWatermarkWaiters, TopicPartition

log = logging.getLogger("kwire.replication")

# ListOffsets' special timestamps (Kafka's ListOffsetsRequest)
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP = -1, -2, -3, -4, -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6   # KIP-1023, ListOffsets v11
_NO_ABORTED: list = []
# UnifiedLog.logFutureDirName: "<topic>-<partition>." + a 32-hex-digit id + "-future"
_FUTURE_SUFFIX_LEN = 32 + len("-future")


@dataclass
class Transition:
    """What ``apply_partition`` changed: the partition, whether this broker leads it now,
    and whether the leader or its epoch changed."""
    partition: Partition
    leader: bool
    new_epoch: bool


class LogReadResult:
    """One partition's answer to a Fetch read (Kafka's LogReadResult): an error code, or the
    offsets the response carries and the records read (file regions; b"" when none)."""

    __slots__ = ("error", "high_watermark", "last_stable_offset", "log_start_offset", "leader_epoch",
                 "records", "size", "diverging_epoch", "diverging_end_offset", "aborted_transactions",
                 "preferred_read_replica")

    def __init__(self, error: int = 0, high_watermark: int = -1, last_stable_offset: int = -1,
                 log_start_offset: int = -1, leader_epoch: int = -1):
        self.error = error
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.leader_epoch = leader_epoch
        self.records = b""
        self.size = 0
        self.diverging_epoch = -1        # a follower's fetch: where its log left the leader's
        self.diverging_end_offset = -1
        self.aborted_transactions = _NO_ABORTED   # read_committed: kwire.log.txn_index.AbortedTxn
        self.preferred_read_replica = -1  # a consumer's fetch on the leader: read there instead (KIP-392)


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


# Kafka's messages for an acks=all append that did not make it (DelayedProduce, Partition)
_ACKS_ALL_MESSAGES = {
    ErrorCode.REQUEST_TIMED_OUT: "Timed out waiting for the in-sync replicas to replicate the records.",
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "The records were written, but fewer in-sync replicas than "
                                                "min.insync.replicas have them.",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "This broker stopped leading the partition before the records were "
                                      "replicated.",
}


class AppendOutcome:
    """One partition's append through ``ReplicaManager.append`` (Kafka's ProducePartitionStatus
    in a DelayedProduce): the offsets written, or ``error`` (a KafkaError: the refusal, or why
    the append does not count). ``completed`` once nothing is left to wait for: at once for
    a refusal, or an acks 0/1 append with no disk work due, or an acks=-1 one already
    replicated; else ``ReplicaManager.await_appends`` (or ``wait``) completes it. A sans-I/O
    driver (the replication simulation) calls ``complete`` once ``replicated`` is set."""

    __slots__ = ("_rm", "topic", "partition", "acks", "error", "base_offset", "last_offset",
                 "log_append_time_ms", "log_start_offset", "leader_epoch", "sync", "replicated", "completed")

    def __init__(self, rm: ReplicaManager, topic: str, partition: int, acks: int):
        self._rm = rm
        self.topic = topic
        self.partition = partition
        self.acks = acks
        self.error: KafkaError | None = None
        self.base_offset = -1
        self.last_offset = -1
        self.log_append_time_ms = -1
        self.log_start_offset = -1
        self.leader_epoch = -1           # of the append: acks=all checks it is still the current one
        self.sync: LogSync | None = None  # disk work due before the answer (log.flush.per.append, a flush)
        self.replicated: trio.Event | None = None   # acks=-1: set once the high watermark passes the records
        self.completed = False

    @property
    def code(self) -> ErrorCode:
        return ErrorCode.NONE if self.error is None else ErrorCode(self.error.code)

    def result(self) -> AppendOutcome:
        """The outcome, or raises its error (for callers that treat a refusal as an exception)."""
        if self.error is not None:
            raise self.error
        return self

    def sync_done(self) -> None:
        """After ``sync.run()`` (in a worker thread): a failed fdatasync or flush is the error."""
        if self.sync is not None:
            exc = self.sync.error()
            self.sync = None
            if exc is not None and self.error is None:
                self.error = exc

    def complete(self) -> ErrorCode:
        """The answer, decided once (Kafka's DelayedProduce.tryComplete / onExpiration): the
        error so far, or for acks=-1 the replica manager's check of the high watermark, the
        leader epoch of the append and min.insync.replicas (REQUEST_TIMED_OUT when the high
        watermark is still below the records)."""
        if not self.completed:
            self.completed = True
            if self.error is None and self.acks == -1:
                err = self._rm._acks_all_error(self.topic, self.partition, self.last_offset + 1, self.leader_epoch)
                if err:
                    self.error = KafkaError(_ACKS_ALL_MESSAGES.get(err, err.name), err)
        return self.code

    async def wait(self, timeout_ms: int) -> ErrorCode:
        """Complete this one append (``ReplicaManager.await_appends``); its error code."""
        if not self.completed:
            await self._rm.await_appends((self,), timeout_ms)
        return self.code


def _check_leader_epoch(topic: str, partition: int, current_leader_epoch: int, leader_epoch: int) -> None:
    """The request's current leader epoch against the partition's (-1: not checked), as Kafka's
    Partition.checkCurrentLeaderEpoch: newer is UNKNOWN_LEADER_EPOCH, older FENCED_LEADER_EPOCH."""
    if current_leader_epoch == -1 or current_leader_epoch == leader_epoch:
        return
    if current_leader_epoch > leader_epoch:
        raise KafkaError(f"{topic}-{partition}: leader epoch {current_leader_epoch} is newer than "
                         f"this broker's {leader_epoch}", ErrorCode.UNKNOWN_LEADER_EPOCH)
    raise KafkaError(f"{topic}-{partition}: leader epoch {current_leader_epoch} is older than "
                     f"the current {leader_epoch}", ErrorCode.FENCED_LEADER_EPOCH)


# append_off_loop: a compressed batch this large is validated (decompressed, every record
# walked) in a worker thread, about a millisecond of CPU per 64 KiB of zstd; any batch this
# large is, its write too
OFF_LOOP_COMPRESSED_BYTES = 64 << 10
OFF_LOOP_BYTES = 1 << 20


class _Lane:
    """The appends of one partition queued behind one running in a worker thread."""

    __slots__ = ("lock", "users")

    def __init__(self):
        self.lock = trio.Lock()   # FIFO: the waiters get it in arrival order
        self.users = 0


class ReplicaManager:
    def __init__(self, node_id: int, logs, image: Callable, *, producer_id_expiration_ms: Callable[[], int],
                 now_ms: Callable[[], int] | None = None):
        """``logs``: the LogManager; ``image()``: the current metadata image (the broker
        replaces it when a snapshot installs); ``producer_id_expiration_ms()``: the config;
        ``now_ms()``: the clock (follower fetch times, ISR decisions)."""
        self.node_id = node_id
        self.logs = logs
        self._image = image
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))
        # the partitions this broker hosts (leader or follower): (topic, p) -> Partition
        self.partitions: dict[TopicPartition, Partition] = {}
        # partitions hosted here whose log could not be opened: (topic, p) -> why
        self.offline_partitions: dict[TopicPartition, str] = {}
        self.fetch_waiters = FetchWaiters()           # consumers: woken when the high watermark moves
        self.replica_fetch_waiters = FetchWaiters()   # followers: woken by every append
        self.high_watermark_waiters = HighWatermarkWaiters()
        # called with (partition, new ISR) when the leader wants an ISR change (the edge sends
        # an AlterPartition to the controller); None: nobody to ask (tests)
        self.on_isr_change: Callable[[Partition, list[int]], None] | None = None
        # replica.selector.class (kwire.replication.replica_selector): picks a consumer's
        # preferred read replica on the leader; None (Kafka's default): the leader serves
        self.replica_selector: Selector | None = None
        # leader.replication.throttled.* (kwire.quota.replication, KIP-73): holds back followers
        # outside the ISR while a reassignment's throttle is exceeded; None: no throttling (tests)
        self.leader_quota = None
        # AlterReplicaLogDirs: moves between this broker's log dirs (the broker runs its task)
        from kwire.replication.log_dir_mover import LogDirMover  # noqa: PLC0415 - it imports the log manager
        self.log_dir_mover = LogDirMover(self, self._now_ms, producer_id_expiration_ms)
        # partitions with an append in a worker thread: the appends queued behind it
        self._lanes: dict[TopicPartition, _Lane] = {}
        # partitions whose log a worker thread is opening (``begin_open``): set once it ended
        self._opening: dict[TopicPartition, trio.Event] = {}

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

    def apply_partition(self, topic: str, partition: int) -> Transition | None:
        """Make this broker's role in a partition what the metadata image says (after each
        applied PartitionRecord / PartitionChangeRecord, and at start-up): open or create its
        log when it is a replica (a failure, EMFILE, EACCES, ENOSPC ..., marks it offline
        instead of stopping the metadata replay), then become leader or follower (Kafka's
        makeLeader / makeFollower). Returns what changed, for the edge (fetchers, group
        coordinator), or None when this broker hosts no replica of it."""
        p = self._partition_image(topic, partition)
        tp = (topic, partition)
        if p is None or (self.node_id not in p.replicas and p.leader != self.node_id):
            return None
        try:
            plog = self.logs.open_partition(topic, partition)
        except (OSError, KafkaError) as exc:
            why = f"Error while creating log for {topic}-{partition}: {exc}"
            self.offline_partitions[tp] = why
            log.error("partition %s-%d is offline: %s", topic, partition, why)
            return None
        self.offline_partitions.pop(tp, None)
        part = self.partitions.get(tp)
        if part is None or part.log is not plog:
            part = self.partitions[tp] = Partition(topic, partition, plog)
        was_leader = part.is_leader
        now = self._now_ms()
        if p.leader == self.node_id:
            new_epoch = part.make_leader(p, self.node_id, now)
            if new_epoch:
                # the new epoch's entry before its first write (Kafka's makeLeader); the file
                # follows at the next flush, off the event loop
                if p.leader_epoch >= 0 and p.leader_epoch > plog.latest_epoch:
                    plog.leader_epoch_cache.assign(p.leader_epoch, plog.log_end_offset, write=False)
            self._maybe_increment_high_watermark(tp, plog)   # an ISR shrink may let it move
            return Transition(part, leader=True, new_epoch=new_epoch)
        changed = part.make_follower(p)
        if was_leader or changed:
            # acks=all produces waiting here answer NOT_LEADER_OR_FOLLOWER; fetches see it too
            self.high_watermark_waiters.complete_all(tp)
            self.fetch_waiters.wake(tp)
            self.replica_fetch_waiters.wake(tp)
        return Transition(part, leader=False, new_epoch=changed)

    # ------------------------------------------------------------------ log opens off the loop
    def log_opening(self, topic: str, partition: int) -> bool:
        """True while a worker thread opens the partition's log (``begin_open``)."""
        return (topic, partition) in self._opening

    def begin_open(self, topic: str, partition: int):
        """The image makes this node a replica of a partition whose log is not open here
        (a new partition on a node that did not make it before the commit, or one whose
        directory is found again): the open (Kafka's LogManager.getOrCreateLog, with its
        recovery) is planned now and left to ``finish_open`` in a worker thread, so a
        metadata delta of a thousand partitions blocks no connection. Returns the plan, or
        None when there is nothing to open (not a replica here, the log open or staged
        already, an open running: the one running applies the image as it is when it ends).
        From now until the open ended, ``wait_log_open`` waits for it (the coordinators'
        loads do) and the leader check answers NOT_LEADER_OR_FOLLOWER (retriable: the
        leadership is not taken up yet)."""
        tp = (topic, partition)
        p = self._partition_image(topic, partition)
        if tp in self._opening or p is None or (self.node_id not in p.replicas and p.leader != self.node_id) \
                or self.logs.is_open(topic, partition):
            return None
        t = self._image().topics[topic]
        try:
            plan = self.logs.plan_open(topic, partition)
        except (OSError, KafkaError):
            return None   # no log dir online: apply_partition marks it offline, on the loop
        self._opening[tp] = trio.Event()
        return (t.topic_id, plan)

    async def finish_open(self, plan, then: Callable[[], None]) -> None:
        """``begin_open``'s disk work in a worker thread, then on the loop: the log is the
        partition's if the image still makes this node a replica of the same topic (else it
        goes, renamed aside here, removed in a worker thread), and ``then()`` (the caller's
        ``apply_partition``: the role the image gives now) runs; a failure marks the
        partition offline, as ``apply_partition`` does (the next delta naming it tries
        again). Whoever waits (``wait_log_open``: a coordinator's load) is woken only
        after that, so it finds the log open and the role taken up."""
        topic_id, lplan = plan
        topic, partition = lplan[0], lplan[1]
        tp = (topic, partition)
        ev = self._opening[tp]
        try:
            try:
                # shielded: a thread is not cancelled, and a shutdown meanwhile must still
                # adopt (and so close) what it opened rather than drop it open
                with trio.CancelScope(shield=True):
                    plog = await trio.to_thread.run_sync(self.logs.open_planned, lplan)
            except (OSError, KafkaError) as exc:
                self.logs.drop_plan(topic, partition)
                why = f"Error while creating log for {topic}-{partition}: {exc}"
                self.offline_partitions[tp] = why
                log.error("partition %s-%d is offline: %s", topic, partition, why)
                return
            t = self._image().topics.get(topic)
            p = t.partitions.get(partition) if t is not None and t.topic_id == topic_id else None
            if p is not None and (self.node_id in p.replicas or p.leader == self.node_id):
                if self.logs.adopt(plog):
                    self.offline_partitions.pop(tp, None)
            else:   # deleted (or moved away) while it opened
                aside = self.logs.discard(plog)
                if aside is not None:
                    await trio.to_thread.run_sync(self.logs.remove_deleted, [aside])
            del self._opening[tp]   # before then(): the role is taken up as for any open log
            then()
        finally:
            self._opening.pop(tp, None)
            ev.set()

    async def wait_log_open(self, topic: str, partition: int) -> None:
        """Until no worker thread opens the partition's log (at once when none does)."""
        ev = self._opening.get((topic, partition))
        if ev is not None:
            await ev.wait()

    async def wait_logs_open(self, topic: str | None = None) -> None:
        """Until the opens running now (of ``topic``'s partitions; None: all) ended."""
        for tp, ev in list(self._opening.items()):
            if topic is None or tp[0] == topic:
                await ev.wait()

    def partitions_in_dirs(self, log_dirs) -> list[TopicPartition]:
        """The partitions whose local log lives in one of ``log_dirs`` (absolute paths):
        what a failed log dir takes offline (Kafka's handleLogDirFailure)."""
        dirs = set(log_dirs)
        return sorted(tp for tp, plog in self.logs if plog.log_dir in dirs)

    def partition_deleted(self, topic: str, partition: int) -> None:
        """The partition's topic was deleted (its log is the LogManager's to remove): wake
        every waiter, so fetches and acks=all produces see it gone."""
        tp = (topic, partition)
        self.offline_partitions.pop(tp, None)
        self.partitions.pop(tp, None)
        self.fetch_waiters.wake(tp)
        self.replica_fetch_waiters.wake(tp)
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
        plog = self.logs.get(topic, partition)
        if (check_online or p.leader != self.node_id) and self.node_id in p.replicas and (
                (topic, partition) in self.offline_partitions or (plog is not None and plog.offline)):
            # a replica here in a failed log dir answers so whoever leads now, as Kafka's
            # getPartitionOrException does for HostedPartition.Offline
            why = self.offline_partitions.get((topic, partition))
            raise KafkaError(why or f"the log dir of {topic}-{partition} is offline", ErrorCode.KAFKA_STORAGE_ERROR)
        if p.leader != self.node_id:
            raise KafkaError(f"Broker {self.node_id} is not the leader of {topic}-{partition} "
                             f"(leader: {p.leader})", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if plog is None and (topic, partition) in self._opening:
            # led here by the image, its log still opening (begin_open): not taken up yet
            raise KafkaError(f"Broker {self.node_id} has not taken up the leadership of {topic}-{partition} "
                             "(its log is opening)", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if plog is None or (check_online and plog.offline):
            why = self.offline_partitions.get((topic, partition))
            if plog is None and why is None:
                raise KafkaError(f"This server does not host this topic-partition {topic}-{partition}.",
                                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            raise KafkaError(why or f"the log dir of {topic}-{partition} is offline", ErrorCode.KAFKA_STORAGE_ERROR)
        part = self.partitions.get((topic, partition))
        if part is None or not part.is_leader or part.leader_epoch != p.leader_epoch:
            # the image says so, but this broker has not taken up the leadership (yet): a
            # broker registering again after a restart takes up its roles only afterwards
            raise KafkaError(f"Broker {self.node_id} has not taken up the leadership of {topic}-{partition}",
                             ErrorCode.NOT_LEADER_OR_FOLLOWER)
        _check_leader_epoch(topic, partition, current_leader_epoch, p.leader_epoch)
        return plog, p.leader_epoch

    def _replica(self, topic: str, partition: int, current_leader_epoch: int):
        """(log, leader epoch, Partition) of a partition this node is the leader or a follower
        of, for a consumer read that may go to a follower (Fetch v11+), else KafkaError. Kafka's
        getPartitionOrException then localLogWithEpochOrThrow(requireLeader = false): unknown:
        UNKNOWN_TOPIC_OR_PARTITION; no replica here (or not taken up yet):
        NOT_LEADER_OR_FOLLOWER; the log offline: KAFKA_STORAGE_ERROR; then the epoch check
        against the epoch this replica follows in."""
        p = self._partition_image(topic, partition)
        if p is None:
            raise KafkaError(f"This server does not host this topic-partition {topic}-{partition}.",
                             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if p.leader == self.node_id:
            plog, epoch = self._leader(topic, partition, current_leader_epoch, True)
            return plog, epoch, self.partitions[(topic, partition)]
        tp = (topic, partition)
        part = self.partitions.get(tp)
        plog = self.logs.get(topic, partition)
        if tp in self.offline_partitions or (plog is not None and plog.offline and self.node_id in p.replicas):
            raise KafkaError(self.offline_partitions.get(tp) or f"the log dir of {topic}-{partition} is offline",
                             ErrorCode.KAFKA_STORAGE_ERROR)
        if part is None or plog is None or part.log is not plog or part.is_leader \
                or self.node_id not in p.replicas or part.leader_epoch != p.leader_epoch:
            raise KafkaError(f"Broker {self.node_id} hosts no replica of {topic}-{partition} in its leader "
                             f"epoch {p.leader_epoch} (leader: {p.leader})", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        _check_leader_epoch(topic, partition, current_leader_epoch, p.leader_epoch)
        return plog, p.leader_epoch, part

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

    def describe_log_dirs(self, partitions: set[TopicPartition] | None = None):
        """DescribeLogDirs' view of this broker's log dirs (Kafka's
        ReplicaManager.describeLogDirs): a (absolute path, offline?, rows) per log dir, rows
        per local log in ``partitions`` (None: every one) as (topic, partition, size in bytes,
        offset lag, is future), sorted. The offset lag is the log end offset's lag behind the
        high watermark (0 on a leader); a future log (a move between dirs, AlterReplicaLogDirs)
        lags behind the current log's end. Reads memory only: segment sizes are kept as they
        are written."""
        by_dir: dict[str, list] = {d: [] for d in self.logs.log_dirs}
        for (topic, partition), plog in self.logs:
            if partitions is not None and (topic, partition) not in partitions:
                continue
            lag = max(plog.high_watermark - plog.log_end_offset, 0)
            by_dir.setdefault(plog.log_dir, []).append((topic, partition, plog.size_in_bytes, lag, False))
        for (topic, partition), future in list(self.logs.moving.items()):
            current = self.logs.get(topic, partition)
            if current is None or (partitions is not None and (topic, partition) not in partitions):
                continue
            lag = max(current.log_end_offset - future.log_end_offset, 0)
            by_dir.setdefault(future.log_dir, []).append((topic, partition, future.size_in_bytes, lag, True))
        channel = self.logs.failure_channel
        return [(d, channel.is_offline(d), sorted(rows)) for d, rows in by_dir.items()]

    def alter_replica_log_dirs(self, partition_dirs: dict[TopicPartition, str]) -> dict[TopicPartition, ErrorCode]:
        """Kafka's ReplicaManager.alterReplicaLogDirs: each partition's error, checked in
        Kafka's order, and the moves started (kwire.replication.log_dir_mover). A topic whose
        future-log dir name (``<topic>-<partition>.<32 hex>-future``) would pass 255
        characters: INVALID_TOPIC_EXCEPTION; a path that is not one of this broker's log dirs
        (Kafka compares the absolute path as given): LOG_DIR_NOT_FOUND; that dir offline:
        KAFKA_STORAGE_ERROR; no local replica: REPLICA_NOT_AVAILABLE when the metadata knows
        the partition (Kafka turns NOT_LEADER_OR_FOLLOWER into it here), else
        UNKNOWN_TOPIC_OR_PARTITION; the replica's own dir offline: KAFKA_STORAGE_ERROR. A
        replica already in the dir asked for needs no move (and a move of it under way to
        another dir is cancelled): NONE."""
        out: dict[TopicPartition, ErrorCode] = {}
        channel = self.logs.failure_channel
        for (topic, partition), path in partition_dirs.items():
            tp = (topic, partition)
            plog = self.logs.get(topic, partition)
            if len(f"{topic}-{partition}.") + _FUTURE_SUFFIX_LEN > 255:
                out[tp] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif path not in self.logs.log_dirs:
                out[tp] = ErrorCode.LOG_DIR_NOT_FOUND
            elif channel.is_offline(path):
                out[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            elif plog is None:
                known = self._partition_image(topic, partition) is not None
                out[tp] = ErrorCode.REPLICA_NOT_AVAILABLE if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif plog.offline:
                out[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            else:
                out[tp] = ErrorCode.NONE
                self.log_dir_mover.request(tp, path)
        return out

    # ------------------------------------------------------------------ produce
    def maybe_start_transaction_verification(self, topic: str, partition: int, producer_id: int,
                                             producer_epoch: int, now_ms: int, supports_epoch_bump: bool = False):
        """KIP-890 part 1 (Kafka's Partition.maybeStartTransactionVerification): None when
        the producer has a transaction open on this partition, else the verification guard
        to pass to ``append`` once the coordinator said the partition is in the
        transaction. Raises the leader check's KafkaError."""
        plog, _ = self._leader(topic, partition, -1, True)
        ps = producer_log.producer_state_of(plog, expiration_ms=self._producer_id_expiration_ms())
        return ps.maybe_start_verification(producer_id, producer_epoch, now_ms, supports_epoch_bump)

    def append(self, topic: str, partition: int, records, now_ms: int, *, acks: int = 1,
               origin: str = COORDINATOR, verify_transaction: bool = False,
               verification_guard=None) -> AppendOutcome:
        """The one append path for every writer (Kafka's ReplicaManager.appendRecords): Produce
        (``origin`` CLIENT), WriteTxnMarkers and the group, transaction and share coordinators
        (COORDINATOR). Checks this node leads the partition; with ``acks`` -1 refuses
        NOT_ENOUGH_REPLICAS (nothing written) when the ISR is smaller than
        min.insync.replicas; then the log's append (PartitionLog.append: header parsed once,
        CRC and records validated before anything else, then - with ``verify_transaction``,
        transaction.partition.verification.enable - the producer's ``verification_guard``
        (``maybe_start_transaction_verification``, then the coordinator; a transactional batch
        of a producer without a transaction open here needs it, else INVALID_TXN_STATE), the
        producer state, offsets stamped with the leader epoch); then the high watermark, and
        the disk work the append made due before its answer (log.flush.per.append's
        fdatasync except for acks=0, which has no answer to hold back; or a flush,
        flush.messages / flush.ms). Never raises KafkaError: the outcome carries the refusal
        (``error``) or the offsets, and is awaited (``await_appends``) for the disk work and,
        with acks=-1, for the replication (Kafka's DelayedProduce); an outcome with nothing
        to wait for is complete at once. On the event loop; ``append_off_loop`` for a
        writer that may send large compressed batches (Produce)."""
        out = AppendOutcome(self, topic, partition, acks)
        try:
            plog = self._append_checks(out)
            res = plog.append(records, now_ms=now_ms, leader_epoch=out.leader_epoch, origin=origin,
                              producer_id_expiration_ms=self._producer_id_expiration_ms(),
                              verification_guard=verification_guard if verify_transaction else NOT_VERIFIED)
        except (KafkaError, OSError) as exc:
            return self._refused(out, exc)
        return self._appended(out, plog, res, now_ms)

    def _append_checks(self, out: AppendOutcome):
        """The leader checks of an append (and acks=-1's min.insync.replicas): its log."""
        topic, partition = out.topic, out.partition
        plog, epoch = self._leader(topic, partition, -1, False)   # offline: the append raises it
        out.leader_epoch = epoch
        if out.acks == -1:   # _leader checked that this broker has taken up the leadership
            isr = len(self.partitions[(topic, partition)].isr)
            min_isr = plog.config.min_insync_replicas
            if isr < min_isr:
                raise KafkaError(f"The size of the current ISR ({isr}) is insufficient to satisfy the min.isr "
                                 f"requirement of {min_isr} for partition {topic}-{partition}",
                                 ErrorCode.NOT_ENOUGH_REPLICAS)
        return plog

    @staticmethod
    def _refused(out: AppendOutcome, exc: Exception) -> AppendOutcome:
        if isinstance(exc, KafkaError):
            out.error = exc
        else:   # PartitionLog.append turns its own OSErrors into KafkaStorageError
            out.error = KafkaError(f"append to {out.topic}-{out.partition} failed: {exc}",
                                   ErrorCode.KAFKA_STORAGE_ERROR)
        out.completed = True
        return out

    # ------------------------------------------------------------------ appends off the loop
    def append_is_heavy(self, topic: str, partition: int, records, now_ms: int) -> bool:
        """Would this append block the event loop: a large compressed batch (decompressed and
        walked to validate it), a very large one (its write), one that rolls the segment
        (new files, index trims, a producer snapshot), or a partition's first idempotent
        batch (its first producer snapshot)? Judged from the first batch header; a wrong
        guess only decides where the append runs, never what it does."""
        plog = self.logs.get(topic, partition)
        if plog is None or plog.closed:
            return False
        n = len(records)
        if n >= OFF_LOOP_BYTES:
            return True
        if n < BATCH_HEADER_SIZE:
            return False
        h = HEADER.unpack_from(records, 0)
        if n >= OFF_LOOP_COMPRESSED_BYTES and h[5] & COMPRESSION_MASK:
            return True
        if h[9] >= 0 and (plog.producer_state is None or plog.producer_state.last_snapshot_offset < 0):
            return True
        return plog.roll_due(n, h[8], h[6] + 1, now_ms)

    async def append_off_loop(self, topic: str, partition: int, records, now_ms: int, *, acks: int = 1,
                              origin: str = COORDINATOR, verify_transaction: bool = False,
                              verification_guard=None) -> AppendOutcome:
        """``append``, with the heavy part of a heavy append (``append_is_heavy``) in a worker
        thread: the validation outside the log's lock (a fetch of the partition meanwhile
        waits for nothing), then the write, the roll and the producer snapshot under it. In
        order per partition: once one append of a partition is in a thread, the next ones
        (heavy or not) queue behind it in its lane (a FIFO trio.Lock), so none of them blocks
        the loop on the log's lock and offsets follow arrival order, as on the loop. (Kafka
        appends on its request handler threads, under the partition's lock.) The answer is
        ``append``'s, to ``await_appends`` the same way.

        The leader checks run on the loop just before the thread starts, with the epoch the
        batches are stamped with; if the leadership moves while the thread appends, the
        append counts as one that came just before the move (acks=-1 then answers
        NOT_LEADER_OR_FOLLOWER, as ``_acks_all_error`` sees the epoch changed). What else
        touches the log meanwhile (a fetch, a retention pass, a WriteTxnMarkers append) waits
        on the log's lock only for the write and the roll, never for the validation."""
        tp = (topic, partition)
        lane = self._lanes.get(tp)
        if lane is None and not self.append_is_heavy(topic, partition, records, now_ms):
            return self.append(topic, partition, records, now_ms, acks=acks, origin=origin,
                               verify_transaction=verify_transaction, verification_guard=verification_guard)
        if lane is None:
            lane = self._lanes[tp] = _Lane()
        lane.users += 1
        try:
            async with lane.lock:
                if not self.append_is_heavy(topic, partition, records, now_ms):
                    return self.append(topic, partition, records, now_ms, acks=acks, origin=origin,
                                       verify_transaction=verify_transaction, verification_guard=verification_guard)
                out = AppendOutcome(self, topic, partition, acks)
                try:
                    plog = self._append_checks(out)
                    expiration_ms = self._producer_id_expiration_ms()
                    guard = verification_guard if verify_transaction else NOT_VERIFIED
                    epoch = out.leader_epoch

                    def heavy_append():
                        checked = plog.validate(records, now_ms=now_ms, origin=origin)
                        return plog.append(records, now_ms=now_ms, leader_epoch=epoch, origin=origin,
                                           producer_id_expiration_ms=expiration_ms, verification_guard=guard,
                                           checked=checked)

                    res = await trio.to_thread.run_sync(heavy_append)
                except (KafkaError, OSError) as exc:
                    if plog.closed:   # deleted (or moved) while in the thread: say why, as on the loop
                        try:
                            self._append_checks(AppendOutcome(self, topic, partition, acks))
                        except KafkaError as why:
                            exc = why
                    return self._refused(out, exc)
                return self._appended(out, plog, res, now_ms)
        finally:
            lane.users -= 1
            if not lane.users:
                del self._lanes[tp]

    def _appended(self, out: AppendOutcome, plog, res, now_ms: int) -> AppendOutcome:
        """After the log's append, on the loop: the high watermark, the waiters, the disk work
        due before the answer."""
        topic, partition, acks = out.topic, out.partition, out.acks
        out.base_offset = res.base_offset
        out.last_offset = res.last_offset
        out.log_append_time_ms = res.log_append_time_ms
        out.log_start_offset = res.log_start_offset
        tp = (topic, partition)
        self.replica_fetch_waiters.wake(tp)
        self._maybe_increment_high_watermark(tp, plog)
        # the disk work due before the answer (LogSync runs in a worker thread: await_appends)
        if plog.config.fsync_per_append and acks != 0:
            out.sync = LogSync(plog, plog.dup_active_segment_fd(), now_ms)
        elif plog.flush_wanted:
            out.sync = LogSync(plog, None, now_ms)
        if acks == -1 and res.last_offset >= 0 and plog.high_watermark <= res.last_offset:
            out.replicated = self.high_watermark_waiters.add(tp, res.last_offset + 1)
        if out.sync is None and out.replicated is None:   # Kafka's tryCompleteElseWatch: nothing to wait for
            if acks == -1:
                out.complete()
            else:
                out.completed = True
        return out

    async def await_appends(self, outcomes, timeout_ms: int) -> None:
        """Complete appends (Kafka's DelayedProduce): their disk work in one worker thread
        (a failure takes the log dir offline, and that partition is not acknowledged), then,
        for acks=-1, until each high watermark passed its records, its leadership moved or
        ``timeout_ms`` passed; then each outcome's ``error`` says how it ended."""
        syncs = [o for o in outcomes if o.sync is not None and not o.completed]
        if syncs:
            def run_all():
                for o in syncs:
                    o.sync.run()

            await trio.to_thread.run_sync(run_all)
            for o in syncs:
                o.sync_done()
        waiting = [o.replicated for o in outcomes if o.replicated is not None and not o.completed]
        if waiting:
            with trio.move_on_after(max(timeout_ms, 0) / 1000):
                for ev in waiting:
                    await ev.wait()
        for o in outcomes:
            o.complete()

    def _acks_all_error(self, topic: str, partition: int, offset: int, leader_epoch: int) -> ErrorCode:
        """An acks=all append's answer once its waiter completed or timed out (Kafka's
        Partition.checkEnoughReplicasReachOffset): NONE when the high watermark passed
        ``offset`` with at least min.insync.replicas in the ISR;
        NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below it; NOT_LEADER_OR_FOLLOWER
        when this broker no longer leads the partition, or leads it in another epoch than
        ``leader_epoch`` (the one of the append) - the records may be gone;
        UNKNOWN_TOPIC_OR_PARTITION when it was deleted; REQUEST_TIMED_OUT when the high
        watermark is still below ``offset``."""
        p = self._partition_image(topic, partition)
        part = self.partitions.get((topic, partition))
        if p is None or part is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not part.is_leader or part.leader_epoch != leader_epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if part.log.high_watermark < offset:
            return ErrorCode.REQUEST_TIMED_OUT
        if len(part.isr) < part.log.config.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    # ------------------------------------------------------------------ high watermark
    def _maybe_increment_high_watermark(self, tp: TopicPartition, plog) -> None:
        """The one place that decides a partition's high watermark on a leader: the smallest
        log end offset in the (maximal) ISR, never backwards (kwire.replication.partition).
        Wakes the fetches and acks=all produces waiting on the partition."""
        part = self.partitions.get(tp)
        if part is None or part.log is not plog or not part.is_leader:
            return
        # with ELR on, not below min ISR (an ELR member elected later must hold it all)
        min_isr = plog.config.min_insync_replicas if elr_enabled(self._image()) else 0
        if part.maybe_increment_high_watermark(min_isr):
            hw = plog.high_watermark
            self.high_watermark_waiters.high_watermark_moved(tp, hw)
            self.fetch_waiters.wake(tp)

    def high_watermark(self, topic: str, partition: int) -> int:
        """The partition's high watermark on this broker (-1 when it has no log here)."""
        plog = self.logs.get(topic, partition)
        return plog.high_watermark if plog is not None else -1

    # ------------------------------------------------------------------ replica fetches (leader)
    def read_for_follower(self, topic: str, partition: int, replica_id: int, fetch_offset: int,
                          last_fetched_epoch: int, max_bytes: int, *, current_leader_epoch: int = -1,
                          min_one: bool = True, now_ms: int | None = None,
                          follower_log_start_offset: int = -1) -> LogReadResult:
        """A follower's fetch on the leader (Kafka's replica Fetch): leader and epoch checks;
        a divergence (the follower's last fetched epoch ends earlier here, or is unknown)
        answered with ``diverging_epoch`` and no records; else records from ``fetch_offset``
        up to the log end offset. The fetch offset is the follower's log end offset: it
        updates the follower's state, then the high watermark and, when the follower has
        caught up, an ISR expansion (``on_isr_change``). ``follower_log_start_offset``: the
        follower's own (its fetch says it; preferred read replicas must hold the offset)."""
        try:
            plog, epoch = self._leader(topic, partition, current_leader_epoch, True)
        except KafkaError as exc:
            return LogReadResult(exc.code)
        tp = (topic, partition)
        part = self.partitions.get(tp)
        if part is None or not part.is_leader or replica_id not in part.replicas:
            return LogReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        res = LogReadResult(0, plog.high_watermark, plog.last_stable_offset, plog.log_start_offset, epoch)
        if last_fetched_epoch >= 0:
            # None: this log knows no epoch up to it (an empty epoch cache): nothing to compare
            found = plog.end_offset_for_epoch(last_fetched_epoch)
            if found is not None and (found[0] < last_fetched_epoch or found[1] < fetch_offset):
                res.diverging_epoch, res.diverging_end_offset = found
                return res
        if fetch_offset < plog.log_start_offset or fetch_offset > plog.log_end_offset:
            res.error = ErrorCode.OFFSET_OUT_OF_RANGE
            return res
        now = self._now_ms() if now_ms is None else now_ms
        quota = self.leader_quota
        throttled = quota is not None and quota.is_throttled(topic, partition)
        if throttled and replica_id not in part.isr and quota.is_exceeded(now):
            # Kafka's shouldLeaderThrottle: a replica being added waits for the quota; the fetch
            # still counts as one (its offset updates the follower's state below)
            data = None
        else:
            try:
                data = plog.read(fetch_offset, max_bytes, min_one=min_one)
            except KafkaError as exc:
                res.error = exc.code
                return res
        if data is not None and data.size:
            res.records = data
            res.size = data.size
            if throttled:
                quota.record(data.size, now)
        part.update_follower_fetch_state(replica_id, fetch_offset, now, follower_log_start_offset)
        self._maybe_increment_high_watermark(tp, plog)
        res.high_watermark = plog.high_watermark
        res.last_stable_offset = plog.last_stable_offset
        b = self._image().brokers.get(replica_id)
        expand = part.isr_to_expand(replica_id, b is not None and b.active)
        if expand is not None and self.on_isr_change is not None:
            self.on_isr_change(part, expand)
        return res

    def isr_shrinks(self, lag_ms: int, now_ms: int | None = None) -> list[tuple[Partition, list[int]]]:
        """The ISR changes due on partitions led here: followers that have not caught up for
        ``lag_ms`` (replica.lag.time.max.ms) leave (Kafka's maybeShrinkIsr)."""
        now = self._now_ms() if now_ms is None else now_ms
        out = []
        for part in self.partitions.values():
            new_isr = part.isr_to_shrink(now, lag_ms)
            if new_isr is not None:
                out.append((part, new_isr))
        return out

    # ------------------------------------------------------------------ fetch
    def read(self, topic: str, partition: int, fetch_offset: int, max_bytes: int, *,
             current_leader_epoch: int = -1, min_one: bool = True,
             read_committed: bool = False, client_rack: str | None = None,
             listener: str | None = None) -> LogReadResult:
        """A consumer's read: records from ``fetch_offset`` below the high watermark (the last
        stable offset with ``read_committed``, and then the aborted transactions among the
        records, Kafka's FetchIsolation.TXN_COMMITTED), at most ``max_bytes`` (the first batch
        whole when ``min_one``, KIP-74). Errors in the result.

        ``client_rack`` is Kafka's ClientMetadata (Fetch v11+: the request's rack_id, "" when
        the client has none; None for older fetches). With it, as Kafka's FetchParams
        .fetchOnlyLeader: a follower serves the read too, up to its own high watermark
        (KIP-392); and on the leader, ``replica_selector`` may name a preferred read replica,
        answered with no records (``preferred_read_replica``) so the client reads there
        (Kafka's ReplicaManager.readFromLog). ``listener``: the client's, whose endpoints a
        preferred replica must have."""
        try:
            if client_rack is None:
                plog, epoch = self._leader(topic, partition, current_leader_epoch, True)
            else:
                plog, epoch, part = self._replica(topic, partition, current_leader_epoch)
                if part.is_leader and self.replica_selector is not None:
                    preferred = preferred_read_replica(
                        self.replica_selector, part, self._image().brokers, fetch_offset=fetch_offset,
                        now_ms=self._now_ms(), client_rack=client_rack, listener=listener)
                    if preferred != NO_PREFERRED_REPLICA:
                        # the read is skipped: the offsets only (Kafka's fetchOffsetSnapshot)
                        res = LogReadResult(0, plog.high_watermark, plog.last_stable_offset,
                                            plog.log_start_offset, epoch)
                        res.preferred_read_replica = preferred
                        return res
        except KafkaError as exc:
            return LogReadResult(exc.code)
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        res = LogReadResult(0, hw, lso, plog.log_start_offset, epoch)
        limit = lso if read_committed else hw
        try:
            if fetch_offset < plog.log_start_offset or fetch_offset > plog.log_end_offset:
                raise KafkaError(f"offset {fetch_offset} out of range", ErrorCode.OFFSET_OUT_OF_RANGE)
            if fetch_offset < limit:
                data = plog.read(fetch_offset, max_bytes, max_offset=limit, min_one=min_one)
                if data is not None and data.size:
                    res.records = data   # kwire.log FetchData: file regions, sent with sendfile
                    res.size = data.size
                    if read_committed:
                        # every batch returned is below the LSO: the aborted transactions that
                        # began before it and ended at or after the fetch offset
                        res.aborted_transactions = plog.aborted_transactions(fetch_offset, limit)
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

    async def wait_for_replica_data(self, tps, deadline: float) -> None:
        """For a follower's fetch long poll: until any of ``tps`` gets an append (or changes
        role, or is deleted), or ``deadline`` passes."""
        ev = self.replica_fetch_waiters.watch(tps)
        try:
            with trio.move_on_at(deadline):
                await ev.wait()
        finally:
            self.replica_fetch_waiters.unwatch(ev, tps)

    # ------------------------------------------------------------------ list offsets
    def fetch_offset_for_timestamp(self, topic: str, partition: int, timestamp: int, *,
                                   current_leader_epoch: int = -1,
                                   read_committed: bool = False) -> tuple[int, int, int, int]:
        """ListOffsets: (error, offset, timestamp, leader_epoch). -1 latest: the high watermark
        (the last stable offset with ``read_committed``, isolation_level 1, and then also the
        bound of a lookup by timestamp, as Kafka's Partition.fetchOffsetForTimestamp); -2 earliest and -4 earliest local:
        the log start offset; -3 the record with the largest timestamp (KIP-734); -5 latest
        tiered and -6 earliest pending upload: -1 (no tiered storage); >= 0 the first offset below the high watermark whose
        timestamp is >= it (-1/-1 when none). OFFSET_NOT_AVAILABLE while a new leader's high
        watermark is below the start of its epoch (KIP-207)."""
        try:
            plog, epoch = self._leader(topic, partition, current_leader_epoch, True)
        except KafkaError as exc:
            return exc.code, -1, -1, -1
        part = self.partitions.get((topic, partition))
        if part is not None and part.leader_epoch_start_offset > plog.high_watermark:
            # a new leader whose high watermark has not reached the start of its epoch yet
            # does not know the committed end of the log (KIP-207): the client retries
            return ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, epoch
        last_fetchable = plog.last_stable_offset if read_committed else plog.high_watermark
        try:
            if timestamp == LATEST_TIMESTAMP:
                return 0, last_fetchable, -1, epoch
            if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                return 0, plog.log_start_offset, -1, epoch
            if timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
                return 0, -1, -1, -1   # no tiered storage: Kafka's answer for a local-only log (no epoch either)
            if timestamp == MAX_TIMESTAMP:
                found = plog.max_timestamp_offset()
            elif timestamp >= 0:
                found = plog.offset_for_timestamp(timestamp)
                if found is not None and found[0] >= last_fetchable:
                    found = None
            else:
                return ErrorCode.INVALID_REQUEST, -1, -1, epoch
        except KafkaError as exc:
            return exc.code, -1, -1, epoch
        if found is None:   # no such record: Kafka's TimestampAndOffset(-1, -1, no epoch)
            return 0, -1, -1, -1
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
