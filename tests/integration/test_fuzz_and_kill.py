"""Malformed frames never take the broker down; SIGKILL under acks=all loses nothing acked."""
import random
import socket
import struct
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
import pytest

from kwire.codec import frame as FR
from kwire.codec.apis import APIS, api
from kwire.testing import Broker

pytestmark = pytest.mark.slow


def _valid_requests():
    out = []
    m = api("Metadata")
    out.append(FR.encode_request(m, 12, 1, m.request.cls(topics=None)))
    a = api("ApiVersions")
    out.append(FR.encode_request(a, 3, 2, a.request.cls(client_software_name="f", client_software_version="1")))
    return out


def _garbage(rng: random.Random, seeds: list[bytes]) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:  # random body with an honest length
        body = rng.randbytes(rng.randrange(0, 200))
        return struct.pack(">i", len(body)) + body
    if kind == 1:  # negative or huge size
        return struct.pack(">i", rng.choice([-1, -1000, 2**31 - 1, 200 * 1024 * 1024]))
    if kind == 2:  # a valid request with flipped bytes
        b = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(4, len(b))
            b[i] = rng.randrange(256)
        return bytes(b)
    if kind == 3:  # truncated valid request, length kept honest
        b = rng.choice(seeds)[4:]
        b = b[: rng.randrange(0, len(b))]
        return struct.pack(">i", len(b)) + b
    if kind == 4:  # known api key, random version, random tail
        key = rng.choice(list(APIS))
        body = struct.pack(">hhi", key, rng.randrange(-2, 20), 5) + rng.randbytes(rng.randrange(0, 64))
        return struct.pack(">i", len(body)) + body
    body = struct.pack(">hhi", rng.randrange(-5, 30000), 0, 9)  # unknown api keys
    return struct.pack(">i", len(body)) + body


def _fuzz_worker(bootstrap, seed, n, sent):
    rng = random.Random(seed)
    seeds = _valid_requests()
    host, port = bootstrap.rsplit(":", 1)
    i = 0
    while i < n:
        try:
            with socket.create_connection((host, int(port)), timeout=2) as s:
                for _ in range(rng.randrange(1, 20)):
                    s.sendall(_garbage(rng, seeds))
                    i += 1
                    sent[0] += 1
                s.settimeout(0.05)
                try:
                    s.recv(65536)
                except OSError:
                    pass
        except OSError:
            i += 1


def test_fuzz_while_good_client_produces(kwire_broker, topic):
    bootstrap = kwire_broker.bootstrap_servers
    sent = [0]
    workers = [threading.Thread(target=_fuzz_worker, args=(bootstrap, s, 400, sent)) for s in range(8)]
    for w in workers:
        w.start()
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 1})
    acked = []
    i = 0
    while any(w.is_alive() for w in workers) or i < 500:
        p.produce(topic, value=f"{i}".encode(), on_delivery=lambda e, m: acked.append(m.offset()) if e is None else None)
        p.poll(0)
        i += 1
        if i % 100 == 0:
            p.flush(10)
    for w in workers:
        w.join()
    assert p.flush(30) == 0
    assert sent[0] >= 3000
    assert len(acked) == i
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fz", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < i and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [f"{k}".encode() for k in range(i)]


def test_sigkill_under_acks_all_loses_nothing(tmp_path):
    topic = "killed"
    acked: dict[int, bytes] = {}
    b = Broker(mode="process", data_dir=str(tmp_path))
    try:
        for round_ in range(3):
            b.start()
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all", "linger.ms": 2,
                          "message.timeout.ms": 5000, "retries": 0})

            def cb(err, msg):
                if err is None:
                    acked[msg.offset()] = msg.value()

            deadline = time.monotonic() + 1.5
            n = 0
            while time.monotonic() < deadline:
                p.produce(topic, value=f"r{round_}-{n}".encode(), on_delivery=cb)
                p.poll(0)
                n += 1
                if n % 200 == 0:
                    p.poll(0.01)
            b.kill()
            p.flush(6)
        b.start()
        assert len(acked) > 100
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "k", "enable.auto.commit": False})
        c.assign([TopicPartition(topic, 0, 0)])
        got = {}
        deadline = time.monotonic() + 60
        top = max(acked)
        highest = -1
        while time.monotonic() < deadline and highest < top:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got[m.offset()] = m.value()
                highest = max(highest, m.offset())
        c.close()
        for off, val in acked.items():
            assert got.get(off) == val, f"acknowledged offset {off} lost or changed"
    finally:
        b.cleanup()
