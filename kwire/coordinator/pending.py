"""A small Future-like handle for answers that are not ready yet (Kafka's CompletableFuture
as the CoordinatorRuntime hands them out).

A JoinGroup waits for the rebalance, a follower's SyncGroup for the leader's assignment, an
OffsetCommit for the append to ``__consumer_offsets``. The coordinator (a pure state machine:
it never awaits) returns a ``Pending`` and completes it with ``set_result``; state machines
chain on it with ``add_done_callback``; the Trio side (handlers, the coordinator runtime)
waits for it with::

    answer = await coordinator.join_group(...).wait()
"""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

import trio

T = TypeVar("T")


class Pending(Generic[T]):
    __slots__ = ("done", "result", "on_done")

    def __init__(self) -> None:
        self.done: bool = False
        self.result: T | None = None
        self.on_done: list[Callable[["Pending[T]"], Any]] = []

    @classmethod
    def completed(cls, result: T) -> "Pending[T]":
        p: Pending[T] = cls()
        p.done = True
        p.result = result
        return p

    def set_result(self, result: T) -> bool:
        """Complete the handle and run its callbacks; False if it was already done."""
        if self.done:
            return False
        self.done = True
        self.result = result
        callbacks, self.on_done = self.on_done, []
        for cb in callbacks:
            cb(self)
        return True

    def add_done_callback(self, cb: Callable[["Pending[T]"], Any]) -> None:
        """Run ``cb(self)`` when done (at once if it already is)."""
        if self.done:
            cb(self)
        else:
            self.on_done.append(cb)

    async def wait(self) -> T:
        """The result, once done (at once if it already is)."""
        if not self.done:
            ev = trio.Event()
            self.add_done_callback(lambda _p: ev.set())
            await ev.wait()
        return self.result  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Pending(done={self.done}, result={self.result!r})"
