"""Replication benchmark: a three-node kwire cluster (three ``python -m kwire serve``
processes on loopback, tests/raft/cluster.py), data on disk in a temporary directory.

``python -m bench replication [--quick]`` measures, in one run on one cluster:

1. produce throughput, RF=3 acks=all vs RF=1 acks=all: confluent-kafka, 100 B values,
   linger.ms=5, 3 partitions (leaders spread over the three nodes), the two topics
   alternating round by round (the order flips each round), best of the rounds each;
   budget RF3/RF1 >= 0.4;
2. produce latency at a fixed rate well below capacity (acks=all, linger.ms=0, one
   partition, each record's time from ``produce()`` to its delivery report), RF=3 and RF=1
   alternating; budget RF=3 p99 <= 10 ms. Also the one-at-a-time figure (produce + flush of
   one record), as info;
   Then, to show where RF=3 latency goes, the one-at-a-time figure on this cluster (50
   __consumer_offsets partitions: every sessionless follower fetch carries all ~17 a leader
   leads) and on a second cluster with offsets.topic.num.partitions=3, alternating (info);
3. failover: SIGKILL of a partition leader until the first acknowledged acks=all produce on
   its new leader (a wire client asks a live node's Metadata for the leader and produces one
   record there, every 10 ms), broker.session.timeout.ms=2000, median over several kills
   (some of a leader that is also the active controller, some not); the same after a clean
   SIGTERM (controlled shutdown). Budgets: <= 4 s and <= 1 s. After each kill the node is
   restarted and the run waits until every ISR is whole again;
4. follower catch-up: an RF=2 partition is written (acks=1, 64 KiB values) while its follower
   is down, 1 GiB (128 MiB with ``--quick``); then the follower is restarted and the time
   until its copy (DescribeLogDirs size on the follower) reaches the leader's gives MB/s.

Every process is started and killed by PID (tests/raft/cluster.py). Not part of ``make test``.
"""
from __future__ import annotations

import os
import shutil
import signal
import statistics
import tempfile
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kwire.codec.apis import api
from tests.raft.cluster import Cluster, call, produce as wire_produce, wait_for

SESSION_MS = 2000
CLUSTER_ARGS = (
    "--log-level", "WARNING",
    "--override", f"broker.session.timeout.ms={SESSION_MS}",
    "--override", "min.insync.replicas=2",
    "--override", "auto.leader.rebalance.enable=false",
)
TIMEOUT = 120.0


# --- cluster helpers -----------------------------------------------------------------------------


def bootstrap(c: Cluster) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in c.nodes.values() if n.alive)


def live_port(c: Cluster, but: int | None = None) -> int:
    return next(n.port for i, n in c.nodes.items() if n.alive and i != but)


def metadata(port: int, timeout: float = 3.0):
    """(controller id, {(topic, partition): (leader, sorted isr)}) as the node on ``port`` sees it."""
    r = call(port, "Metadata", 9, timeout=timeout, topics=None, allow_auto_topic_creation=False,
             include_topic_authorized_operations=False)
    return r.controller_id, {(t.name, p.partition_index): (p.leader_id, sorted(p.isr_nodes))
                             for t in r.topics for p in t.partitions}


def create_topic(c: Cluster, name: str, partitions: int, rf: int, assignment: dict | None = None,
                 config: dict | None = None) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap(c)})
    if assignment:
        nt = NewTopic(name, num_partitions=len(assignment), replication_factor=-1,
                      replica_assignment=[assignment[p] for p in sorted(assignment)], config=config or {})
    else:
        nt = NewTopic(name, partitions, rf, config=config or {})
    for fu in a.create_topics([nt]).values():
        fu.result(30)
    n = len(assignment) if assignment else partitions
    want = len(assignment[0]) if assignment else rf
    assert wait_for(lambda: all(
        (lambda md: sum(1 for (t, _), (ld, isr) in md.items() if t == name and ld >= 0 and len(isr) == want) == n)(
            metadata(nd.port)[1]) for nd in c.nodes.values() if nd.alive), 30), f"topic {name} not ready"


def healthy(c: Cluster) -> bool:
    """Every node up, and as each sees it every partition has a live leader and a full ISR."""
    for n in c.nodes.values():
        if not n.alive:
            return False
        _, md = metadata(n.port)
        for (t, _), (leader, isr) in md.items():
            if t.startswith("__"):
                continue
            if leader < 0 or len(isr) < _rf[t]:
                return False
    return True


_rf: dict[str, int] = {}   # topic -> replication factor, for healthy()


def _producer(bs: str, **extra) -> Producer:
    conf = {"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "none", "enable.idempotence": False}
    conf.update(extra)
    return Producer(conf)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


# --- 1. throughput -------------------------------------------------------------------------------


def produce_rate(bs: str, topic: str, count: int, size: int = 100) -> float:
    """Records/s to produce ``count`` x ``size`` B round robin over the topic's partitions, acks=all,
    every record acknowledged (delivery reports for failures only)."""
    errors: list = []
    p = _producer(bs, **{"delivery.report.only.error": True, "on_delivery": lambda err, _m: errors.append(err)})
    p.list_topics(topic, timeout=30)
    p.produce(topic, b"warm")
    if p.flush(30):
        raise RuntimeError(f"produce to {topic}: the first record was not acknowledged")
    value = b"x" * size
    produce = p.produce
    t0 = time.perf_counter()
    for _ in range(count):
        try:
            produce(topic, value)
        except BufferError:
            p.poll(0.01)
            produce(topic, value)
    left = p.flush(TIMEOUT)
    dt = time.perf_counter() - t0
    if left or errors:
        raise RuntimeError(f"produce to {topic}: {left} undelivered, errors {errors[:3]}")
    return count / dt


# --- 2. latency ----------------------------------------------------------------------------------


def rate_latency(bs: str, topic: str, rate: float, seconds: float) -> list[float]:
    """Latencies (s) of records produced at a fixed ``rate`` to partition 0, acks=all, linger 0:
    from ``produce()`` to the delivery report (the loop waits in ``poll``, which returns as soon as
    a report is there). At most 5 requests in flight (the Java client's default; librdkafka's is
    1,000,000): kwire, like Kafka, serves one request per connection at a time, so with no bound a
    producer above 1 / latency requests/s queues single-record requests without end instead of
    batching what arrives meanwhile."""
    p = _producer(bs, **{"linger.ms": 0, "max.in.flight.requests.per.connection": 5})
    p.list_topics(topic, timeout=30)
    p.produce(topic, b"warm", partition=0)
    p.flush(30)
    out: list[float] = []
    errors: list = []

    def report(t0):
        def cb(err, _msg):
            if err is not None:
                errors.append(err)
            else:
                out.append(time.perf_counter() - t0)
        return cb

    n = int(rate * seconds)
    interval = 1.0 / rate
    start = time.perf_counter()
    for i in range(n):
        due = start + i * interval
        while True:
            now = time.perf_counter()
            if now >= due:
                break
            p.poll(min(due - now, 0.002))
        p.produce(topic, b"r" * 100, partition=0, on_delivery=report(time.perf_counter()))
        p.poll(0)
    p.flush(TIMEOUT)
    if errors or len(out) != n:
        raise RuntimeError(f"latency run on {topic}: {len(out)}/{n} delivered, errors {errors[:3]}")
    return out


def serial_latency(bs: str, topic: str, samples: int) -> list[float]:
    """Latencies (s) of produce + flush of one record at a time (acks=all, linger 0)."""
    p = _producer(bs, **{"linger.ms": 0})
    p.list_topics(topic, timeout=30)
    p.produce(topic, b"warm", partition=0)
    p.flush(30)
    out = []
    for i in range(samples):
        t0 = time.perf_counter()
        p.produce(topic, b"s" * 100, partition=0)
        p.flush(30)
        out.append(time.perf_counter() - t0)
    return out


# --- 3. failover ---------------------------------------------------------------------------------


def _first_ack(c: Cluster, victim: int, topic: str, partition: int, t0: float, limit: float = 60.0) -> float:
    """Seconds from ``t0`` until an acks=all produce to ``topic``-``partition`` is acknowledged by a
    leader other than ``victim`` (its leader as a live node's Metadata tells it)."""
    live = [n for i, n in c.nodes.items() if i != victim and n.alive]
    k = 0
    while time.perf_counter() - t0 < limit:
        node = live[k % len(live)]
        k += 1
        try:
            _, md = metadata(node.port, timeout=2.0)
            leader = md.get((topic, partition), (-1, []))[0]
            if leader >= 0 and leader != victim and c.nodes[leader].alive:
                if wire_produce(c.nodes[leader].port, topic, partition, b"failover") == 0:
                    return time.perf_counter() - t0
        except (OSError, ConnectionError):
            pass
        time.sleep(0.01)
    raise RuntimeError(f"no acknowledged produce to {topic}-{partition} within {limit}s after killing {victim}")


def _wait_healthy(c: Cluster, timeout: float = 60.0) -> None:
    if not wait_for(lambda: healthy(c), timeout):
        raise RuntimeError("cluster did not get its full ISRs back:\n" +
                           "\n".join(n.log_tail(1500) for n in c.nodes.values()))


def failover_round(c: Cluster, topic: str, want_controller: bool, sig: int) -> tuple[float, bool, int]:
    """Kill (``sig``) the leader of one of ``topic``'s partitions - the active controller when
    ``want_controller`` and it leads one, else a leader that is not the controller; returns
    (seconds to the first acknowledged produce on the new leader, victim was the controller, victim).
    The victim is restarted and the ISRs whole again before it returns."""
    ctl, md = metadata(live_port(c))
    led = {p: ld for (t, p), (ld, _) in md.items() if t == topic}
    choice = [p for p, ld in sorted(led.items()) if (ld == ctl) == want_controller] or sorted(led)
    partition = choice[0]
    victim = led[partition]
    node = c.nodes[victim]
    t0 = time.perf_counter()
    os.kill(node.proc.pid, sig)
    dt = _first_ack(c, victim, topic, partition, t0)
    try:
        node.proc.wait(30)
    finally:
        node.kill()   # SIGKILL if it is still there; closes its log
    c.restart(victim, timeout=60)
    _wait_healthy(c)
    return dt, victim == ctl, victim


# --- 4. follower catch-up ------------------------------------------------------------------------


def log_dir_size(port: int, topic: str, partition: int, timeout: float = 3.0) -> int:
    Rq = api("DescribeLogDirs").request
    r = call(port, "DescribeLogDirs", 4, timeout=timeout,
             topics=[Rq.struct("DescribableLogDirTopic")(topic=topic, partitions=[partition])])
    for res in r.results:
        for t in res.topics:
            for p in t.partitions:
                if t.name == topic and p.partition_index == partition:
                    return p.partition_size
    return -1


def catch_up(c: Cluster, total_bytes: int) -> dict:
    """Write ``total_bytes`` to an RF=2 partition while its follower is down, restart the follower
    and time its catch-up. Leader and follower are nodes that are not the active controller when
    possible (a restarted controller would add a Raft election to the figure)."""
    ctl, _ = metadata(live_port(c))
    others = [i for i in sorted(c.nodes) if i != ctl]
    leader, follower = others[0], others[1]
    topic = "catchup"
    create_topic(c, topic, 1, 2, assignment={0: [leader, follower]}, config={"min.insync.replicas": "1"})
    _rf[topic] = 2
    fnode = c.nodes[follower]
    os.kill(fnode.proc.pid, signal.SIGTERM)
    fnode.proc.wait(60)
    fnode.kill()
    # the leader keeps writing alone once the follower has left the ISR
    lport = c.nodes[leader].port
    assert wait_for(lambda: metadata(lport)[1][(topic, 0)][1] == [leader], 30), "follower did not leave the ISR"

    value = b"c" * 65536
    count = total_bytes // len(value)
    errors: list = []
    p = _producer(f"127.0.0.1:{lport}", **{"acks": 1, "delivery.report.only.error": True,
                                           "on_delivery": lambda err, _m: errors.append(err)})
    t0 = time.perf_counter()
    for _ in range(count):
        try:
            p.produce(topic, value, partition=0)
        except BufferError:
            p.poll(0.05)
            p.produce(topic, value, partition=0)
    left = p.flush(600)
    write_s = time.perf_counter() - t0
    if left or errors:
        raise RuntimeError(f"catch-up fill: {left} undelivered, errors {errors[:3]}")
    target = log_dir_size(lport, topic, 0)

    t_spawn = time.perf_counter()
    fnode.start(c.voters, c.extra_args)
    first = None   # (time, size) of the follower's first answer
    size = -1
    deadline = t_spawn + 1800
    while time.perf_counter() < deadline:
        if not fnode.alive:
            raise RuntimeError(f"follower exited:\n{fnode.log_tail()}")
        try:
            size = log_dir_size(fnode.port, topic, 0, timeout=2.0)
        except (OSError, ConnectionError):
            time.sleep(0.05)
            continue
        now = time.perf_counter()
        if first is None:
            first = (now, max(size, 0))
        if size >= target:
            break
        time.sleep(0.05)
    else:
        raise RuntimeError(f"follower at {size} of {target} bytes after 1800 s")
    done = time.perf_counter()
    Cluster.wait_serving(fnode, 60)
    _wait_healthy(c)
    return {"bytes": target, "write_s": write_s, "from_spawn_s": done - t_spawn,
            "from_first_answer_s": done - first[0], "bytes_after_first_answer": target - first[1]}


# --- 2b. the follower's sessionless fetch ----------------------------------------------------------


def offsets_partitions_ab(c: Cluster, base: str, quick: bool) -> list[tuple]:
    """One-at-a-time RF=3 produce latency on ``c`` (50 __consumer_offsets partitions, RF=3: every
    follower fetch and answer carries the ~17 a leader leads, sessionless) and on a second cluster
    with offsets.topic.num.partitions=3, alternating rounds; info rows."""
    small = Cluster(os.path.join(base, "small"), 3,
                    extra_args=CLUSTER_ARGS + ("--override", "offsets.topic.num.partitions=3"))
    clusters = {"50": c, "3": small}
    try:
        small.start(timeout=60)
        assert wait_for(lambda: all(metadata(n.port)[0] > 0 for n in small.nodes.values()), 30)
        create_topic(small, "rf3", 3, 3)
        got: dict[str, list[float]] = {"50": [], "3": []}
        for r in range(2 if quick else 4):
            for k in (("50", "3") if r % 2 == 0 else ("3", "50")):
                got[k] += serial_latency(bootstrap(clusters[k]), "rf3", 150)
    finally:
        small.stop()
    rows = []
    for k, xs in got.items():
        p50, p99 = _pct(xs, 0.5) * 1000, _pct(xs, 0.99) * 1000
        print(f"one at a time RF=3, {k} __consumer_offsets partitions: p50 {p50:.2f} ms, p99 {p99:.2f} ms", flush=True)
        rows.append(_row(f"produce + flush one at a time RF=3, {k} __consumer_offsets partitions, p50 / p99",
                         f"{p50:.2f} / {p99:.2f}", "ms", "-", None))
    return rows


# --- the run -------------------------------------------------------------------------------------


def _row(name, value, unit, budget, ok):
    return (name, value, unit, budget, "info" if ok is None else ("PASS" if ok else "MISS"))


def run(quick: bool = False) -> list[tuple]:
    base = tempfile.mkdtemp(prefix="kwire-repl-bench-")
    c = Cluster(base, 3, extra_args=CLUSTER_ARGS)
    rows: list[tuple] = []
    try:
        c.start(timeout=60)
        assert wait_for(lambda: all(metadata(n.port)[0] > 0 for n in c.nodes.values()), 30)
        bs = bootstrap(c)
        for name, rf in (("rf1", 1), ("rf3", 3)):   # the broker default min.insync.replicas=2 is for RF=3
            create_topic(c, name, 3, rf, config={"min.insync.replicas": str(min(rf, 2))})
            _rf[name] = rf
        ctl, md = metadata(live_port(c))
        print(f"cluster up: controller {ctl}; leaders " +
              ", ".join(f"{t}-{p}: {ld}" for (t, p), (ld, _) in sorted(md.items()) if not t.startswith("__")),
              flush=True)

        # 1. throughput, alternating
        count = 100_000 if quick else 200_000
        rounds = 2 if quick else 4
        tput = {"rf1": [], "rf3": []}
        for r in range(rounds):
            for name in (("rf1", "rf3") if r % 2 == 0 else ("rf3", "rf1")):
                tput[name].append(produce_rate(bs, name, count))
            print(f"throughput round {r + 1}: RF1 {tput['rf1'][-1]:,.0f} rec/s, RF3 {tput['rf3'][-1]:,.0f} rec/s",
                  flush=True)
        best1, best3 = max(tput["rf1"]), max(tput["rf3"])
        ratio = best3 / best1
        rows.append(_row(f"produce {count:,} x 100 B, 3 partitions, RF=1 acks=all (best of {rounds})",
                         round(best1), "rec/s", "-", None))
        rows.append(_row(f"produce {count:,} x 100 B, 3 partitions, RF=3 acks=all (best of {rounds})",
                         round(best3), "rec/s", "-", None))
        rows.append(_row("produce throughput RF=3 / RF=1 (acks=all, same cluster)", round(ratio, 2), "x",
                         ">= 0.4", ratio >= 0.4))
        med = statistics.median(a / b for a, b in zip(tput["rf3"], tput["rf1"]))
        rows.append(_row("produce throughput RF=3 / RF=1, median of per-round ratios", round(med, 2), "x", "-", None))

        # 2. latency at a fixed rate, alternating
        rate, secs = 100.0, (4.0 if quick else 6.0)
        lrounds = 2 if quick else 3
        lat = {"rf1": [], "rf3": []}
        for r in range(lrounds):
            for name in (("rf3", "rf1") if r % 2 == 0 else ("rf1", "rf3")):
                lat[name] += rate_latency(bs, name, rate, secs)
        ser = {"rf1": [], "rf3": []}
        for r in range(lrounds):
            for name in ("rf1", "rf3"):
                ser[name] += serial_latency(bs, name, 200)
        for name, label in (("rf1", "RF=1"), ("rf3", "RF=3")):
            xs = lat[name]
            p50, p99 = _pct(xs, 0.5) * 1000, _pct(xs, 0.99) * 1000
            print(f"latency {label} at {rate:.0f}/s: p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(xs)} records); "
                  f"one at a time: p50 {_pct(ser[name], 0.5) * 1000:.2f} ms, p99 {_pct(ser[name], 0.99) * 1000:.2f} ms",
                  flush=True)
            rows.append(_row(f"produce latency {label} acks=all at {rate:.0f} rec/s p50", round(p50, 2), "ms",
                             "-", None))
            rows.append(_row(f"produce latency {label} acks=all at {rate:.0f} rec/s p99", round(p99, 2), "ms",
                             "<= 10 ms" if name == "rf3" else "-", (p99 <= 10.0) if name == "rf3" else None))
            rows.append(_row(f"produce + flush one at a time {label} p50 / p99",
                             f"{_pct(ser[name], 0.5) * 1000:.2f} / {_pct(ser[name], 0.99) * 1000:.2f}", "ms", "-",
                             None))

        # 3. failover
        kills = 4 if quick else 6
        terms = 2 if quick else 4
        killed: list[tuple[float, bool, int]] = []
        for r in range(kills):
            dt, was_ctl, victim = failover_round(c, "rf3", want_controller=(r % 2 == 1), sig=signal.SIGKILL)
            killed.append((dt, was_ctl, victim))
            print(f"SIGKILL round {r + 1}: node {victim}{' (active controller)' if was_ctl else ''}: "
                  f"{dt * 1000:.0f} ms", flush=True)
        termed: list[tuple[float, bool, int]] = []
        for r in range(terms):
            dt, was_ctl, victim = failover_round(c, "rf3", want_controller=(r % 2 == 1), sig=signal.SIGTERM)
            termed.append((dt, was_ctl, victim))
            print(f"SIGTERM round {r + 1}: node {victim}{' (active controller)' if was_ctl else ''}: "
                  f"{dt * 1000:.0f} ms", flush=True)
        med_kill = statistics.median(d for d, _, _ in killed)
        rows.append(_row(f"failover after SIGKILL of a leader, median of {len(killed)}", round(med_kill, 2), "s",
                         "<= 4 s", med_kill <= 4.0))
        for was_ctl, label in ((False, "not the controller"), (True, "also the active controller")):
            xs = [d for d, w, _ in killed if w == was_ctl]
            if xs:
                rows.append(_row(f"  SIGKILL, leader {label}: " + " / ".join(f"{x:.2f}" for x in xs),
                                 round(statistics.median(xs), 2), "s", "-", None))
        med_term = statistics.median(d for d, _, _ in termed)
        rows.append(_row(f"failover after SIGTERM (controlled shutdown), median of {len(termed)}: " +
                         " / ".join(f"{d:.2f}{'c' if w else ''}" for d, w, _ in termed),
                         round(med_term, 3), "s", "<= 1 s", med_term <= 1.0))

        # 4. follower catch-up
        total = (128 if quick else 1024) << 20
        cu = catch_up(c, total)
        mb = cu["bytes"] / 1e6
        rate_first = cu["bytes_after_first_answer"] / 1e6 / cu["from_first_answer_s"]
        print(f"catch-up: {mb:.0f} MB written in {cu['write_s']:.1f} s; follower caught up "
              f"{cu['from_spawn_s']:.1f} s after its start ({cu['from_first_answer_s']:.1f} s after its first "
              f"answer, {cu['bytes_after_first_answer'] / 1e6:.0f} MB then)", flush=True)
        rows.append(_row(f"follower catch-up of {mb:.0f} MB, from its first answer", round(rate_first, 1), "MB/s",
                         "-", None))
        rows.append(_row(f"follower catch-up of {mb:.0f} MB, from process start (incl. start-up)",
                         round(mb / cu["from_spawn_s"], 1), "MB/s", "-", None))
        rows.append(_row(f"leader write of {mb:.0f} MB (acks=1, 64 KiB values, for scale)",
                         round(mb / cu["write_s"], 1), "MB/s", "-", None))

        # 2b. where RF=3 latency goes: the same one-at-a-time produce on a second cluster whose
        # __consumer_offsets has 3 partitions instead of 50, the two clusters alternating
        rows += offsets_partitions_ab(c, base, quick)
    finally:
        c.stop()
        shutil.rmtree(base, ignore_errors=True)
    for r in rows:
        print(f"{r[-1]:5} {r[0]}: {r[1]} {r[2]} (budget {r[3]})")
    return rows


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
