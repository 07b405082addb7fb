"""Chaos on three real processes: partition leaders and group coordinators are SIGKILLed,
restarted and SIGKILLed again while stock clients produce and a consumer group reads.

Three nodes, RF=3, min.insync.replicas=2, broker.session.timeout.ms=2000. A confluent-kafka,
a kafka-python and an aiokafka producer (acks=all, idempotent) write to every partition, and a
group member of each client (one group each) reads and commits after each batch. Each round
SIGKILLs one node - on even rounds a leader of the topic's partitions (the node killed least
so far, so every node has its turn), on odd rounds the coordinator of the confluent-kafka
group - waits until the partitions have new leaders (and FindCoordinator names a live node),
until every producer is acknowledged again (and the group's committed offsets have moved past
where they were), then restarts the node and waits until it is back in every ISR. Then the
members leave, the coordinator dies once more, and a new member resumes exactly at the
committed offsets the new coordinator loaded. Afterwards every replica holds the same log;
every acknowledged record is read back exactly once, at its acknowledged offset, in order per
partition; no record is written twice; no group's commits went backwards, each resumed every
partition from its committed offset, and everything it read is in the final log; and the high
watermark that ListOffsets answered, sampled throughout, never went backwards.

KWIRE_CHAOS_ROUNDS=<n> runs more rounds than the default 6 (each node killed once as a leader and once as a coordinator).
"""
from __future__ import annotations

import collections
import time

import pytest

from tests.raft.cluster import wait_for
from tests.replication import chaos as C

pytestmark = pytest.mark.slow

GROUP = "chaos-group"


def _progressed(now: dict[int, int], before: dict[int, int]) -> bool:
    assert all(now.get(p, -1) >= o for p, o in before.items()), f"committed offsets went back: {before} -> {now}"
    return sum(now.values()) > sum(before.values())


def test_sigkill_leaders_and_coordinators_under_load(tmp_path):
    n_rounds = C.rounds(6)
    c = C.start_cluster(str(tmp_path / "cluster"))
    producers, groups, watermarks = [], [], None
    try:
        C.create_topic(c)
        producers = [P(c) for P in C.PRODUCERS]
        groups = [G(c, f"{GROUP}-{G.client}") for G in C.GROUP_CONSUMERS]
        group = groups[0]
        watermarks = C.WatermarkWatcher(c)
        for t in (*producers, *groups, watermarks):
            t.start()
        try:
            wait_for(lambda: all(p.acked_count() for p in producers) and all(g.committed_total() for g in groups), 60,
                     message="every producer acknowledged and every group committing")
        except AssertionError as exc:   # say which client is behind
            raise AssertionError(f"{exc}: " + ", ".join(
                [f"{type(p).__name__} acked {p.acked_count()}" for p in producers]
                + [f"{g.name} committed {g.committed_total()} (failure {g.failure!r})" for g in groups])) from None
        C.wait_healthy(c, [C.TOPIC, C.OFFSETS_TOPIC])

        killed: collections.Counter = collections.Counter()
        failovers = []
        for r in range(n_rounds):
            coordinator_round = r % 2 == 1
            if coordinator_round:
                victim = C.coordinator(C.live_port(c), group.group)
                before = C.committed_offsets(c, group.group)
            else:
                victim = min(set(C.leaders(c).values()), key=lambda n: (killed[n], n))
            assert victim in c.nodes, f"round {r}: no victim ({victim})"
            acked_before = [p.acked_count() for p in producers]
            t0 = time.monotonic()
            c.nodes[victim].kill()
            killed[victim] += 1
            wait_for(lambda: all(leader not in (victim, -1) for leader in C.leaders(c).values()), 30,
                     message=f"round {r}: new leaders after node {victim} was killed")
            if coordinator_round:
                wait_for(lambda: C.coordinator(C.live_port(c), group.group) not in (victim, -1), 30,
                         message=f"round {r}: FindCoordinator moves off node {victim}")
                wait_for(lambda: _progressed(C.committed_offsets(c, group.group), before), 30,
                         message=f"round {r}: the group commits past {before} on its new coordinator")
            wait_for(lambda: all(p.acked_count() > a for p, a in zip(producers, acked_before)), 30,
                     message=f"round {r}: every producer acknowledged after node {victim} was killed")
            failovers.append(time.monotonic() - t0)
            c.restart(victim)
            C.wait_healthy(c, [C.TOPIC, C.OFFSETS_TOPIC])

        # the group's member leaves, its coordinator dies; the new coordinator has loaded the
        # same committed offsets, and a new member resumes exactly there
        for g in groups:
            g.stop()
        finals = {g.group: C.committed_offsets(c, g.group) for g in groups}
        final_commits = finals[group.group]
        victim = C.coordinator(C.live_port(c), group.group)
        c.nodes[victim].kill()
        killed[victim] += 1
        wait_for(lambda: C.coordinator(C.live_port(c), group.group) not in (victim, -1), 30,
                 message=f"FindCoordinator moves off node {victim}")
        assert wait_for(lambda: C.committed_offsets(c, group.group), 30) == final_commits
        rejoined = C.GroupConsumer(c, group.group)
        rejoined.start()
        wait_for(lambda: {p for p, _, _ in list(rejoined.consumed)} == set(final_commits), 60,
                 message="a new member reads every partition")
        rejoined.stop()
        firsts = {}
        for part, offset, _ in rejoined.consumed:
            firsts.setdefault(part, offset)
        assert firsts == final_commits, f"the group resumed at {firsts}, its commits were {final_commits}"

        for p in producers:
            p.stop()
        c.restart(victim)
        C.wait_healthy(c, [C.TOPIC, C.OFFSETS_TOPIC])
        C.wait_replicas_agree(c)
        log = C.read_back(c)
        total = C.check_acknowledged(log, producers)

        for g in groups:
            C.check_group(g, finals[g.group], log)
        samples = watermarks.check()

        assert len(killed) == 3, f"every node killed in turn: {dict(killed)}"
        errors = [e for p in producers for e in p.errors]
        print(f"\nchaos: {n_rounds} rounds, kills {dict(killed)}, {total} acknowledged records "
              f"({', '.join(f'{p.name_prefix}={len(p.acked)}' for p in producers)}), "
              f"{len(errors)} produce errors {collections.Counter(e for _, e in errors).most_common(3)}, "
              f"commit errors {[(g.client, len(g.commit_errors)) for g in groups]}, "
              f"group reads {[(g.client, len(g.consumed)) for g in groups]}, {samples} high watermarks seen, failover+ack s: "
              f"{sorted(round(f, 1) for f in failovers)}")
    finally:
        for t in (*producers, *groups, watermarks):
            if t is not None:
                t.stopping.set()
        c.stop()

