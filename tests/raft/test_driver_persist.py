"""The Raft driver persists each Ready in a worker thread: while a flush is slow the event
loop keeps running, the core is not changed (a second proposal waits), and entries are
applied only after their flush, in order."""
from __future__ import annotations

import threading
import time

import pytest
import trio

from kwire.raft.core import RaftConfig
from kwire.raft.driver import RaftDriver
from kwire.raft.storage import RaftStorage


@pytest.mark.slow   # wall clock: a real flush thread and the real Trio clock
def test_a_slow_flush_leaves_the_loop_running_and_the_core_untouched(tmp_path):
    storage = RaftStorage(str(tmp_path))
    gate = threading.Event()
    block = threading.Event()
    order: list = []
    real_flush = storage.flush

    def flush():
        if block.is_set():
            order.append("flush waits")
            assert gate.wait(10)
        real_flush()
        order.append("flushed")

    storage.flush = flush
    applied: list = []

    def apply(entry):
        order.append(("applied", entry.records))
        applied.append(entry.records)

    driver = RaftDriver(1, [1], storage, apply=apply,
                        config=RaftConfig(election_timeout_ms=50, fetch_timeout_ms=100))

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(driver.run)
            with trio.fail_after(10):
                while not driver.is_leader:
                    await trio.sleep(0.01)
                await driver.propose_and_wait((b"warm",))
            block.set()
            results = []

            async def propose(value):
                results.append(await driver.propose_and_wait((value,), timeout=20))

            nursery.start_soon(propose, b"a")
            with trio.fail_after(5):
                while not driver._persisting:
                    await trio.sleep(0.005)
            end = driver.core.log.end_offset
            nursery.start_soon(propose, b"b")
            t0 = time.monotonic()
            await trio.sleep(0.1)                 # the loop runs while the flush waits
            assert time.monotonic() - t0 < 1.0
            assert driver._persisting and driver.core.log.end_offset == end   # b waits
            assert (b"a",) not in applied
            block.clear()
            gate.set()
            with trio.fail_after(10):
                while len(results) < 2:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        return results

    results = trio.run(main)
    assert applied[-2:] == [(b"a",), (b"b",)] and results[0] < results[1]
    i = order.index("flush waits")
    assert order.index(("applied", (b"a",))) > order.index("flushed", i)   # applied after its flush
