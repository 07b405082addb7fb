"""The partition log keeps its leader epoch cache true: random appends (leader and follower
shaped), truncations, log-start moves, full truncations, clean restarts, crashes and lost
checkpoint files, checked after every step against the epochs the log's batches carry."""
import os
import shutil
import tempfile

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kwire.codec.records import build_batch
from kwire.log.config import LogConfig
from kwire.log.leader_epoch import CHECKPOINT_FILE
from kwire.log.partition_log import PartitionLog
from kwire.log.validator import REPLICATION

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=300, retention_ms=-1)


def make(n, epoch, base=0):
    return build_batch([(b"k", b"v%d" % i, [], NOW + i) for i in range(n)], base_offset=base,
                       partition_leader_epoch=epoch)


def expected_entries(batches, lso):
    """Kafka's cache, derived from the batches: the first offset of each epoch, the entry
    covering the log start offset moved to it."""
    entries = []
    for base, _count, epoch in batches:
        if epoch >= 0 and (not entries or entries[-1][0] != epoch):
            entries.append((epoch, base))
    below = [e for e in entries if e[1] <= lso]
    if below:
        entries = [(below[-1][0], lso)] + [e for e in entries if e[1] > lso]
    return entries


class LogWithEpochs(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="kwire-epoch-log-")
        self.path = os.path.join(self.tmp, "t-0")
        self.log = PartitionLog.open(self.path, CONFIG, now_ms=NOW)
        self.batches = []   # (base offset, record count, epoch)
        self.lso = 0
        self.epoch = 0

    def teardown(self):
        try:
            self.log.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def leo(self):
        return self.batches[-1][0] + self.batches[-1][1] if self.batches else self.log.log_end_offset

    @rule(n=st.integers(1, 4), bump=st.sampled_from([0, 0, 0, 1, 2]))
    def leader_append(self, n, bump):
        self.epoch += bump
        res = self.log.append(make(n, -1), now_ms=NOW, leader_epoch=self.epoch)
        self.batches.append((res.base_offset, n, self.epoch))

    @rule(shape=st.lists(st.tuples(st.integers(1, 3), st.sampled_from([0, 0, 1, 2])), min_size=1, max_size=3))
    def follower_append(self, shape):
        data = b""
        base = self.log.log_end_offset
        new = []
        for n, bump in shape:
            self.epoch += bump
            data += make(n, self.epoch, base)
            new.append((base, n, self.epoch))
            base += n
        self.log.append(data, now_ms=NOW, origin=REPLICATION)
        self.batches += new

    @rule(n=st.integers(1, 3))
    def append_without_epoch(self, n):
        res = self.log.append(make(n, -1), now_ms=NOW)
        self.batches.append((res.base_offset, n, -1))

    @rule(data=st.data())
    def truncate_to(self, data):
        offset = data.draw(st.integers(self.lso, self.log.log_end_offset))
        self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b[0] + b[1] - 1 < offset]
        self.lso = min(self.lso, self.log.log_end_offset)

    @rule(data=st.data())
    def delete_records(self, data):
        self.log.update_high_watermark(self.log.log_end_offset)
        offset = data.draw(st.integers(self.lso, self.log.log_end_offset))
        self.lso = self.log.delete_records(offset, now_ms=NOW)

    @rule(gap=st.integers(0, 5))
    def truncate_fully(self, gap):
        start = self.log.log_end_offset + gap
        self.log.truncate_fully_and_start_at(start, now_ms=NOW)
        self.batches = []
        self.lso = start

    @rule(lose_checkpoint=st.booleans())
    def restart(self, lose_checkpoint):
        self.log.close()
        if lose_checkpoint:
            try:
                os.unlink(os.path.join(self.path, CHECKPOINT_FILE))
            except FileNotFoundError:
                pass
        self.log = PartitionLog.open(self.path, CONFIG, now_ms=NOW, log_start_offset=self.lso,
                                     recovery_point=self.log.log_end_offset, clean=True)

    @rule(flush=st.booleans())
    def crash(self, flush):
        """No close: whatever the checkpoint file holds (possibly stale after a log-start
        move, or without the epochs appended since the last flush) is what the next open
        finds; recovery scans the segments from the recovery point."""
        if flush:
            self.log.flush()
        self.log = PartitionLog.open(self.path, CONFIG, now_ms=NOW, log_start_offset=self.lso,
                                     recovery_point=self.log.recovery_point)

    @precondition(lambda self: self.log.log_end_offset > self.lso)
    @rule()
    def corrupt_checkpoint(self):
        with open(os.path.join(self.path, CHECKPOINT_FILE), "wb") as f:
            f.write(b"0\n7\n1 ")
        self.log.close()
        self.log = PartitionLog.open(self.path, CONFIG, now_ms=NOW, log_start_offset=self.lso,
                                     recovery_point=self.log.log_end_offset, clean=True)

    @invariant()
    def cache_matches_the_batches(self):
        log = self.log
        assert log.log_start_offset == self.lso
        leo = log.log_end_offset
        got = log.leader_epoch_cache.entries()
        want = expected_entries(self.batches, self.lso)
        # every entry inside the log is the one its batches say; an entry may start at the
        # log end (an epoch whose records were all removed: Kafka's caches differ there by
        # the path taken, e.g. DeleteRecords up to the end keeps it, a truncation drops it)
        if all(e >= 0 for _, _, e in self.batches):
            assert [e for e in got if e[1] < leo] == [e for e in want if e[1] < leo]
        # with batches that carry no epoch in between, what counts: every record that has
        # an epoch is in it by the cache, and each epoch's entry starts at or before its
        # first record (before: the entry that covers the log start offset, moved there)
        first = {}
        for base, n, e in self.batches:
            for o in range(max(base, self.lso), base + n):
                if e >= 0:
                    assert log.leader_epoch_cache.epoch_for_offset(o) == e, (o, e, got)
                    first.setdefault(e, o)
        starts = dict(got)
        assert all(e in starts and starts[e] <= o for e, o in first.items()), (first, got)
        assert all(self.lso <= e[1] <= leo for e in got) or not got
        # OffsetForLeaderEpoch answers follow from the entries
        for epoch in range(-1, self.epoch + 2):
            answer = log.end_offset_for_epoch(epoch)
            later = [e for e in got if e[0] > epoch]
            upto = [e for e in got if e[0] <= epoch]
            if epoch < 0 or not got or not later and got[-1][0] != epoch:
                assert answer is None
            elif got[-1][0] == epoch:
                assert answer == (epoch, leo)
            else:
                assert answer == ((upto[-1][0] if upto else epoch), later[0][1])

    @invariant()
    def the_file_covers_the_recovery_point(self):
        """What a crash now would find: the file's entries below the recovery point are the
        cache's (the records above it are recovered from their headers)."""
        from kwire.log.leader_epoch import read_checkpoint

        rp = self.log.recovery_point
        try:
            on_disk = read_checkpoint(os.path.join(self.path, CHECKPOINT_FILE))
        except ValueError:
            return   # torn on purpose by corrupt_checkpoint until the next write: rebuilt
        if on_disk is None:
            return
        mem = [e for e in self.log.leader_epoch_cache.entries() if e[1] < rp and e[1] > self.lso]
        assert [e for e in on_disk if self.lso < e[1] < rp] == mem


TestLogWithEpochs = LogWithEpochs.TestCase
TestLogWithEpochs.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
