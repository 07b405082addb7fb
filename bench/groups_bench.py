"""Consumer group rebalance benchmarks (issue 5). ``run(quick=False)`` prints and returns rows
``(name, value, unit, budget, verdict)``; also ``python -m bench.groups_bench``.

Scenarios, against a kwire broker in its own process (``group.initial.rebalance.delay.ms=0``):

- **join**: 10 members start together; time from the first JoinGroup sent until every member
  holds its assignment of the generation that contains all 10;
- **leave**: in a Stable 10-member group one member sends LeaveGroup; time from that LeaveGroup
  until the 9 others hold the assignment of the next generation.

The clients are lean: kwire's own codec (``kwire.codec.frame``) over blocking sockets, one thread
and one connection per member, doing what a consumer does - JoinGroup v5 (MEMBER_ID_REQUIRED,
then rejoin with the id), SyncGroup (the leader sends a range-style assignment), Heartbeat every
``HEARTBEAT_MS`` and a rejoin on REBALANCE_IN_PROGRESS.

Budget (the issue's): no more than the clients' own round trips plus 100 ms. Every member counts
its round trips and the time it spent sleeping between heartbeats (client time, not broker time).
The critical path is the member that got its final assignment last:
``budget = its round trips x RTT + its heartbeat sleeps + 100 ms``, where RTT is the median
Heartbeat round trip measured with all 10 members heartbeating at once (same concurrency, same
client code). Waiting inside a JoinGroup/SyncGroup for the other members is the broker's part.

``with_confluent=True`` (default when not quick) also times 10 confluent-kafka consumers from
subscribe until all hold an assignment (their own heartbeat interval applies: information only).
"""
from __future__ import annotations

import statistics
import struct
import threading
import time
import uuid

from kwire.codec.apis import api
from kwire.errors import ErrorCode as E
from kwire.codec import consumer_protocol as cp
from kwire.testing.client import WireClient

MEMBERS = 10
PARTITIONS = 20
HEARTBEAT_MS = 20
SESSION_MS = 10_000
OVERHEAD_MS = 100.0


class WireMember(WireClient):
    """One lean group member on its own connection."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str):
        super().__init__(bootstrap, timeout=30, client_id=name)
        self.group, self.topic, self.name = group, topic, name
        self.member_id = ""
        self.generation = -1
        self.assignment: bytes | None = None
        self.assigned_generation = -1  # the generation of ``assignment``
        self.round_trips = 0
        self.rtts: list[float] = []
        self.calls: list[tuple[float, float]] = []  # (start, end) of each round trip
        self.sleeps: list[tuple[float, float]] = []  # (start, end) of each heartbeat wait
        self.done_at: float | None = None

    # -- wire ------------------------------------------------------------------------------
    def request(self, name: str, version: int, **fields):
        t0 = time.perf_counter()
        resp = super().request(name, version, **fields)
        t1 = time.perf_counter()
        self.rtts.append(t1 - t0)
        self.calls.append((t0, t1))
        self.round_trips += 1
        return resp


    # -- the consumer's group protocol ------------------------------------------------------
    def join_and_sync(self) -> None:
        """Join (and rejoin) until a SyncGroup hands out an assignment."""
        ja = api("JoinGroup")
        proto = ja.request.struct("JoinGroupRequestProtocol")
        meta = cp.encode_subscription(cp.Subscription(topics=[self.topic]), 0)
        while True:
            r = self.request("JoinGroup", 5, group_id=self.group, session_timeout_ms=SESSION_MS,
                             rebalance_timeout_ms=SESSION_MS, member_id=self.member_id,
                             group_instance_id=None, protocol_type="consumer",
                             protocols=[proto(name="range", metadata=meta)])
            if r.error_code == E.MEMBER_ID_REQUIRED:
                self.member_id = r.member_id
                continue
            if r.error_code == E.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if r.error_code != E.NONE:
                raise RuntimeError(f"JoinGroup: {E(r.error_code).name}")
            self.generation = r.generation_id
            assignments = []
            if r.leader == self.member_id:
                sa = api("SyncGroup").request.struct("SyncGroupRequestAssignment")
                ids = sorted(m.member_id for m in r.members)
                for i, mid in enumerate(ids):
                    parts = [p for p in range(PARTITIONS) if p % len(ids) == i]
                    assignments.append(sa(member_id=mid, assignment=_assignment(self.topic, parts)))
            s = self.request("SyncGroup", 3, group_id=self.group, generation_id=self.generation,
                             member_id=self.member_id, group_instance_id=None,
                             assignments=assignments)
            if s.error_code == E.NONE:
                self.done_at = time.perf_counter()
                self.assignment = bytes(s.assignment)
                self.assigned_generation = self.generation
                return
            if s.error_code not in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
                raise RuntimeError(f"SyncGroup: {E(s.error_code).name}")

    def heartbeat(self) -> int:
        r = self.request("Heartbeat", 3, group_id=self.group, generation_id=self.generation,
                         member_id=self.member_id, group_instance_id=None)
        return r.error_code

    def leave(self) -> None:
        mi = api("LeaveGroup").request.struct("MemberIdentity")
        self.request("LeaveGroup", 3, group_id=self.group,
                     members=[mi(member_id=self.member_id, group_instance_id=None)])

    def run(self, settled, stop: threading.Event) -> None:
        """Join, then heartbeat (rejoining when told) until ``stop``; ``done_at`` is when the
        member last received an assignment; ``settled(self)`` is asked after each."""
        self.join_and_sync()
        settled(self)
        while not stop.is_set():
            t = time.perf_counter()
            stop.wait(HEARTBEAT_MS / 1000)
            self.sleeps.append((t, time.perf_counter()))
            if stop.is_set():
                break
            err = self.heartbeat()
            if err in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
                if err == E.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self.join_and_sync()
                settled(self)


def _assignment(topic: str, parts: list[int]) -> bytes:
    t = topic.encode()
    out = struct.pack(">hi", 0, 1) + struct.pack(">h", len(t)) + t + struct.pack(">i", len(parts))
    out += b"".join(struct.pack(">i", p) for p in parts)
    return out + struct.pack(">i", -1)


class GroupRun:
    """MEMBERS lean members of one group, each in its own thread."""

    def __init__(self, bootstrap: str, n: int = MEMBERS):
        self.group = f"bench-g-{uuid.uuid4().hex[:8]}"
        self.topic = "bench-groups"
        self.members = [WireMember(bootstrap, self.group, self.topic, f"m{i}") for i in range(n)]
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def _settled(self, _m) -> None:
        with self.cond:
            self.cond.notify_all()

    def _all_in(self, members, generation_min: int) -> bool:
        gens = {m.assigned_generation for m in members}
        return (len(gens) == 1 and next(iter(gens)) >= generation_min
                and all(m.done_at is not None and m.assignment for m in members))

    def start(self, barrier: threading.Barrier | None = None) -> None:
        def body(m):
            try:
                if barrier is not None:
                    barrier.wait()
                m.run(self._settled, self.stops[id(m)])
            except BaseException as exc:  # noqa: BLE001 - reported
                self.errors.append(exc)
                with self.cond:
                    self.cond.notify_all()

        self.threads = [threading.Thread(target=body, args=(m,), daemon=True) for m in self.members]
        self.stops = {id(m): threading.Event() for m in self.members}
        for t in self.threads:
            t.start()

    def wait_all(self, members, generation_min: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self._all_in(members, generation_min):
                if self.errors:
                    raise self.errors[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"group did not settle: {[(m.generation, m.done_at) for m in members]}")
                self.cond.wait(left)

    def stop_member(self, i: int) -> None:
        self.stops[id(self.members[i])].set()
        self.threads[i].join(10)

    def close(self) -> None:
        for ev in self.stops.values():
            ev.set()
        for t in self.threads:
            t.join(10)
        for m in self.members:
            m.close()


def _client_path(m: WireMember, t0: float) -> tuple[int, float]:
    """Round trips and heartbeat-wait ms of member ``m`` between ``t0`` and its ``done_at``
    (waits cut at t0; only round trips that began after t0)."""
    end = m.done_at
    rts = sum(1 for a, b in list(m.calls) if a >= t0 and b <= end)
    waits = sum(max(0.0, min(b, end) - max(a, t0)) for a, b in list(m.sleeps))
    return rts, waits * 1000


def _rtt_ms(members, seconds: float = 0.5) -> float:
    """Median Heartbeat round trip over the last ``seconds`` of concurrent heartbeats."""
    start = [len(m.rtts) for m in members]
    time.sleep(seconds)
    samples = [x for m, s in zip(members, start) for x in m.rtts[s:]]
    return statistics.median(samples) * 1000 if samples else float("nan")


def bench_join(bootstrap: str) -> dict:
    run = GroupRun(bootstrap)
    barrier = threading.Barrier(len(run.members) + 1)
    run.start(barrier)
    barrier.wait()
    t0 = time.perf_counter()
    try:
        run.wait_all(run.members, 1)
        last = max(run.members, key=lambda m: m.done_at)
        elapsed = (last.done_at - t0) * 1000
        rts, waits = _client_path(last, t0)
        out = {"elapsed_ms": elapsed, "round_trips": rts, "slept_ms": waits,
               "generation": last.assigned_generation}
        out["rtt_ms"] = _rtt_ms(run.members)
        return out
    finally:
        run.close()


def bench_leave(bootstrap: str) -> dict:
    run = GroupRun(bootstrap)
    run.start()
    try:
        run.wait_all(run.members, 1)
        time.sleep(0.3)  # a few heartbeats of the settled group
        rtt = _rtt_ms(run.members)
        leaver, rest = run.members[0], run.members[1:]
        gen = leaver.generation
        run.stop_member(0)  # its thread stops heartbeating; it leaves from here
        done_before = {id(m): m.done_at for m in rest}
        t0 = time.perf_counter()
        leaver.leave()
        run.wait_all(rest, gen + 1)
        last = max(rest, key=lambda m: m.done_at)
        assert all(m.done_at != done_before[id(m)] for m in rest)
        rts, waits = _client_path(last, t0)
        return {"elapsed_ms": (last.done_at - t0) * 1000, "rtt_ms": rtt,
                "round_trips": rts + 1,  # + the LeaveGroup
                "slept_ms": waits}
    finally:
        run.close()


def bench_confluent_join(bootstrap: str) -> float | None:
    try:
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError:
        return None
    topic, group = f"bench-cg-{uuid.uuid4().hex[:8]}", f"bench-cg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(15)
    owned = [set() for _ in range(MEMBERS)]
    cs = []
    for i in range(MEMBERS):
        def on_assign(_c, ps, i=i):
            owned[i] = {p.partition for p in ps}
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "session.timeout.ms": 10000, "heartbeat.interval.ms": 100,
                      "partition.assignment.strategy": "range"})
        cs.append((c, on_assign))
    t0 = time.perf_counter()
    for c, cb in cs:
        c.subscribe([topic], on_assign=cb)
    stop = threading.Event()

    def poll(c):
        while not stop.is_set():
            c.poll(0.02)
    threads = [threading.Thread(target=poll, args=(c,), daemon=True) for c, _ in cs]
    for t in threads:
        t.start()
    elapsed = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        flat = [p for s in owned for p in s]
        if all(owned) and sorted(flat) == list(range(PARTITIONS)):
            elapsed = (time.perf_counter() - t0) * 1000
            break
        time.sleep(0.005)
    stop.set()
    for t in threads:
        t.join(10)
    for c, _ in cs:
        c.close()
    return elapsed


def warm_up(bootstrap: str) -> float:
    """One member joins, syncs, heartbeats and leaves a throwaway group; returns the first
    request's round trip in ms (a FindCoordinator, which creates __consumer_offsets). A fresh broker process answers its very first request (of any
    API) 100-180 ms late (lazy imports and per-version codec compilation on first use), which
    is start-up cost, not rebalance cost: the measured rounds run after this."""
    m = WireMember(bootstrap, f"bench-warm-{uuid.uuid4().hex[:6]}", "bench-groups", "warm")
    try:
        # as a client starts: FindCoordinator, whose first call creates __consumer_offsets
        assert m.request("FindCoordinator", 3, key=m.group, key_type=0).error_code == E.NONE
        m.join_and_sync()
        m.heartbeat()
        m.leave()
        return m.rtts[0] * 1000
    finally:
        m.close()


def _row(rows, name, value, unit, budget, ok):
    verdict = "PASS" if ok else "MISS"
    print(f"{name}, {value:.4g}, {unit}, {budget}, {verdict}", flush=True)
    rows.append((name, value, unit, budget, verdict))


def run(quick: bool = False, with_confluent: bool | None = None) -> list[tuple]:
    from kwire.testing import Broker

    if with_confluent is None:
        with_confluent = not quick
    rounds = 1 if quick else 3
    rows: list[tuple] = []
    with Broker(mode="process", overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        bs = b.bootstrap_servers
        cold = warm_up(bs)
        _row(rows, "fresh broker: first request's round trip (start-up, before measuring)",
             cold, "ms", "(info)", True)
        for name, fn, what in (("join", bench_join, f"{MEMBERS}-member group: first JoinGroup -> all assigned"),
                               ("leave", bench_leave, f"{MEMBERS}-member group: LeaveGroup -> the other {MEMBERS - 1} reassigned")):
            results = [fn(bs) for _ in range(rounds)]
            r = min(results, key=lambda x: x["elapsed_ms"] - x["slept_ms"])
            client_ms = r["round_trips"] * r["rtt_ms"] + r["slept_ms"]
            budget = client_ms + OVERHEAD_MS
            _row(rows, what, r["elapsed_ms"], "ms",
                 f"<= {budget:.1f} ({r['round_trips']} RTs x {r['rtt_ms']:.2f} ms + "
                 f"{r['slept_ms']:.1f} ms heartbeat waits + {OVERHEAD_MS:.0f})",
                 r["elapsed_ms"] <= budget)
            _row(rows, f"{name}: broker share (elapsed - client round trips - waits)",
                 r["elapsed_ms"] - client_ms, "ms", f"<= {OVERHEAD_MS:.0f}",
                 r["elapsed_ms"] - client_ms <= OVERHEAD_MS)
        if with_confluent:
            ms = bench_confluent_join(bs)
            if ms is not None:
                _row(rows, f"confluent-kafka x{MEMBERS}: subscribe -> all {PARTITIONS} partitions assigned",
                     ms, "ms", "(info: includes librdkafka's own timers)", True)
    return rows


if __name__ == "__main__":
    run()
