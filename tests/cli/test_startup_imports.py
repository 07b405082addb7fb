"""What ``kwire serve`` imports before it answers its first request (issue 16's start-up budget,
measured by bench/startup_bench.py): construct (the producer-state snapshot format) and
prometheus_client load on first use, not at start, and so do the group and transaction
coordinators of a broker without their internal topics (kwire.groups.edge, kwire.transactions.edge); the crc32c package is never imported (its
``__init__`` reads its installed metadata, 25-30 ms): its C extension is loaded directly."""
from __future__ import annotations

import subprocess
import sys

LAZY = ("construct", "crc32c", "prometheus_client", "kwire.groups.coordinator", "kwire.transactions.coordinator")

SERVE_AND_ASK = r"""
import socket, sys, threading
from kwire.testing.broker import Broker

b = Broker(mode="thread", overrides={"metrics.listen": "127.0.0.1:0"}).start()
try:
    with b.client() as c:
        c.request("Metadata", 9, topics=None, allow_auto_topic_creation=False,
                  include_topic_authorized_operations=False)
    print(" ".join(m for m in %r if m in sys.modules))
finally:
    b.cleanup()
""" % (LAZY,)


def test_serving_imports_no_cold_path_modules():
    out = subprocess.run([sys.executable, "-c", SERVE_AND_ASK], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [], f"imported at start: {out.stdout.strip()}"


USE = r"""
import sys
from kwire.codec.records import build_batch
from kwire.log.producer_state import ProducerStateManager

batch = build_batch([(None, b"v", None, 0)])            # a CRC: the crc32c extension loads
m = ProducerStateManager(None)
assert m.decode_snapshot(m.encode_snapshot()) == {}     # a snapshot: construct loads
print(" ".join(m for m in %r if m in sys.modules))
""" % (LAZY,)


def test_they_load_when_used():
    out = subprocess.run([sys.executable, "-c", USE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["construct"]


def test_the_directly_loaded_crc_is_the_packages():
    import os

    import crc32c as pkg

    from kwire.codec.records import _load_crc32c

    fn = _load_crc32c()
    for data in (b"", b"123456789", os.urandom(1), os.urandom(4096)):
        assert fn(data) == pkg.crc32c(data)
        assert fn(data, 12345) == pkg.crc32c(data, 12345)
