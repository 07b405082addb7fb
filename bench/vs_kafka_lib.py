"""The pure parts of ``python -m bench vs-kafka`` (bench/vs_kafka_bench.py), testable without a broker:
reading Kafka's perf tools' output, a process's CPU time and RSS from /proc, the fixed-rate
end-to-end loop's arithmetic, and the ratio/verdict rows against the issue 29 budgets.
"""
from __future__ import annotations

import os
import re
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass

# --- Kafka's own perf tools --------------------------------------------------------------------------

# ProducerPerformance's closing line ("kafka-producer-perf-test"), e.g.
# 1000000 records sent, 264830.508475 records/sec (25.26 MB/sec), 41.65 ms avg latency, 546.00 ms max
# latency, 40 ms 50th, 99 ms 95th, 109 ms 99th, 116 ms 99.9th.
_PRODUCER_TOTAL = re.compile(
    r"(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th")


@dataclass
class ProducerResult:
    records: int
    records_per_s: float
    mb_per_s: float
    avg_ms: float
    max_ms: float
    p50_ms: float
    p99_ms: float
    p999_ms: float


def parse_producer_performance(out: str) -> ProducerResult:
    """The totals line of ProducerPerformance's output (the last one: the per-interval lines before
    it say "records/sec" too, without percentiles)."""
    found = list(_PRODUCER_TOTAL.finditer(out))
    if not found:
        raise ValueError(f"no ProducerPerformance totals line in: {out[-500:]!r}")
    m = found[-1]
    return ProducerResult(int(m["records"]), float(m["rate"]), float(m["mb"]), float(m["avg"]), float(m["max"]),
                          float(m["p50"]), float(m["p99"]), float(m["p999"]))


@dataclass
class ConsumerResult:
    records: int
    mb: float
    rebalance_ms: float
    fetch_ms: float
    fetch_records_per_s: float
    fetch_mb_per_s: float


def parse_consumer_performance(out: str) -> ConsumerResult:
    """ConsumerPerformance's CSV (a header naming the columns, then one row). The rate taken is
    ``fetch.nMsg.sec``: records over the time after the group's first rebalance, so the group join
    (which differs between brokers and is not throughput) stays out of it."""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith("start.time"):
            head = [h.strip() for h in ln.split(",")]
            if i + 1 >= len(lines):
                break
            row = dict(zip(head, (v.strip() for v in lines[i + 1].split(","))))
            try:
                return ConsumerResult(int(row["data.consumed.in.nMsg"]), float(row["data.consumed.in.MB"]),
                                      float(row["rebalance.time.ms"]), float(row["fetch.time.ms"]),
                                      float(row["fetch.nMsg.sec"]), float(row["fetch.MB.sec"]))
            except (KeyError, ValueError) as exc:
                raise ValueError(f"ConsumerPerformance row not understood ({exc}): {lines[i + 1]!r}") from None
    raise ValueError(f"no ConsumerPerformance header in: {out[-500:]!r}")


# --- /proc ---------------------------------------------------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_stat_cpu_seconds(stat: str, ticks: int = CLOCK_TICKS) -> float:
    """utime + stime (fields 14 and 15 of /proc/<pid>/stat) in seconds: every thread of the process
    (a JVM's GC and JIT threads, kwire's disk threads). The command name (field 2) may hold spaces
    and parentheses, so fields are counted after its last ')'."""
    rest = stat[stat.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / ticks


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        return parse_stat_cpu_seconds(f.read())


def parse_status_kib(status: str, key: str) -> int:
    for line in status.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise ValueError(f"no {key} in /proc status")


def rss_mib(pid: int, key: str = "VmRSS") -> float:
    """Resident set (VmRSS) or its peak (VmHWM) in MiB."""
    with open(f"/proc/{pid}/status") as f:
        return parse_status_kib(f.read(), key) / 1024


class CpuMeter:
    """Broker CPU seconds (summed over its processes) spent inside ``with meter.measure(): ...``
    blocks, added up per label."""

    def __init__(self, pids: list[int]):
        self.pids = list(pids)
        self.seconds: dict[str, float] = {}
        self.last_busy = float("nan")   # cores the broker kept busy in the last measured block

    def now(self) -> float:
        return sum(cpu_seconds(p) for p in self.pids)

    def add(self, label: str, seconds: float) -> None:
        self.seconds[label] = self.seconds.get(label, 0.0) + seconds

    @contextmanager
    def measure(self, label: str):
        c0, w0 = self.now(), time.perf_counter()
        try:
            yield
        finally:
            cpu, wall = self.now() - c0, time.perf_counter() - w0
            self.add(label, cpu)
            self.last_busy = cpu / wall if wall > 0 else float("nan")


def client_cpu_seconds() -> float:
    """CPU seconds of this process (librdkafka's threads included) plus its waited-for children
    (a perf-test JVM, once it has exited): what the client side spent."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@contextmanager
def busy(broker: CpuMeter, label: str, out: dict):
    """Measure one client run: the broker's CPU under ``label`` (CpuMeter.measure) and, in ``out``,
    the cores the broker and the client kept busy meanwhile ({"broker": x, "client": y}), which
    says which side bound the run."""
    c0, w0 = client_cpu_seconds(), time.perf_counter()
    with broker.measure(label):
        yield
    wall = time.perf_counter() - w0
    out["broker"] = broker.last_busy
    out["client"] = (client_cpu_seconds() - c0) / wall if wall > 0 else float("nan")


# --- numbers --------------------------------------------------------------------------------------------


def percentile(xs: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0..1) of ``xs``."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def ratio(kwire: float, kafka: float) -> float:
    return kwire / kafka if kafka else float("inf")


# A budget: ("ratio >=", 1.0) reads "kwire / Kafka >= 1.0"; ("ratio <=", 0.1) "kwire / Kafka <= 0.1".
def verdict(value: float, op: str | None, bound: float | None) -> str:
    """PASS / MISS of ``value`` against ``op bound`` (">=" or "<="); "info" without a budget and
    "n/a" for a value that was not measured (nan)."""
    if op is None:
        return "info"
    if value != value:  # nan
        return "n/a"
    ok = value >= bound if op == ">=" else value <= bound
    return "PASS" if ok else "MISS"


@dataclass
class Line:
    """One table line: a metric on both brokers, their ratio and the budget on that ratio."""
    metric: str
    unit: str
    kwire: float
    kafka: float
    op: str | None = None      # the budget on kwire/kafka: ">=" or "<=", or None (info)
    bound: float | None = None
    rounds: tuple[float, ...] = ()   # kwire/kafka of each round, paired in time (the spread)

    @classmethod
    def paired(cls, metric: str, unit: str, kwire: list[float], kafka: list[float], op: str | None = None,
               bound: float | None = None) -> "Line":
        """The medians of both brokers' rounds, and each round's own ratio (their median is the ratio)."""
        return cls(metric, unit, median(kwire), median(kafka), op, bound,
                   tuple(ratio(k, f) for k, f in zip(kwire, kafka)))

    @property
    def spread(self) -> str:
        return " / ".join(f"{r:.2f}" for r in self.rounds) if len(self.rounds) > 1 else "-"

    @property
    def ratio(self) -> float:
        """kwire/Kafka: the median of the per-round ratios where there are rounds (each round pairs the
        two brokers in time, so a load change between rounds cancels out), else kwire / kafka."""
        if len(self.rounds) > 1:
            return median(list(self.rounds))
        return ratio(self.kwire, self.kafka)

    @property
    def budget(self) -> str:
        return "-" if self.op is None else f"kwire/kafka {self.op} {self.bound:g}"

    @property
    def verdict(self) -> str:
        return verdict(self.ratio, self.op, self.bound)

    def row(self, prefix: str = "vs-kafka.") -> tuple:
        """The bench summary row: (name, value, unit, budget, verdict); value is the ratio."""
        return (f"{prefix}{self.metric} ({self.unit}: kwire {fmt(self.kwire)} / kafka {fmt(self.kafka)})",
                round(self.ratio, 3), "x", self.budget, self.verdict)


def fmt(x: float) -> str:
    if x != x:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}" if abs(x) < 1 else f"{x:.2f}"


def table(lines: list[Line]) -> str:
    hdr = ("metric", "unit", "kwire", "kafka", "kwire/kafka", "per round", "budget", "verdict")
    body = [(ln.metric, ln.unit, fmt(ln.kwire), fmt(ln.kafka), f"{ln.ratio:.3g}", ln.spread, ln.budget, ln.verdict)
            for ln in lines]
    widths = [max(len(str(r[i])) for r in [hdr, *body]) for i in range(len(hdr))]
    return "\n".join("  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))) for r in [hdr, *body])


def markdown(lines: list[Line]) -> str:
    out = ["| metric | unit | kwire | Kafka | kwire/Kafka | per round | budget | verdict |",
           "| --- | --- | ---: | ---: | ---: | --- | --- | --- |"]
    out += [f"| {ln.metric} | {ln.unit} | {fmt(ln.kwire)} | {fmt(ln.kafka)} | {ln.ratio:.3g} | {ln.spread} | "
            f"{ln.budget} | {ln.verdict} |" for ln in lines]
    return "\n".join(out)
