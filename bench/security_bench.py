"""Security budgets (issue 17): TLS throughput relative to plaintext, and the SCRAM handshake.

- TLS / plaintext: confluent-kafka produces N records of 1 KiB (acks=1, lz4 off, batches of
  up to 1 MiB) and consumes them back, once against a PLAINTEXT listener and once against an
  SSL listener of the same in-process broker (``Broker(security="SSL")`` also opens a
  PLAINTEXT harness listener). Records/s of each; budget: TLS >= 0.6 x plaintext, for produce
  and for consume (consume is where sendfile is replaced by the buffered path).
- SCRAM handshake: the server's side of a SCRAM-SHA-256 and SCRAM-SHA-512 exchange
  (kwire.security.sasl, no I/O; the client's PBKDF2 is done once, outside the loop, as the
  budget excludes it). p50 budget <= 5 ms.

``run(quick=False)`` -> rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import statistics
import time


def _produce_consume(conf: dict, topic: str, n: int, size: int = 1024) -> tuple[float, float]:
    from confluent_kafka import Consumer, Producer

    p = Producer({**conf, "linger.ms": 5, "acks": "1", "batch.size": 1 << 20, "queue.buffering.max.messages": n + 10})
    value = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        p.produce(topic, value)
        p.poll(0)
    p.flush(60)
    produce = n / (time.perf_counter() - t0)
    c = Consumer({**conf, "group.id": f"b-{topic}", "auto.offset.reset": "earliest", "fetch.max.bytes": 50 << 20})
    c.subscribe([topic])
    got = 0
    t0 = None
    deadline = time.monotonic() + 60
    while got < n and time.monotonic() < deadline:
        msgs = c.consume(10000, 1.0)
        if msgs and t0 is None:
            t0 = time.perf_counter()
            got -= 0
        got += sum(1 for m in msgs if m.error() is None)
    consume = got / (time.perf_counter() - (t0 or time.perf_counter()))
    c.close()
    return produce, consume


def _scram_p50(mech: str, rounds: int) -> float:
    from kwire.security.sasl import ScramServer, scram_credential

    h = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}[mech]
    cred = scram_credential(mech, "pw")
    salted = hashlib.pbkdf2_hmac(h().name, b"pw", cred.salt, cred.iterations)   # the client's PBKDF2, once
    client_key = hmac.new(salted, b"Client Key", h).digest()
    times = []
    for i in range(rounds):
        t0 = time.perf_counter()
        s = ScramServer(mech, {"u": cred})
        first_bare = f"n=u,r=c{i}".encode()
        sf = s.evaluate(b"n,," + first_bare)
        nonce = sf.split(b",")[0][2:]
        without = b"c=biws,r=" + nonce
        sig = hmac.new(h(client_key).digest(), first_bare + b"," + sf + b"," + without, h).digest()
        s.evaluate(without + b",p=" + base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig))))
        assert s.complete
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def run(quick: bool = False) -> list[tuple]:
    from kwire.testing.broker import Broker

    n = 20_000 if quick else 100_000
    rows: list[tuple] = []
    with Broker(security="SSL") as b:
        b.create_topic("bench-plain", 1)
        b.create_topic("bench-tls", 1)
        plain = _produce_consume({"bootstrap.servers": f"127.0.0.1:{b.harness_port}"}, "bench-plain", n)
        tls = _produce_consume(b.client_config("confluent"), "bench-tls", n)
    for i, what in enumerate(("produce", "consume")):
        ratio = tls[i] / plain[i]
        rows.append((f"security.{what} 1KiB plaintext", round(plain[i]), "rec/s", "-", "info"))
        rows.append((f"security.{what} 1KiB TLS", round(tls[i]), "rec/s", "-", "info"))
        rows.append((f"security.{what} TLS/plaintext", round(ratio, 3), "x", ">= 0.6",
                     "PASS" if ratio >= 0.6 else "MISS"))
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        p50 = _scram_p50(mech, 50 if quick else 200)
        rows.append((f"security.{mech} handshake p50 (server)", round(p50, 3), "ms", "<= 5 ms",
                     "PASS" if p50 <= 5 else "MISS"))
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
