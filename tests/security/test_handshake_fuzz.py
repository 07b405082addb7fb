"""Fuzzed TLS and SASL handshakes against a SASL_SSL broker process: garbage records, real
ClientHellos truncated or with flipped bytes, and after a good TLS handshake garbage, truncated
and oversized SASL frames. None of it takes the broker down, each connection is dropped (never
left hanging), the broker's memory does not grow with the number of bad peers, and a stock
client authenticates and round-trips records afterwards.

``KWIRE_FUZZ_ROUNDS`` (default 150) sets the number of bad connections per measured pass."""
from __future__ import annotations

import os
import random
import socket
import ssl
import struct

import pytest

from kwire.testing.broker import Broker
from tests.security.clients import confluent_roundtrip

pytestmark = pytest.mark.slow

ROUNDS = int(os.environ.get("KWIRE_FUZZ_ROUNDS", "150"))


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _client_hello(ca_file: str) -> bytes:
    """A real ClientHello, as the standard library's TLS client writes it."""
    ctx = ssl.create_default_context(cafile=ca_file)
    out = ssl.MemoryBIO()
    obj = ctx.wrap_bio(ssl.MemoryBIO(), out, server_side=False, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def _drain(s: socket.socket) -> None:
    """Read until the broker closes (a timeout fails the test: a bad peer must not hang there)."""
    s.settimeout(10)
    try:
        while s.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass


def _bad_tls(b, rng: random.Random, hello: bytes) -> None:
    kind = rng.randrange(4)
    with socket.create_connection((b.host, b.port), timeout=5) as s:
        if kind == 0:     # a TLS record header of any length, then noise
            s.sendall(bytes([0x16, 3, rng.randrange(4)]) + struct.pack(">H", rng.randrange(1 << 16))
                      + rng.randbytes(rng.randrange(1, 3000)))
        elif kind == 1:   # pure noise
            s.sendall(rng.randbytes(rng.randrange(1, 20000)))
        elif kind == 2:   # a real ClientHello with bytes flipped
            data = bytearray(hello)
            for _ in range(rng.randrange(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            s.sendall(bytes(data))
        else:             # a real ClientHello cut short, then closed: nothing to drain
            s.sendall(hello[:rng.randrange(1, len(hello))])
            return
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        _drain(s)


def _bad_sasl(b, rng: random.Random, ctx: ssl.SSLContext) -> None:
    raw = socket.create_connection((b.host, b.port), timeout=5)
    with ctx.wrap_socket(raw, server_hostname="localhost") as s:
        kind = rng.randrange(4)
        try:
            if kind == 0:     # a frame that says it is huge (a SaslHandshake's size prefix)
                s.sendall(struct.pack(">i", rng.choice([0x7FFFFFFF, 100 << 20, 600 << 10])) + rng.randbytes(64))
            elif kind == 1:   # a well-sized frame of noise
                body = rng.randbytes(rng.randrange(1, 4000))
                s.sendall(struct.pack(">i", len(body)) + body)
            elif kind == 2:   # SaslHandshake v1 PLAIN, then SaslAuthenticate v2 with a (possibly oversized) token
                hs = struct.pack(">hhih", 17, 1, 1, 4) + b"fuzz" + struct.pack(">h", 5) + b"PLAIN"
                s.sendall(struct.pack(">i", len(hs)) + hs)
                tok = rng.randbytes(rng.randrange(1, 700 << 10))
                auth = struct.pack(">hhih", 36, 2, 2, 4) + b"fuzz" + b"\x00" + _uvarint(len(tok) + 1) + tok + b"\x00"
                s.sendall(struct.pack(">i", len(auth)) + auth)
            else:             # half a frame, then the TLS session ends: the broker answers close_notify
                s.sendall(struct.pack(">i", 200) + rng.randbytes(rng.randrange(0, 199)))
                s.settimeout(10)
                s.unwrap()
                return
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return            # the broker closed first: that is the point
        s.settimeout(10)      # the broker answers (an error) and closes: a timeout here is a hang
        try:
            while s.recv(65536):
                pass
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            pass


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def test_fuzzed_handshakes_leave_the_broker_serving_without_growing():
    rng = random.Random(20261126)
    with Broker(mode="process", security="SASL_SSL", users={"alice": "alice-secret"},
                overrides={"request.timeout.ms": 3000, "group.initial.rebalance.delay.ms": 0}) as b:
        hello = _client_hello(b.tls.ca_file)
        ctx = ssl.create_default_context(cafile=b.tls.ca_file)

        def one_pass(n):
            for i in range(n):
                if i % 2:
                    _bad_tls(b, rng, hello)
                else:
                    _bad_sasl(b, rng, ctx)
                assert b.running, f"the broker died after {i + 1} bad connections"

        one_pass(ROUNDS // 3)                 # warm-up: allocator pools, TLS contexts, caches
        before = _rss_kib(b.proc.pid)
        one_pass(ROUNDS)
        middle = _rss_kib(b.proc.pid)
        one_pass(ROUNDS)
        after = _rss_kib(b.proc.pid)
        # no growth per bad peer: the second measured pass costs (nearly) nothing over the first
        assert after - middle < 8 * 1024, (before, middle, after)
        assert after - before < 24 * 1024, (before, middle, after)
        b.create_topic("after-fuzz", 1)
        got = confluent_roundtrip(b.client_config("confluent", "alice", "SCRAM-SHA-512"), "after-fuzz", 5)
        assert len(got) == 5


def test_a_frame_over_the_sasl_limit_before_authentication_is_refused_at_once():
    """As Kafka: until a connection has authenticated, a frame larger than
    sasl.server.max.receive.size (512 KiB) ends it at its size prefix, without waiting for the bytes."""
    import time
    with Broker(security="SASL_PLAINTEXT", users={"alice": "alice-secret"}, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        with socket.create_connection((b.host, b.port), timeout=5) as s:
            s.sendall(struct.pack(">i", 600 << 10) + b"\x00" * 100)
            t0 = time.monotonic()
            _drain(s)
            assert time.monotonic() - t0 < 2
        # after authentication, the same size is a normal request size (up to socket.request.max.bytes)
        from confluent_kafka import Producer  # noqa: PLC0415
        b.create_topic("big", 1)
        p = Producer({**b.client_config("confluent", "alice", "PLAIN"), "acks": "all", "linger.ms": 0})
        errors = []
        for _ in range(2):
            p.produce("big", b"x" * 700_000, on_delivery=lambda err, msg: errors.append(err))
        p.flush(15)
        assert errors == [None, None]
