"""Moving a replica between this broker's log dirs (AlterReplicaLogDirs): Kafka's
ReplicaAlterLogDirsManager / ReplicaAlterLogDirsThread, as one Trio task.

A move makes a future log (``<topic>-<partition>.<uuid>-future``) in the destination dir and
copies the current log into it batch by batch, the way a follower copies its leader's (offsets,
leader epochs, producer state and transaction markers carried by the batches as they are),
while the current log keeps serving and taking appends. Once the copy has caught up, in one
step on the event loop (so no append comes in between): the future log is flushed, closed,
renamed to the partition's name in the destination dir and opened there; it replaces the
current log in the LogManager and in the replica manager's Partition; the old directory is
renamed aside and removed, like a deleted partition's (open FileRegions stay readable).

A truncation of the current log while copying (a follower's) starts the copy over; a log
start offset that moved past the copy (retention, DeleteRecords) makes the copy skip ahead.
A move is dropped when the partition leaves this broker, when either dir fails, or when the
broker stops (the unfinished copy is removed at the next start; Kafka resumes it: the move is
asked again, see docs/differences.md).
"""
from __future__ import annotations

import logging
import os
import shutil
import uuid

import trio

from kwire.log.manager import FUTURE_SUFFIX, partition_dir_name
from kwire.log.partition_log import PartitionLog
from kwire.log.validator import REPLICATION

log = logging.getLogger("kwire.replication.log_dir_mover")

CHUNK_BYTES = 1 << 20        # copied per step before the loop serves others
SWAP_LAG_BYTES = 1 << 20     # a copy this close is flushed in a thread, then caught up and swapped


class LogDirMover:
    def __init__(self, replica_manager, now_ms, producer_id_expiration_ms):
        self.rm = replica_manager
        self.logs = replica_manager.logs
        self._now_ms = now_ms
        self._pid_expiration = producer_id_expiration_ms
        self.wanted: dict[tuple[str, int], str] = {}   # partition -> destination log dir
        self._wake = trio.Event()
        self.moves_done = 0

    def request(self, tp: tuple[str, int], log_dir: str) -> None:
        """Move ``tp``'s local log to ``log_dir`` (a later request for it replaces this one;
        its current dir cancels it)."""
        plog = self.logs.logs.get(tp)
        if plog is not None and plog.log_dir == log_dir:
            self.wanted.pop(tp, None)
        else:
            self.wanted[tp] = log_dir
        self._wake.set()

    def future_dir(self, tp: tuple[str, int]) -> str | None:
        """The dir a move of ``tp`` is copying into (DescribeLogDirs' is_future_key)."""
        f = self.logs.moving.get(tp)
        return f.log_dir if f is not None else None

    async def run(self) -> None:
        while True:
            while not self.wanted:
                await self._wake.wait()
                self._wake = trio.Event()
            tp, target = next(iter(self.wanted.items()))
            try:
                await self._move(tp, target)
            except Exception as exc:  # noqa: BLE001 - one failed move must not stop the others
                log.error("moving %s-%d to %s failed: %s", tp[0], tp[1], target, exc)
            finally:
                future = self.logs.moving.pop(tp, None)
                if future is not None:   # not swapped in: the copy goes
                    await trio.to_thread.run_sync(_discard, future)
                if self.wanted.get(tp) == target:
                    del self.wanted[tp]

    def _current(self, tp, target):
        """The log being moved, or None when the move is off."""
        plog = self.logs.logs.get(tp)
        channel = self.logs.failure_channel
        if (self.wanted.get(tp) != target or plog is None or plog.closed or plog.log_dir == target
                or channel.is_offline(plog.log_dir) or channel.is_offline(target)):
            return None
        return plog

    async def _move(self, tp, target) -> None:
        topic, partition = tp
        src = self._current(tp, target)
        if src is None:
            return
        path = os.path.join(target, f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_SUFFIX}")
        future = await trio.to_thread.run_sync(lambda: PartitionLog.open(
            path, src.config, now_ms=self._now_ms(), topic=topic, partition=partition,
            failure_channel=self.logs.failure_channel))
        self.logs.moving[tp] = future
        log.info("moving %s-%d from %s to %s", topic, partition, src.log_dir, target)
        generation = -1
        while True:
            src = self._current(tp, target)
            if src is None:
                log.info("move of %s-%d to %s dropped", topic, partition, target)
                return
            if src._truncations != generation or future.log_end_offset < src.log_start_offset:
                generation = src._truncations
                future.truncate_fully_and_start_at(src.log_start_offset)
            lag = src.size_in_bytes - future.size_in_bytes
            if future.log_end_offset >= src.log_end_offset or lag <= SWAP_LAG_BYTES:
                await trio.to_thread.run_sync(future.flush)   # most of it, off the loop
                src = self._current(tp, target)
                if src is None:
                    continue
                if src._truncations == generation and future.log_end_offset >= src.log_start_offset:
                    self._catch_up(src, future, None)     # the last few batches, then at once:
                    if future.log_end_offset == src.log_end_offset:
                        aside = self._swap(tp, src, future)
                        if aside is not None:
                            await trio.to_thread.run_sync(self.logs.remove_deleted, [aside])
                        return
                continue
            self._catch_up(src, future, CHUNK_BYTES)
            await trio.sleep(0)

    def _catch_up(self, src, future, budget: int | None) -> None:
        """Copy batches from the current log's end of the copy on (``budget`` bytes or so;
        None: up to the current log's end)."""
        copied = 0
        while future.log_end_offset < src.log_end_offset and (budget is None or copied < budget):
            data = src.read(future.log_end_offset, CHUNK_BYTES)
            if not data.size:
                break
            raw = bytes(data)
            base = int.from_bytes(raw[:8], "big", signed=True)
            if base < future.log_end_offset == future.log_start_offset:
                # the log start offset is inside a batch (DeleteRecords): the copy starts with
                # the whole batch, as a follower's would (Kafka's UnexpectedAppendOffsetException)
                future.truncate_fully_and_start_at(base)
            future.append(raw, now_ms=self._now_ms(), origin=REPLICATION,
                          producer_id_expiration_ms=self._pid_expiration())
            copied += data.size

    def _swap(self, tp, src, future) -> str | None:
        """Make the caught-up copy the partition's log (no await: nothing appends meanwhile)."""
        topic, partition = tp
        latest = src.leader_epoch_cache.latest_entry()   # an epoch begun here without a batch yet
        if latest is not None and latest[0] > future.latest_epoch:
            future.leader_epoch_cache.assign(latest[0], latest[1], write=False)
        if src.log_start_offset > future.log_start_offset:
            future.log_start_offset = src.log_start_offset
            future.leader_epoch_cache.truncate_from_start(src.log_start_offset)
        hw = min(src.high_watermark, future.log_end_offset)
        future.flush()
        future.close()
        final = os.path.join(future.log_dir, partition_dir_name(topic, partition))
        os.rename(future.dir, final)
        self.logs.moving.pop(tp, None)
        new = PartitionLog.open(final, src.config, recovery_point=future.log_end_offset,
                                log_start_offset=future.log_start_offset, clean=True, now_ms=self._now_ms(),
                                topic=topic, partition=partition, failure_channel=self.logs.failure_channel)
        new.update_high_watermark(hw)
        with src._flush_lock:   # no flush of the old log runs on while it goes
            aside = self.logs.delete_later(topic, partition)
        self.logs.logs[tp] = new
        part = self.rm.partitions.get(tp)
        if part is not None:
            part.log = new
        self.moves_done += 1
        log.info("moved %s-%d to %s (%d records up to offset %d)", topic, partition, new.log_dir,
                 new.log_end_offset - new.log_start_offset, new.log_end_offset)
        return aside   # the old directory, renamed aside: removed off the loop


def _discard(future: PartitionLog) -> None:
    future.closed = True
    for seg in future.segments:
        try:
            seg.close()
        except OSError:
            pass
    shutil.rmtree(future.dir, ignore_errors=True)
