"""Idempotent producer cost: confluent-kafka produce throughput with enable.idempotence=true
against the same producer with it off, same kwire broker, same run.

kwire runs as a subprocess with its log on disk (bench.server_bench.kwire_broker). For each
scenario (100 B records on 1 and on 8 partitions, acks=all, linger.ms=5) the two producer
settings alternate round by round, each to a fresh topic, and the best round of each counts,
so drift of a shared machine hits both alike. Budget: idempotent / plain >= 0.95.

``run(quick=False)`` returns rows ``(name, value, unit, budget, verdict)``;
``python -m bench.idempotence_bench [--quick]`` runs it alone.
"""
from __future__ import annotations

import sys
import time
import uuid

from bench.server_bench import TIMEOUT, _create_topic, _producer, kwire_broker

BUDGET = 0.95
VALUE = b"x" * 100


def _throughput(bootstrap: str, partitions: int, n: int, idempotent: bool, **extra) -> float:
    topic = f"idem-bench-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, partitions)
    p = _producer(bootstrap, **{"enable.idempotence": idempotent, **extra})
    p.produce(topic, value=b"warm-up")  # connection, metadata and InitProducerId out of the timing
    p.flush(TIMEOUT)
    errors = []

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err)

    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=VALUE, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.005)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(TIMEOUT)
    dt = time.perf_counter() - t0
    if left or errors:
        raise RuntimeError(f"{left} undelivered, errors {errors[:3]}")
    return n / dt


def measure(bootstrap: str, quick: bool) -> list[tuple[str, float, float]]:
    n = 300_000 if quick else 1_000_000
    rounds = 3 if quick else 5
    out = []
    for partitions in (1, 8):
        best = {False: 0.0, True: 0.0}
        for r in range(rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            for idem in order:
                best[idem] = max(best[idem], _throughput(bootstrap, partitions, n, idem))
        out.append((f"{partitions}p x {n} x 100 B", best[False], best[True]))
    return out


def broker_side(quick: bool) -> list[tuple[str, float, float]]:
    """The broker's own cost, in process: microseconds per append of one 16 KiB batch (160 x
    100 B records) to a partition log, plain vs idempotent (producer-state check + update)."""
    import tempfile

    from kwire.codec.records import build_batch
    from kwire.log.partition_log import PartitionLog
    from kwire.log.producer_state import append_idempotent

    n = 3_000 if quick else 10_000
    recs = [(None, VALUE, [], 1_700_000_000_000)] * 160
    plain = build_batch(recs)
    out = {}
    for idem in (False, True):
        best = float("inf")
        for _ in range(3):
            with tempfile.TemporaryDirectory(prefix="kwire-idem-bench-") as d:
                log = PartitionLog.open(d, now_ms=1_700_000_000_000)
                batches = [build_batch(recs, producer_id=7, producer_epoch=0, base_sequence=i * 160)
                           for i in range(n)] if idem else [plain] * n
                t0 = time.perf_counter()
                for b in batches:
                    append_idempotent(log, b, now_ms=1_700_000_000_000)
                best = min(best, (time.perf_counter() - t0) / n * 1e6)
                log.close()
        out[idem] = best
    return [("broker append 16 KiB batch", out[False], out[True])]


def run(quick: bool = False) -> list[tuple]:
    with kwire_broker() as (bootstrap, _proc):
        results = measure(bootstrap, quick)
    rows = []
    for name, plain, idem in broker_side(quick):
        print(f"{name}: plain {plain:.1f} us, idempotent {idem:.1f} us (+{idem - plain:.1f} us per request)")
        rows.append((f"idempotence.{name} plain", round(plain, 1), "us", "-", "info"))
        rows.append((f"idempotence.{name} idempotent", round(idem, 1), "us", "-", "info"))
    print(f"{'scenario':<28}{'plain msg/s':>14}{'idempotent msg/s':>18}{'ratio':>8}  verdict")
    for name, plain, idem in results:
        ratio = idem / plain
        verdict = "PASS" if ratio >= BUDGET else "MISS"
        print(f"{name:<28}{plain:>14,.0f}{idem:>18,.0f}{ratio:>8.3f}  {verdict}")
        rows.append((f"idempotence.{name} plain", round(plain), "msg/s", "-", "info"))
        rows.append((f"idempotence.{name} idempotent", round(idem), "msg/s", "-", "info"))
        rows.append((f"idempotence.{name} idempotent/plain", round(ratio, 3), "x", f">= {BUDGET}", verdict))
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
