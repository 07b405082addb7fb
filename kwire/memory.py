"""Memory given back after a burst of connections closes (issue 32).

5,000 connections cost the broker about 40 MiB, mostly small Python objects (the task,
coroutines, cancel scopes and stream of each connection) in CPython's pymalloc arenas. When
they close, every per-connection object is freed (the server's tables drop each connection
in its ``finally``; tests/edge/test_connection_memory.py checks it) but the process kept the
memory: RSS 78 MiB against 37 MiB idle. Measured (bench/connections_bench.py, with
``sys._debugmallocstats``): the allocated blocks were back at their idle level, while
(1) arenas stayed mapped until a full collection, which also empties the free lists that
kept a few blocks in otherwise empty arenas (-9 MiB), and (2) glibc kept the freed larger
buffers in its heaps until ``malloc_trim`` (-6 MiB). The rest is arena fragmentation
(arenas holding a few long-lived blocks), which only a different allocator would avoid.

So once at least ``min_drop`` connections have closed since the peak and at most a quarter
of the peak remain, the server runs one reclaim when the burst is over: once no connection
has closed for ``settle_s`` (a second). Waiting a fixed second after the trigger was not
enough: 5,000 connections take about as long to close, so the reclaim ran while the last
~1,250 of them still held their memory, and what they freed afterwards stayed mapped
(kept 14-25 MiB across runs). The reclaim is ``gc.collect()`` on the event loop (tens of ms,
once per burst), the server's connection tables rebuilt at their new size (a dict never
shrinks when entries are deleted: the 5,000-entry tables kept their peak size), and
``malloc_trim(0)`` in a worker thread (glibc only; elsewhere a no-op).
"""
from __future__ import annotations

import ctypes
import gc
import logging
from typing import Callable

import trio

log = logging.getLogger("kwire.server")

MIN_DROP = 1000          # connections closed since the peak before memory is reclaimed
SETTLE_S = 1.0           # quiet time (no connection closed) that ends a burst
MAX_WAIT_S = 30.0        # reclaim after this long even if connections keep closing

_trim = None


def malloc_trim() -> bool:
    """glibc's ``malloc_trim(0)``: free pages of every malloc arena go back to the OS. False
    where there is no such call (musl, macOS)."""
    global _trim
    if _trim is None:
        try:
            fn = ctypes.CDLL(None).malloc_trim
            fn.argtypes = [ctypes.c_size_t]
            fn.restype = ctypes.c_int
            _trim = fn
        except (OSError, AttributeError):
            _trim = False
    if _trim is False:
        return False
    _trim(0)
    return True


def rss_mib() -> float | None:
    """This process's resident set (Linux), None elsewhere."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class MemoryReclaimer:
    """Decides when a burst of closed connections is worth a reclaim, and runs it."""

    def __init__(self, min_drop: int = MIN_DROP, settle_s: float = SETTLE_S, max_wait_s: float = MAX_WAIT_S):
        self.min_drop = min_drop
        self.settle_s = settle_s
        self.max_wait_s = max_wait_s
        self.peak = 0           # most connections open at once since the last reclaim
        self.closes = 0         # connections closed so far (the burst is over when it stops moving)
        self.pending = False
        self.reclaims = 0

    def opened(self, open_now: int) -> None:
        if open_now > self.peak:
            self.peak = open_now

    def closed(self, open_now: int) -> bool:
        """True (once) when a reclaim is due: ``reclaim`` should be started."""
        self.closes += 1
        if self.pending or self.peak - open_now < self.min_drop or open_now > self.peak // 4:
            return False
        self.pending = True
        return True

    async def settled(self) -> None:
        """Return once no connection has closed for ``settle_s`` (at most ``max_wait_s``)."""
        deadline = trio.current_time() + self.max_wait_s
        while True:
            seen = self.closes
            await trio.sleep(self.settle_s)
            if self.closes == seen or trio.current_time() >= deadline:
                return

    async def reclaim(self, open_now: Callable[[], int], compact: Callable[[], None] | None = None) -> None:
        """Once the burst is over: ``compact()`` (the owner rebuilds its tables), a full
        collection, ``malloc_trim``."""
        try:
            await self.settled()
            before = rss_mib()
            if compact is not None:
                compact()
            gc.collect()
            trimmed = await trio.to_thread.run_sync(malloc_trim)
            after = rss_mib()
            self.reclaims += 1
            if before is not None and after is not None:
                log.info("%d connections closed: memory reclaimed (full gc%s), RSS %.1f -> %.1f MiB",
                         self.peak - open_now(), ", malloc_trim" if trimmed else "", before, after)
        except Exception:  # noqa: BLE001 - best effort; it must never take the server down
            log.exception("reclaiming memory after connections closed failed")
        finally:
            self.peak = open_now()
            self.pending = False
