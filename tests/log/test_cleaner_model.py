"""Model-based test of log compaction: random puts and deletes by key, forced cleaning at
random points and times, crashes at random steps of a pass (before the swap or in the middle
of it) and clean reopens. After every step a read from the start must give offsets that only
increase, only records that were written at those offsets, the latest value of every live
key, and for a deleted key at most its tombstone (never an older value). At the end, after
two passes more than delete.retention.ms apart, no deleted key is left at all.

KWIRE_SOAK=1 runs many more examples."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings, strategies as st

from kwire.codec.records import build_batch, iter_batches
from kwire.log.cleaner import OffsetMap, plan_clean
from kwire.log.cleaner_manager import cleanable_offsets, clean_now
from kwire.log.cleaner_swap import swap_steps, sync_dir
from kwire.log.config import LogConfig
from kwire.log.partition_log import PartitionLog

NOW = 1_700_000_000_000
RETENTION = 10_000
KEYS = [f"key{i}".encode() for i in range(6)]

op = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(KEYS), st.integers(1, 3)),
    st.tuples(st.just("delete"), st.sampled_from(KEYS), st.just(1)),
    st.tuples(st.just("roll"), st.just(None), st.just(0)),
    st.tuples(st.just("time"), st.just(None), st.integers(1, 2 * RETENTION)),
    st.tuples(st.just("clean"), st.just(None), st.integers(0, 60)),   # crash step (0: none)
    st.tuples(st.just("crash_before_swap"), st.just(None), st.just(0)),
    st.tuples(st.just("reopen"), st.just(None), st.just(0)),
)


def _read(log):
    out = []
    off = log.log_start_offset
    while off < log.log_end_offset:
        data = bytes(log.read(off, 1 << 20))
        if not data:
            break
        for b in iter_batches(data):
            b.validate_crc()
            for r in b.records():
                out.append((r.offset, r.key, r.value))
            off = b.next_offset
    return out


def _check(log, written: dict, model: dict) -> list:
    rs = _read(log)
    offsets = [o for o, _, _ in rs]
    assert offsets == sorted(set(offsets)), "offsets must only increase"
    for o, k, v in rs:
        assert written[o] == (k, v), f"record at {o} is not what was written there"
    last = {}
    for o, k, v in rs:
        last[k] = (o, v)
    for k, (o, v) in model.items():
        if v is not None:
            assert last.get(k) == (o, v), f"{k!r}: latest value lost"
        else:
            assert k not in last or last[k] == (o, None), f"{k!r}: deleted key shows an older value"
    return rs


def _open(path, cfg):
    return PartitionLog.open(str(path), cfg, now_ms=NOW)


@settings(max_examples=int(os.environ.get("KWIRE_MODEL_EXAMPLES", 400 if os.environ.get("KWIRE_SOAK") else 25)),
          deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=5, max_size=40))
def test_compaction_model(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("m") / "t-0"
    cfg = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=300, delete_retention_ms=RETENTION)
    log = _open(path, cfg)
    now = NOW
    written: dict[int, tuple] = {}
    model: dict[bytes, tuple] = {}
    checkpoint = None
    for kind, key, n in ops:
        if kind in ("put", "delete"):
            recs = [(key, None if kind == "delete" else f"{key.decode()}@{now}#{i}".encode(), [], now)
                    for i in range(n)]
            res = log.append(build_batch(recs), now_ms=now)
            log.update_high_watermark(log.log_end_offset)
            for i, (k, v, _, _) in enumerate(recs):
                written[res.base_offset + i] = (k, v)
                model[k] = (res.base_offset + i, v)
        elif kind == "roll":
            log.roll(now)
        elif kind == "time":
            now += n
        elif kind == "clean":
            first_dirty, first_uncleanable, _ = cleanable_offsets(log, checkpoint, now)
            job = plan_clean(log, first_dirty, first_uncleanable, now, OffsetMap(4 + n % 5))
            if job is None:
                continue
            job.run()
            step = 0
            crashed = False
            for old, new in job.cleaned:
                if crashed:
                    break
                for _ in swap_steps(log, old, new):
                    step += 1
                    if step == n:
                        crashed = True
                        break
            if crashed:
                log = _open(path, cfg)       # the crashed object is dropped as is
                checkpoint = None
            else:
                sync_dir(log.dir)
                checkpoint = job.end_offset
        elif kind == "crash_before_swap":
            fd, fu, _ = cleanable_offsets(log, None, now)
            job = plan_clean(log, fd, fu, now, OffsetMap(64))
            if job is not None:
                job.run()                    # .cleaned files written, never swapped
                log = _open(path, cfg)
                checkpoint = None
        elif kind == "reopen":
            log.close()
            log = _open(path, cfg)
            checkpoint = None
        log.update_high_watermark(log.log_end_offset)
        _check(log, written, model)
    # two passes more than delete.retention.ms apart remove every deleted key
    log.roll(now)
    clean_now(log, now)
    clean_now(log, now + RETENTION + 1)
    rs = _check(log, written, model)
    gone = {k for k, (_, v) in model.items() if v is None}
    assert not [r for r in rs if r[1] in gone], "a deleted key outlived delete.retention.ms"
    live = {k: v for k, (_, v) in model.items() if v is not None}
    assert {k: v for _, k, v in rs} == live
    log.close()
