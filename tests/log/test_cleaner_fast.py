"""The cleaner's fast path (kwire.log.cleaner_fast, the C offset map and walks of
kwire/log/_walk.c) against the pure-Python reference (kwire.log.cleaner with a dict for a
map): the same offset map, and a pass that keeps the same records (offset, timestamp, key,
value, headers) in batches with the same header fields, for random logs of puts, deletes,
keyless records, compressed and transactional batches, at random times past delete
horizons. Also: odd bytes make the C walk answer None (the Python walk decides), never crash.
KWIRE_SOAK=1 runs many more examples."""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kwire.codec.records import GZIP, NONE, RecordBatch, build_batch, iter_batches
from kwire.log import cleaner_fast
from kwire.log.cleaner import OffsetMap, plan_clean
from kwire.log.cleaner_manager import cleanable_offsets
from kwire.log.config import LogConfig
from kwire.log.partition_log import PartitionLog

pytestmark = pytest.mark.skipif(not cleaner_fast.ENABLED, reason="kwire.log._walk is not built")

NOW = 1_700_000_000_000
RETENTION = 1_000
EXAMPLES = 300 if os.environ.get("KWIRE_SOAK") else 30

KEY = st.sampled_from([b"a", b"bb", b"", b"key-3", b"k" * 40, None])
RECORD = st.tuples(KEY, st.one_of(st.none(), st.binary(max_size=12)),
                   st.lists(st.tuples(st.sampled_from(["h", "x"]), st.one_of(st.none(), st.binary(max_size=3))),
                            max_size=2),
                   st.integers(0, 5_000))
BATCH = st.tuples(st.lists(RECORD, min_size=1, max_size=6), st.sampled_from([NONE, NONE, GZIP]),
                  st.sampled_from([-1, -1, 7, 8]))   # producer id (-1: not idempotent)


def test_the_extension_is_built():
    assert cleaner_fast.ENABLED, "kwire.log._walk lacks the cleaner's map: pip install -e . needs a C compiler"


def _log(path, batches):
    # written under cleanup.policy=delete (a compacted topic refuses keyless records), then
    # switched to compact, as AlterConfigs may do to a topic that holds some
    cfg = LogConfig(cleanup_policy=("delete",), internal_segment_bytes=350, delete_retention_ms=RETENTION)
    log = PartitionLog.open(str(path), cfg, now_ms=NOW)
    seqs = {}
    for recs, codec, pid in batches:
        idem = {} if pid < 0 else {"producer_id": pid, "producer_epoch": 0, "base_sequence": seqs.get(pid, 0)}
        if pid >= 0:
            seqs[pid] = seqs.get(pid, 0) + len(recs)
        log.append(build_batch([(k, v, h, NOW + t) for k, v, h, t in recs], compression=codec, **idem), now_ms=NOW)
    log.roll(NOW)
    log.config = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=350, delete_retention_ms=RETENTION)
    for seg in log.segments:
        seg.config = log.config
    log.update_high_watermark(log.log_end_offset)
    return log


def _batches(log):
    out = []
    off = log.log_start_offset
    while off < log.log_end_offset:
        data = bytes(log.read(off, 1 << 20))
        if not data:
            break
        for b in iter_batches(data):
            b.validate_crc()
            recs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in b.records()]
            out.append(((b.base_offset, b.last_offset_delta, b.attributes, b.producer_id, b.max_timestamp,
                         b.record_count), recs))
            off = b.next_offset
    return out


def _pass(log, now, fast, checkpoint, map_size):
    fd, fu, _ = cleanable_offsets(log, checkpoint, now)
    job = plan_clean(log, fd, fu, now, OffsetMap(map_size, fast=fast))
    if job is None:
        return None, checkpoint
    job.run()
    job.commit()
    st_ = job.stats
    # (map_messages_read differs when the map fills inside a batch: the C walk counts the
    # batch, the Python walk the records up to the key that did not fit)
    return (job.end_offset, st_.messages_read, st_.messages_written, st_.invalid_messages), job.end_offset


@settings(max_examples=EXAMPLES // 3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batches=st.lists(BATCH, min_size=1, max_size=16), steps=st.lists(st.integers(0, 3 * RETENTION), max_size=3),
       map_size=st.sampled_from([2, 3, 1000]))
def test_fast_pass_keeps_what_the_python_pass_keeps(tmp_path_factory, batches, steps, map_size):
    d = tmp_path_factory.mktemp("f")
    ref, fast = _log(d / "ref-0", batches), _log(d / "fast-0", batches)
    assert _batches(ref) == _batches(fast)
    now = NOW
    cp_ref = cp_fast = None
    for step in [0, *steps]:
        now += step
        a, cp_ref = _pass(ref, now, False, cp_ref, map_size)
        b, cp_fast = _pass(fast, now, True, cp_fast, map_size)
        assert a == b, "the same pass: offsets, records read, kept and dropped"
        assert _batches(ref) == _batches(fast), "the same records in batches with the same headers"
    ref.close()
    fast.close()


@settings(max_examples=EXAMPLES, deadline=None)
@given(batches=st.lists(BATCH, min_size=1, max_size=8), lo=st.integers(0, 20), span=st.integers(0, 40))
def test_c_map_holds_what_a_dict_holds(batches, lo, span):
    cmap, ref = cleaner_fast.CMap(), {}
    base = 0
    for recs, codec, _ in batches:
        raw = build_batch([(k, v, h, NOW + t) for k, v, h, t in recs], compression=codec, base_offset=base)
        b = RecordBatch(raw, 0)
        assert cleaner_fast.put_batch(cmap, b, lo, lo + span, 1 << 30) is True
        for r in b.records():
            if r.key is not None and lo <= r.offset < lo + span:
                ref[r.key] = r.offset
        base = b.next_offset
    assert len(cmap) == len(ref)
    for k, o in ref.items():
        assert cmap.get(k) == o
    assert cmap.get(b"not-there") == -1


def test_c_map_many_keys_grow_and_stay_exact():
    cmap, ref = cleaner_fast.CMap(), {}
    rnd = random.Random(5)
    for i in range(30_000):
        k = rnd.randbytes(rnd.randrange(0, 6))   # short keys: many share prefixes and table slots
        cmap.put(k, i)
        ref[k] = i
    assert len(cmap) == len(ref)
    assert all(cmap.get(k) == o for k, o in ref.items())
    assert len(cmap.table) // 24 >= 2 * len(ref)


def test_c_map_full_stops_at_the_first_new_key():
    cmap = cleaner_fast.CMap()
    raw = build_batch([(b"k%d" % (i % 4), b"v", [], NOW) for i in range(10)])
    b = RecordBatch(raw, 0)
    assert cleaner_fast.put_batch(cmap, b, 0, 100, 3) is False
    assert len(cmap) == 3 and cmap.get(b"k2") == 2 and cmap.get(b"k3") == -1


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(recs=st.lists(RECORD, min_size=1, max_size=5), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                                                     min_size=1, max_size=4))
def test_odd_bytes_get_none_or_the_python_answer(recs, flips):
    raw = bytearray(build_batch([(k, v, h, NOW + t) for k, v, h, t in recs]))
    for at, val in flips:
        i = 61 + at % max(1, len(raw) - 61)
        if i < len(raw):
            raw[i] = val
    b = RecordBatch(bytes(raw), 0)
    try:
        ref = [(r.offset, r.key) for r in b.records()]
    except Exception:  # noqa: BLE001 - the Python walk refuses the batch
        ref = None
    cmap = cleaner_fast.CMap()
    got = cleaner_fast.put_batch(cmap, b, 0, 1 << 40, 1 << 30)
    if ref is None:
        assert got is None or got is True   # the C walk does not check header keys are UTF-8
        return
    assert got is True
    want = {}
    for o, k in ref:
        if k is not None:
            want[k] = o
    assert len(cmap) == len(want) and all(cmap.get(k) == o for k, o in want.items())
    # every record lies past the map's last offset (-1): all kept, the batch as it was, unless
    # a tombstone is kept (its batch needs a delete horizon: the Python path rebuilds it)
    res = cleaner_fast.retain(cmap, b, len(raw), -1, NOW)
    if any(r.value is None for r in b.records()):
        assert res is None
    else:
        assert res == (bytes(raw), len(ref), len(ref), 0)


def test_put_batches_runs_a_chunk_and_stops_where_python_must_look():
    """One chunk: a batch below the dirty section, plain batches with 3,000 keys (the map
    grows on the way: NEEDS_ROOM), a compressed one (for the Python walk), more plain ones,
    one past the end of the section."""
    parts, base = [], 0

    def add(n, **kw):
        nonlocal base
        raw = build_batch([(b"key-%d" % (base + i), b"v", [], NOW) for i in range(n)], base_offset=base, **kw)
        parts.append(raw)
        base += n
        return raw

    add(5)                                  # offsets 0-4: below lo
    for _ in range(30):
        add(100)                            # 5 - 3004
    add(10, compression=GZIP)               # 3005 - 3014: for Python
    add(20)                                 # 3015 - 3034
    add(20)                                 # 3035 - 3054: from hi on
    buf = b"".join(parts)
    lo, hi = 5, 3035
    cmap = cleaner_fast.CMap()
    pos, seen = 0, []
    while True:
        status, pos, latest, records, nbytes = cleaner_fast.put_batches(cmap, buf, pos, len(buf), lo, hi, 1 << 30)
        seen.append(status)
        if status == cleaner_fast.NEEDS_ROOM:
            cleaner_fast.reserve_for_batch(cmap, buf, pos)
            continue
        if status == cleaner_fast.FOR_PYTHON:
            b = RecordBatch(buf, pos)
            assert b.base_offset == 3005
            assert cleaner_fast.put_batch(cmap, b, lo, hi, 1 << 30) is True
            pos += b.size
            continue
        break
    assert status == cleaner_fast.PAST_END and RecordBatch(buf, pos).base_offset == 3035
    assert cleaner_fast.NEEDS_ROOM in seen
    assert len(cmap) == 3030
    assert cmap.get(b"key-4") == -1 and cmap.get(b"key-5") == 5 and cmap.get(b"key-3034") == 3034
    assert cmap.get(b"key-3035") == -1
    # a full map stops before the batch holding the first key that does not fit
    small = cleaner_fast.CMap()
    small.reserve(4000, len(buf))
    status, pos, latest, _, _ = cleaner_fast.put_batches(small, buf, 0, len(buf), lo, hi, 250)
    assert status == cleaner_fast.FULL and RecordBatch(buf, pos).base_offset == 205 and latest == 204
    assert len(small) == 250


def test_fast_pass_on_segments_of_many_batches(tmp_path):
    """Chunks of many batches (runs of plain batches in one C call), partly superseded,
    with tombstones, keyless records and idempotent producers, over three passes."""
    rnd = random.Random(3)
    batches, seqs = [], {}
    for i in range(300):
        recs = []
        for _ in range(rnd.randrange(1, 20)):
            k = rnd.choice([None] + [b"key-%d" % j for j in range(60)]) if rnd.random() < 0.05 else b"key-%d" % rnd.randrange(60)
            v = None if rnd.random() < 0.05 else b"v%d" % i
            recs.append((k, v, [], rnd.randrange(5000)))
        batches.append((recs, GZIP if i % 37 == 0 else NONE, rnd.choice([-1, -1, -1, 7])))
    cfg_bytes = 16 << 10

    def make(path):
        cfg = LogConfig(cleanup_policy=("delete",), internal_segment_bytes=cfg_bytes, delete_retention_ms=RETENTION)
        log = PartitionLog.open(str(path), cfg, now_ms=NOW)
        for recs, codec, pid in batches:
            idem = {} if pid < 0 else {"producer_id": pid, "producer_epoch": 0, "base_sequence": seqs.get((path, pid), 0)}
            if pid >= 0:
                seqs[(path, pid)] = seqs.get((path, pid), 0) + len(recs)
            log.append(build_batch([(k, v, h, NOW + t) for k, v, h, t in recs], compression=codec, **idem),
                       now_ms=NOW)
        log.roll(NOW)
        log.update_high_watermark(log.log_end_offset)
        log.config = LogConfig(cleanup_policy=("compact",), internal_segment_bytes=cfg_bytes,
                               delete_retention_ms=RETENTION)
        for seg in log.segments:
            seg.config = log.config
        return log

    ref, fast = make(tmp_path / "ref-0"), make(tmp_path / "fast-0")
    assert len(ref.segments) > 5
    cp_ref = cp_fast = None
    for now in (NOW, NOW + 10, NOW + 3 * RETENTION):
        a, cp_ref = _pass(ref, now, False, cp_ref, 1000)
        b, cp_fast = _pass(fast, now, True, cp_fast, 1000)
        assert a == b
        assert _batches(ref) == _batches(fast)
    ref.close()
    fast.close()
