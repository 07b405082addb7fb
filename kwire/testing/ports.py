"""Free loopback ports for the brokers tests start (kwire's, Apache Kafka's, their listeners):
below the kernel's ephemeral range and one slice per pytest-xdist worker. Kept apart from
kwire.testing.broker so that the modules it uses (kwire.testing.secured) can use it too."""
from __future__ import annotations

import os
import random
import socket

__all__ = ["free_port"]

_given_ports: set[int] = set()


def _port_window() -> range:
    """Ports this process hands out: below the kernel's ephemeral range (so no client's outgoing
    connection can take one between the pick and the broker's bind), one slice per pytest-xdist
    worker (so parallel workers never pick the same one)."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    first, last = 10000, max(10000 + 2000, low)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    n = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else -1
    if n < 0:
        return range(first, last)
    width = (last - first) // 8
    start = first + (n % 8) * width
    return range(start, start + width)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, not handed out before by this process."""
    window = _port_window()
    for _ in range(200):
        port = random.randrange(window.start, window.stop)
        if port in _given_ports:
            continue
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        _given_ports.add(port)
        return port
    with socket.socket() as s:   # a crowded window: any port the kernel gives
        s.bind((host, 0))
        return s.getsockname()[1]
