"""A coordinator on a fake clock with a writer that records (and may hold back) appends."""
from __future__ import annotations

import itertools

from kwire.clock import FakeClock
from kwire.errors import ErrorCode
from kwire.coordinator.pending import Pending
from kwire.groups import GroupConfig, GroupCoordinator
from kwire.codec import consumer_protocol as cp

E = ErrorCode


class LogWriter:
    """Appends to an in-memory __consumer_offsets; ``hold`` defers completions.

    Offsets count every record and marker of every partition (one sequence: increasing,
    which is all the coordinator relies on); ``batches`` keeps each append as a batch
    (partition, base offset, producer id or -1 when not transactional, records), and
    ``marker`` appends a transaction marker, so ``log_bytes`` can rebuild a partition's log.
    """

    def __init__(self):
        self.log: list[tuple[int, bytes, bytes | None]] = []  # (partition, key, value)
        self.batches: list[tuple[int, int, int, list | bool]] = []
        self.next_offset = 0
        self.hold = False
        self.fail_with: ErrorCode | None = None
        self.held: list = []

    def __call__(self, partition, records, done, *, transaction=None):
        if self.hold:
            self.held.append((partition, records, done, transaction))
            return
        self._finish(partition, records, done, transaction)

    def _finish(self, partition, records, done, transaction=None):
        if self.fail_with is not None:
            done(self.fail_with)
            return
        base = self.next_offset
        for k, v in records:
            self.log.append((partition, k, v))
        self.next_offset += len(records)
        self.batches.append((partition, base, -1 if transaction is None else transaction[0],
                             list(records)))
        done(E.NONE, base)

    def marker(self, partition, producer_id, committed: bool) -> int:
        """Append a transaction marker; returns its offset."""
        offset = self.next_offset
        self.next_offset += 1
        self.batches.append((partition, offset, producer_id, committed))
        return offset

    def log_bytes(self, partition) -> bytes:
        """The partition's log as record batches (Kafka's format)."""
        from kwire.codec.records import build_batch, build_control_batch

        out = bytearray()
        for part, base, pid, recs in self.batches:
            if part != partition:
                continue
            if isinstance(recs, bool):
                out += build_control_batch(recs, pid, 0, 0, base_offset=base)
            elif pid >= 0:
                out += build_batch([(k, v, None, 0) for k, v in recs], base_offset=base,
                                   producer_id=pid, producer_epoch=0, is_transactional=True)
            else:
                out += build_batch([(k, v, None, 0) for k, v in recs], base_offset=base)
        return bytes(out)

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
