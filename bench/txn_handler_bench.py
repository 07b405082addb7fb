"""The broker's own cost of a transaction of version 2, without the network or a client: an
in-process kwire broker whose Produce and EndTxn handlers are called directly on its Trio loop,
back to back as a TV2 producer sends them (Produce v12 with a transactional batch of 100
records, which adds the partition to the transaction: a durable Ongoing write to
``__transaction_state``; then EndTxn v5: PrepareCommit written, the epoch bumped), against an
idempotent Produce v12 of the same 100 records. Between transactions the loop runs until the
markers and CompleteCommit are written (as a client's think time lets it).

What the transactions benchmark's Java 100/txn ratio is made of, seen from the broker: the
"transactional extra" (Produce + EndTxn beyond one idempotent Produce) is the part of each
transaction kwire itself adds; the rest is the client's second round trip. Medians per call,
after a warm-up quarter; the same loop on a baseline tree (bench.baseline: KWIRE_BASELINE, else
the merge-base with main) in a subprocess, alternating, for before/after.

``python -m bench txn_handler [--quick]``; ``python -m bench.txn_handler_bench --one N``
prints one measurement of the kwire found on sys.path as JSON.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

N, N_QUICK = 2000, 600
ROUNDS, ROUNDS_QUICK = 3, 2
VALUE = b"x" * 100


def measure(n: int) -> dict[str, float]:
    """{"txn_produce", "end_txn", "idem_produce", "txn_extra"}: median microseconds per call."""
    import trio

    import kwire.handlers as H
    from kwire.codec.apis import api
    from kwire.codec.frame import RequestHeader
    from kwire.codec.records import build_batch
    from kwire.handlers import REGISTRY, RequestContext
    from kwire.testing import Broker
    from kwire.testing.client import WireClient

    H.load_all()
    P, E = api("Produce"), api("EndTxn")
    PR, ER = P.request, E.request
    tid = "txn-handler-bench"
    with Broker(overrides={"transaction.state.log.num.partitions": 1}) as b:
        b.create_topic("txn", 1)
        b.create_topic("idem", 1)
        with WireClient(b.bootstrap_servers) as c:
            deadline = time.monotonic() + 30
            while c.request("FindCoordinator", 4, key_type=1, coordinator_keys=[tid]).coordinators[0].error_code:
                if time.monotonic() > deadline:
                    raise RuntimeError("no transaction coordinator")
                time.sleep(0.05)
            t = c.request("InitProducerId", 5, transactional_id=tid, transaction_timeout_ms=60000,
                          producer_id=-1, producer_epoch=-1)
            i = c.request("InitProducerId", 5, transactional_id=None, transaction_timeout_ms=60000,
                          producer_id=-1, producer_epoch=-1)
            if t.error_code or i.error_code:
                raise RuntimeError(f"InitProducerId: {t.error_code} / {i.error_code}")
        produce, end_txn = REGISTRY[P.key].fn, REGISTRY[E.key].fn

        def produce_request(topic: str, pid: int, epoch: int, seq: int, txn: bool):
            now = int(time.time() * 1000)
            batch = build_batch([(None, VALUE, [], now)] * 100, producer_id=pid, producer_epoch=epoch,
                                base_sequence=seq, is_transactional=txn)
            return PR.cls(transactional_id=tid if txn else None, acks=-1, timeout_ms=10000, topic_data=[
                PR.struct("TopicProduceData")(name=topic, partition_data=[
                    PR.struct("PartitionProduceData")(index=0, records=batch)])])

        async def loop() -> dict[str, list[float]]:
            broker = b.broker
            coord = broker.txn_edge.coordinator
            pid, epoch = t.producer_id, t.producer_epoch
            seq = 0
            out: dict[str, list[float]] = {"txn_produce": [], "end_txn": [], "idem_produce": []}
            for k in range(n):
                req = produce_request("txn", pid, epoch, 0, True)
                ireq = produce_request("idem", i.producer_id, i.producer_epoch, seq, False)
                seq += 100
                t0 = time.perf_counter()
                r = await produce(RequestContext(broker, RequestHeader(P.key, 12, k, "bench", 2), P, "bench"), req)
                t1 = time.perf_counter()
                e = await end_txn(RequestContext(broker, RequestHeader(E.key, 5, k, "bench", 2), E, "bench"),
                                  ER.cls(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                         committed=True))
                t2 = time.perf_counter()
                if r.responses[0].partition_responses[0].error_code or e.error_code:
                    raise RuntimeError(f"transaction {k}: {r} / {e}")
                pid, epoch = e.producer_id, e.producer_epoch
                for _ in range(50):   # the markers and CompleteCommit
                    await trio.sleep(0)
                    if not coord.completing(tid):
                        break
                t3 = time.perf_counter()
                ir = await produce(RequestContext(broker, RequestHeader(P.key, 12, k, "bench", 2), P, "bench"), ireq)
                t4 = time.perf_counter()
                if ir.responses[0].partition_responses[0].error_code:
                    raise RuntimeError(f"idempotent produce {k}: {ir}")
                out["txn_produce"].append(t1 - t0)
                out["end_txn"].append(t2 - t1)
                out["idem_produce"].append(t4 - t3)
            return out

        times = trio.from_thread.run(loop, trio_token=b._trio_token)
    q = n // 4
    med = {k: statistics.median(v[q:]) * 1e6 for k, v in times.items()}
    med["txn_extra"] = med["txn_produce"] + med["end_txn"] - med["idem_produce"]
    return med


def _one(tree: str | None, n: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (tree, os.getcwd()) if p))
    r = subprocess.run([sys.executable, "-m", "bench.txn_handler_bench", "--one", str(n)], env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"txn handler bench ({tree or 'this tree'}): {r.stderr[-1500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> list[tuple]:
    from bench.baseline import baseline_tree

    n, rounds = (N_QUICK, ROUNDS_QUICK) if quick else (N, ROUNDS)
    with tempfile.TemporaryDirectory(prefix="kwire-txn-handler-") as tmp:
        base, rev = baseline_tree(tmp)
        trees = {"this tree": None} | ({f"baseline {rev}": base} if base else {})
        got: dict[str, list[dict]] = {name: [] for name in trees}
        for r in range(rounds):
            for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                got[name].append(_one(trees[name], n))
    rows = []
    for name, ms in got.items():
        best = {k: min(m[k] for m in ms) for k in ms[0]}
        print(f"{name}: transactional Produce {best['txn_produce']:.0f} us + EndTxn {best['end_txn']:.0f} us, "
              f"idempotent Produce {best['idem_produce']:.0f} us: transactional extra {best['txn_extra']:.0f} us "
              f"(best of {len(ms)} rounds of {n} medians)")
        for k in ("txn_produce", "end_txn", "idem_produce", "txn_extra"):
            rows.append((f"txn_handler.{k} ({name})", round(best[k]), "us", "-", "info"))
    return rows


if __name__ == "__main__":
    if "--one" in sys.argv:
        print(json.dumps(measure(int(sys.argv[sys.argv.index("--one") + 1]))))
    else:
        for row in run(quick="--quick" in sys.argv):
            print(row)
