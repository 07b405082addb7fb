"""A client refused again and again (an old client under 4.x emulation reconnects in a tight
loop) gets one log line per host and reason per 10 s, not one per connection; the next line
says how many were left out."""
from __future__ import annotations

import logging
import socket
import struct

import pytest

from kwire.server import LogThrottle
from kwire.testing import Broker


def test_throttle_counts_what_it_leaves_out():
    t = LogThrottle(interval=10.0)
    assert t.allow(("h", "r"), 0.0) == 0
    assert t.allow(("h", "r"), 1.0) is None
    assert t.allow(("h", "r"), 9.9) is None
    assert t.allow(("h", "other"), 2.0) == 0      # another reason: its own line
    assert t.allow(("h2", "r"), 2.0) == 0         # another host too
    assert t.allow(("h", "r"), 10.0) == 2         # the next line says two were left out
    assert t.allow(("h", "r"), 25.0) == 0


def test_throttle_forgets_quiet_keys():
    t = LogThrottle(interval=1.0)
    t.MAX_KEYS = 4
    for i in range(4):
        t.allow(i, 0.0)
    t.allow(99, 5.0)
    assert len(t._last) == 1


def _produce_v2(port: int) -> bytes:
    """Produce v2 (removed in Kafka 4): the broker closes the connection."""
    body = struct.pack(">hhih", 0, 2, 1, 1) + b"x" + struct.pack(">hii", 1, 1000, 0)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        return s.recv(10)


@pytest.mark.slow
def test_a_refused_old_client_in_a_loop_logs_once(caplog):
    caplog.set_level(logging.INFO, logger="kwire")
    with Broker(overrides={"kwire.emulate.kafka.version": "4.0"}) as b:
        port = int(b.bootstrap_servers.rsplit(":", 1)[1])
        for _ in range(30):
            assert _produce_v2(port) == b""          # closed, no answer
        lines = [r.getMessage() for r in caplog.records if "closing connection" in r.getMessage()]
    assert len(lines) == 1 and "Produce v2" in lines[0], lines
