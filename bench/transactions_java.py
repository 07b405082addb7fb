"""The transactions benchmark's K=100 loops on the stock Java client (kafka-clients 4.x) instead of
librdkafka, used by bench.transactions_bench: the Java client is the one stock client here that
takes transaction version 2 (KIP-890 part 2: no AddPartitionsToTxn round trip, an epoch bump
answered by every EndTxn v5) when the broker finalizes it (``transaction.version=2``).

Needs a JDK and Apache Kafka's kafka-clients and slf4j-api jars, resolved from Maven by
``make kafka`` (kwire.testing.apache_kafka.kafka_libs()). ``classpath()`` is None without a JDK and
raises KafkaUnavailable, naming make kafka, without the jars.
One JVM per measurement (java/TxnBench.java: a warm-up round, then the timed one).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid

from bench.server_bench import _create_topic
from kwire.testing.apache_kafka import kafka_client_jars

HERE = os.path.dirname(os.path.abspath(__file__))


def classpath(out_dir: str) -> str | None:
    """Compile java/TxnBench.java and java/TxnPairBench.java into ``out_dir``: the classpath
    to run them, or None (no JDK); KafkaUnavailable without the jars (make kafka)."""
    if not shutil.which("javac") or not shutil.which("java"):
        return None
    cp = os.pathsep.join(map(str, kafka_client_jars(("kafka-clients-", "slf4j-api-"))))
    subprocess.run(["javac", "-d", out_dir, "-cp", cp, os.path.join(HERE, "java", "TxnBench.java"),
                    os.path.join(HERE, "java", "TxnPairBench.java")], check=True, timeout=120)
    return f"{cp}{os.pathsep}{out_dir}"


def java_loop(cp: str, bootstrap: str, mode: str, k: int, n: int, linger_ms: int = 5) -> tuple[float, str]:
    """(records/s, transaction version the producer used: "1", "2", or "-" when idempotent) of
    n records: ``mode`` "txn" (transactions of k) or "idem" (flush() every k)."""
    topic = f"txn-java-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic, 1)
    r = subprocess.run(["java", f"-Dlinger.ms={linger_ms}", "-cp", cp, "TxnBench", bootstrap, topic, mode, str(k),
                        str(n)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"TxnBench {mode}: {(r.stdout + r.stderr)[-2000:]}")
    rate, tv = r.stdout.split()[:2]
    return float(rate), tv


LINGERS = (5, 0)


def java_pairs(cp: str, bootstrap: str, k: int = 100, blocks: int = 20, per_block: int = 20,
               record_bytes: int = 100) -> dict:
    """The K loops paired in time (java/TxnPairBench.java: one JVM, four producers, short
    blocks in turn): {"txn-5"|"txn-0"|"idem-5"|"idem-0": (records/s, version used),
    "blocks": [each block's best transactional / best idempotent], "block_ms": [each block's
    milliseconds of the four, in that order]}."""
    prefix = f"txn-pair-{uuid.uuid4().hex[:8]}"
    for name in ("txn-5", "txn-0", "idem-5", "idem-0"):
        _create_topic(bootstrap, f"{prefix}-{name}", 1)
    r = subprocess.run(["java", "-cp", cp, "TxnPairBench", bootstrap, prefix, str(k), str(blocks), str(per_block),
                        str(record_bytes)],
                       capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(f"TxnPairBench: {(r.stdout + r.stderr)[-2000:]}")
    out: dict = {"block_ms": []}
    for line in r.stdout.splitlines():
        f = line.split()
        if f and f[0] == "block":
            out["block_ms"].append(tuple(float(x) for x in f[2:]))
        elif f and f[0] == "blocks":
            out["blocks"] = [float(x) for x in f[1:]]
        elif len(f) == 3:
            out[f[0]] = (float(f[1]), f[2])
    return out


def measure(brokers: dict[str, str], quick: bool, k: int = 100) -> dict[str, dict]:
    """{broker name: {"txn": best rec/s, "idem": best rec/s, "tv": version used, (mode, linger):
    best rec/s, "round_ratios": each round's best transactional / best idempotent}}, rounds alternating between the brokers, the two loops and linger.ms 5 and 0:
    each loop's best over both (the Java client's flush() every 100 records is 2-3 times faster
    at linger.ms=0, its transactions are not; librdkafka is the other way round)."""
    rounds, n = (2, 10_000) if quick else (5, 20_000)
    best = {name: {"txn": 0.0, "idem": 0.0, "tv": "?", "round_ratios": []} for name in brokers}
    with tempfile.TemporaryDirectory(prefix="kwire-java-bench-") as tmp:
        cp = classpath(tmp)
        if cp is None:
            raise RuntimeError("no JDK (java and javac): make deps installs one")
        names = list(brokers)
        for r in range(rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                this_round = {"txn": 0.0, "idem": 0.0}
                for mode in (("txn", "idem") if r % 2 == 0 else ("idem", "txn")):
                    for linger in (LINGERS if r % 2 == 0 else LINGERS[::-1]):
                        rate, tv = java_loop(cp, brokers[name], mode, k, n, linger)
                        b = best[name]
                        b[mode] = max(b[mode], rate)
                        b[(mode, linger)] = max(b.get((mode, linger), 0.0), rate)
                        this_round[mode] = max(this_round[mode], rate)
                        if mode == "txn":
                            b["tv"] = tv
                best[name]["round_ratios"].append(this_round["txn"] / this_round["idem"])
    return best
