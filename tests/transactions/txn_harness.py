"""A transaction coordinator on a fake clock, with a writer that records (and may hold back or
fail) appends to an in-memory __transaction_state, and a marker sink that keeps the jobs."""
from __future__ import annotations

import itertools

from kwire.clock import FakeClock
from kwire.errors import ErrorCode
from kwire.transactions import records as R
from kwire.transactions.coordinator import TransactionCoordinator
from kwire.transactions.state_manager import TransactionConfig

E = ErrorCode


class LogWriter:
    def __init__(self):
        self.log: list[tuple[int, bytes, bytes | None]] = []   # (partition, key, value)
        self.hold = False
        self.fail_with: ErrorCode | None = None
        self.held: list = []

    def __call__(self, partition, records, done):
        if self.hold:
            self.held.append((partition, records, done))
            return
        self._finish(partition, records, done)

    def _finish(self, partition, records, done, error=None):
        error = error if error is not None else self.fail_with
        if error is not None:
            done(error)
            return
        for k, v in records:
            self.log.append((partition, k, v))
        done(E.NONE)

    def release(self, error=None):
        held, self.held = self.held, []
        for args in held:
            self._finish(*args, error=error)

    def states(self, tid):
        """The states written for ``tid``, in order (None for a tombstone)."""
        key = R.key_bytes(tid)
        return [None if v is None else R.decode_value(v).state.state_name
                for _p, k, v in self.log if k == key]


class Harness:
    def __init__(self, **config):
        self.clock = FakeClock()
        self.writer = LogWriter()
        self.ids = itertools.count(1000)
        self.jobs = []
        cfg = TransactionConfig(**config)
        self.coord = TransactionCoordinator(cfg, self.clock, self.writer, lambda: next(self.ids))
        self.coord.send_markers = self.jobs.append

    def init(self, tid, timeout_ms=60_000, pid=-1, epoch=-1):
        p = self.coord.init_producer_id(tid, timeout_ms, pid, epoch)
        assert p.done
        return p.result

    def add(self, tid, pid, epoch, *tps):
        p = self.coord.add_partitions(tid, pid, epoch, tps)
        assert p.done
        return p.result

    def end(self, tid, pid, epoch, committed):
        p = self.coord.end_txn(tid, pid, epoch, committed)
        assert p.done
        return p.result

    def write_markers(self, job=None):
        """The marker sender's part: every partition of the job (default: all jobs) written."""
        jobs = [job] if job is not None else list(self.jobs)
        for j in jobs:
            for tp in sorted(j.partitions):
                self.coord.marker_written(j, tp)
            if j in self.jobs:
                self.jobs.remove(j)

    def md(self, tid):
        return self.coord.state.state_of(tid)[2]

    def advance(self, ms):
        self.clock.advance(ms)
        return self.coord.tick()
