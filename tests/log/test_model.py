"""Model-based test: random appends, rolls, reads, retention, DeleteRecords, truncations and
reopens (clean or crashed) against an in-memory model of acknowledged batches."""
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kwire.codec.records import RecordBatch, iter_batches
from kwire.log import LogConfig, OffsetOutOfRange, PartitionLog

from .logutil import make_batch, stored

NOW = 1_700_000_000_000
CFG = LogConfig(segment_bytes=1500, index_interval_bytes=150, segment_index_bytes=48,
                retention_ms=-1, retention_bytes=4000)


class LogMachine(RuleBasedStateMachine):
    @initialize(start=st.sampled_from([0, 7, (1 << 40) - 3]))
    def setup(self, start):
        self.dir = tempfile.mkdtemp(prefix="kwire-log-model-")
        self.log = PartitionLog.open(self.dir + "/t-0", CFG, log_start_offset=start,
                                     recovery_point=start, now_ms=NOW)
        self.batches: dict[int, bytes] = {}  # base offset -> stored bytes
        self.lso = self.leo = start
        self.seed = 0

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _visible(self):
        return [b for o, b in sorted(self.batches.items()) if RecordBatch(b).last_offset >= self.lso]

    @rule(sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 700)), min_size=1, max_size=3))
    def append(self, sizes):
        raw = []
        for n, size in sizes:
            self.seed += 1
            raw.append(make_batch(n, size, ts=NOW + self.seed, seed=self.seed))
        res = self.log.append(b"".join(raw), now_ms=NOW)
        assert res.base_offset == self.leo
        off = self.leo
        for b in raw:
            self.batches[off] = stored(b, off)
            off += RecordBatch(b).record_count
        assert res.last_offset == off - 1
        self.leo = off
        self.log.update_high_watermark(self.leo)

    @rule()
    def roll(self):
        self.log.roll(NOW)

    @rule(data=st.data(), max_bytes=st.integers(1, 5000))
    def read(self, data, max_bytes):
        offset = data.draw(st.integers(self.lso, self.leo))
        got = bytes(self.log.read(offset, max_bytes))
        want = [b for b in self._visible() if RecordBatch(b).last_offset >= offset]
        if not want:
            assert got == b""
            return
        views = list(iter_batches(got))
        assert views, "min_one: at least one batch"
        assert len(views) == 1 or len(got) <= max_bytes
        assert [v.bytes() for v in views] == want[: len(views)]

    @rule(data=st.data())
    def read_out_of_range(self, data):
        offset = data.draw(st.sampled_from([self.lso - 1, self.leo + 1]))
        try:
            self.log.read(offset, 100)
        except OffsetOutOfRange:
            return
        assert offset < 0, "read outside [lso, leo] must raise"

    @rule()
    def retention(self):
        before = self.log.size_in_bytes
        self.log.delete_old_segments(NOW)
        assert self.log.log_start_offset >= self.lso
        self.lso = self.log.log_start_offset
        if before > CFG.retention_bytes:
            assert self.log.size_in_bytes - self.log.segments[0].size < CFG.retention_bytes or len(self.log.segments) == 1
        self.batches = {o: b for o, b in self.batches.items() if RecordBatch(b).last_offset >= self.lso}

    @rule(data=st.data())
    def delete_records(self, data):
        offset = data.draw(st.integers(self.lso, self.leo))
        assert self.log.delete_records(offset) == max(offset, self.lso)
        self.lso = max(offset, self.lso)
        self.batches = {o: b for o, b in self.batches.items() if RecordBatch(b).last_offset >= self.lso}

    @rule(data=st.data())
    def truncate(self, data):
        offset = data.draw(st.integers(max(self.lso - 2, 0), self.leo))
        new_leo = self.log.truncate_to(offset)
        if offset < self.lso:
            self.batches, self.lso, self.leo = {}, offset, offset
        else:
            cut = [o for o, b in self.batches.items() if RecordBatch(b).last_offset >= offset]
            if cut:
                self.leo = min(cut)
                for o in cut:
                    del self.batches[o]
                self.lso = min(self.lso, self.leo)
        assert new_leo == self.leo

    @rule(clean=st.booleans())
    def reopen(self, clean):
        log = self.log
        if clean:
            log.close()
            self.log = PartitionLog.open(log.dir, CFG, recovery_point=log.recovery_point,
                                         log_start_offset=log.log_start_offset, clean=True, now_ms=NOW)
        else:  # a crash: nothing closed, indexes not written; recover from the recovery point
            self.log = PartitionLog.open(log.dir, CFG, recovery_point=log.recovery_point,
                                         log_start_offset=log.log_start_offset, now_ms=NOW)
        self.log.update_high_watermark(self.log.log_end_offset)

    @precondition(lambda self: self.leo > self.lso)
    @rule(data=st.data())
    def timestamps(self, data):
        recs = [(r.offset, r.timestamp) for b in self._visible() for r in RecordBatch(b).records()
                if r.offset >= self.lso]
        target = data.draw(st.integers(NOW - 1, NOW + self.seed + 5))
        assert self.log.offset_for_timestamp(target) == next(((o, t) for o, t in recs if t >= target), None)

    @invariant()
    def offsets_and_contents(self):
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.leo
        assert self.log.log_start_offset == self.lso
        got = []
        off = self.lso
        while off < self.leo:
            chunk = bytes(self.log.read(off, 1 << 20))
            for b in iter_batches(chunk):
                got.append(b.bytes())
                off = b.next_offset
        assert got == self._visible()


TestLogModel = LogMachine.TestCase
TestLogModel.settings = settings(max_examples=int(os.environ.get("KWIRE_LOG_MODEL_EXAMPLES", "60")), stateful_step_count=40, deadline=None,
                                 suppress_health_check=[HealthCheck.too_slow])
