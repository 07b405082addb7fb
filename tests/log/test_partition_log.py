import os

import pytest

from kwire.codec.records import RecordBatch, build_batch, iter_batches
from kwire.errors import CorruptRecordBatch, CrcMismatch, ErrorCode, KafkaError
from kwire.log import (
    FileRegion,
    InvalidRecordError,
    LogConfig,
    MessageTooLarge,
    OffsetOutOfRange,
    PartitionLog,
)

from .logutil import make_batch, read_all, seg_files, stored

NOW = 1_700_000_000_000


def open_log(tmp_path, **cfg):
    return PartitionLog.open(str(tmp_path / "t-0"), LogConfig(**cfg), now_ms=NOW)


def test_append_assigns_offsets_and_reads_back(tmp_path):
    log = open_log(tmp_path)
    batches = [make_batch(3, 20, seed=i) for i in range(5)]
    res = log.append(b"".join(batches[:2]), now_ms=NOW)  # two batches in one append
    assert (res.base_offset, res.last_offset, res.log_append_time_ms, res.log_start_offset) == (0, 5, -1, 0)
    for i, b in enumerate(batches[2:]):
        r = log.append(b, now_ms=NOW)
        assert r.base_offset == 6 + 3 * i
    assert log.log_end_offset == 15
    assert read_all(log) == [stored(b, 3 * i) for i, b in enumerate(batches)]
    # every offset inside a batch reads from the start of that batch
    for off in range(15):
        first = RecordBatch(bytes(log.read(off, 1)))
        assert first.base_offset <= off <= first.last_offset


def test_read_regions_are_file_ranges_and_kip74(tmp_path):
    log = open_log(tmp_path)
    big = make_batch(1, 5000, seed=1)
    small = make_batch(1, 10, seed=2)
    log.append(big, now_ms=NOW)
    log.append(small, now_ms=NOW)
    data = log.read(0, 100)  # first batch larger than max_bytes: returned whole (KIP-74)
    assert data.size == len(big) and len(data.regions) == 1
    region = data.regions[0]
    assert isinstance(region, FileRegion) and len(region) == len(big)
    assert os.pread(region.fileno(), region.length, region.position) == stored(big, 0)
    assert log.read(0, 100, min_one=False).size == 0
    assert bytes(log.read(0, len(big) + len(small))) == stored(big, 0) + stored(small, 1)
    assert bytes(log.read(0, len(big) + len(small) - 1)) == stored(big, 0)  # whole batches only
    assert log.read(2, 100).size == 0  # at the log end offset: empty
    with pytest.raises(OffsetOutOfRange) as e:
        log.read(3, 100)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_bounded_by_high_watermark(tmp_path):
    log = open_log(tmp_path)
    for i in range(4):
        log.append(make_batch(2, 10, seed=i), now_ms=NOW)
    out = [b.base_offset for b in iter_batches(bytes(log.read(0, 1 << 20, max_offset=4)))]
    assert out == [0, 2]
    assert log.read(4, 1 << 20, max_offset=4).size == 0
    assert log.read(3, 1 << 20, max_offset=3).size == 0  # batch 2..3 straddles the bound


def test_validation_errors(tmp_path):
    log = open_log(tmp_path, max_message_bytes=2000)
    good = make_batch(2, 10)
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(CrcMismatch) as e:
        log.append(bytes(bad_crc), now_ms=NOW)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(MessageTooLarge) as e:
        log.append(make_batch(1, 3000), now_ms=NOW)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    magic1 = bytearray(good)
    magic1[16] = 1
    with pytest.raises(InvalidRecordError) as e:
        log.append(bytes(magic1), now_ms=NOW)
    assert e.value.code == ErrorCode.INVALID_RECORD
    # record count that disagrees with lastOffsetDelta (CRC recomputed so only that is wrong)
    from kwire.codec.records import _rewrite_crc

    lie = bytearray(good)
    lie[23:27] = (5).to_bytes(4, "big")
    _rewrite_crc(lie, 0)
    with pytest.raises(InvalidRecordError):
        log.append(bytes(lie), now_ms=NOW)
    with pytest.raises(CorruptRecordBatch):
        log.append(good[:-3], now_ms=NOW)  # truncated
    with pytest.raises(CorruptRecordBatch):
        log.append(good + good[:30], now_ms=NOW)  # trailing garbage: nothing is written
    assert all(isinstance(x, KafkaError) for x in (CrcMismatch(), MessageTooLarge(), OffsetOutOfRange()))
    assert log.log_end_offset == 0 and log.size_in_bytes == 0
    assert log.append(b"", now_ms=NOW).base_offset == -1
    assert log.append(good, now_ms=NOW).base_offset == 0


def test_log_append_time_and_leader_epoch(tmp_path):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    res = log.append(make_batch(3, 10, ts=5), now_ms=NOW + 7, leader_epoch=9)
    assert res.log_append_time_ms == NOW + 7
    (b,) = list(iter_batches(bytes(log.read(0, 1 << 20))))
    assert b.timestamp_type == 1 and b.max_timestamp == NOW + 7 and b.partition_leader_epoch == 9
    b.validate_crc()
    assert [r.timestamp for r in b.records()] == [NOW + 7] * 3
    log2 = open_log(tmp_path / "x")
    log2.append(make_batch(1), now_ms=NOW, leader_epoch=4)
    (b,) = list(iter_batches(bytes(log2.read(0, 1 << 20))))
    assert b.partition_leader_epoch == 4
    b.validate_crc()


def test_roll_on_size_time_and_full_index(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    for i in range(10):
        log.append(make_batch(1, 300, seed=i), now_ms=NOW)
    assert len(log.segments) >= 4 and all(s.size <= 1000 for s in log.segments)
    assert [s.base_offset for s in log.segments] == sorted(s.base_offset for s in log.segments)
    assert len(seg_files(log.dir, "log")) == len(log.segments)
    # segment.ms, based on the first batch's timestamp
    log = open_log(tmp_path / "ms", segment_ms=1000)
    log.append(make_batch(1, ts=NOW), now_ms=NOW)
    log.append(make_batch(1, ts=NOW + 500), now_ms=NOW)
    assert len(log.segments) == 1
    log.append(make_batch(1, ts=NOW + 1001), now_ms=NOW)
    assert len(log.segments) == 2 and log.segments[1].base_offset == 2
    # full offset index: 2 entries of 8 bytes, an entry every batch
    log = open_log(tmp_path / "ix", segment_index_bytes=16, index_interval_bytes=1)
    for i in range(8):
        log.append(make_batch(1, 50, seed=i), now_ms=NOW)
    assert len(log.segments) >= 2
    assert all(len(s.index) <= 2 for s in log.segments)
    assert read_all(log)[3] == stored(make_batch(1, 50, seed=3), 3)


def test_batch_larger_than_segment_bytes(tmp_path):
    log = open_log(tmp_path, segment_bytes=500)
    log.append(make_batch(1, 10, seed=0), now_ms=NOW)
    big = make_batch(1, 2000, seed=1)
    log.append(big, now_ms=NOW)
    log.append(make_batch(1, 10, seed=2), now_ms=NOW)
    sizes = [(s.base_offset, s.size) for s in log.segments]
    assert sizes[1] == (1, len(big)) and len(sizes) == 3
    assert bytes(log.read(1, 10)) == stored(big, 1)


def test_offsets_near_2_pow_40(tmp_path):
    start = (1 << 40) - 5
    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(segment_bytes=600), log_start_offset=start,
                            recovery_point=start, now_ms=NOW)
    assert log.log_start_offset == log.log_end_offset == start
    assert os.path.basename(seg_files(log.dir, "log")[0]) == f"{start:020d}.log"
    for i in range(10):
        r = log.append(make_batch(2, 100, seed=i), now_ms=NOW)
        assert r.base_offset == start + 2 * i
    assert log.log_end_offset == start + 20 and len(log.segments) > 1
    for off in range(start, start + 20):
        b = RecordBatch(bytes(log.read(off, 1)))
        assert b.base_offset <= off <= b.last_offset
    log.close()
    again = PartitionLog.open(log.dir, LogConfig(segment_bytes=600), now_ms=NOW)  # full recovery
    assert again.log_start_offset == start and again.log_end_offset == start + 20


def test_empty_partition(tmp_path):
    log = open_log(tmp_path)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    assert log.read(0, 100).size == 0
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 100)
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp_offset() is None
    assert log.delete_old_segments(NOW) == 0
    assert log.truncate_to(0) == 0
    log.close()
    again = PartitionLog.open(log.dir, LogConfig(), now_ms=NOW)
    assert again.log_end_offset == 0 and len(again.segments) == 1


def test_offset_for_timestamp(tmp_path):
    log = open_log(tmp_path, segment_bytes=800, index_interval_bytes=100)
    stamps = [10, 20, 20, 15, 40, 30, 50, 60, 60, 45, 70]
    for i, ts in enumerate(stamps):
        log.append(make_batch(2, 60, ts=ts, seed=i), now_ms=NOW)  # records ts, ts+1
    # model: first record (offset order) whose timestamp >= target
    recs = [(2 * i + j, ts + j) for i, ts in enumerate(stamps) for j in range(2)]
    for target in range(0, 75):
        want = next(((o, t) for o, t in recs if t >= target), None)
        assert log.offset_for_timestamp(target) == want, target
    assert log.max_timestamp_offset() == (21, 71)
    log.close()
    log = PartitionLog.open(log.dir, log.config, now_ms=NOW)
    assert log.offset_for_timestamp(41) == next((o, t) for o, t in recs if t >= 41)


def test_retention_by_time_and_size(tmp_path):
    cfg = dict(segment_bytes=400, retention_ms=1000)
    log = open_log(tmp_path, **cfg)
    for i in range(6):
        log.append(make_batch(1, 250, ts=NOW + i * 100, seed=i), now_ms=NOW)
    assert len(log.segments) == 6
    assert log.delete_old_segments(NOW + 1300) == 0  # high watermark still 0
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(NOW + 1000) == 0
    assert log.delete_old_segments(NOW + 1150) == 2  # segments with ts NOW, NOW+100
    assert log.log_start_offset == 2
    with pytest.raises(OffsetOutOfRange):
        log.read(1, 100)
    assert log.delete_old_segments(NOW + 1201) == 1
    # everything expired: the active segment goes too, after a roll to an empty one
    assert log.delete_old_segments(NOW + 10_000) == 3
    assert log.log_start_offset == log.log_end_offset == 6 and len(log.segments) == 1
    assert log.append(make_batch(1), now_ms=NOW).base_offset == 6
    # by size
    log = open_log(tmp_path / "s", segment_bytes=400, retention_bytes=700, retention_ms=-1)
    for i in range(6):
        log.append(make_batch(1, 250, seed=i), now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments(NOW)
    # Kafka: delete oldest segments while the log stays at or above retention.bytes
    assert log.size_in_bytes >= 700 > log.size_in_bytes - log.segments[0].size
    assert log.log_start_offset == 3


def test_delete_records_and_truncate(tmp_path):
    log = open_log(tmp_path, segment_bytes=400)
    batches = [make_batch(2, 150, seed=i) for i in range(8)]
    for b in batches:
        log.append(b, now_ms=NOW)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records(3)  # above the high watermark
    log.update_high_watermark(log.log_end_offset)
    nseg = len(log.segments)
    assert log.delete_records(5) == 5
    assert len(log.segments) < nseg
    assert RecordBatch(bytes(log.read(5, 1))).base_offset == 4  # the batch holding 5
    with pytest.raises(OffsetOutOfRange):
        log.read(4, 100)
    assert log.truncate_to(11) == 10  # the batch 10..11 goes whole
    assert log.high_watermark == 10
    assert read_all(log, 5)[-1] == stored(batches[4], 8)
    assert log.append(batches[7], now_ms=NOW).base_offset == 10
    assert log.truncate_to(2) == 2  # below the log start offset: restart there, empty
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (2, 2, 1)
    assert log.append(batches[0], now_ms=NOW).base_offset == 2


def test_region_survives_segment_deletion(tmp_path):
    log = open_log(tmp_path, segment_bytes=300, retention_ms=0)
    b0 = make_batch(1, 250, ts=1, seed=0)
    log.append(b0, now_ms=NOW)
    log.append(make_batch(1, 250, ts=2, seed=1), now_ms=NOW)
    data = log.read(0, 1 << 20)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(NOW) == 2
    assert not os.path.exists(os.path.join(log.dir, f"{0:020d}.log"))
    assert bytes(data) == stored(b0, 0)  # the unlinked file is still readable
    log.close()
    assert bytes(data) == stored(b0, 0)


def test_flush_policy(tmp_path):
    # the append says a flush is due; the caller runs it (off the event loop)
    log = open_log(tmp_path, flush_messages=3)
    log.append(make_batch(2), now_ms=NOW)
    assert log.recovery_point == 0 and not log.flush_wanted
    log.append(make_batch(2), now_ms=NOW)
    assert log.flush_wanted and log.recovery_point == 0
    log.flush(now_ms=NOW)
    assert log.recovery_point == 4 and not log.flush_wanted
    log = open_log(tmp_path / "ms", flush_ms=100)
    log.append(make_batch(1), now_ms=NOW + 50)
    assert not log.flush_wanted
    log.append(make_batch(1), now_ms=NOW + 100)
    assert log.flush_wanted
    log.flush(now_ms=NOW + 100)
    assert log.recovery_point == 2
    # rolled segments: flushed by the log manager's periodic pass (LogManager.plan_flush, whose
    # DiskWork the broker runs in a worker thread), as Kafka flushes a rolled segment
    from kwire.log.manager import LogManager

    m = LogManager(str(tmp_path / "f"), LogConfig(fsync_per_append=True, segment_bytes=200), now_ms=NOW)
    log = m.create("t", 0)
    for i in range(3):
        log.append(make_batch(1, 150), now_ms=NOW)
    assert log.recovery_point == 0 and len(log.segments) == 3
    work = m.plan_flush(NOW)
    assert work.jobs
    work.run()
    m.finish(work)
    assert log.recovery_point == 2   # the rolled segments, not the active one
    assert not m.plan_flush(NOW).jobs
    m.close()


def test_flush_leaves_what_was_appended_meanwhile_unflushed(tmp_path, monkeypatch):
    """The flush counter race (issue 31): a flush runs in a worker thread while the loop
    appends; what it did not sync stays unflushed (Kafka's unflushedMessages, log end offset
    minus recovery point), where a counter the flush reset to 0 forgot it."""
    from kwire.log.manager import LogManager
    from kwire.log.segment import LogSegment

    log = open_log(tmp_path, flush_messages=3)
    log.append(make_batch(3), now_ms=NOW)
    assert log.unflushed_messages == 3 and log.flush_wanted
    orig = LogSegment.flush
    appended = []

    def flush_then_append(seg, *args, **kwargs):   # the loop's append during the worker's flush
        orig(seg, *args, **kwargs)
        if not appended:
            appended.append(log.append(make_batch(3), now_ms=NOW))
    monkeypatch.setattr(LogSegment, "flush", flush_then_append)
    log.flush(now_ms=NOW)
    assert appended and (log.recovery_point, log.log_end_offset) == (3, 6)
    assert log.unflushed_messages == 3 and log.flush_wanted
    monkeypatch.undo()
    log.flush(now_ms=NOW)
    assert log.unflushed_messages == 0 and not log.flush_wanted
    log.close()
    # the periodic pass's flush (LogManager.plan_flush): planned on the loop, run in a thread,
    # committed on the loop, with an append between the plan and the commit
    m = LogManager(str(tmp_path / "m"), LogConfig(flush_messages=3), now_ms=NOW)
    log = m.create("t", 0)
    log.append(make_batch(3), now_ms=NOW)
    work = m.plan_flush(NOW)
    log.append(make_batch(3), now_ms=NOW)
    work.run()
    m.finish(work)
    assert (log.recovery_point, log.unflushed_messages, log.flush_wanted) == (3, 3, True)
    m.close()


def test_read_range_takes_every_segment_at_once(tmp_path):
    """read_range (a coordinator's load, kwire.share.coordinator): one region per segment,
    from the batch holding ``start`` to the last whole batch below ``end``."""
    log = open_log(tmp_path, segment_bytes=300)
    for i in range(20):
        log.append(build_batch([(b"k%d" % i, b"v" * 40, None, NOW), (b"x", b"y", None, NOW)]), now_ms=NOW)
    assert len(log.segments) > 3

    def offsets(data):
        return [r.base_offset for r in iter_batches(b"".join(bytes(x) for x in data.regions))]

    whole = log.read_range(0, log.log_end_offset)
    assert len(whole.regions) == len(log.segments) and whole.size == sum(s.size for s in log.segments)
    assert offsets(whole) == list(range(0, 40, 2))
    assert offsets(log.read_range(5, 13)) == [4, 6, 8, 10]   # from the batch holding 5; 12-13 not whole below 13
    assert offsets(log.read_range(0, 100)) == list(range(0, 40, 2))   # end capped at the log end
    assert log.read_range(40, 50).size == 0 and log.read_range(7, 7).size == 0


# -- the high watermark's one setter (Kafka's UnifiedLog.updateHighWatermark): log start <= HW <= LEO

def _log_with(tmp_path, n: int):
    log = PartitionLog.open(str(tmp_path / "hw-0"), LogConfig(), now_ms=0)
    for i in range(n):
        log.append(build_batch([(None, b"v%d" % i)]), now_ms=0)
    return log


def test_high_watermark_is_set_only_through_update_high_watermark(tmp_path):
    log = _log_with(tmp_path, 3)
    with pytest.raises(AttributeError):
        log.high_watermark = 2   # a plain assignment would skip the invariant
    assert log.update_high_watermark(2) == 2 and log.high_watermark == 2


def test_high_watermark_above_the_log_end_is_clamped_to_it(tmp_path):
    log = _log_with(tmp_path, 3)
    assert log.update_high_watermark(10) == 3 and log.high_watermark == log.log_end_offset == 3


def test_high_watermark_below_the_log_start_is_raised_to_it(tmp_path):
    log = _log_with(tmp_path, 5)
    log.update_high_watermark(5)
    log.delete_records(4)
    assert log.update_high_watermark(1) == 4 and log.high_watermark == log.log_start_offset == 4


def test_truncation_takes_the_high_watermark_down_with_the_log_end(tmp_path):
    log = _log_with(tmp_path, 5)
    log.update_high_watermark(5)
    log.truncate_to(2)
    assert log.high_watermark == log.log_end_offset == 2
    log.truncate_fully_and_start_at(7)
    assert log.log_start_offset == log.high_watermark == log.log_end_offset == 7


def test_tail_reads_start_at_the_appended_batch_and_survive_truncation(tmp_path, monkeypatch):
    """A consumer tailing the log fetches at the offset the last append started at: the read
    starts at that batch (LogSegment's append hints), not at the sparse index entry; after a
    truncation the hints go, and a re-append at the same offsets (other batch sizes) reads
    its own bytes."""
    from kwire.log import segment as seg_mod

    log = open_log(tmp_path, index_interval_bytes=1 << 20)   # one index entry: every scan starts at 0
    batches = [make_batch(1 + i % 3, 40 + 7 * i, seed=i) for i in range(40)]
    bases = []
    for b in batches:
        bases.append(log.append(b, now_ms=NOW).base_offset)
    scanned = []
    orig = seg_mod.LogSegment.scan_headers

    def counting(self, position, end):
        scanned.append(position)
        return orig(self, position, end)

    monkeypatch.setattr(seg_mod.LogSegment, "scan_headers", counting)
    for i in range(len(batches) - seg_mod._HINTS, len(batches)):   # the hinted tail
        scanned.clear()
        assert bytes(log.read(bases[i], 1 << 20)) == b"".join(stored(b, o) for b, o in zip(batches[i:], bases[i:]))
        assert scanned and scanned[0] > 0   # started at the batch, not at position 0
    scanned.clear()
    assert bytes(log.read(bases[0] + 1, 1 << 20))[:0] == b""   # mid-batch / old offsets: the index path
    assert scanned[0] == 0
    monkeypatch.undo()
    # cut the log back and write other batches at the same offsets: the old positions must not be used
    cut = bases[30]
    log.truncate_to(cut)
    again = [make_batch(4, 400 + i, seed=100 + i) for i in range(10)]   # other sizes and offset spans
    new_bases = [log.append(b, now_ms=NOW).base_offset for b in again]
    assert new_bases[0] == cut
    for off in range(cut, log.log_end_offset):   # every offset, old batch starts among them
        i = (off - cut) // 4
        assert bytes(log.read(off, 1 << 20)) == b"".join(stored(b, o) for b, o in zip(again[i:], new_bases[i:]))


def test_a_rolled_segment_keeps_no_append_hints_and_reads_from_its_index(tmp_path):
    """Only the active segment remembers where its last appends began (a few hundred bytes);
    a rolled one reads through its index, and every offset still reads its own batch."""
    log = open_log(tmp_path, segment_bytes=2000)
    batches = [make_batch(1, 300, seed=i) for i in range(12)]
    bases = [log.append(b, now_ms=NOW).base_offset for b in batches]
    assert len(log.segments) > 2
    assert all(not seg._hints for seg in log.segments[:-1])
    assert 0 < len(log.segments[-1]._hints) <= 4
    for i, base in enumerate(bases):
        assert RecordBatch(bytes(log.read(base, 1))).bytes() == stored(batches[i], base)
