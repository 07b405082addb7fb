"""Idempotent producer cost: confluent-kafka produce throughput with enable.idempotence=true
against the same producer with it off, same kwire broker, same run.

kwire runs as a subprocess with its log on disk (bench.server_bench.kwire_broker). For each
scenario (100 B records on 1 and on 8 partitions, acks=all, linger.ms=5) the two producer
settings alternate round by round, each to a fresh topic, and the best round of each counts,
so drift of a shared machine hits all alike. Budget: idempotent / plain >= 0.95, checked both
against the plain producer with librdkafka's defaults and against the plain producer with the
same 5 requests in flight that librdkafka imposes on an idempotent one (see VARIANTS).
A broker-side row times PartitionLog appends with and without the producer-state checks.

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


# (label, idempotent, extra producer settings). librdkafka caps an idempotent producer at 5
# requests in flight per connection (max.in.flight.requests.per.connection <= 5) while a plain
# one defaults to 1,000,000; "plain, 5 in flight" is the same client pipeline without
# idempotence, so its ratio is what the broker's producer-state work costs.
VARIANTS = [
    ("plain", False, {}),
    ("plain, 5 in flight", False, {"max.in.flight.requests.per.connection": 5}),
    ("idempotent", True, {}),
]


def measure(bootstrap: str, quick: bool) -> list[tuple[str, dict[str, float]]]:
    n = 300_000 if quick else 1_000_000
    rounds = 3 if quick else 5
    out = []
    for partitions in (1, 8):
        best = {label: 0.0 for label, _, _ in VARIANTS}
        for r in range(rounds):
            order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
            for label, idem, extra in order:
                best[label] = max(best[label], _throughput(bootstrap, partitions, n, idem, **extra))
        out.append((f"{partitions}p x {n} x 100 B", best))
    return out


def broker_side(quick: bool) -> list[tuple[str, float, float]]:
    """The broker's own cost, in process: microseconds per append of one 16 KiB batch (160 x
    100 B records) to a partition log, plain vs idempotent (producer-state check + update)."""
    import tempfile

    from kwire.codec.records import build_batch
    from kwire.log.partition_log import PartitionLog
    from kwire.log.producer_log import append_idempotent

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
    print(f"{'scenario':<26}" + "".join(f"{label + ' msg/s':>26}" for label, _, _ in VARIANTS)
          + f"{'idem/plain':>12}{'idem/plain5':>12}  verdict")
    for name, best in results:
        idem = best["idempotent"]
        ratio = idem / best["plain"]
        ratio5 = idem / best["plain, 5 in flight"]
        verdict = "PASS" if ratio5 >= BUDGET else "MISS"
        print(f"{name:<26}" + "".join(f"{best[label]:>26,.0f}" for label, _, _ in VARIANTS)
              + f"{ratio:>12.3f}{ratio5:>12.3f}  {verdict}")
        for label, _, _ in VARIANTS:
            rows.append((f"idempotence.{name} {label}", round(best[label]), "msg/s", "-", "info"))
        rows.append((f"idempotence.{name} idempotent/plain (client defaults)", round(ratio, 3), "x",
                     f">= {BUDGET}", "PASS" if ratio >= BUDGET else "MISS"))
        rows.append((f"idempotence.{name} idempotent/plain (5 in flight both)", round(ratio5, 3), "x",
                     f">= {BUDGET}", verdict))
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
