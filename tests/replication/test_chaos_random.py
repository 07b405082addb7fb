"""Seeded random chaos on three real processes: SIGKILL, SIGTERM and network isolation of any
node (leader, follower, controller) at random moments, without waiting for the cluster to
heal in between, under stock idempotent acks=all producers and a committing consumer group of each client.

At most one node is down or cut off at a time, so a majority is always there; a node comes
back after a random pause, and the next fault may strike before it has rejoined the ISR (a
partition whose ISR shrank to one member may then be offline until that member returns; that
is availability, not safety). At the end the cluster heals, and every acknowledged record is
read back once, at its offset, in order per partition, nothing is written twice, and the
groups' commits never went back.

It runs only when asked for (its invariants are test_chaos_kill's, which `make test` runs;
this one hunts for the schedules those miss): KWIRE_CHAOS_ROUNDS=<n> runs n rounds (at least
4), KWIRE_CHAOS_SEED=<n> replays a run (the seed is printed).
"""
from __future__ import annotations

import collections
import os
import random
import signal
import time

import pytest

from tests.raft.cluster import wait_for
from tests.replication import chaos as C

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not (os.environ.get("KWIRE_CHAOS_ROUNDS") or os.environ.get("KWIRE_CHAOS_SEED")),
    reason="long chaos: set KWIRE_CHAOS_ROUNDS=<n> (and KWIRE_CHAOS_SEED=<n> to replay a run)")]

GROUP = "random-group"


def test_random_faults_lose_no_acknowledged_record(tmp_path):
    seed = int(os.environ.get("KWIRE_CHAOS_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    n_rounds = C.rounds(4)
    print(f"\nchaos seed {seed} (KWIRE_CHAOS_SEED={seed} replays it), {n_rounds} rounds")
    c = C.PartitionableCluster(str(tmp_path / "cluster"), 3, C.CLUSTER_ARGS).start()
    producers, groups, done = [], [], []
    try:
        C.create_topic(c)
        producers = [P(c) for P in C.PRODUCERS]
        groups = [G(c, f"{GROUP}-{G.client}") for G in C.GROUP_CONSUMERS]
        for t in (*producers, *groups):
            t.start()
        wait_for(lambda: all(p.acked_count() for p in producers) and all(g.committed_total() for g in groups), 60,
                 message="every producer acknowledged and every group committing")
        for r in range(n_rounds):
            kind = rng.choice(["kill-leader", "kill", "term", "isolate"])
            if kind == "kill-leader":
                victim = rng.choice(sorted(set(C.leaders(c).values()) - {-1}) or sorted(c.nodes))
            else:
                victim = rng.choice(sorted(c.nodes))
            pause = rng.uniform(0.5, 4.0)
            done.append(f"{kind} {victim} for {pause:.1f}s")
            if kind == "isolate":
                c.isolate(victim)
                c.wait_cut_noticed()
                time.sleep(pause)
                c.heal()
                c.wait_cut_noticed()
            else:
                c.nodes[victim].kill(signal.SIGTERM if kind == "term" else signal.SIGKILL)
                time.sleep(pause)
                c.restart(victim)
            time.sleep(rng.uniform(0.0, 3.0))      # the next fault may come before the ISR is whole
        C.wait_healthy(c, [C.TOPIC, C.OFFSETS_TOPIC], 60)
        acked = [p.acked_count() for p in producers]
        wait_for(lambda: all(p.acked_count() > a for p, a in zip(producers, acked)), 60,
                 message="every producer acknowledged once the cluster healed")
        for p in producers:
            p.stop()
        for g in groups:
            g.stop()
        C.wait_replicas_agree(c)
        log = C.read_back(c)
        total = C.check_acknowledged(log, producers)
        for g in groups:
            C.check_group(g, C.committed_offsets(c, g.group), log)
        errors = [e for p in producers for e in p.errors]
        print(f"chaos seed {seed}: {'; '.join(done)}\n{total} acknowledged records, {len(errors)} produce errors "
              f"{collections.Counter(e for _, e in errors).most_common(3)}")
    except BaseException:
        print(f"chaos seed {seed} failed after: {'; '.join(done)}")
        raise
    finally:
        for t in (*producers, *groups):
            if t is not None:
                t.stopping.set()
        c.stop()
