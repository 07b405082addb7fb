"""A coordinator on a fake clock with a writer that records (and may hold back) appends."""
from __future__ import annotations

import itertools

from kwire.clock import FakeClock
from kwire.errors import ErrorCode
from kwire.groups import GroupConfig, GroupCoordinator, Pending
from kwire.codec import consumer_protocol as cp

E = ErrorCode


class LogWriter:
    """Appends to an in-memory __consumer_offsets; ``hold`` defers completions."""

    def __init__(self):
        self.log: list[tuple[int, bytes, bytes | None]] = []  # (partition, key, value)
        self.hold = False
        self.fail_with: ErrorCode | None = None
        self.held: list = []

    def __call__(self, partition, records, done):
        if self.hold:
            self.held.append((partition, records, done))
            return
        self._finish(partition, records, done)

    def _finish(self, partition, records, done):
        if self.fail_with is not None:
            done(self.fail_with)
            return
        for k, v in records:
            self.log.append((partition, k, v))
        done(E.NONE)

    def release(self):
        held, self.held = self.held, []
        for args in held:
            self._finish(*args)


class Harness:
    def __init__(self, **config):
        config.setdefault("group_initial_rebalance_delay_ms", 0)
        config.setdefault("offsets_topic_num_partitions", 1)
        self.config = GroupConfig(**config)
        self.clock = FakeClock()
        self.writer = LogWriter()
        counter = itertools.count(1)
        self.coord = GroupCoordinator(self.config, self.clock, self.writer,
                                      new_uuid=lambda: f"u{next(counter)}")

    def advance(self, ms):
        self.clock.advance(ms)
        return self.coord.tick()

    # -- client-like helpers ----------------------------------------------------------------
    def join(self, group, member_id="", *, client_id="c", topics=("t",), protocols=None,
             session=10_000, rebalance=30_000, instance=None, ptype="consumer",
             require_known=True, skip_ok=False) -> Pending:
        if protocols is None:
            protocols = [("range", cp.encode_subscription(cp.Subscription(topics=list(topics)), 0))]
        return self.coord.join_group(
            group, member_id, protocol_type=ptype, protocols=protocols,
            session_timeout_ms=session, rebalance_timeout_ms=rebalance,
            group_instance_id=instance, client_id=client_id, client_host="/127.0.0.1",
            require_known_member_id=require_known, supports_skip_assignment=skip_ok)

    def join_new(self, group, **kw) -> Pending:
        """The v4+ two-step join: MEMBER_ID_REQUIRED, then rejoin with the given id."""
        p = self.join(group, **kw)
        assert p.done and p.result.error == E.MEMBER_ID_REQUIRED
        return self.join(group, p.result.member_id, **kw)

    def sync(self, group, gen, member_id, assignments=(), **kw) -> Pending:
        return self.coord.sync_group(group, gen, member_id, assignments=assignments, **kw)


def subscription(topics):
    return cp.encode_subscription(cp.Subscription(topics=list(topics)), 0)
