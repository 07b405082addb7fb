"""The coordinator runtime (kwire.coordinator.runtime, Kafka's CoordinatorRuntime) on its own:
a fake shard, a fake replica manager whose append outcomes the test completes, a log of real
record batches, Trio's MockClock. Load/unload races, write answers and timers, all
deterministic (no process, no socket, no wall clock)."""
from __future__ import annotations

import struct
from types import SimpleNamespace

import trio
import trio.testing

from kwire.clock import FakeClock
from kwire.codec.records import build_batch
from kwire.coordinator.pending import Pending
from kwire.coordinator.runtime import ACTIVE, FAILED, LOADING, CoordinatorRuntime, WriteResult
from kwire.errors import ErrorCode as E, KafkaError

TOPIC = "__test_state"


class Chunk(bytes):
    @property
    def size(self) -> int:
        return len(self)


class FakeLog:
    """A partition log of one-record batches with offsets 0, 1, ...; ``read`` hands back all
    of them at once (the runtime replays whole batches and reads on from the next offset)."""

    offline = False

    def __init__(self, keys: list[bytes]):
        buf = bytearray()
        for i, k in enumerate(keys):
            b = bytearray(build_batch([(k, b"v", None, 0)]))
            struct.pack_into(">q", b, 0, i)   # baseOffset: outside the CRC
            buf += b
        self.buf = bytes(buf)
        self.log_start_offset = 0
        self.log_end_offset = len(keys)

    def read(self, offset: int, max_bytes: int, max_offset: int) -> Chunk:
        assert offset == 0
        return Chunk(self.buf)


class FakeOutcome:
    """An append outcome the test completes (``finish``)."""

    def __init__(self, partition: int, base_offset: int, error: KafkaError | None = None, completed=False):
        self.partition = partition
        self.base_offset = base_offset
        self.last_offset = base_offset
        self.error = error
        self.completed = completed
        self._done = trio.Event() if not completed else None

    @property
    def code(self):
        return E.NONE if self.error is None else E(self.error.code)

    def finish(self, error: E = E.NONE) -> None:
        if error:
            self.error = KafkaError(error.name, error)
        self.completed = True
        self._done.set()

    async def wait(self, timeout_ms: int) -> E:
        if not self.completed:
            with trio.move_on_after(timeout_ms / 1000):
                await self._done.wait()
            if not self.completed:
                self.finish(E.REQUEST_TIMED_OUT)
        return self.code


class FakeReplicaManager:
    def __init__(self):
        self.logs: dict[int, FakeLog] = {}
        self.appends: list[tuple[int, bytes, dict]] = []
        self.next: list[FakeOutcome] = []   # outcomes to hand out, in order

    def local_log(self, topic, partition):
        assert topic == TOPIC
        return self.logs.get(partition)

    def log_opening(self, topic, partition):
        return False

    async def wait_log_open(self, topic, partition):
        pass

    def append(self, topic, partition, batch, now, acks, **kw):
        assert topic == TOPIC and acks == -1
        self.appends.append((partition, bytes(batch), kw))
        return self.next.pop(0)


class FakeLoad:
    def __init__(self, partition, epoch):
        self.partition, self.epoch, self.keys = partition, epoch, []

    @property
    def records(self):
        return len(self.keys)

    def replay_batch(self, batch):
        self.keys += [bytes(r.key) for r in batch.records()]


class FakeShard:
    def __init__(self):
        self.events: list[tuple] = []
        self.deadline: int | None = None
        self.ticks = 0
        self.wakeup = lambda: None

    def begin_load(self, p, epoch):
        self.events.append(("begin", p, epoch))
        return FakeLoad(p, epoch)

    def complete_load(self, load):
        self.events.append(("complete", load.partition, load.epoch, tuple(load.keys)))
        return True

    def unload(self, p):
        self.events.append(("unload", p))

    def tick(self):
        self.ticks += 1
        return self.deadline


def make(reload_on_new_epoch=False):
    rm = FakeReplicaManager()
    broker = SimpleNamespace(replica_manager=rm, clock=FakeClock(),
                             config=SimpleNamespace(get={"load.buffer": 1 << 20, "write.timeout": 5000}.__getitem__),
                             _nursery=None)
    rt = CoordinatorRuntime(broker, TOPIC, name="tests", load_buffer_key="load.buffer",
                            write_timeout_key="write.timeout", reload_on_new_epoch=reload_on_new_epoch)
    rt.shard = FakeShard()
    rt._read = read_at_once   # not in a worker thread: wait_all_tasks_blocked cannot see one
    return rt, rm, broker


async def read_at_once(data) -> bytes:
    return bytes(data)


def load_now(rt, partition: int, epoch: int) -> int:
    return trio.run(rt.load_now, partition, epoch)


def run(main):
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


class Gate:
    """A runtime ``_read`` held until ``open``."""

    def __init__(self):
        self.opened = trio.Event()
        self.reads = 0

    async def __call__(self, data) -> bytes:
        self.reads += 1
        await self.opened.wait()
        return bytes(data)


def test_a_write_while_loading_answers_load_in_progress_then_is_served():
    rt, rm, broker = make()
    rm.logs[3] = FakeLog([b"a", b"b"])

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            rt._read = gate = Gate()
            assert rt.write(3, [(b"k", b"v")]).result == WriteResult(E.NOT_COORDINATOR)   # not held
            assert rt.schedule_load(3, 5)
            await trio.testing.wait_all_tasks_blocked()
            assert gate.reads == 1 and rt.contexts[3].state == LOADING
            assert rt.error(3) == E.COORDINATOR_LOAD_IN_PROGRESS
            assert rt.write(3, [(b"k", b"v")]).result == WriteResult(E.COORDINATOR_LOAD_IN_PROGRESS)
            assert not rt.schedule_load(3, 5)   # loading at that epoch already
            assert rm.appends == []             # nothing reached the log
            gate.opened.set()
            await trio.testing.wait_all_tasks_blocked()
            assert rt.contexts[3].state == ACTIVE and rt.error(3) is None
            assert rt.shard.events == [("begin", 3, 5), ("complete", 3, 5, (b"a", b"b"))]

            out = FakeOutcome(3, 2)
            rm.next.append(out)
            p = rt.write(3, [(b"k", b"v")])
            assert not p.done and rm.appends[0][0] == 3
            got = []

            async def waiter():
                got.append(await p.wait())

            n.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []   # answered only once the outcome completed
            out.finish()
            await trio.testing.wait_all_tasks_blocked()
            assert got == [WriteResult(E.NONE, 2)] and rt.contexts[3].writes == {}

    run(main)


def test_an_unload_cancels_timers_and_fails_pending_writes_with_not_coordinator():
    rt, rm, broker = make()
    rm.logs[1] = FakeLog([])

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            assert await rt.load_now(1, 0) == 0 and rt.error(1) is None
            fired = []
            assert rt.schedule_timer(1, "session", 100, lambda: fired.append("session"))
            assert rt.schedule_timer(1, "other", 50, lambda: fired.append("other"))
            rt.cancel_timer(1, "other")
            assert not rt.schedule_timer(2, "x", 10, lambda: fired.append("x"))   # not held
            out = FakeOutcome(1, 0)
            rm.next.append(out)
            p = rt.write(1, [(b"k", b"v")])
            assert not p.done
            assert rt.schedule_unload(1)
            assert p.result == WriteResult(E.NOT_COORDINATOR)
            assert ("unload", 1) in rt.shard.events and rt.held() == set()
            assert rt.error(1) == E.NOT_COORDINATOR
            broker.clock.advance(1000)
            assert rt.fire_due() is None and fired == []   # the timers went with the partition
            out.finish()   # the append completes late: the answer stays
            await trio.testing.wait_all_tasks_blocked()
            assert p.result == WriteResult(E.NOT_COORDINATOR)
            assert not rt.schedule_unload(1)   # nothing held any more

    run(main)


def test_an_unload_while_loading_abandons_the_load():
    rt, rm, broker = make()
    rm.logs[0] = FakeLog([b"a"])

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            rt._read = gate = Gate()
            rt.schedule_load(0, 1)
            await trio.testing.wait_all_tasks_blocked()
            rt.schedule_unload(0)
            gate.opened.set()
            await trio.testing.wait_all_tasks_blocked()
            assert [e[0] for e in rt.shard.events] == ["begin", "unload"]   # never completed
            assert rt.error(0) == E.NOT_COORDINATOR

    run(main)


def test_append_failures_reach_the_caller():
    rt, rm, broker = make()
    rm.logs[0] = FakeLog([])
    load_now(rt, 0, 0)

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            # refused by the append path: nothing written, answered at once
            rm.next.append(FakeOutcome(0, -1, KafkaError("not leader", E.NOT_LEADER_OR_FOLLOWER), completed=True))
            assert rt.write(0, [(b"k", b"v")]).result == WriteResult(E.NOT_LEADER_OR_FOLLOWER)
            # written but not replicated in time: the outcome's error, with the offset written
            rm.next.append(FakeOutcome(0, 7))
            p = rt.write(0, [(b"k", b"v")])
            await trio.sleep(6)   # past write.timeout (MockClock)
            assert p.result == WriteResult(E.REQUEST_TIMED_OUT, 7)
            # fewer in-sync replicas than min.insync.replicas once written
            out = FakeOutcome(0, 8)
            rm.next.append(out)
            p = rt.write(0, [(b"k", b"v")])
            out.finish(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            await trio.testing.wait_all_tasks_blocked()
            assert p.result == WriteResult(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, 8)
            # the same append for a caller that waits in its own task
            rm.next.append(FakeOutcome(0, -1, KafkaError("storage", E.KAFKA_STORAGE_ERROR), completed=True))
            assert await rt.append_wait(0, [(b"k", b"v")]) == WriteResult(E.KAFKA_STORAGE_ERROR)

    run(main)


def test_a_transactional_write_carries_the_producer_and_its_verification():
    rt, rm, broker = make()
    rm.logs[0] = FakeLog([])
    load_now(rt, 0, 0)
    rm.next.append(FakeOutcome(0, 0, completed=True))
    guard = object()
    assert rt.write(0, [(b"k", b"v")], transaction=(42, 3, guard)).result == WriteResult(E.NONE, 0)
    (_, batch, kw), = rm.appends
    assert kw == {"verify_transaction": True, "verification_guard": guard}
    assert struct.unpack_from(">qh", batch, 43) == (42, 3)   # producerId, producerEpoch


def test_a_failed_load_is_not_coordinator_until_loaded_again():
    rt, rm, broker = make()

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            rt.schedule_load(4, 2)   # no log here
            await trio.testing.wait_all_tasks_blocked()
            assert rt.contexts[4].state == FAILED and rt.error(4) == E.NOT_COORDINATOR
            assert rt.shard.events == [("begin", 4, 2), ("unload", 4)]
            rm.logs[4] = FakeLog([b"x"])
            assert rt.schedule_load(4, 2)   # a failed context loads again, even at its epoch
            await trio.testing.wait_all_tasks_blocked()
            assert rt.error(4) is None and rt.shard.events[-1] == ("complete", 4, 2, (b"x",))

    run(main)


def test_a_newer_epoch_takes_the_epoch_up_or_reloads():
    rt, rm, broker = make()
    rm.logs[0] = FakeLog([b"a"])
    load_now(rt, 0, 1)
    assert not rt.schedule_load(0, 1) and not rt.schedule_load(0, 0)
    assert not rt.schedule_load(0, 2)   # Kafka's runtime: the state stays, the epoch goes up
    assert rt.epoch(0) == 2 and [e[0] for e in rt.shard.events] == ["begin", "complete"]
    assert not rt.schedule_unload(0, epoch=1)   # an unload for an older epoch is ignored

    rt, rm, broker = make(reload_on_new_epoch=True)
    rm.logs[0] = FakeLog([b"a"])
    load_now(rt, 0, 1)

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            assert not rt.schedule_load(0, 1)   # loaded at that epoch: not again
            out = FakeOutcome(0, 1)
            rm.next.append(out)
            p = rt.write(0, [(b"k", b"v")])
            assert rt.schedule_load(0, 2)   # a new coordinator epoch: loaded again
            assert p.result == WriteResult(E.NOT_COORDINATOR)   # written at the old one
            await trio.testing.wait_all_tasks_blocked()
            assert rt.shard.events[-3:] == [("unload", 0), ("begin", 0, 2), ("complete", 0, 2, (b"a",))]
            out.finish()

    run(main)


def test_the_timer_task_runs_partition_timers_and_the_shard_tick():
    rt, rm, broker = make()
    rm.logs[0] = FakeLog([])
    load_now(rt, 0, 0)
    clock = broker.clock
    fired = []
    rt.shard.deadline = clock.monotonic_ms() + 500
    woken = []
    rt._wake = SimpleNamespace(set=lambda: woken.append(1))
    rt.schedule_timer(0, "a", 100, lambda: fired.append("a"))
    assert woken == [1]   # earlier than anything scheduled: the task wakes to sleep less
    rt.schedule_timer(0, "b", 300, lambda: 1 / 0)   # a failing timer does not stop the others
    assert rt.fire_due() == 100 and fired == [] and rt.shard.ticks == 1
    clock.advance(300)
    assert rt.fire_due() == 500 and fired == ["a"]
    assert rt.contexts[0].timer_keys == set()
    rt.shard.deadline = None
    assert rt.fire_due() is None


def test_pending_wait():
    async def main():
        p: Pending[int] = Pending()
        got = []

        async def waiter():
            got.append(await p.wait())

        async with trio.open_nursery() as n:
            n.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            p.set_result(7)
        assert got == [7] and await Pending.completed(3).wait() == 3

    run(main)


def test_the_topic_is_created_once_at_a_time_and_a_caller_giving_up_does_not_abandon_it():
    rt, rm, broker = make()
    broker.image = SimpleNamespace(topics={})
    calls = []
    release = trio.Event()

    async def create_topic(name, partitions, rf, configs):
        calls.append((name, partitions, rf, configs))
        await release.wait()
        broker.image.topics[name] = object()
        return SimpleNamespace(code=E.NONE, message=None)

    broker.create_topic = create_topic
    created = []

    async def create():
        created.append(await rt.create_topic(3, 1, {"cleanup.policy": "compact"}))

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            with trio.move_on_after(1):   # a FindCoordinator's bounded wait
                await rt.ensure_topic(create)
            waiter_done = []

            async def waiter():
                await rt.ensure_topic(create)
                waiter_done.append(1)

            n.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            assert len(calls) == 1 and waiter_done == []   # the one creation goes on; the second waits for it
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert created == [True] and waiter_done == [1]
            await rt.ensure_topic(create)   # it exists: nothing to do
            assert len(calls) == 1

    run(main)


def test_a_refused_or_failed_creation_is_logged_and_tried_again_by_the_next_caller():
    rt, rm, broker = make()
    broker.image = SimpleNamespace(topics={})
    answers = [KafkaError("no controller", E.NOT_CONTROLLER),
               SimpleNamespace(code=E.INVALID_REPLICATION_FACTOR, message="too few brokers")]

    async def create_topic(name, partitions, rf, configs):
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a

    broker.create_topic = create_topic
    created = []

    async def create():
        created.append(await rt.create_topic(3, 3, {}))

    async def main():
        async with trio.open_nursery() as n:
            broker._nursery = n
            await rt.ensure_topic(create)
            await rt.ensure_topic(create)
            assert created == [False, False] and answers == []

    run(main)
