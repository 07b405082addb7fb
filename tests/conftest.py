"""Suite-wide hooks."""
from __future__ import annotations

import math
import multiprocessing.util
import os
import re
import socket
import subprocess
import threading
import time

import pytest
import trio


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup``: send the tests of one ``xdist_group`` to one worker (the Spark
    tests share one SparkSession that way). pytest-xdist 3.8 marks them by rewriting
    ``item._nodeid``, which pytest 9.2 no longer reads (node ids live in ``item._id``), so the
    groups were silently ignored; this does the same marking where xdist's did not take."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if "@" in item.nodeid:
            continue
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if not names:
            continue
        suffixed = f"{item.nodeid}@{'_'.join(names)}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId
            item._id = NodeId.parse(suffixed)
        else:
            item._nodeid = suffixed


# --- the fast tier (make test-fast: pytest -m "not slow") ---------------------------------
# A test is slow when it starts a process (a kwire subprocess, a JVM, Spark, kcat, node), opens
# a TCP connection or listener (an in-process broker reached by a stock client), or waits on
# the wall clock (time.sleep, a Trio timer on the real clock). Slow tests carry the mark:
# `pytestmark = pytest.mark.slow` in their module, or `@pytest.mark.slow` on the test. A run
# that deselects `slow` arms _FastTierGuard for every test it runs: a test that does any of
# these fails, naming what it did, so a slow test cannot hide in the fast tier and the marks
# cannot silently rot. (A test wrongly marked slow only runs in make test, never nowhere.)

class FastTierViolation(Exception):
    """Raised where a fast-tier test reaches for a process, the network or a sleep. Not an
    OSError, so code that retries OSError (a client's reconnect loop) does not swallow it."""


def _deselects_slow(config) -> bool:
    """Whether this run's -m expression leaves out a test marked only ``slow``."""
    expr = config.getoption("markexpr", "") or ""
    if not expr:
        return False
    try:
        from _pytest.mark.expression import Expression
    except ImportError:   # pytest moved its private parser: fall back to the spelling make uses
        return "not slow" in expr
    return not Expression.compile(expr).evaluate(lambda name, **kwargs: name == "slow")


class _FastTierGuard:
    """Patches the ways out of the process while one test runs (setup, call and teardown)
    and fails the test on any use, even one the code under test caught and swallowed."""

    def __init__(self):
        self.violations: list[str] = []

    def _refuse(self, what: str):
        msg = (f"{what} in the fast tier (make test-fast): mark the test or its module "
               f"pytest.mark.slow, or use a mock (memory streams, MockClock, kwire.clock)")
        self.violations.append(msg)
        raise FastTierViolation(msg)

    def patches(self):
        guard = self
        inet = (socket.AF_INET, socket.AF_INET6)

        def execute_child(self, args, *a, **kw):
            guard._refuse(f"subprocess {args!r:.120}")

        def no_fork(*a, **kw):
            guard._refuse("os.fork / os.posix_spawn")

        def spawnv_passfds(path, args, passfds):
            guard._refuse(f"multiprocessing spawn {args!r:.120}")

        real_connect, real_connect_ex, real_listen = socket.socket.connect, socket.socket.connect_ex, socket.socket.listen

        def connect(self, address):
            if self.family in inet:
                guard._refuse(f"a TCP connection to {address!r}")
            return real_connect(self, address)

        def connect_ex(self, address):
            if self.family in inet:
                guard._refuse(f"a TCP connection to {address!r}")
            return real_connect_ex(self, address)

        def listen(self, *a):
            if self.family in inet:
                guard._refuse(f"a TCP listener on {self.getsockname()!r}")
            return real_listen(self, *a)

        real_sleep, main_thread = time.sleep, threading.main_thread()

        def sleep(secs):
            if secs > 0 and threading.current_thread() is main_thread:
                guard._refuse(f"time.sleep({secs!r})")
            return real_sleep(secs)

        real_run = trio.run

        def run(*args, clock=None, **kwargs):
            return real_run(*args, clock=clock if clock is not None else _WallClockGuard(guard), **kwargs)

        out = [(time, "sleep", sleep), (trio, "run", run), (subprocess.Popen, "_execute_child", execute_child),
               (multiprocessing.util, "spawnv_passfds", spawnv_passfds),
               (socket.socket, "connect", connect), (socket.socket, "connect_ex", connect_ex),
               (socket.socket, "listen", listen)]
        out += [(os, name, no_fork) for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp")
                if hasattr(os, name)]
        return out


class _WallClockGuard(trio.abc.Clock):
    """Trio's system clock, for a ``trio.run`` given no clock in the fast tier, recording a
    timer that expires: a wait on the wall clock (``trio.sleep(0.1)``, a polling loop, a
    ``move_on_after`` that fires). Fast tests pass ``trio.testing.MockClock``. Only recorded,
    never raised: an exception inside Trio's run loop would be a TrioInternalError."""

    def __init__(self, guard: _FastTierGuard):
        self._guard = guard
        self._asked = math.inf

    def start_clock(self):
        pass

    def current_time(self):
        now = time.perf_counter()
        if now >= self._asked:        # the earliest deadline has passed: its timer fires
            self._asked = math.inf
            self._guard.violations.append(
                "a Trio timer expired on the wall clock in the fast tier (make test-fast): run "
                "it on trio.testing.MockClock, or mark the test pytest.mark.slow")
        return now

    def deadline_to_sleep_time(self, deadline):
        self._asked = deadline
        return max(0.0, deadline - time.perf_counter())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not item.config.stash.get(_fast_tier_key, False):
        yield
        return
    guard = _FastTierGuard()
    mp = pytest.MonkeyPatch()
    for target, name, value in guard.patches():
        mp.setattr(target, name, value)
    item.stash[_guard_key] = guard
    try:
        yield
    finally:
        mp.undo()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    guard = item.stash.get(_guard_key, None)
    if guard is None or not guard.violations:
        return
    report = outcome.get_result()
    if not report.failed:
        report.outcome = "failed"
        report.longrepr = "\n".join(dict.fromkeys(guard.violations))
    guard.violations.clear()


_fast_tier_key = pytest.StashKey[bool]()
_guard_key = pytest.StashKey[_FastTierGuard]()


def pytest_configure(config):
    config.stash[_fast_tier_key] = _deselects_slow(config)


_MODULE_MARKED_SLOW = re.compile(rb"^pytestmark = .*\bpytest\.mark\.slow\b", re.MULTILINE)


def pytest_ignore_collect(collection_path, config):
    """In the fast tier, a module whose ``pytestmark`` holds ``slow`` is not even imported
    (its every test would be deselected): the workers skip importing the clients, Spark and
    the cluster helpers those modules pull in."""
    if (config.stash.get(_fast_tier_key, False) and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")):
        try:
            if _MODULE_MARKED_SLOW.search(collection_path.read_bytes()):
                return True
        except OSError:
            pass
    return None
