"""The leader epoch cache (kwire.log.leader_epoch): Kafka's LeaderEpochFileCacheTest cases in
our words, the checkpoint file, a model-based state machine, and the partition log keeping
the cache true through appends, truncations, log-start moves, restarts and recovery."""
import os

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kwire.codec.records import build_batch
from kwire.errors import KafkaError
from kwire.log.config import LogConfig
from kwire.log.leader_epoch import (
    CHECKPOINT_FILE,
    LeaderEpochCache,
    LeaderEpochCheckpointError,
    format_checkpoint,
    read_checkpoint,
)
from kwire.log.partition_log import PartitionLog
from kwire.log.validator import REPLICATION

UNDEF = (-1, -1)
NOW = 1_700_000_000_000


def cache(tmp_path, entries=()):
    return LeaderEpochCache(str(tmp_path / CHECKPOINT_FILE), entries)


# --- assign -----------------------------------------------------------------------------------
def test_assign_adds_new_epochs_and_writes_the_file(tmp_path):
    c = cache(tmp_path)
    assert c.assign(2, 10)
    assert c.assign(3, 20)
    assert c.entries() == [(2, 10), (3, 20)]
    assert c.latest_epoch == 3
    assert read_checkpoint(c.path) == [(2, 10), (3, 20)]


def test_assign_of_the_latest_epoch_at_a_later_offset_changes_nothing(tmp_path):
    c = cache(tmp_path, [(2, 10)])
    assert not c.assign(2, 15)
    assert c.entries() == [(2, 10)]
    assert not os.path.exists(c.path)  # nothing changed: nothing written


def test_assign_of_the_latest_epoch_at_an_earlier_offset_moves_it(tmp_path):
    c = cache(tmp_path, [(1, 0), (2, 10)])
    assert c.assign(2, 5)
    assert c.entries() == [(1, 0), (2, 5)]


def test_a_smaller_epoch_removes_the_entries_it_contradicts(tmp_path):
    # Kafka's shouldNotAllowNonMonotonicEpochs / maybeTruncateNonMonotonicEntries
    c = cache(tmp_path, [(1, 0), (3, 10), (5, 20)])
    assert c.assign(4, 25)
    assert c.entries() == [(1, 0), (3, 10), (4, 25)]
    assert c.assign(2, 12)
    assert c.entries() == [(1, 0), (2, 12)]


def test_a_larger_epoch_at_a_smaller_offset_removes_later_starts(tmp_path):
    c = cache(tmp_path, [(1, 0), (2, 10)])
    assert c.assign(3, 8)
    assert c.entries() == [(1, 0), (3, 8)]


@pytest.mark.parametrize("epoch, offset", [(-1, 0), (0, -1)])
def test_assign_refuses_negative_entries(tmp_path, epoch, offset):
    with pytest.raises(ValueError):
        cache(tmp_path).assign(epoch, offset)


# --- end offsets ------------------------------------------------------------------------------
def test_end_offset_of_the_latest_epoch_is_the_log_end_offset(tmp_path):
    c = cache(tmp_path, [(2, 6)])
    assert c.end_offset_for(2, 11) == (2, 11)


def test_end_offset_of_an_earlier_epoch_is_the_start_of_the_next(tmp_path):
    c = cache(tmp_path, [(1, 0), (2, 6), (4, 15)])
    assert c.end_offset_for(1, 20) == (1, 6)
    assert c.end_offset_for(2, 20) == (2, 15)


def test_an_epoch_between_known_ones_answers_the_one_below(tmp_path):
    # Kafka's shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch
    c = cache(tmp_path, [(1, 0), (2, 6), (4, 15)])
    assert c.end_offset_for(3, 20) == (2, 15)


def test_an_epoch_below_the_first_answers_the_first_start_offset(tmp_path):
    c = cache(tmp_path, [(5, 11), (6, 12)])
    assert c.end_offset_for(4, 20) == (4, 11)


def test_undefined_answers(tmp_path):
    c = cache(tmp_path, [(1, 0), (2, 6)])
    assert c.end_offset_for(-1, 20) == UNDEF   # an undefined epoch asked for
    assert c.end_offset_for(3, 20) == UNDEF    # above every known epoch
    assert cache(tmp_path).end_offset_for(0, 0) == UNDEF   # nothing known


def test_epoch_for_offset(tmp_path):
    c = cache(tmp_path, [(1, 0), (2, 6), (4, 15)])
    assert [c.epoch_for_offset(o) for o in (0, 5, 6, 14, 15, 99)] == [1, 1, 2, 2, 4, 4]
    assert cache(tmp_path, [(1, 5)]).epoch_for_offset(4) is None


# --- truncations ------------------------------------------------------------------------------
def test_truncate_from_end_removes_entries_starting_at_or_after_it(tmp_path):
    c = cache(tmp_path, [(2, 6), (3, 8), (4, 11)])
    assert c.truncate_from_end(8)
    assert c.entries() == [(2, 6)]
    assert c.latest_epoch == 2 and c.dirty


def test_truncate_from_end_beyond_the_last_start_changes_nothing(tmp_path):
    c = cache(tmp_path, [(2, 6), (3, 8)])
    assert not c.truncate_from_end(9)
    assert c.entries() == [(2, 6), (3, 8)]


def test_truncate_from_end_to_before_everything_empties_it(tmp_path):
    c = cache(tmp_path, [(2, 6), (3, 8)])
    assert c.truncate_from_end(0)
    assert c.entries() == [] and c.latest_epoch == -1


def test_truncate_from_start_keeps_the_covering_entry_moved_to_the_start(tmp_path):
    c = cache(tmp_path, [(2, 6), (3, 8), (4, 11)])
    assert c.truncate_from_start(9)
    assert c.entries() == [(3, 9), (4, 11)]


def test_truncate_from_start_at_an_entry_start_drops_only_earlier_ones(tmp_path):
    c = cache(tmp_path, [(2, 6), (3, 8), (4, 11)])
    assert c.truncate_from_start(8)
    assert c.entries() == [(3, 8), (4, 11)]


def test_truncate_from_start_before_the_first_entry_changes_nothing(tmp_path):
    c = cache(tmp_path, [(2, 6), (3, 8)])
    assert not c.truncate_from_start(5)
    assert not c.truncate_from_start(6)
    assert c.entries() == [(2, 6), (3, 8)]


def test_truncate_from_start_past_the_last_entry_keeps_the_last(tmp_path):
    c = cache(tmp_path, [(2, 6), (3, 8), (4, 11)])
    assert c.truncate_from_start(100)
    assert c.entries() == [(4, 100)]


# --- the file ---------------------------------------------------------------------------------
def test_checkpoint_file_is_kafkas_format(tmp_path):
    c = cache(tmp_path)
    c.assign(0, 0)
    c.assign(3, 1500)
    with open(c.path) as f:
        assert f.read() == "0\n2\n0 0\n3 1500\n"
    again, ok = LeaderEpochCache.load(str(tmp_path))
    assert ok and again.entries() == [(0, 0), (3, 1500)] and again.latest_epoch == 3


def test_truncations_are_written_by_write_if_dirty(tmp_path):
    c = cache(tmp_path, [(1, 0), (2, 5)])
    c.write()
    c.truncate_from_end(5)
    assert read_checkpoint(c.path) == [(1, 0), (2, 5)]   # not yet
    assert c.write_if_dirty()
    assert read_checkpoint(c.path) == [(1, 0)]
    assert not c.write_if_dirty()


@pytest.mark.parametrize("content", [
    b"", b"0\n", b"1\n1\n0 0\n", b"0\n2\n0 0\n", b"0\n1\n0\n", b"0\n1\nx y\n",
    b"0\n2\n3 10\n2 20\n", b"0\n2\n1 10\n2 5\n", b"0\n1\n-1 0\n", b"\xff\xfe", b"0\n1\n1 2 3\n",
])
def test_malformed_files_are_refused(tmp_path, content):
    path = tmp_path / CHECKPOINT_FILE
    path.write_bytes(content)
    with pytest.raises(LeaderEpochCheckpointError):
        read_checkpoint(str(path))
    c, ok = LeaderEpochCache.load(str(tmp_path))
    assert not ok and c.entries() == []


def test_missing_file_reads_as_none(tmp_path):
    assert read_checkpoint(str(tmp_path / CHECKPOINT_FILE)) is None
    assert LeaderEpochCache.load(str(tmp_path))[1] is False


def test_format_round_trips():
    entries = [(0, 0), (7, 12), (9, 10**12)]
    assert format_checkpoint(entries) == b"0\n3\n0 0\n7 12\n9 1000000000000\n"


# --- a model ----------------------------------------------------------------------------------
class EpochModel:
    """The cache's meaning, simply: a list of (epoch, start) pairs with Kafka's rules."""

    def __init__(self):
        self.entries = []

    def assign(self, epoch, offset):
        if self.entries and self.entries[-1][0] == epoch and self.entries[-1][1] <= offset:
            return
        self.entries = [(e, o) for e, o in self.entries if e < epoch and o < offset]
        self.entries.append((epoch, offset))

    def truncate_from_end(self, offset):
        self.entries = [(e, o) for e, o in self.entries if o < offset]

    def truncate_from_start(self, offset):
        below = [(e, o) for e, o in self.entries if o <= offset]
        if below:
            self.entries = [(below[-1][0], offset)] + [(e, o) for e, o in self.entries if o > offset]

    def end_offset_for(self, epoch, leo):
        if epoch == -1 or not self.entries:
            return UNDEF
        if self.entries[-1][0] == epoch:
            return epoch, leo
        higher = [(e, o) for e, o in self.entries if e > epoch]
        lower = [(e, o) for e, o in self.entries if e <= epoch]
        if not higher:
            return UNDEF
        return (lower[-1][0] if lower else epoch), higher[0][1]


class CacheMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self):
        self.cache = LeaderEpochCache(None)
        self.model = EpochModel()

    @rule(epoch=st.integers(0, 12), offset=st.integers(0, 60))
    def assign(self, epoch, offset):
        self.cache.assign(epoch, offset)
        self.model.assign(epoch, offset)

    @rule(offset=st.integers(0, 60))
    def truncate_from_end(self, offset):
        self.cache.truncate_from_end(offset)
        self.model.truncate_from_end(offset)

    @rule(offset=st.integers(0, 60))
    def truncate_from_start(self, offset):
        self.cache.truncate_from_start(offset)
        self.model.truncate_from_start(offset)

    @rule()
    def clear(self):
        self.cache.clear()
        self.model.entries = []

    @invariant()
    def same_entries_and_answers(self):
        if not hasattr(self, "cache"):
            return
        got = self.cache.entries()
        assert got == self.model.entries
        assert all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(got, got[1:]))
        assert self.cache.latest_epoch == (got[-1][0] if got else -1)
        for epoch in range(-1, 14):
            assert self.cache.end_offset_for(epoch, 99) == self.model.end_offset_for(epoch, 99), epoch
        # the file format round-trips whatever the cache holds
        assert read_checkpoint_bytes(format_checkpoint(got)) == got


def read_checkpoint_bytes(data: bytes, _dir=[]):
    import tempfile

    if not _dir:
        _dir.append(tempfile.mkdtemp(prefix="kwire-epoch-model-"))
    path = os.path.join(_dir[0], CHECKPOINT_FILE)
    with open(path, "wb") as f:
        f.write(data)
    return read_checkpoint(path)


TestCacheMachine = CacheMachine.TestCase
TestCacheMachine.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)


# --- the partition log ------------------------------------------------------------------------
def batch(n=1, epoch=-1, seed=0):
    return build_batch([(b"k", f"{seed}:{i}".encode(), [], 1000 + i) for i in range(n)],
                       partition_leader_epoch=epoch)


def open_log(path, **kw):
    return PartitionLog.open(str(path), LogConfig(segment_bytes=kw.pop("segment_bytes", 1 << 20)),
                             now_ms=NOW, **kw)


def fill(log):
    """Offsets 0-2 in epoch 0, 3-6 in epoch 2, 7-8 in epoch 5."""
    log.append(batch(3), now_ms=NOW, leader_epoch=0)
    log.append(batch(2), now_ms=NOW, leader_epoch=2)
    log.append(batch(2), now_ms=NOW, leader_epoch=2)
    log.append(batch(2), now_ms=NOW, leader_epoch=5)


def test_appends_record_each_new_epoch(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 3), (5, 7)]
    assert log.latest_epoch == 5
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)
    assert log.end_offset_for_epoch(2) == (2, 7)
    assert log.end_offset_for_epoch(5) == (5, 9)
    assert log.end_offset_for_epoch(6) is None
    # the file follows at the next flush (off the event loop), before the recovery point moves
    assert not os.path.exists(os.path.join(log.dir, CHECKPOINT_FILE))
    log.flush()
    assert log.recovery_point == 9
    assert read_checkpoint(os.path.join(log.dir, CHECKPOINT_FILE)) == [(0, 0), (2, 3), (5, 7)]
    log.close()


def test_follower_appends_keep_the_leaders_epochs(tmp_path):
    log = open_log(tmp_path / "t-0")
    data = bytearray()
    offset = 0
    for n, e in ((2, 1), (1, 1), (3, 4)):
        b = bytearray(batch(n, epoch=e))
        b[0:8] = offset.to_bytes(8, "big")  # offsets as the leader assigned them
        offset += n
        data += b
    data2 = bytearray(batch(1, epoch=4))
    data2[0:8] = (6).to_bytes(8, "big")
    log.append(bytes(data), now_ms=NOW, origin=REPLICATION)
    log.append(bytes(data2), now_ms=NOW, origin=REPLICATION)
    assert log.leader_epoch_cache.entries() == [(1, 0), (4, 3)]
    assert log.log_end_offset == 7
    # a batch below the log end offset is not the leader's next one: refused, nothing written
    with pytest.raises(KafkaError, match="Unexpected offset"):
        log.append(bytes(data2), now_ms=NOW, origin=REPLICATION)
    assert log.log_end_offset == 7
    log.close()


def test_appends_without_an_epoch_leave_the_cache_alone(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(batch(2), now_ms=NOW)
    assert log.leader_epoch_cache.entries() == []
    assert log.end_offset_for_epoch(0) is None
    log.close()


def test_truncate_to_cuts_the_cache_and_writes_the_file(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    log.truncate_to(5)
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 3)]
    assert read_checkpoint(os.path.join(log.dir, CHECKPOINT_FILE)) == [(0, 0), (2, 3)]
    assert log.end_offset_for_epoch(2) == (2, 5)
    # the follower goes on in a newer epoch after the divergence point
    log.append(batch(1), now_ms=NOW, leader_epoch=6)
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 3), (6, 5)]
    log.truncate_to(3)
    assert log.leader_epoch_cache.entries() == [(0, 0)]
    log.close()


def test_truncate_fully_empties_the_cache(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    log.truncate_fully_and_start_at(40)
    assert log.leader_epoch_cache.entries() == []
    assert read_checkpoint(os.path.join(log.dir, CHECKPOINT_FILE)) == []
    log.append(batch(1), now_ms=NOW, leader_epoch=7)
    assert log.leader_epoch_cache.entries() == [(7, 40)]
    log.close()


def test_delete_records_moves_the_covering_entry(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    log.update_high_watermark(log.log_end_offset)
    log.delete_records(4)
    assert log.leader_epoch_cache.entries() == [(2, 4), (5, 7)]
    log.close()
    again = open_log(tmp_path / "t-0", log_start_offset=4, recovery_point=9, clean=True)
    assert again.leader_epoch_cache.entries() == [(2, 4), (5, 7)]
    again.close()


def test_retention_moves_the_start_of_the_cache(tmp_path):
    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(segment_bytes=100, retention_bytes=230, retention_ms=-1),
                            now_ms=NOW)
    for i in range(6):
        log.append(batch(1, seed=i), now_ms=NOW, leader_epoch=i // 3)
    log.update_high_watermark(log.log_end_offset)
    assert len(log.segments) == 6
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 3)]
    log.delete_old_segments(NOW)
    assert log.log_start_offset == 2   # four one-batch segments kept
    assert log.leader_epoch_cache.entries() == [(0, 2), (1, 3)]
    log.close()


def test_restart_keeps_the_cache(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    log.close()
    again = open_log(tmp_path / "t-0", recovery_point=9, clean=True)
    assert again.leader_epoch_cache.entries() == [(0, 0), (2, 3), (5, 7)]
    again.close()


def test_a_missing_checkpoint_is_rebuilt_from_the_batches(tmp_path):
    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(segment_bytes=250), now_ms=NOW)
    fill(log)
    assert len(log.segments) > 1
    log.close()
    os.unlink(tmp_path / "t-0" / CHECKPOINT_FILE)
    again = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(segment_bytes=250), now_ms=NOW)
    assert again.leader_epoch_cache.entries() == [(0, 0), (2, 3), (5, 7)]
    assert read_checkpoint(str(tmp_path / "t-0" / CHECKPOINT_FILE)) == [(0, 0), (2, 3), (5, 7)]
    again.close()


def test_a_corrupt_checkpoint_is_rebuilt_from_the_batches(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    log.close()
    (tmp_path / "t-0" / CHECKPOINT_FILE).write_bytes(b"0\n3\n0 0\n2 3\n5")   # torn
    again = open_log(tmp_path / "t-0", recovery_point=9, clean=True)
    assert again.leader_epoch_cache.entries() == [(0, 0), (2, 3), (5, 7)]
    again.close()


def test_a_stale_checkpoint_is_cut_to_the_log(tmp_path):
    """A crash after a truncation whose file write was lost: the entries past the log end
    are cut at open."""
    log = open_log(tmp_path / "t-0")
    fill(log)
    log.flush()
    path = os.path.join(log.dir, CHECKPOINT_FILE)
    with open(path, "rb") as f:
        stale = f.read()
    log.truncate_to(5)
    log.close()
    with open(path, "wb") as f:
        f.write(stale)
    again = open_log(tmp_path / "t-0", recovery_point=5, clean=True)
    assert again.leader_epoch_cache.entries() == [(0, 0), (2, 3)]
    again.close()


def test_a_torn_log_tail_leaves_a_consistent_cache(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    log.close()
    seg = os.path.join(tmp_path / "t-0", f"{0:020d}.log")
    size = os.path.getsize(seg)
    with open(seg, "r+b") as f:
        f.truncate(size - 5)   # the last batch (epoch 5, offsets 7-8) torn
    again = open_log(tmp_path / "t-0")   # unclean: recovery scans and cuts the tail
    assert again.log_end_offset == 7
    assert again.leader_epoch_cache.entries() == [(0, 0), (2, 3)]
    assert again.end_offset_for_epoch(2) == (2, 7)
    again.close()


def test_becoming_leader_assigns_the_new_epoch_at_the_log_end(tmp_path):
    log = open_log(tmp_path / "t-0")
    fill(log)
    assert log.maybe_assign_epoch_start_offset(7)
    assert not log.maybe_assign_epoch_start_offset(7)
    assert log.leader_epoch_cache.entries() == [(0, 0), (2, 3), (5, 7), (7, 9)]
    assert read_checkpoint(os.path.join(log.dir, CHECKPOINT_FILE))[-1] == (7, 9)
    # epoch 5 now ends where 7 begins; the first append in epoch 7 adds nothing
    assert log.end_offset_for_epoch(5) == (5, 9)
    log.append(batch(2), now_ms=NOW, leader_epoch=7)
    assert log.leader_epoch_cache.entries()[-1] == (7, 9)
    assert log.end_offset_for_epoch(7) == (7, 11)
    log.close()


def test_a_crash_before_the_file_is_written_recovers_the_epochs_from_the_batches(tmp_path):
    """Appends in new epochs after the last flush: the file does not have them yet, the
    recovery from the recovery point assigns them again from the batch headers."""
    log = open_log(tmp_path / "t-0")
    log.append(batch(3), now_ms=NOW, leader_epoch=0)
    log.flush()
    rp = log.recovery_point
    log.append(batch(2), now_ms=NOW, leader_epoch=2)
    log.append(batch(2), now_ms=NOW, leader_epoch=5)
    assert read_checkpoint(os.path.join(log.dir, CHECKPOINT_FILE)) == [(0, 0)]
    # no close: a crash
    again = open_log(tmp_path / "t-0", recovery_point=rp)
    assert again.leader_epoch_cache.entries() == [(0, 0), (2, 3), (5, 5)]
    assert read_checkpoint(os.path.join(again.dir, CHECKPOINT_FILE)) == [(0, 0), (2, 3), (5, 5)]
    again.close()


def test_the_log_managers_flush_writes_the_file_off_the_owner_thread(tmp_path):
    """LogManager's planned flush (its DiskWork runs in a worker thread on the broker) writes
    the epochs of the records below the recovery point it commits."""
    import threading

    from kwire.log.manager import LogManager

    m = LogManager(str(tmp_path), LogConfig(segment_bytes=200), now_ms=NOW)
    log = m.create("t", 0)
    for i in range(4):
        log.append(batch(1, seed=i), now_ms=NOW, leader_epoch=i)
    assert len(log.segments) > 1
    path = os.path.join(log.dir, CHECKPOINT_FILE)
    assert not os.path.exists(path)
    work = m.plan_flush(NOW)
    worker = threading.Thread(target=work.run)
    worker.start()
    worker.join()
    m.finish(work)
    rp = log.recovery_point
    assert rp > 0
    assert [e for e in read_checkpoint(path) if e[1] < rp] == [e for e in log.leader_epoch_cache.entries()
                                                               if e[1] < rp]
    m.close()
    assert read_checkpoint(path) == [(0, 0), (1, 1), (2, 2), (3, 3)]
