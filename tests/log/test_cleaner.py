"""The log cleaner's core (kwire.log.cleaner, cleaner_swap, cleaner_manager): latest record per
key, tombstones kept for delete.retention.ms past the pass that found them (KIP-534 delete
horizon), offsets unchanged, aborted transactions and spent markers removed, producers' last
batches kept, and the .cleaned -> .swap -> rename protocol surviving a crash at every step."""
from __future__ import annotations

import os

from kwire.codec.records import (
    DELETE_HORIZON_MASK,
    GZIP,
    build_batch,
    build_control_batch,
    iter_batches,
)
from kwire.log.cleaner import OffsetMap, plan_clean
from kwire.log.cleaner_manager import clean_now, cleanable_offsets, grab_filthiest
from kwire.log.cleaner_swap import swap_steps
from kwire.log.config import LogConfig
from kwire.log.partition_log import PartitionLog
from kwire.log.validator import CLIENT, COORDINATOR

NOW = 1_700_000_000_000
DAY = 86_400_000


def compacted(path, **cfg):
    cfg.setdefault("internal_segment_bytes", 400)
    return PartitionLog.open(str(path), LogConfig(cleanup_policy=("compact",), **cfg), now_ms=NOW)


def put(log, key, value, *, ts=NOW, **kw):
    log.append(build_batch([(key, value, [], ts)], **kw), now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)


def batches(log):
    """Every batch from the log start, through read() as a consumer fetches."""
    out = []
    off = log.log_start_offset
    while off < log.log_end_offset:
        data = bytes(log.read(off, 1 << 20))
        if not data:
            break
        for b in iter_batches(data):
            b.validate()
            b.validate_crc()
            out.append(b)
            off = b.next_offset
    return out


def records(log):
    return [(r.offset, r.key, r.value) for b in batches(log) for r in b.records()]


def latest(rs):
    out = {}
    for off, k, v in rs:
        out[k] = (off, v)
    return out


def test_latest_value_per_key_offsets_kept(tmp_path):
    log = compacted(tmp_path / "t-0")
    written = []
    for i in range(60):
        k = f"k{i % 5}".encode()
        put(log, k, f"v{i}".encode())
        written.append((i, k, f"v{i}".encode()))
    log.roll(NOW)
    before = log.size_in_bytes
    job = clean_now(log, NOW)
    assert job.end_offset == 60 and job.swapped >= 1
    rs = records(log)
    assert rs == written[-5:]                              # latest per key, same offsets
    assert log.size_in_bytes < before / 5
    assert job.stats.bytes_read > job.stats.bytes_written > 0
    # a fetch inside a removed range gets the next record
    assert next(iter_batches(bytes(log.read(3, 1 << 20)))).base_offset == 55
    log.close()
    again = compacted(tmp_path / "t-0")
    assert records(again) == written[-5:]
    assert not [n for n in os.listdir(tmp_path / "t-0") if n.endswith((".cleaned", ".swap"))]


def test_active_segment_is_never_cleaned(tmp_path):
    log = compacted(tmp_path / "t-0", internal_segment_bytes=1 << 20)
    for i in range(10):
        put(log, b"k", f"v{i}".encode())
    assert clean_now(log, NOW) is None
    assert len(records(log)) == 10


def test_tombstone_kept_until_its_delete_horizon(tmp_path):
    log = compacted(tmp_path / "t-0", delete_retention_ms=DAY)
    put(log, b"a", b"1")
    put(log, b"b", b"1")
    put(log, b"a", None)
    for i in range(30):
        put(log, b"c", f"{i}".encode())
    log.roll(NOW)
    clean_now(log, NOW)
    assert latest(records(log)) == {b"a": (2, None), b"b": (1, b"1"), b"c": (32, b"29")}
    tomb = [b for b in batches(log) if any(r.value is None for r in b.records())][0]
    assert tomb.attributes & DELETE_HORIZON_MASK and tomb.base_timestamp == NOW + DAY
    assert [r.timestamp for r in tomb.records()] == [NOW]      # record timestamps survive
    clean_now(log, NOW + DAY - 1)
    assert b"a" in latest(records(log))
    clean_now(log, NOW + DAY)
    assert latest(records(log)) == {b"b": (1, b"1"), b"c": (32, b"29")}


def test_compressed_batch_rebuilt_with_its_codec(tmp_path):
    log = compacted(tmp_path / "t-0", internal_segment_bytes=1 << 20)
    log.append(build_batch([(b"x", b"old", [("h", b"1")], NOW), (b"y", b"keep", [], NOW + 1),
                            (b"x", b"mid", [], NOW + 2)], compression=GZIP), now_ms=NOW)
    put(log, b"x", b"new")
    log.roll(NOW)
    clean_now(log, NOW)
    bs = batches(log)
    assert bs[0].compression == GZIP and bs[0].base_offset == 0 and bs[0].last_offset_delta == 2
    assert [(r.offset, r.key, r.value, r.timestamp) for r in bs[0].records()] == [(1, b"y", b"keep", NOW + 1)]
    assert records(log) == [(1, b"y", b"keep"), (3, b"x", b"new")]


def test_aborted_transaction_removed_and_marker_after_horizon(tmp_path):
    log = compacted(tmp_path / "t-0", delete_retention_ms=1000)
    pid = 7001
    put(log, b"a", b"committed")                                                   # 0
    log.append(build_batch([(b"a", b"aborted", [], NOW)], producer_id=pid, producer_epoch=0,
                           base_sequence=0, is_transactional=True), now_ms=NOW, origin=CLIENT)   # 1
    log.append(build_control_batch(False, pid, 0, NOW), now_ms=NOW, origin=COORDINATOR)        # 2: abort
    log.update_high_watermark(log.log_end_offset)
    for i in range(12):
        put(log, b"z", f"{i}".encode())                                             # 3..14
    log.roll(NOW)
    assert log.aborted_transactions(0, 15)
    clean_now(log, NOW)
    rs = records(log)
    assert (0, b"a", b"committed") in rs and not [r for r in rs if r[2] == b"aborted"]
    # the abort marker stays (its batch was seen in this pass) with the txn in the new index
    assert log.aborted_transactions(0, 15)[0].producer_id == pid
    clean_now(log, NOW)              # no batch of the transaction now: the marker gets a horizon
    clean_now(log, NOW + 1000)       # ... and goes once it has passed, unless it is the last of pid
    pid_batches = [b for b in batches(log) if b.producer_id == pid]
    assert all(b.record_count == 0 or b.is_control for b in pid_batches)


def test_producers_last_batch_kept_empty(tmp_path):
    log = compacted(tmp_path / "t-0")
    pid = 9001
    for seq in range(3):
        log.append(build_batch([(b"k", f"p{seq}".encode(), [], NOW)], producer_id=pid, producer_epoch=3,
                               base_sequence=seq), now_ms=NOW, origin=CLIENT)
    log.update_high_watermark(log.log_end_offset)
    for i in range(12):
        put(log, b"k", f"{i}".encode())
    log.roll(NOW)
    clean_now(log, NOW)
    kept = [b for b in batches(log) if b.producer_id == pid]
    assert len(kept) == 1
    b = kept[0]
    assert (b.base_offset, b.record_count, b.producer_epoch, b.base_sequence) == (2, 0, 3, 2)
    log.close()
    again = compacted(tmp_path / "t-0")
    from kwire.log.producer_log import producer_state_of

    again.producer_state = None
    ps = producer_state_of(again)
    assert ps.producers[pid].epoch == 3 and ps.producers[pid].last_seq == 2


def _dirty_log(path, n=40):
    log = compacted(path)
    for i in range(n):
        put(log, f"k{i % 3}".encode(), f"v{i}".encode())
    log.roll(NOW)
    return log


def _count_steps(path):
    log = _dirty_log(path)
    job = plan_clean(log, 0, log.segments[-1].base_offset, NOW, OffsetMap(1000))
    job.run()
    n = sum(1 for old, new in job.cleaned for _ in swap_steps(log, old, new))
    log.close()
    return n


def test_crash_at_every_step_of_the_swap_leaves_a_readable_log(tmp_path):
    total = _count_steps(tmp_path / "count-0")
    assert total > 5
    expect_full = None
    for crash_at in range(0, total + 1):
        d = tmp_path / f"c{crash_at}-0"
        log = _dirty_log(d)
        full = records(log)
        expect_full = expect_full or full
        job = plan_clean(log, 0, log.segments[-1].base_offset, NOW, OffsetMap(1000))
        job.run()
        step = 0
        for old, new in job.cleaned:
            for _ in swap_steps(log, old, new):
                step += 1
                if step == crash_at:
                    break
            if step == crash_at:
                break
        # crash: the object is dropped without a close; reopen recovers from the files
        reopened = PartitionLog.open(str(d), log.config, now_ms=NOW)
        rs = records(reopened)
        assert [o for o, _, _ in rs] == sorted({o for o, _, _ in rs}), crash_at
        assert set(rs) <= set(full), crash_at
        assert latest(rs) == latest(full), crash_at
        assert not [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap"))]
        # and a later pass finishes the job
        clean_now(reopened, NOW)
        assert latest(records(reopened)) == latest(full)
        assert len(records(reopened)) == 3


def test_commit_drops_a_pass_after_a_truncation(tmp_path):
    log = _dirty_log(tmp_path / "t-0")
    job = plan_clean(log, 0, log.segments[-1].base_offset, NOW, OffsetMap(1000))
    job.run()
    log.truncate_to(20)
    assert job.commit() == 0
    assert [o for o, _, _ in records(log)] == list(range(20))
    assert not [n for n in os.listdir(tmp_path / "t-0") if n.endswith(".cleaned")]


def test_full_offset_map_cleans_in_several_passes(tmp_path):
    log = compacted(tmp_path / "t-0")
    for i in range(60):
        put(log, f"k{i % 20}".encode(), f"v{i}".encode())
    log.roll(NOW)
    job = clean_now(log, NOW, omap=OffsetMap(8))
    assert 0 < job.end_offset < 60
    while job is not None and job.end_offset < 60:
        job = clean_now(log, NOW, first_dirty=job.end_offset, omap=OffsetMap(8))
    assert latest(records(log)) == {f"k{i}".encode(): (40 + i, f"v{40 + i}".encode()) for i in range(20)}


def test_choosing_the_dirtiest_log_and_compaction_lag(tmp_path):
    a = _dirty_log(tmp_path / "a-0")
    b = compacted(tmp_path / "b-0")
    for i in range(4):
        put(b, f"k{i}".encode(), b"x")
    b.roll(NOW)
    logs = [(("a", 0), a), (("b", 0), b)]
    chosen = grab_filthiest(logs, {}, NOW)
    assert chosen.tp == ("a", 0) and chosen.cleanable_ratio == 1.0
    # everything clean up to the active segment: nothing to do
    assert grab_filthiest(logs, {("a", 0): a.log_end_offset, ("b", 0): b.log_end_offset}, NOW) is None
    # min.compaction.lag.ms keeps young segments out of the dirty section
    lagged = compacted(tmp_path / "c-0", min_compaction_lag_ms=10_000)
    for i in range(20):
        put(lagged, b"k", b"v", ts=NOW + i)
    lagged.roll(NOW)
    first_dirty, first_uncleanable, _ = cleanable_offsets(lagged, None, NOW + 5_000)
    assert first_uncleanable == 0
    assert cleanable_offsets(lagged, None, NOW + 20_000)[1] == lagged.segments[-1].base_offset


def test_a_fetch_holding_a_replaced_segment_keeps_reading_it(tmp_path):
    log = _dirty_log(tmp_path / "t-0")
    held = log.read(0, 1 << 20)                 # FileRegions of the first segment (sendfile's input)
    want = bytes(held)
    clean_now(log, NOW)
    assert log.segments[0].size < len(want)      # the segment was replaced
    assert bytes(held) == want                  # the unlinked inode is still read


def test_throttler_sleeps_to_the_rate():
    from kwire.log.cleaner import Throttler

    t = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        t[0] += s

    th = Throttler(1000.0, sleep=sleep, monotonic=lambda: t[0])
    th.maybe_throttle(500)
    th.maybe_throttle(500)
    assert abs(sum(slept) - 1.0) < 1e-9          # 1,000 bytes at 1,000 B/s: one second
    Throttler(float("inf"), sleep=sleep).maybe_throttle(1 << 30)
    assert abs(sum(slept) - 1.0) < 1e-9
