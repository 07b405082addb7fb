"""Run a synchronous callable on the broker's Trio thread, from that thread or any other."""
from __future__ import annotations

import threading
from typing import Callable

import trio


def run_on_loop(loop_thread: int | None, trio_token, fn: Callable[[], object]) -> None:
    """``fn()`` on the Trio thread ``loop_thread`` (whose token is ``trio_token``): called at once
    from that thread, else handed over and waited for (a test's or a tool's thread); nothing once
    the Trio run has finished."""
    if threading.get_ident() == loop_thread:
        fn()
        return
    try:
        trio.from_thread.run_sync(fn, trio_token=trio_token)
    except trio.RunFinishedError:
        pass
