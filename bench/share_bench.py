"""Share-group fetch throughput (KIP-932, issue 19). ``run(quick=False)`` prints and returns
rows ``(name, value, unit, budget, verdict)``; also ``python -m bench.share_bench``.

One kwire broker in its own process (emulating Kafka 4.3); one topic with one partition
holding N records of 100 bytes; 3 confluent-kafka ShareConsumers (librdkafka's share
consumer, implicit acknowledgement: each poll accepts the previous batch), one thread each,
in one share group, read until every record was delivered: records/s from the first record
delivered (the group joined) to the last,
and how many records were delivered more than once (must be 0: no lock expires here; what
arrives after the last record was seen is not counted: librdkafka 2.16's close() acknowledges
nothing and the broker releases what a closing consumer holds, as Kafka does). For
context, one classic consumer reads the same partition (Fetch, no acknowledgements).
Best of 3 rounds (1 with --quick), a fresh group each round.
"""
from __future__ import annotations

import threading
import time
import uuid

RECORDS = 20_000
QUICK_RECORDS = 4_000


def _share_round(bs: str, topic: str, n: int) -> tuple[float, int, list[int]]:
    from confluent_kafka import ShareConsumer

    from kwire.testing.client import WireClient
    from tests.share.test_share_wire import _res

    group = f"bench-share-{uuid.uuid4().hex[:8]}"
    with WireClient(bs) as c:
        c.request("IncrementalAlterConfigs", 1, resources=[_res(c, group, "share.auto.offset.reset", "earliest")],
                  validate_only=False)
    seen: dict[int, int] = {}
    lock = threading.Lock()
    done = threading.Event()
    started = threading.Barrier(4)
    per = [0, 0, 0]
    first: list[float] = []   # when the first record arrived (the group joined)

    def consume(i: int) -> None:
        sc = ShareConsumer({"bootstrap.servers": bs, "group.id": group})
        try:
            sc.subscribe([topic])
            started.wait()
            while not done.is_set():
                msgs = [m for m in sc.poll(0.2) if m.error() is None]
                with lock:
                    if done.is_set():
                        break
                    if msgs and not first:
                        first.append(time.perf_counter())
                    for m in msgs:
                        seen[m.offset()] = seen.get(m.offset(), 0) + 1
                    per[i] += len(msgs)
                    if len(seen) >= n:
                        done.set()
            sc.commit_sync()   # accept the last batch (librdkafka's close() releases what it holds)
        finally:
            sc.close()

    threads = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    started.wait()
    done.wait(120)
    elapsed = time.perf_counter() - first[0] if first else float("inf")
    for t in threads:
        t.join(30)
    if len(seen) < n:
        raise TimeoutError(f"only {len(seen)} of {n} records delivered")
    return n / elapsed, sum(1 for v in seen.values() if v > 1), per


def _classic_round(bs: str, topic: str, n: int) -> float:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bs, "group.id": f"bench-classic-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got = 0
        t0 = None
        while got < n:
            msgs = c.consume(500, 1.0)
            if msgs and t0 is None:
                t0 = time.perf_counter()
            got += sum(1 for m in msgs if m.error() is None)
        return n / (time.perf_counter() - t0)
    finally:
        c.close()


def run(quick: bool = False) -> list[tuple]:
    from confluent_kafka import Producer

    from kwire.testing import Broker
    from kwire.testing.client import WireClient

    n = QUICK_RECORDS if quick else RECORDS
    rounds = 1 if quick else 3
    rows: list[tuple] = []
    with Broker(mode="process", overrides={"kwire.emulate.kafka.version": "4.3",
                                           "offsets.topic.num.partitions": 1}) as b:
        bs = b.bootstrap_servers
        topic = f"bench-share-{uuid.uuid4().hex[:8]}"
        with WireClient(bs) as c:
            c.create_topic(topic, 1)
        p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
        payload = b"x" * 100
        for _ in range(n):
            p.produce(topic, payload, partition=0)
            p.poll(0)
        p.flush(60)
        results = [_share_round(bs, topic, n) for _ in range(rounds)]
        best = max(results, key=lambda r: r[0])
        classic = max(_classic_round(bs, topic, n) for _ in range(rounds))
    rows.append((f"share fetch: 3 share consumers, 1 partition, {n} records", round(best[0]), "records/s",
                 "(info)", True))
    rows.append(("share fetch: records per consumer (best round)", "/".join(map(str, best[2])), "", "(info)", True))
    rows.append(("share fetch: records delivered twice", max(r[1] for r in results), "records", "0",
                 all(r[1] == 0 for r in results)))
    rows.append((f"classic consumer, same partition, {n} records (context)", round(classic), "records/s",
                 "(info)", True))
    for name, value, unit, budget, ok in rows:
        print(f"{'PASS' if ok else 'MISS'}  {name}: {value} {unit}  (budget {budget})")
    return [(nm, v, u, bd, "PASS" if ok else ("info" if bd == "(info)" else "MISS")) for nm, v, u, bd, ok in rows]


if __name__ == "__main__":
    run()
