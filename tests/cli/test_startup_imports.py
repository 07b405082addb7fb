"""What ``kwire serve`` imports before it answers its first request (issue 16's start-up budget,
measured by bench/startup_bench.py): construct (the producer-state snapshot format) and
prometheus_client load on first use, not at start, and so do the group and transaction
coordinators of a broker without their internal topics (kwire.groups.edge, kwire.transactions.edge); the crc32c package is never imported (its
``__init__`` reads its installed metadata, 25-30 ms): its C extension is loaded directly."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kwire.testing.broker import free_port

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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --- kwire serve itself (issue 29: exec to first Metadata answer <= 1/10 of Apache Kafka's) ------
# The path of the console script, without a clock: a fresh interpreter runs ``kwire serve`` as a
# user does (a PLAINTEXT listener, the metrics listener on), a thread sends one Metadata request,
# and ``sys.modules`` as of its answer must not hold what only some brokers or some requests need
# (each is imported where it is first used, with a comment saying so). Module -> where it belongs.
NOT_BEFORE_FIRST_METADATA = {
    "cryptography": "TLS keystores (kwire.security.tls), SSL listeners only",
    "kwire.security.tls": "SSL / SASL_SSL listeners and links only",
    "kwire.security.sasl": "SASL listeners only (the SaslAuthenticate handler and the server import it there)",
    "kwire.security.jaas": "SASL listeners and links only",
    "kwire.security.sasl_client": "SASL links between nodes only",
    "prometheus_client": "the first scrape of /metrics",
    "construct": "the first producer-state snapshot read or written",
    "kwire.log.cleaner": "the first compacted log (kwire.log.log_cleaner)",
    "kwire.log.cleaner_manager": "the first compacted log",
    "kwire.groups.coordinator": "the group coordinator, built with __consumer_offsets",
    "kwire.groups.records": "the group coordinator's records; the topic's name is in kwire.internal_topics",
    "kwire.groups.results": "group requests' answers",
    "kwire.transactions.coordinator": "the transaction coordinator, built with __transaction_state",
    "kwire.transactions.metadata": "the transaction coordinator's state",
    "kwire.transactions.records": "the transaction coordinator's records",
    "kwire.admin": "the admin commands (kwire topics, groups, ...), not kwire serve",
    "kwire.share": "share groups (KIP-932): kwire.broker.Broker.share_state, built on first use or at "
                   "start when __share_group_state exists",
    "kwire.codec.apis.produce": "the first Produce (a schema module loads on its API's first use, kwire.codec.apis)",
    "kwire.codec.apis.fetch": "the first Fetch (kwire.codec.apis)",
    "kwire.codec.apis.create_topics": "the first CreateTopics (kwire.codec.apis)",
}

_PROBE = textwrap.dedent("""
    import json, os, signal, socket, sys, threading, time
    from kwire.cli import main

    port, data = int(sys.argv[1]), sys.argv[2]
    found = {}

    def probe():
        from kwire.codec import frame as FR          # both on kwire serve's own path
        from kwire.codec.apis import api
        a = api("Metadata")
        req = FR.encode_request(a, 4, 7, a.request.cls(topics=[], allow_auto_topic_creation=False), "probe")
        deadline = time.monotonic() + 60
        try:
            while True:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=60)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)
            with s:
                s.sendall(req)
                got = b""
                while len(got) < 4 or len(got) < 4 + int.from_bytes(got[:4], "big"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
            found["correlation_id"] = int.from_bytes(got[4:8], "big") if len(got) >= 8 else None
            found["modules"] = sorted(sys.modules)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)   # kwire serve's clean shutdown

    threading.Thread(target=probe, daemon=True).start()
    rc = main(["serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, "--log-level", "WARNING",
               "--override", "metrics.listen=127.0.0.1:0"])
    print(json.dumps({"rc": rc, **found}))
""")


@pytest.mark.slow
def test_serve_answers_metadata_without_the_modules_it_does_not_need(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(free_port()), str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0, proc.stderr
    assert got["correlation_id"] == 7, proc.stderr     # the Metadata request was answered
    modules = set(got["modules"])
    assert "kwire.metrics" in modules and "kwire.handlers.metadata" in modules   # the probe saw a serving broker
    early = {m: why for m, why in NOT_BEFORE_FIRST_METADATA.items()
             if m in modules or any(x.startswith(m + ".") for x in modules)}
    assert not early, "imported before the first Metadata answer: " + "; ".join(
        f"{m} (belongs to: {why})" for m, why in sorted(early.items()))
