"""The fast tier's guard (tests/conftest.py): in a run that leaves out ``slow`` tests, a test
that starts a process, opens TCP or waits on the wall clock fails, naming what it did; tests
on mocks pass; a test marked slow is not run at all."""
from __future__ import annotations

import pathlib

pytest_plugins = ["pytester"]

SAMPLE = '''
import socket
import subprocess
import time

import pytest
import trio
import trio.testing


def test_pure():
    assert sum(range(4)) == 6


def test_mock_clock():
    trio.run(trio.sleep, 30, clock=trio.testing.MockClock(autojump_threshold=0))


def test_subprocess():
    subprocess.run(["true"], check=False)


def test_swallowed_subprocess():
    try:
        subprocess.run(["true"], check=False)
    except Exception:
        pass


def test_tcp_listener():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()


def test_tcp_connection():
    with socket.socket() as s:
        s.connect_ex(("127.0.0.1", 9))


def test_sleep():
    time.sleep(0.01)


def test_wall_clock_timer():
    trio.run(trio.sleep, 0.01)


@pytest.mark.slow
def test_marked_slow():
    subprocess.run(["true"], check=False)
'''


def test_the_fast_tier_fails_processes_tcp_and_sleeps(pytester):
    pytester.makeconftest((pathlib.Path(__file__).parent / "conftest.py").read_text())
    pytester.makeini('[pytest]\nmarkers =\n    slow: outside the fast tier\n')
    pytester.makepyfile(test_sample=SAMPLE)
    result = pytester.runpytest_inprocess("-m", "not slow", "-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2, failed=6, deselected=1)
    out = result.stdout.str()
    for name in ("test_subprocess", "test_swallowed_subprocess", "test_tcp_listener", "test_tcp_connection",
                 "test_sleep", "test_wall_clock_timer"):
        assert f"FAILED test_sample.py::{name}" in out
    assert "subprocess ['true']" in out and "a TCP listener on" in out and "a TCP connection to" in out
    assert "time.sleep(0.01)" in out and "a Trio timer expired on the wall clock" in out
