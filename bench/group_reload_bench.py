"""How fast a broker restart reloads groups from a compacted ``__consumer_offsets`` partition
(issue 20: "a broker restart reloads groups from the compacted log quickly"). Prints rows
``name, value, unit, budget, PASS/MISS``; also ``python -m bench.group_reload_bench``.

One partition's log is written as the group coordinator writes it: ``GROUPS`` groups
(10,000; ``--quick``: 2,000), each with a group metadata record per generation (3) and
``COMMITS`` offset commits (10) of two partitions each (one batch per commit), interleaved at
random. The load is what the coordinator runtime's load (kwire.coordinator.runtime) does for the
groups at a restart (offsets.load.buffer.size chunks
of whole batches, each batch replayed into a kwire.groups.loader.PartitionLoad), timed on
the log as written and again after one cleaning pass; the groups loaded both times must
agree (every group's committed offsets and generation).
"""
from __future__ import annotations

import os
import random
import shutil
import tempfile
import time

from kwire.codec.records import build_batch, iter_batches
from kwire.groups import records as R
from kwire.groups.loader import PartitionLoad
from kwire.log import LogConfig, PartitionLog
from kwire.log.cleaner import OffsetMap
from kwire.log.cleaner_manager import clean_now

NOW = 1_700_000_000_000
CHUNK = 5 << 20   # offsets.load.buffer.size's default


def _row(rows, name, value, unit, budget, verdict):
    print(f"{name}, {value:.4g}, {unit}, {budget}, {verdict}", flush=True)
    rows.append((name, value, unit, budget, verdict))


def _write(log, groups: int, commits: int) -> int:
    rnd = random.Random(11)
    events = [(g, i) for g in range(groups) for i in range(commits)]
    rnd.shuffle(events)
    done = [0] * groups
    n = 0
    for g, _ in events:
        gid = f"group-{g:06d}"
        c = done[g]
        done[g] += 1
        recs = [(R.offset_key(gid, "events", p), R.offset_value(R.OffsetValue(offset=c * 10 + p, commit_timestamp=NOW)),
                 None, NOW) for p in range(2)]
        if c % (max(1, commits // 3)) == 0:   # a new generation now and then
            recs.append((R.group_key(gid), R.group_value(R.GroupValue("consumer", c + 1, "range", None)), None, NOW))
        log.append(build_batch(recs), now_ms=NOW)
        n += len(recs)
    log.roll(NOW)
    log.update_high_watermark(log.log_end_offset)
    return n


def _load(log) -> tuple[float, PartitionLoad]:
    t0 = time.perf_counter()
    load = PartitionLoad(0)
    end = log.log_end_offset
    offset = log.log_start_offset
    while offset < end:
        data = log.read(offset, CHUNK, max_offset=end)
        if data.size == 0:
            break
        advanced = offset
        for batch in iter_batches(bytes(data), allow_partial_tail=True):
            advanced = batch.next_offset
            load.replay_batch(batch)
        if advanced <= offset:
            break
        offset = advanced
    return time.perf_counter() - t0, load


def _summary(load: PartitionLoad) -> dict:
    return {gid: (g.generation_id, sorted((str(k), v.offset) for k, v in g.offsets.items()))
            for gid, g in load.groups.items()}


def run(quick: bool = False):
    rows: list = []
    groups, commits = (2_000, 10) if quick else (10_000, 10)
    tmp = tempfile.mkdtemp(prefix="kwire-reload-bench-")
    try:
        cfg = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=16 << 20)
        log = PartitionLog.open(os.path.join(tmp, "__consumer_offsets-0"), cfg, now_ms=NOW)
        n = _write(log, groups, commits)
        before = log.size_in_bytes
        t_dirty, dirty = _load(log)
        t0 = time.perf_counter()
        clean_now(log, NOW, omap=OffsetMap.for_buffer(128 << 20))
        t_clean = time.perf_counter() - t0
        after = log.size_in_bytes
        log.close()
        log = PartitionLog.open(os.path.join(tmp, "__consumer_offsets-0"), cfg, now_ms=NOW)   # a restart
        t_compacted, compacted = _load(log)
        assert _summary(dirty) == _summary(compacted), "the compacted log loads the same groups"
        assert len(compacted.groups) == groups
        _row(rows, f"__consumer_offsets: {groups:,} groups, {n:,} records", before / 1e6, "MB written", "(info)", "info")
        _row(rows, "  cleaning pass", t_clean, "s", "(info)", "info")
        _row(rows, "  size after cleaning", after / 1e6, "MB", "(info)", "info")
        _row(rows, "  reload before cleaning", t_dirty, "s", "(info)", "info")
        _row(rows, "  reload after cleaning (restart)", t_compacted, "s", "(info)", "info")
        _row(rows, "  groups reloaded per second after cleaning", groups / t_compacted, "groups/s", "(info)", "info")
        log.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
