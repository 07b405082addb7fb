"""Producer state (idempotent producers): the sequence/dedup state machine with no sockets, and
its life with a partition log (duplicates not written, rebuild from headers, snapshots)."""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.codec.records import RecordBatch, build_batch
from kwire.errors import CrcMismatch
from kwire.log import producer_log as PL
from kwire.log import producer_state as PS
from kwire.log.config import LogConfig
from kwire.log.partition_log import PartitionLog
from kwire.log.producer_state import (
    INT32_MAX,
    BatchMetadata,
    InvalidProducerEpoch,
    InvalidSequence,
    OutOfOrderSequence,
    ProducerStateManager,
)
from kwire.log.producer_log import append_idempotent, producer_state_of

NOW = 1_700_000_000_000
PID = 4000


def state() -> ProducerStateManager:
    return ProducerStateManager(None, expiration_ms=10_000, expiration_check_ms=1_000)


def write(ps, pid, epoch, first, last, offset, ts=NOW):
    """check + update, as the produce path does; returns the duplicate or None."""
    dup = ps.check(pid, epoch, first, last)
    if dup is None:
        ps.update(pid, epoch, first, last, offset, offset + (last - first) % (INT32_MAX + 1), ts)
    return dup


# --- the state machine -----------------------------------------------------------------------
def test_new_producer_accepts_any_sequence():
    ps = state()
    assert ps.check(PID, 0, 0, 4) is None
    assert ps.check(PID, 0, 17, 20) is None  # Kafka 2.5+: no UNKNOWN_PRODUCER_ID on produce
    ps.update(PID, 0, 17, 20, 0, 3, NOW)
    assert ps.producers[PID].last_seq == 20


def test_in_sequence_gap_and_repeat():
    ps = state()
    assert write(ps, PID, 0, 0, 9, 0) is None
    assert write(ps, PID, 0, 10, 14, 10) is None
    with pytest.raises(OutOfOrderSequence):
        ps.check(PID, 0, 16, 20)  # gap
    with pytest.raises(OutOfOrderSequence):
        ps.check(PID, 0, 12, 14)  # overlaps, not a cached batch
    assert ps.check(PID, 0, 15, 15) is None


def test_duplicates_of_the_last_five_batches_answer_original_offsets():
    ps = state()
    for i in range(7):
        assert write(ps, PID, 0, i * 2, i * 2 + 1, 100 + i * 2, NOW + i) is None
    for i in range(2, 7):  # batches 2..6 are cached
        dup = ps.check(PID, 0, i * 2, i * 2 + 1)
        assert dup == BatchMetadata(i * 2, i * 2 + 1, 100 + i * 2, 101 + i * 2, NOW + i)
    with pytest.raises(OutOfOrderSequence):
        ps.check(PID, 0, 2, 3)  # batch 1 fell out of the cache
    # the state did not change: the next batch still continues at 14
    assert ps.check(PID, 0, 14, 14) is None


def test_epochs():
    ps = state()
    write(ps, PID, 3, 0, 4, 0)
    with pytest.raises(InvalidProducerEpoch):
        ps.check(PID, 2, 5, 5)
    with pytest.raises(OutOfOrderSequence):
        ps.check(PID, 4, 5, 5)  # a new epoch starts at 0
    assert write(ps, PID, 4, 0, 0, 5) is None
    # the old epoch's batch is no duplicate under the new epoch, and the old epoch is fenced
    with pytest.raises(InvalidProducerEpoch):
        ps.check(PID, 3, 0, 4)
    assert list(ps.producers[PID].batches) == [BatchMetadata(0, 0, 5, 5, NOW)]


def test_producers_are_independent():
    ps = state()
    write(ps, 1, 0, 0, 0, 0)
    write(ps, 2, 0, 0, 0, 1)
    assert ps.check(1, 0, 1, 1) is None
    assert ps.check(2, 0, 0, 0) == BatchMetadata(0, 0, 1, 1, NOW)


def test_sequence_wraps_at_int32_max():
    ps = state()
    write(ps, PID, 0, INT32_MAX - 1, INT32_MAX, 0)
    assert ps.check(PID, 0, 0, 3) is None
    with pytest.raises(OutOfOrderSequence):
        ps.check(PID, 0, 1, 3)
    # a batch straddling the wrap: base INT32_MAX - 1, four records -> last sequence 1
    assert PS.last_sequence(INT32_MAX - 1, 3) == 1
    ps2 = state()
    write(ps2, PID, 0, 0, INT32_MAX - 2, 0)
    assert ps2.check(PID, 0, INT32_MAX - 1, 1) is None
    ps2.update(PID, 0, INT32_MAX - 1, 1, 10, 13, NOW)
    assert ps2.check(PID, 0, 2, 2) is None
    assert ps2.check(PID, 0, INT32_MAX - 1, 1) == BatchMetadata(INT32_MAX - 1, 1, 10, 13, NOW)


def test_batch_without_sequence_is_invalid():
    with pytest.raises(InvalidSequence):
        state().check(PID, 0, -1, -1)


def test_pending_batches_of_one_request():
    ps = state()
    write(ps, PID, 0, 0, 0, 0)
    pending = {PID: (0, 3)}  # an earlier batch of this request ended at 3
    assert ps.check(PID, 0, 4, 4, pending) is None
    with pytest.raises(OutOfOrderSequence):
        ps.check(PID, 0, 1, 1, pending)


def test_expiry():
    ps = state()
    write(ps, 1, 0, 0, 0, 0, ts=NOW)
    write(ps, 2, 0, 0, 0, 1, ts=NOW + 5_000)
    assert ps.maybe_remove_expired(NOW) == 0  # first call only starts the clock
    assert ps.maybe_remove_expired(NOW + 500) == 0  # within the check interval: no pass
    assert set(ps.producers) == {1, 2}
    assert ps.maybe_remove_expired(NOW + 10_500) == 1  # producer 1's last batch is 10.5 s old
    assert set(ps.producers) == {2}
    assert ps.maybe_remove_expired(NOW + 10_600) == 0  # too soon for another pass
    assert ps.remove_expired(NOW + 15_000) == 1
    assert not ps.producers


def test_snapshot_round_trip_and_corruption():
    ps = state()
    for i in range(7):
        write(ps, PID, 2, i, i, i, NOW + i)
    write(ps, 9, 0, 5, 9, 7)
    data = ps.encode_snapshot()
    back = ProducerStateManager.decode_snapshot(data)
    assert {p: (e.epoch, list(e.batches), e.last_timestamp) for p, e in back.items()} == \
           {p: (e.epoch, list(e.batches), e.last_timestamp) for p, e in ps.producers.items()}
    assert len(back[PID].batches) == 5
    bad = bytearray(data)
    bad[-3] ^= 1
    with pytest.raises(ValueError):
        ProducerStateManager.decode_snapshot(bytes(bad))
    with pytest.raises(ValueError):
        ProducerStateManager.decode_snapshot(data[:-1])


# --- a model: retries of in-flight batches never duplicate, in any order ----------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 6), st.booleans()), min_size=1, max_size=60))
def test_retries_leave_each_batch_once(steps):
    """A producer sends batches of 1-4 records; after each send it retries a random recent batch
    (up to 5 in flight, as the client may) or not. The log (offsets handed out) holds every
    sequence exactly once and in order."""
    ps = state()
    sent: list[tuple[int, int]] = []
    log: list[int] = []  # sequences in log order
    seq = 0
    for n, back, retry in steps:
        first, last = seq, seq + n - 1
        seq += n
        sent.append((first, last))
        for batch in [(first, last)] + ([sent[-1 - back]] if retry and back < min(len(sent), 5) else []):
            dup = ps.check(PID, 0, *batch)
            if dup is None:
                ps.update(PID, 0, batch[0], batch[1], len(log), len(log) + batch[1] - batch[0], NOW)
                log.extend(range(batch[0], batch[1] + 1))
            else:
                assert (dup.first_seq, dup.last_seq) == batch
                assert log[dup.first_offset:dup.last_offset + 1] == list(range(batch[0], batch[1] + 1))
    assert log == list(range(seq))


# --- with a partition log ----------------------------------------------------------------------
def idem_batch(pid, epoch, seq, n=2, ts=NOW, tag="v"):
    return build_batch([(b"k", f"{tag}{seq + i}".encode(), [], ts) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def open_log(tmp_path, **cfg):
    return PartitionLog.open(str(tmp_path / "t-0"), LogConfig(**cfg), now_ms=NOW)


def test_append_dedups_and_refuses(tmp_path):
    log = open_log(tmp_path)
    r1 = append_idempotent(log, idem_batch(PID, 0, 0), now_ms=NOW)
    r2 = append_idempotent(log, idem_batch(PID, 0, 2), now_ms=NOW)
    plain = append_idempotent(log, build_batch([(b"k", b"plain", [], NOW)]), now_ms=NOW)
    assert (r1.base_offset, r2.base_offset, plain.base_offset) == (0, 2, 4)
    again = append_idempotent(log, idem_batch(PID, 0, 0), now_ms=NOW)
    assert (again.base_offset, again.last_offset) == (0, 1)
    assert log.log_end_offset == 5
    with pytest.raises(OutOfOrderSequence):
        append_idempotent(log, idem_batch(PID, 0, 9), now_ms=NOW)
    append_idempotent(log, idem_batch(PID + 1, 1, 0), now_ms=NOW)
    with pytest.raises(InvalidProducerEpoch):
        append_idempotent(log, idem_batch(PID + 1, 0, 2), now_ms=NOW)
    assert log.log_end_offset == 7
    # a corrupt retry is CORRUPT_MESSAGE, not a success
    bad = bytearray(idem_batch(PID, 0, 2))
    bad[-1] ^= 0xFF
    with pytest.raises(CrcMismatch):
        append_idempotent(log, bytes(bad), now_ms=NOW)
    log.close()


def test_two_batches_in_one_request(tmp_path):
    log = open_log(tmp_path)
    res = append_idempotent(log, idem_batch(PID, 0, 0, n=3) + idem_batch(PID, 0, 3, n=2), now_ms=NOW)
    assert (res.base_offset, res.last_offset) == (0, 4)
    dup = append_idempotent(log, idem_batch(PID, 0, 3, n=2), now_ms=NOW)
    assert (dup.base_offset, dup.last_offset) == (3, 4)
    with pytest.raises(OutOfOrderSequence):
        append_idempotent(log, idem_batch(PID, 0, 5) + idem_batch(PID, 0, 8), now_ms=NOW)
    assert log.log_end_offset == 5  # nothing of the refused request was written
    log.close()


def _states(log):
    return {p: (e.epoch, list(e.batches)) for p, e in producer_state_of(log).producers.items()}


def test_rebuilt_from_the_log_after_a_crash(tmp_path):
    log = open_log(tmp_path)
    for i in range(8):
        append_idempotent(log, idem_batch(PID, 0, i * 2), now_ms=NOW)
    append_idempotent(log, idem_batch(PID + 1, 3, 0, n=1), now_ms=NOW)
    before = _states(log)
    log.flush()  # a crash: no close, no snapshot but the one of the partition's first producer
    assert [f for f in os.listdir(log.dir) if f.endswith(".snapshot")] == [PS.snapshot_name(2)]
    again = PartitionLog.open(log.dir, LogConfig(), now_ms=NOW)
    assert _states(again) == before
    dup = append_idempotent(again, idem_batch(PID, 0, 12), now_ms=NOW)
    assert (dup.base_offset, dup.last_offset) == (12, 13)
    assert append_idempotent(again, idem_batch(PID, 0, 16), now_ms=NOW).base_offset == 17
    again.close()


def test_clean_close_snapshots_and_reopen_reads_no_log(tmp_path, monkeypatch):
    log = open_log(tmp_path)
    for i in range(6):
        append_idempotent(log, idem_batch(PID, 1, i * 2), now_ms=NOW)
    before = _states(log)
    log.close()
    assert os.path.exists(os.path.join(log.dir, PS.snapshot_name(12)))
    scanned = []
    real = PL.iter_log_batches

    def counting(plog, start):
        for t in real(plog, start):
            scanned.append(t)
            yield t

    monkeypatch.setattr(PL, "iter_log_batches", counting)
    again = PartitionLog.open(log.dir, LogConfig(), now_ms=NOW)
    assert _states(again) == before
    assert scanned == []
    assert len(before[PID][1]) == 5
    again.close()


def test_roll_snapshots_and_recovery_scans_only_after_it(tmp_path, monkeypatch):
    log = open_log(tmp_path, segment_bytes=400)
    for i in range(20):
        append_idempotent(log, idem_batch(PID, 0, i * 2), now_ms=NOW)
    snaps = sorted(f for f in os.listdir(log.dir) if f.endswith(".snapshot"))
    assert 1 <= len(snaps) <= PS.SNAPSHOTS_TO_KEEP
    latest = int(snaps[-1][:20])
    assert latest <= log.log_end_offset
    before = _states(log)
    log.flush()
    scanned = []
    real = PL.iter_log_batches

    def counting(plog, start):
        for t in real(plog, start):
            scanned.append(t)
            yield t

    monkeypatch.setattr(PL, "iter_log_batches", counting)
    again = PartitionLog.open(log.dir, LogConfig(segment_bytes=400), now_ms=NOW)
    assert _states(again) == before
    assert len(scanned) == (again.log_end_offset - latest) // 2 < 20
    again.close()


def test_snapshots_beyond_the_log_end_and_corrupt_ones_are_dropped(tmp_path):
    log = open_log(tmp_path)
    for i in range(3):
        append_idempotent(log, idem_batch(PID, 0, i * 2), now_ms=NOW)
    log.close()
    d = log.dir
    with open(os.path.join(d, PS.snapshot_name(6)), "r+b") as f:
        f.seek(8)
        f.write(b"\xff")  # corrupt the clean-close snapshot
    ghost = ProducerStateManager(d)
    ghost.update(PID, 7, 0, 0, 50, 50, NOW)
    ghost.take_snapshot(1000)  # beyond the log end offset
    again = PartitionLog.open(d, LogConfig(), now_ms=NOW)
    assert _states(again) == {PID: (0, [BatchMetadata(i * 2, i * 2 + 1, i * 2, i * 2 + 1, NOW) for i in range(3)])}
    assert not [f for f in os.listdir(d) if f.endswith(".snapshot")]
    again.close()


def test_truncation_forgets_truncated_batches(tmp_path):
    log = open_log(tmp_path)
    for i in range(4):
        append_idempotent(log, idem_batch(PID, 0, i * 2), now_ms=NOW)
    producer_state_of(log).take_snapshot(8)
    log.truncate_to(4)
    assert not os.path.exists(os.path.join(log.dir, PS.snapshot_name(8)))
    # batches 4.. are gone: sequence 4 is new again, not a duplicate
    assert append_idempotent(log, idem_batch(PID, 0, 4, tag="w"), now_ms=NOW).base_offset == 4
    log.truncate_fully_and_start_at(100)
    assert append_idempotent(log, idem_batch(PID, 0, 40), now_ms=NOW).base_offset == 100
    log.close()


def test_log_append_time_duplicate_answers_append_time(tmp_path):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    first = append_idempotent(log, idem_batch(PID, 0, 0), now_ms=NOW + 5)
    dup = append_idempotent(log, idem_batch(PID, 0, 0), now_ms=NOW + 9)
    assert first.log_append_time_ms == dup.log_append_time_ms == NOW + 5
    log.close()


def test_header_scan_matches_the_log(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    for i in range(10):
        append_idempotent(log, idem_batch(PID, 0, i * 2), now_ms=NOW)
    got = [(t[0], t[11]) for t, _seg, _pos in PL.iter_log_batches(log, 7)]
    assert got == [(i * 2, i * 2) for i in range(3, 10)]
    assert RecordBatch(idem_batch(PID, 0, 0)).producer_id == PID
    log.close()
