"""Client quota budgets (issue 17): what quotas cost the request path.

- quotas off (no quota ever configured): the edge's one attribute check per request; budget
  <= 1 us (the produce path must not slow down for brokers without quotas).
- quota sensor record, in process (kwire.quota.manager, no I/O): a Produce of a client with no
  quota of its own while another client has one (Kafka records it all the same), and of a
  client over its quota (rate, window and throttle time computed); budget <= 50 us each.
- end to end, side by side in one run: single-message produce round trips (confluent-kafka,
  acks=1, linger 0) against an in-process broker, with no quota, then with producer_byte_rate
  and request_percentage quotas configured for another client id (so the edge records every
  request, and every handler is timed for request_percentage); p50 of each, reported (info: the shared
  machine's noise is larger than the difference).

``run(quick=False)`` -> rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

from kwire.metadata.delta import replay
import time


def _micro(n: int) -> dict[str, float]:
    from kwire.metadata import records as R
    from kwire.metadata.image import MetadataImage
    from kwire.quota.manager import ClientQuotas

    image = MetadataImage()
    q = ClientQuotas(lambda: image.client_quotas)
    image.listeners.append(q.on_record)
    out = {}
    t0 = time.perf_counter()
    for _ in range(n):
        if q.enabled:
            pass
    out["off"] = (time.perf_counter() - t0) / n * 1e6
    E = R.CLIENT_QUOTA.struct("EntityData")
    image = replay(image, [(R.CLIENT_QUOTA, R.CLIENT_QUOTA.cls(entity=[E(entity_type="client-id", entity_name="limited")],
                                                  key="producer_byte_rate", value=1000.0, remove=False))])
    for label, client in (("unlimited", "free"), ("limited", "limited")):
        t0 = time.perf_counter()
        for i in range(n):
            q.produce.record("ANONYMOUS", client, 1000, i // 50)
        out[label] = (time.perf_counter() - t0) / n * 1e6
    return out


def _single_produce_p50(bootstrap: str, n: int) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        p.produce("qb", b"y")
        p.flush(10)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    return lat[len(lat) // 2] * 1e6


def _alter(bootstrap: str) -> None:
    from kwire.codec.apis import api
    from kwire.testing.client import WireClient

    R = api("AlterClientQuotas").request
    with WireClient(bootstrap) as c:
        r = c.request("AlterClientQuotas", 1, validate_only=False, entries=[R.struct("EntryData")(
            entity=[R.struct("EntityData")(entity_type="client-id", entity_name="someone-else")],
            ops=[R.struct("OpData")(key="producer_byte_rate", value=1000.0, remove=False),
                 R.struct("OpData")(key="request_percentage", value=10.0, remove=False)])])
        assert r.entries[0].error_code == 0, r


def run(quick: bool = False) -> list[tuple]:
    import tempfile

    from kwire.testing import Broker

    m = _micro(20_000 if quick else 200_000)
    rows = [("quota: quotas off, check per request", m["off"], "us", "<= 1 us", "PASS" if m["off"] <= 1 else "MISS")]
    for label in ("unlimited", "limited"):
        rows.append((f"quota: record a produce ({label} client)", m[label], "us", "<= 50 us",
                     "PASS" if m[label] <= 50 else "MISS"))
    n = 300 if quick else 2000
    with tempfile.TemporaryDirectory() as d:
        with Broker(data_dir=d) as b:
            b.create_topic("qb", 1)
            _single_produce_p50(b.bootstrap_servers, 50)   # warm up
            off = _single_produce_p50(b.bootstrap_servers, n)
            _alter(b.bootstrap_servers)
            on = _single_produce_p50(b.bootstrap_servers, n)
    rows.append(("quota: single produce p50, no quota", off, "us", "-", "info"))
    rows.append(("quota: single produce p50, quotas on (other client)", on, "us", "-", "info"))
    for r in rows:
        print(f"{r[0]:55s} {r[1]:10.2f} {r[2]:3s} {r[3]:10s} {r[4]}")
    return rows


if __name__ == "__main__":
    import sys

    run("--quick" in sys.argv)
