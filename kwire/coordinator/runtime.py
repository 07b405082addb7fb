"""The coordinator runtime: the Trio side every coordinator shares (Kafka's coordinator-common
CoordinatorRuntime). One runtime per coordinator topic (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``) hosts the pure state machine of that
coordinator (its *shard*, here one object serving every partition of the topic led by this
broker) and does for it what each coordinator's edge used to do by itself:

- **partition contexts** (Kafka's CoordinatorContext): for each partition held here its state
  (LOADING, ACTIVE, FAILED) and epoch (the partition's leader epoch: the coordinator epoch);
  ``error(p)`` is Kafka's withActiveContextOrThrow: None when ACTIVE,
  COORDINATOR_LOAD_IN_PROGRESS while LOADING, NOT_COORDINATOR otherwise.
- **loads** (scheduleLoadOperation + CoordinatorLoaderImpl): ``schedule_load(p, epoch)`` hands the
  shard a load (``shard.begin_load(p, epoch)``), reads the partition's local log from its
  start to its end in chunks (``load_buffer_key`` bytes; the preads in a worker thread),
  feeds each batch to ``load.replay_batch`` and installs it (``shard.complete_load``). An epoch
  not newer than the context's is ignored, as Kafka's runtime ignores it; a newer one while
  ACTIVE only takes the epoch up (Kafka's runtime) unless ``reload_on_new_epoch`` (the
  transaction coordinator: Kafka's TransactionStateManager reloads for a new coordinator
  epoch, which every marker carries). A load that fails (no log here, a storage error)
  leaves the context FAILED: NOT_COORDINATOR until the partition is led here again.
  ``load_now`` reads on the loop, for start-up, before anything is served.
- **unloads** (scheduleUnloadOperation): ``schedule_unload(p)`` drops the context, cancels
  the partition's timers, unloads the shard's state (``shard.unload``) and answers every write
  still waiting on the partition NOT_COORDINATOR, as Kafka's CLOSED transition fails its
  deferred events.
- **writes** (scheduleWriteOperation): ``write(p, records)`` appends one batch through the
  replica manager's one append path (acks=all, as Kafka's coordinators write) and answers a
  ``Pending[WriteResult]`` once the append outcome is complete (fdatasync done, high
  watermark past the batch, or why not: REQUEST_TIMED_OUT after ``write_timeout_key`` ms);
  refused at once with the context's error when the partition is not ACTIVE here. Callers
  ``await p.wait()`` or add a done callback (the state machines, which never await).
  ``append_wait`` is the same append for a caller that awaits in its own task (the share
  coordinator, whose loads are its own: see kwire.share.coordinator).
- **the topic**: ``ensure_topic`` has the coordinator topic created once at a time in a task
  of the broker's nursery (a caller giving up does not abandon it), ``create_topic`` sends the
  creation and logs a refusal, ``topic_replication_factor`` bounds the configured factor by
  the live brokers; each coordinator keeps its own partitions and configs.
- **timers** (CoordinatorTimer): the shard's own deadlines (``shard.tick()`` -> the next one;
  ``shard.wakeup`` is ``wakeup``) and per-partition timers (``schedule_timer(p, key, ...)``)
  that an unload cancels, all driven by one task, ``run``.

Nothing here knows a coordinator: the shard is any object with ``begin_load(p, epoch)``
(-> a load with ``replay_batch(batch)``), ``complete_load(load)``, ``unload(p)``, ``tick()``
and ``wakeup``. The broker is reached through ``broker.replica_manager`` (``append``,
``local_log``, ``log_opening``, ``wait_log_open``: a load starts once the partition's log,
opened in a worker thread after a metadata delta, is open), ``broker.config``, ``broker.clock`` and ``broker._nursery``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Hashable

import trio

from kwire.codec.records import build_batch, iter_batches
from kwire.coordinator.pending import Pending
from kwire.coordinator.timers import Timers
from kwire.errors import ErrorCode, KafkaError

log = logging.getLogger("kwire.coordinator")

LOADING = "loading"
ACTIVE = "active"
FAILED = "failed"


@dataclass(frozen=True)
class WriteResult:
    """A write's answer: its error code and the base offset of its batch (-1: not written)."""
    error: ErrorCode
    base_offset: int = -1


class PartitionContext:
    """One partition held here (Kafka's CoordinatorContext)."""

    __slots__ = ("partition", "state", "epoch", "load", "writes", "timer_keys")

    def __init__(self, partition: int, epoch: int):
        self.partition = partition
        self.state = LOADING
        self.epoch = epoch
        self.load: Any = None                          # the shard's load, while LOADING
        self.writes: dict[int, Pending] = {}           # writes not answered yet, by token
        self.timer_keys: set[Hashable] = set()         # this partition's runtime timers

    def __repr__(self) -> str:
        return f"PartitionContext({self.partition}, {self.state}, epoch {self.epoch})"


class CoordinatorRuntime:
    def __init__(self, broker, topic: str, *, name: str, load_buffer_key: str, write_timeout_key: str,
                 reload_on_new_epoch: bool = False, logger: logging.Logger | None = None):
        self.broker = broker
        self.log = logger or log                # the hosted coordinator's logger
        self.topic = topic
        self.name = name                        # in log lines: "groups", "transactions", "share states"
        self.load_buffer_key = load_buffer_key
        self.write_timeout_key = write_timeout_key
        self.reload_on_new_epoch = reload_on_new_epoch
        self.shard: Any = None                  # the hosted state machine (set by its edge)
        self.contexts: dict[int, PartitionContext] = {}
        self.timers = Timers()                  # (partition, key) -> deadline (monotonic ms)
        self._timer_fns: dict[tuple[int, Hashable], Callable[[], Any]] = {}
        self._wake = trio.Event()
        self._write_seq = 0
        self._creating: trio.Event | None = None   # set once a creation of the topic ended

    # ------------------------------------------------------------------ contexts
    def error(self, partition: int) -> ErrorCode | None:
        """None when the partition is ACTIVE here; COORDINATOR_LOAD_IN_PROGRESS while it
        loads; NOT_COORDINATOR when it is not held here or its load failed."""
        ctx = self.contexts.get(partition)
        if ctx is None or ctx.state == FAILED:
            return ErrorCode.NOT_COORDINATOR
        if ctx.state == LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def held(self) -> set[int]:
        """The partitions with a context here (loading, active or failed)."""
        return set(self.contexts)

    def epoch(self, partition: int) -> int | None:
        ctx = self.contexts.get(partition)
        return None if ctx is None else ctx.epoch

    # ------------------------------------------------------------------ loads
    def _begin(self, partition: int, epoch: int) -> PartitionContext | None:
        """The new LOADING context for a load at ``epoch``; None when there is nothing to do."""
        ctx = self.contexts.get(partition)
        if ctx is not None and ctx.state != FAILED:
            if epoch <= ctx.epoch:
                return None   # loaded or loading at this epoch already (Kafka ignores it)
            if not self.reload_on_new_epoch:
                ctx.epoch = epoch   # Kafka's runtime: the state stays, the epoch goes up
                return None
        if ctx is not None:
            self._close(ctx)
        ctx = self.contexts[partition] = PartitionContext(partition, epoch)
        ctx.load = self.shard.begin_load(partition, epoch)
        return ctx

    def schedule_load(self, partition: int, epoch: int) -> bool:
        """This broker leads ``partition`` at ``epoch``: load it in a task on the broker's
        nursery (its writes answer COORDINATOR_LOAD_IN_PROGRESS meanwhile). False when
        nothing was started (see the module doc)."""
        ctx = self._begin(partition, epoch)
        if ctx is None:
            return False
        rm = self.broker.replica_manager
        plog = rm.local_log(self.topic, partition)
        empty = plog is not None and not plog.offline and plog.log_end_offset == plog.log_start_offset
        empty = empty or (plog is None and rm.log_opening(self.topic, partition))   # a new partition
        # a new topic's 50 empty partitions are not news; a failover's loads are
        self.log.log(logging.DEBUG if empty else logging.INFO, "became leader of %s-%d (epoch %d): loading its %s",
                self.topic, partition, epoch, self.name)
        self.broker._nursery.start_soon(self._load, ctx)
        return True

    async def load_now(self, partition: int, epoch: int) -> int:
        """Load the partition at once, reading on the loop with no checkpoint (at start-up,
        before anything is served: nothing else runs meanwhile); the number of records
        replayed."""
        ctx = self._begin(partition, epoch)
        if ctx is None:
            return 0
        load = ctx.load
        await self._load(ctx, _read_here)
        return getattr(load, "records", 0) if ctx.state == ACTIVE else 0

    async def _load(self, ctx: PartitionContext, read=None) -> None:
        p = ctx.partition
        read = read or self._read
        try:
            # a log a metadata delta made this node open is opened in a worker thread
            # (kwire.broker_metadata.ReplicaPublisher): the load starts once it is open
            await self.broker.replica_manager.wait_log_open(self.topic, p)
            if self.contexts.get(p) is not ctx:
                return   # unloaded (or reloading at a newer epoch) meanwhile
            plog = self._log_of(p)
            # a new leader's log holds what the old leader had replicated to it
            end, offset = plog.log_end_offset, plog.log_start_offset
            while offset < end:
                data = plog.read(offset, self._chunk_bytes(), max_offset=end)
                if data.size == 0:
                    break
                buf = await read(data)
                if self.contexts.get(p) is not ctx:
                    return   # unloaded (or reloading at a newer epoch) meanwhile
                advanced = replay_chunk(ctx.load, buf, offset)
                if advanced <= offset:
                    break
                offset = advanced
        except Exception:  # noqa: BLE001 - a failed load must not stop the broker
            self.log.exception("loading the %s of %s-%d failed", self.name, self.topic, p)
            if self.contexts.get(p) is ctx:
                self._fail(ctx)
            return
        if self.contexts.get(p) is ctx:
            self._activate(ctx)

    @staticmethod
    async def _read(data) -> bytes:
        """The bytes of a read's file regions: the preads, in a worker thread."""
        return await trio.to_thread.run_sync(bytes, data)

    def _activate(self, ctx: PartitionContext) -> None:
        load, ctx.load = ctx.load, None
        ctx.state = ACTIVE   # before the shard installs it: what it writes then (markers) is served
        self.shard.complete_load(load)

    def _fail(self, ctx: PartitionContext) -> None:
        ctx.state = FAILED   # NOT_COORDINATOR until it is led here again
        ctx.load = None
        self.shard.unload(ctx.partition)

    def _log_of(self, partition: int):
        """This node's log of the partition; KAFKA_STORAGE_ERROR when it has none or it is
        offline: the partition is then not served at all (served empty, clients would lose
        what it holds: committed offsets, transactions)."""
        plog = self.broker.replica_manager.local_log(self.topic, partition)
        if plog is None or plog.offline:
            raise KafkaError(f"the log of {self.topic}-{partition} is not available on this broker",
                             ErrorCode.KAFKA_STORAGE_ERROR)
        return plog

    def _chunk_bytes(self) -> int:
        return int(self.broker.config.get(self.load_buffer_key))

    # ------------------------------------------------------------------ unloads
    def schedule_unload(self, partition: int, epoch: int | None = None) -> bool:
        """This broker no longer leads ``partition``: drop it (see the module doc). With an
        ``epoch``, only a context older than it goes (Kafka's scheduleUnloadOperation).
        False when nothing was held."""
        ctx = self.contexts.get(partition)
        if ctx is None or (epoch is not None and ctx.epoch > epoch):
            return False
        del self.contexts[partition]
        self._close(ctx)
        self.log.info("resigned as leader of %s-%d: its %s are unloaded", self.topic, partition, self.name)
        return True

    def _close(self, ctx: PartitionContext) -> None:
        for key in ctx.timer_keys:
            self.timers.cancel((ctx.partition, key))
            self._timer_fns.pop((ctx.partition, key), None)
        ctx.timer_keys.clear()
        ctx.load = None
        self.shard.unload(ctx.partition)
        writes, ctx.writes = ctx.writes, {}
        for p in writes.values():
            p.set_result(WriteResult(ErrorCode.NOT_COORDINATOR))

    # ------------------------------------------------------------------ writes
    def write(self, partition: int, records: list, *, transaction: tuple | None = None) -> Pending[WriteResult]:
        """Append ``records`` (key, value) to the partition as its leader (acks=all); the
        answer once the append outcome completed (see the module doc). ``transaction``
        (producer id, epoch[, verification guard]): a transactional batch of that producer
        (a TxnOffsetCommit), without sequence numbers: the log checks a coordinator's append
        for the producer's epoch, not its sequence (as Kafka); the guard (None when the
        transaction was open here already) makes the append check it as a verified
        Produce's (KIP-890)."""
        err = self.error(partition)
        if err is not None:
            return Pending.completed(WriteResult(err))
        ctx = self.contexts[partition]
        out: Pending[WriteResult] = Pending()
        self._write_seq += 1
        token = self._write_seq
        ctx.writes[token] = out
        out.add_done_callback(lambda _p: ctx.writes.pop(token, None))
        answer, res = self._append(partition, records, transaction)
        if answer is not None:
            out.set_result(answer)
        else:
            self.broker._nursery.start_soon(self._await_outcome, res, out)
        return out

    async def append_wait(self, partition: int, records: list) -> WriteResult:
        """The same append for a caller that waits in its own task, with no partition context
        (the share coordinator's, whose loads are its own)."""
        answer, res = self._append(partition, records, None)
        if answer is not None:
            return answer
        return self._outcome(res, await res.wait(int(self.broker.config.get(self.write_timeout_key))))

    def _append(self, partition: int, records: list, transaction: tuple | None):
        """(the answer, None) when the append is decided at once, else (None, the outcome)."""
        rm = self.broker.replica_manager
        now = self.broker.clock.now_ms()
        txn = {} if transaction is None else {
            "producer_id": transaction[0], "producer_epoch": transaction[1], "is_transactional": True}
        try:
            batch = build_batch([(k, v, None, now) for k, v in records], **txn)
        except KafkaError as exc:
            self.log.warning("append to %s-%d failed: %s", self.topic, partition, exc)
            return WriteResult(ErrorCode(getattr(exc, "code", ErrorCode.UNKNOWN_SERVER_ERROR))), None
        verified = {} if transaction is None or len(transaction) < 3 else {
            "verify_transaction": True, "verification_guard": transaction[2]}
        res = rm.append(self.topic, partition, bytearray(batch), now, acks=-1, **verified)
        if res.error is not None and res.base_offset < 0:   # refused: nothing written
            self.log.warning("append to %s-%d failed: %s", self.topic, partition, res.error)
            return WriteResult(res.code), None
        if res.completed:
            return WriteResult(res.code, res.base_offset), None
        return None, res

    async def _await_outcome(self, res, out: Pending[WriteResult]) -> None:
        """The append's disk work and replication (``write_timeout_key`` ms), then the answer
        (unless an unload answered it meanwhile)."""
        error = await res.wait(int(self.broker.config.get(self.write_timeout_key)))
        try:
            out.set_result(self._outcome(res, error))
        except Exception:  # noqa: BLE001 - a failed callback must not stop the broker
            self.log.exception("%s coordinator write callback failed", self.name)

    def _outcome(self, res, error: ErrorCode) -> WriteResult:
        if error:
            self.log.warning("write to %s-%d below offset %d not replicated: %s", self.topic, res.partition,
                        res.last_offset + 1, ErrorCode(error).name)
        return WriteResult(ErrorCode(error), res.base_offset)

    # ------------------------------------------------------------------ the topic
    async def ensure_topic(self, create: Callable[[], Awaitable[Any]]) -> None:
        """Have the coordinator topic created unless it exists, and wait until that ended
        (a first FindCoordinator, or a first write, as Kafka creates its internal topics):
        ``await create()`` (the coordinator's partitions and configs, through
        ``create_topic``) runs in a task of the broker's nursery, once at a time: a caller
        that stops waiting (its request's bounded wait) does not abandon it half way."""
        if self.topic in self.broker.image.topics:
            return
        if self._creating is None:
            self._creating = trio.Event()
            self.broker._nursery.start_soon(self._create, create, self._creating)
        await self._creating.wait()

    async def _create(self, create: Callable[[], Awaitable[Any]], done: trio.Event) -> None:
        try:
            await create()
        except Exception:  # noqa: BLE001 - a failed creation must not stop the broker; the next caller tries again
            self.log.exception("creating %s failed", self.topic)
        finally:
            self._creating = None
            done.set()

    async def create_topic(self, partitions: int, replication_factor: int, configs: dict) -> bool:
        """CreateTopics of the coordinator topic from this broker; True when it exists now
        (created here, or by another node just before), else why not is logged."""
        try:
            res = await self.broker.create_topic(self.topic, partitions, replication_factor, configs)
        except KafkaError as exc:
            self.log.warning("cannot create %s: %s", self.topic, exc)
            return False
        if res.code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            self.log.warning("cannot create %s: %s %s", self.topic, ErrorCode(res.code).name, res.message)
            return False
        return True

    # ------------------------------------------------------------------ timers
    def schedule_timer(self, partition: int, key: Hashable, delay_ms: int, fn: Callable[[], Any]) -> bool:
        """Run ``fn()`` on the loop in ``delay_ms`` (replacing a timer of the same key), unless
        the partition is unloaded first; False when the partition is not ACTIVE here."""
        ctx = self.contexts.get(partition)
        if ctx is None or ctx.state != ACTIVE:
            return False
        deadline = self.broker.clock.monotonic_ms() + delay_ms
        nxt = self.timers.next_deadline()
        self.timers.schedule((partition, key), deadline)
        self._timer_fns[(partition, key)] = fn
        ctx.timer_keys.add(key)
        if nxt is None or deadline < nxt:
            self.wakeup()
        return True

    def cancel_timer(self, partition: int, key: Hashable) -> None:
        self.timers.cancel((partition, key))
        self._timer_fns.pop((partition, key), None)
        ctx = self.contexts.get(partition)
        if ctx is not None:
            ctx.timer_keys.discard(key)

    def wakeup(self) -> None:
        """A deadline earlier than the one ``run`` sleeps to was set (the shard's ``wakeup``)."""
        self._wake.set()

    def fire_due(self) -> int | None:
        """Run the partition timers due and the shard's tick; the next deadline (monotonic ms)
        or None."""
        now = self.broker.clock.monotonic_ms()
        while (tk := self.timers.pop_expired(now)) is not None:
            fn = self._timer_fns.pop(tk, None)
            ctx = self.contexts.get(tk[0])
            if ctx is not None:
                ctx.timer_keys.discard(tk[1])
            if fn is None:
                continue
            try:
                fn()
            except Exception:  # noqa: BLE001 - a failed timer must not stop the broker
                self.log.exception("%s coordinator timer %r failed", self.name, tk)
        deadline = None
        if self.shard is not None:
            try:
                deadline = self.shard.tick()
            except Exception:  # noqa: BLE001 - a failed tick must not stop the broker
                self.log.exception("%s coordinator tick failed", self.name)
                deadline = now + 1000
        nxt = self.timers.next_deadline()
        if nxt is not None and (deadline is None or nxt < deadline):
            deadline = nxt
        return deadline

    async def run(self) -> None:
        """The timer task (in the broker's nursery): fire what is due, sleep until the next
        deadline or a wakeup, repeat."""
        clock = self.broker.clock
        while True:
            self._wake = trio.Event()
            deadline = self.fire_due()
            if deadline is None:
                await self._wake.wait()
                continue
            with trio.move_on_after(max(0, deadline - clock.monotonic_ms()) / 1000):
                await self._wake.wait()


def topic_replication_factor(broker, topic: str, key: str) -> int:
    """The replication factor a coordinator topic is created with: the config ``key``
    (Kafka's default 3), at most the live brokers."""
    from kwire.metadata import topic_changes  # noqa: PLC0415 - only for the bridge below

    rf = min(int(broker.config.get(key)), max(1, len(broker.image.live_brokers())))
    # Bridge until the controller keeps more than one copy of a partition (it refuses a larger
    # factor with INVALID_REPLICATION_FACTOR while MAX_KEPT_REPLICAS says so): ask for what it
    # keeps rather than fail. Goes away with the constant.
    kept = getattr(topic_changes, "MAX_KEPT_REPLICAS", None)
    if kept is not None and rf > kept:
        log.warning("%s: replication factor %d asked, the controller keeps %d copies: creating it with %d",
                    topic, rf, kept, kept)
        rf = kept
    return rf


async def _read_here(data) -> bytes:
    """The bytes of a read's file regions, on the loop (``load_now``)."""
    return bytes(data)


def replay_chunk(load, buf: bytes, offset: int) -> int:
    """Replay the whole batches in ``buf`` (read from ``offset``) into ``load``
    (``load.replay_batch``); the offset after the last one."""
    advanced = offset
    for batch in iter_batches(buf, allow_partial_tail=True):
        advanced = batch.next_offset
        load.replay_batch(batch)
    return advanced
