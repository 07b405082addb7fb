"""Which log to clean, and from where (Kafka's LogCleanerManager, the pure part).

* ``cleanable_offsets``: the first dirty offset (the cleaner checkpoint, or the log start
  offset when there is none or it is out of range) and the first uncleanable offset: the
  lowest of the last stable offset, the active segment's base offset and, with
  min.compaction.lag.ms, the base of the first dirty segment that holds a record younger
  than the lag.
* ``cleanable_ratio``: dirty bytes (segments in [first dirty, first uncleanable)) over all
  bytes below the first uncleanable offset; a log is cleaned when it passes
  min.cleanable.dirty.ratio, or at once when max.compaction.lag.ms says a dirty record has
  waited too long.
* ``grab_filthiest``: the compacted log with the highest ratio among those that qualify.
* ``clean_now``: one whole pass in the caller's thread (tests, tools); the cleaner thread
  (kwire.log.log_cleaner) splits it between the event loop and a worker.

The cleaner checkpoint (``cleaner-offset-checkpoint`` in the data dir, Kafka's file and
format) keeps each log's first dirty offset across restarts.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from kwire.log.checkpoint import CLEANER_CHECKPOINT  # noqa: F401 - its home; named here too
from kwire.log.cleaner import CleanJob, OffsetMap, plan_clean
from kwire.log.cleaner_swap import sync_dir


@dataclass(frozen=True)
class LogToClean:
    tp: tuple
    plog: object
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def cleanable_offsets(plog, last_clean_offset: int | None, now_ms: int) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, checkpoint needs updating)."""
    lso_start = plog.log_start_offset
    force = False
    if last_clean_offset is None:
        first_dirty = lso_start
    elif last_clean_offset < lso_start or last_clean_offset > plog.log_end_offset:
        first_dirty, force = lso_start, True
    else:
        first_dirty = last_clean_offset
    active = plog.segments[-1]
    candidates = [plog.last_stable_offset, active.base_offset]
    lag = plog.config.min_compaction_lag_ms
    if lag > 0:
        for seg in _segments_from(plog, first_dirty):
            if seg is active:
                break
            if seg.largest_timestamp() > now_ms - lag:
                candidates.append(seg.base_offset)
                break
    return first_dirty, max(first_dirty, min(candidates)), force


def _segments_from(plog, offset: int):
    i = max(0, bisect.bisect_right(plog._bases, offset) - 1)
    return plog.segments[i:]


def cleanable_bytes(plog, first_dirty: int, first_uncleanable: int) -> tuple[int, int]:
    """(bytes of segments below the dirty section, bytes of the dirty section)."""
    clean = dirty = 0
    segs = plog.segments
    for i, seg in enumerate(segs):
        upper = segs[i + 1].base_offset if i + 1 < len(segs) else seg.next_offset
        if seg.base_offset >= first_uncleanable:
            break
        if upper <= first_dirty:
            clean += seg.size
        else:
            dirty += seg.size
    return clean, dirty


def max_compaction_delay(plog, first_dirty: int, now_ms: int) -> int:
    """How long past max.compaction.lag.ms the oldest dirty record is (0: not yet)."""
    lag = plog.config.max_compaction_lag_ms
    if lag >= (1 << 63) - 1:
        return 0
    for seg in _segments_from(plog, first_dirty):
        if seg is plog.segments[-1]:
            break
        ts = seg.get_rolling_timestamp()
        if ts < 0:
            ts = seg.largest_timestamp()
        return max(0, now_ms - lag - ts) if ts >= 0 else 0
    return 0


def log_to_clean(tp, plog, last_clean_offset: int | None, now_ms: int) -> tuple[LogToClean, bool]:
    first_dirty, first_uncleanable, force = cleanable_offsets(plog, last_clean_offset, now_ms)
    clean, dirty = cleanable_bytes(plog, first_dirty, first_uncleanable)
    delay = max_compaction_delay(plog, first_dirty, now_ms)
    return LogToClean(tp, plog, first_dirty, first_uncleanable, clean, dirty, delay > 0), force


def grab_filthiest(logs, checkpoints: dict, now_ms: int, *, skip=()) -> LogToClean | None:
    """The compacted log most in need of cleaning, or None (Kafka's grabFilthiestCompactedLog).
    ``checkpoints`` gets corrected entries for logs whose checkpoint was out of range."""
    best = None
    for tp, plog in logs:
        if tp in skip or plog.closed or plog.offline or not plog.config.compact:
            continue
        ltc, force = log_to_clean(tp, plog, checkpoints.get(tp), now_ms)
        if force:
            checkpoints[tp] = ltc.first_dirty
        if ltc.total_bytes <= 0:
            continue
        if not ((ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                or ltc.cleanable_ratio > plog.config.min_cleanable_dirty_ratio):
            continue
        if best is None or ltc.cleanable_ratio > best.cleanable_ratio:
            best = ltc
    return best


def clean_now(plog, now_ms: int, *, first_dirty: int | None = None, omap: OffsetMap | None = None,
              run_hook=None) -> CleanJob | None:
    """One whole pass over ``plog`` here and now, whatever its dirty ratio (from the log
    start offset unless ``first_dirty``). ``run_hook(job)`` runs between the worker's part
    and the swap (tests stop there to play a crash). Returns the job (``end_offset``: the
    new first dirty offset; ``stats``), or None when nothing lies below the active segment."""
    first_dirty_, first_uncleanable, _ = cleanable_offsets(plog, first_dirty, now_ms)
    job = plan_clean(plog, first_dirty_, first_uncleanable, now_ms, omap if omap is not None else OffsetMap(1 << 20))
    if job is None:
        return None
    job.run()
    if run_hook is not None:
        run_hook(job)
    job.commit()   # here: the caller's thread, each group under the log's locks

    sync_dir(plog.dir)
    return job
