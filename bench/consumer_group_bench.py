"""KIP-848 consumer groups against classic groups (issue 19). ``run(quick=False)`` prints and
returns rows ``(name, value, unit, budget, verdict)``; also ``python -m bench.consumer_group_bench``.

One kwire broker in its own process; 10 confluent-kafka consumers (librdkafka) over 20
partitions, first with ``group.protocol=classic`` (range, eager), then with
``group.protocol=consumer`` (the broker's uniform assignor), same broker, same run:

- **join**: from the first subscribe until every partition is owned by exactly one of the 10
  and each holds its share (2);
- **leave**: one member closes (LeaveGroup / epoch -1); from the close until the 9 others own
  every partition exactly once.

Both protocols get the same heartbeat interval (100 ms: the classic clients'
``heartbeat.interval.ms``, the broker's ``group.consumer.heartbeat.interval.ms``), and
``group.initial.rebalance.delay.ms=0``. Budget (the issue's): consumer / classic <= 1.0 for
each scenario, on the medians of the rounds, which alternate between the protocols (the best
rounds and every round are printed too). The median is the typical run: a classic join of a
burst of members is either one generation, ~1 heartbeat interval (its lucky best), or two when
some members arrive after the first JoinGroup completed (about 1 s more in these runs, waiting
for the last librdkafka member to rejoin), which is what most rounds see; a
KIP-848 join needs the first member to learn at its next heartbeat that it must give partitions
up and the others to pick them up at theirs: 1-2 heartbeat intervals). All consumers are polled
from one thread in turn (poll(0)).
"""
from __future__ import annotations

import statistics
import time
import uuid

MEMBERS = 10
PARTITIONS = 20
HEARTBEAT_MS = 100


def _consumers(bs: str, group: str, protocol: str, n: int):
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": bs, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "classic":
        conf.update({"heartbeat.interval.ms": HEARTBEAT_MS, "session.timeout.ms": 10_000,
                     "partition.assignment.strategy": "range"})
    return [Consumer(conf) for _ in range(n)]


def _owned_once(cs) -> bool:
    """Every partition owned by exactly one member, and every member holding its share
    (so an earlier generation with fewer members does not count)."""
    owned = [[tp.partition for tp in c.assignment()] for c in cs]
    parts = [p for o in owned for p in o]
    return len(parts) == PARTITIONS and len(set(parts)) == PARTITIONS and \
        min(map(len, owned)) >= PARTITIONS // len(cs)


def _poll_until(cs, cond, timeout=60.0) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        for c in cs:
            c.poll(0)
        if cond():
            return (time.perf_counter() - start) * 1000
        time.sleep(0.002)
    raise TimeoutError("the group did not settle")


def _scenario(bs: str, topic: str, protocol: str) -> tuple[float, float]:
    cs = _consumers(bs, f"bench-{protocol}-{uuid.uuid4().hex[:8]}", protocol, MEMBERS)
    try:
        start = time.perf_counter()
        for c in cs:
            c.subscribe([topic])
        _poll_until(cs, lambda: _owned_once(cs))
        join = (time.perf_counter() - start) * 1000
        gone = cs.pop()
        start = time.perf_counter()
        gone.close()   # the leave is sent here
        _poll_until(cs, lambda: _owned_once(cs))
        return join, (time.perf_counter() - start) * 1000
    finally:
        for c in cs:
            c.close()


def run(quick: bool = False) -> list[tuple]:
    from confluent_kafka.admin import AdminClient, NewTopic

    from kwire.testing import Broker

    rounds = 1 if quick else 5
    rows: list[tuple] = []
    overrides = {"kwire.emulate.kafka.version": "4.0", "group.initial.rebalance.delay.ms": 0, "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS,
                 "group.consumer.min.heartbeat.interval.ms": HEARTBEAT_MS}
    with Broker(mode="process", overrides=overrides) as b:
        bs = b.bootstrap_servers
        topic = f"bench-848-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        results: dict[str, list] = {"classic": [], "consumer": []}
        for r in range(rounds):   # the protocols alternate, so both see the same machine
            for protocol in (("classic", "consumer") if r % 2 == 0 else ("consumer", "classic")):
                results[protocol].append(_scenario(bs, topic, protocol))
        best, middle = {}, {}
        for protocol in ("classic", "consumer"):
            res = results[protocol]
            best[protocol] = (min(x[0] for x in res), min(x[1] for x in res))
            middle[protocol] = (statistics.median(x[0] for x in res), statistics.median(x[1] for x in res))
            rows.append((f"{protocol}: {MEMBERS} members join -> {PARTITIONS} partitions owned once (median of {rounds})",
                         round(middle[protocol][0], 1), "ms", "(info)", True))
            rows.append((f"{protocol}: one leaves -> the {MEMBERS - 1} others own all once (median of {rounds})",
                         round(middle[protocol][1], 1), "ms", "(info)", True))
            rows.append((f"{protocol}: join, leave (best of {rounds}; each round: "
                         + ", ".join(f"{x[0]:.0f}/{x[1]:.0f}" for x in res) + ")",
                         f"{best[protocol][0]:.1f}/{best[protocol][1]:.1f}", "ms", "(info)", True))
        for i, what in enumerate(("join", "leave")):
            ratio = middle["consumer"][i] / max(middle["classic"][i], 1e-9)
            rows.append((f"{what}: consumer / classic (medians)", round(ratio, 2), "x", "<= 1.0", ratio <= 1.0))
            ratio = best["consumer"][i] / max(best["classic"][i], 1e-9)
            rows.append((f"{what}: consumer / classic (best rounds)", round(ratio, 2), "x", "(info)", True))
    for name, value, unit, budget, ok in rows:
        print(f"{'PASS' if ok else 'MISS'}  {name}: {value} {unit}  (budget {budget})")
    return [(n, v, u, b, "PASS" if ok else "MISS") for n, v, u, b, ok in rows]


if __name__ == "__main__":
    run()
