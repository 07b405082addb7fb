"""The log cleaner of a broker (Kafka's LogCleaner and CleanerThread): compacts the logs whose
cleanup.policy includes compact, one pass at a time, off the event loop.

Each round, on the event loop: pick the dirtiest compacted log (kwire.log.cleaner_manager:
min.cleanable.dirty.ratio, min/max.compaction.lag.ms) and plan the pass (kwire.log.cleaner);
in a worker thread: build the offset map, write the cleaned segments and swap them in (each
group only if it is still in the log as read, so retention, a truncation or a deletion that
came in between wins; each group's check and renames under the log's lock, which the event
loop's appends and reads hold too, as Kafka's cleaner holds the log's lock while it
replaces segments); back on the loop: record the new first dirty offset in
``cleaner-offset-checkpoint``. Appends only touch the active segment, which is never
cleaned; a fetch that holds a replaced segment's file keeps reading it (kwire.log.regions).
The swap also holds the log's flush lock, and a flush (PartitionLog.flush, LogManager's
flush jobs, both in worker threads) skips segments that left the log, so a flush planned
before a swap never writes a replaced segment's index over its successor's.

Broker configs, read every round (all dynamic, cluster-wide as in Kafka):
log.cleaner.enable, log.cleaner.backoff.ms (sleep when nothing qualifies),
log.cleaner.dedupe.buffer.size and log.cleaner.io.buffer.load.factor (offset map entries,
divided among log.cleaner.threads), log.cleaner.io.max.bytes.per.second (throttle of
bytes read and written). Left out: log.cleaner.threads > 1 (one cleaner; the setting only
divides the map as in Kafka) and log.cleaner.io.buffer.size (reads are 1 MiB chunks).

A line is logged per pass (bytes read and written, time, MB/s) and the numbers are kept for
the metrics (kwire.metrics: kafka_log_logcleaner_*, kafka_log_logcleanermanager_*).
"""
from __future__ import annotations

import logging
import os
import threading
import time

import trio

from kwire.log.checkpoint import CLEANER_CHECKPOINT, read_checkpoint, write_checkpoint

# kwire.log.cleaner, cleaner_manager and cleaner_swap (the compaction itself) are imported on
# the first round that finds a compacted log: a broker without one never needs them, and
# they are a few ms of every start.

log = logging.getLogger("kwire.log.cleaner")


def _num(v, default):
    try:
        return type(default)(v)
    except (TypeError, ValueError):
        return default


def _is_aborted(exc: BaseException) -> bool:
    """``exc`` is kwire.log.cleaner's CleaningAborted (only raised once that module is loaded)."""
    from kwire.log.cleaner import CleaningAborted  # noqa: PLC0415 - start-up time (see the imports)

    return isinstance(exc, CleaningAborted)


class LogCleaner:
    """One cleaner over a LogManager. ``run()`` is the Trio task; ``clean_once(now_ms)`` one
    round (tests and tools); ``stats`` what the metrics read."""

    def __init__(self, logs, config=None, clock=None):
        self.logs = logs
        self.config = config
        self.clock = clock
        self.checkpoint_path = os.path.join(logs.data_dir, CLEANER_CHECKPOINT)
        self.checkpoints: dict[tuple, int] = read_checkpoint(self.checkpoint_path) or {}
        self._stop = threading.Event()
        self.in_progress: tuple | None = None
        self.uncleanable: set[tuple] = set()
        self._failed_tp: tuple | None = None   # logs whose pass failed (Kafka's uncleanable partitions)
        # metrics (Kafka's LogCleaner and LogCleanerManager gauges)
        self.passes = 0
        self.bytes_read_total = 0
        self.bytes_written_total = 0
        self.last_buffer_utilization = 0.0
        self.last_recopy_ratio = 0.0
        self.last_clean_time_s = 0.0
        self.max_dirty_ratio = 0.0
        self.max_compaction_delay_ms = 0
        self.last_run_monotonic = time.monotonic()
        self.dead_threads = 0

    # --- configuration ------------------------------------------------------------------------
    def _get(self, key: str, default):
        if self.config is None:
            return default
        v = self.config.get(key)
        if isinstance(default, bool):
            return v if isinstance(v, bool) else str(v).lower() == "true"
        return _num(v, default)

    @property
    def enabled(self) -> bool:
        return self._get("log.cleaner.enable", True)

    def _offset_map(self):
        from kwire.log.cleaner import OffsetMap  # noqa: PLC0415 - start-up time (see the imports)

        return OffsetMap.for_buffer(self._get("log.cleaner.dedupe.buffer.size", 134217728),
                                    self._get("log.cleaner.io.buffer.load.factor", 0.9),
                                    max(1, self._get("log.cleaner.threads", 1)))

    def _now(self) -> int:
        return self.clock.now_ms() if self.clock is not None else int(time.time() * 1000)

    def _check_done(self) -> None:
        if self._stop.is_set():
            from kwire.log.cleaner import CleaningAborted  # noqa: PLC0415 - start-up time (see the imports)

            raise CleaningAborted("the cleaner is stopping")

    # --- one round ----------------------------------------------------------------------------
    def plan(self, now_ms: int, *, force_tp=None):
        """The next pass (event loop): (LogToClean, CleanJob), or None."""
        logs = list(self.logs.logs.items())
        compacted = [(tp, lg) for tp, lg in logs if not lg.closed and lg.config.compact]
        if not compacted:   # nothing to measure or clean (and no need to import the cleaner)
            self.max_dirty_ratio = 0.0
            self.max_compaction_delay_ms = 0
            return None
        # start-up time: the compaction modules load with the first compacted log (see the imports)
        from kwire.log.cleaner import Throttler, plan_clean  # noqa: PLC0415 - start-up time (see the imports)
        from kwire.log.cleaner_manager import (  # noqa: PLC0415 - start-up time (see the imports)
            grab_filthiest, log_to_clean, max_compaction_delay)

        ratios = [log_to_clean(tp, lg, self.checkpoints.get(tp), now_ms)[0] for tp, lg in compacted]
        self.max_dirty_ratio = max((r.cleanable_ratio for r in ratios), default=0.0)
        self.max_compaction_delay_ms = max(
            (max_compaction_delay(r.plog, r.first_dirty, now_ms) for r in ratios), default=0)
        if force_tp is not None:
            ltc = next((r for r in ratios if r.tp == force_tp), None)
        else:
            ltc = grab_filthiest(compacted, self.checkpoints, now_ms, skip=self.uncleanable)
        if ltc is None:
            return None
        job = plan_clean(ltc.plog, ltc.first_dirty, ltc.first_uncleanable, now_ms, self._offset_map(),
                         throttler=Throttler(self._get("log.cleaner.io.max.bytes.per.second", float("inf"))),
                         check_done=self._check_done)
        if job is None:
            return None
        return ltc, job

    @staticmethod
    def swap(job) -> int:
        """The worker's last part (any thread): swap the cleaned groups in, each under the
        log's lock (kwire.log.cleaner.CleanJob.commit), and fsync the directory."""
        from kwire.log.cleaner_swap import sync_dir  # noqa: PLC0415 - start-up time (see the imports)

        swapped = job.commit()
        sync_dir(job.plog.dir)
        return swapped

    def finish(self, ltc, job, swapped: int) -> int:
        """After the worker's part (event loop): move the checkpoint, log the pass."""
        if swapped == job.groups and job.end_offset >= 0:
            self.checkpoints[ltc.tp] = max(job.end_offset, ltc.first_dirty)
        st = job.stats
        self.passes += 1
        self.bytes_read_total += st.bytes_read + st.map_bytes_read
        self.bytes_written_total += st.bytes_written
        self.last_buffer_utilization = st.buffer_utilization
        self.last_recopy_ratio = st.bytes_written / st.bytes_read if st.bytes_read else 0.0
        self.last_clean_time_s = st.elapsed_s
        self.last_run_monotonic = time.monotonic()
        mb = (st.bytes_read + st.map_bytes_read) / 1e6
        log.info("Cleaner 0: cleaned log %s-%s (dirty section = [%d, %d)): %.1f MB read (%.1f MB for the offset "
                 "map), %.1f MB written (%.1f%% of what was read) in %.2f s (%.1f MB/s); %d messages read, %d kept; "
                 "%d group(s) swapped in%s", ltc.tp[0], ltc.tp[1], ltc.first_dirty, job.end_offset, mb,
                 st.map_bytes_read / 1e6, st.bytes_written / 1e6, 100 * self.last_recopy_ratio, st.elapsed_s,
                 mb / st.elapsed_s, st.messages_read, st.messages_written, swapped,
                 "" if swapped == job.groups else " (the log changed meanwhile: the rest dropped)")
        return swapped

    def _write_checkpoint(self) -> None:
        live = {tp: off for tp, off in self.checkpoints.items() if tp in self.logs.logs}
        write_checkpoint(self.checkpoint_path, live)

    def clean_once(self, now_ms: int | None = None, *, force_tp=None) -> int | None:
        """One round here and now (no event loop); the number of groups swapped in, or None
        when no log needed cleaning."""
        planned = self.plan(self._now() if now_ms is None else now_ms, force_tp=force_tp)
        if planned is None:
            return None
        ltc, job = planned
        job.run()
        swapped = self.finish(ltc, job, self.swap(job))
        self._write_checkpoint()
        return swapped

    # --- the Trio task -------------------------------------------------------------------------
    async def run(self) -> None:
        """Clean until cancelled; a failed pass is logged and the log skipped for a backoff."""
        try:
            while True:
                backoff_s = self._get("log.cleaner.backoff.ms", 15000) / 1000
                if not self.enabled or self.logs.offline:
                    await trio.sleep(backoff_s)
                    continue
                try:
                    cleaned = await self.round()
                except Exception as exc:  # noqa: BLE001 - a failed pass must not stop the broker
                    if _is_aborted(exc):
                        return
                    tp = self._failed_tp
                    log.exception("log cleaner pass over %s failed: the log is left uncleanable until a restart", tp)
                    if tp is not None:
                        self.uncleanable.add(tp)
                    cleaned = False
                if not cleaned:
                    await trio.sleep(backoff_s)
                else:
                    await trio.sleep(0)
        finally:
            self._stop.set()   # a worker still running stops at its next check and removes its files

    async def round(self) -> bool:
        self._failed_tp = None
        planned = self.plan(self._now())
        self.last_run_monotonic = time.monotonic()
        if planned is None:
            return False
        ltc, job = planned
        self.in_progress = self._failed_tp = ltc.tp
        try:
            try:
                await trio.to_thread.run_sync(job.run, abandon_on_cancel=True)
            except FileNotFoundError:
                if not any(s.removed for s in job.segments) and not ltc.plog.closed:
                    raise
                # retention or a deletion removed a segment the pass was reading: the log
                # changed under it, nothing is wrong with it (the next round plans afresh)
                log.info("Cleaner 0: log %s-%s changed while it was cleaned (segments deleted); the pass is "
                         "dropped", ltc.tp[0], ltc.tp[1])
                return True
            swapped = await trio.to_thread.run_sync(self.swap, job, abandon_on_cancel=True)
            self.finish(ltc, job, swapped)
            await trio.to_thread.run_sync(self._write_checkpoint)
        finally:
            self.in_progress = None
        return True
