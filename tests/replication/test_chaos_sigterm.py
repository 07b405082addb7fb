"""A clean SIGTERM of a partition leader under load loses no availability the application sees.

Three nodes, RF=3, min.insync.replicas=2; confluent-kafka, kafka-python and aiokafka producers
(acks=all, idempotent) write to every partition while each node in turn, as a leader, gets
SIGTERM: its controlled shutdown hands its leaderships to other ISR members before it exits
(exit code 0), the clients retry NOT_LEADER_OR_FOLLOWER on the new leaders, and not one
produce error reaches the application. The node comes back and rejoins every ISR before the
next one goes. Afterwards every acknowledged record is read back once, at its offset, in order.
"""
from __future__ import annotations

import collections
import signal
import time

import pytest

from tests.raft.cluster import wait_for
from tests.replication import chaos as C

pytestmark = pytest.mark.slow


def test_sigterm_of_leaders_under_load_reaches_no_application(tmp_path):
    c = C.start_cluster(str(tmp_path / "cluster"))
    producers = []
    try:
        C.create_topic(c)
        producers = [P(c) for P in C.PRODUCERS]
        for p in producers:
            p.start()
        wait_for(lambda: all(p.acked_count() for p in producers), 60, message="every producer acknowledged")
        C.wait_healthy(c, [C.TOPIC])

        stopped: collections.Counter = collections.Counter()
        moves = []
        for r in range(C.rounds(3)):
            victim = min(set(C.leaders(c).values()), key=lambda n: (stopped[n], n))
            node = c.nodes[victim]
            acked_before = [p.acked_count() for p in producers]
            t0 = time.monotonic()
            node.proc.send_signal(signal.SIGTERM)
            rc = node.proc.wait(30)
            exited = time.monotonic() - t0
            node.kill()      # closes its log; the process is gone
            stopped[victim] += 1
            assert rc == 0, f"round {r}: node {victim} exited with {rc} after SIGTERM:\n{node.log_tail()}"
            # controlled shutdown moved every leadership before the process ended (the metadata
            # a live node answers with may trail the controller's commit by a moment)
            wait_for(lambda: all(leader not in (victim, -1) for leader in C.leaders(c).values()), 2,
                     message=f"round {r}: node {victim}'s leaderships moved by its controlled shutdown")
            moves.append(exited)
            wait_for(lambda: all(p.acked_count() > a for p, a in zip(producers, acked_before)), 30,
                     message=f"round {r}: every producer acknowledged after node {victim} stopped")
            c.restart(victim)
            C.wait_healthy(c, [C.TOPIC])

        for p in producers:
            p.stop()
        errors = {p.name_prefix: p.errors[:5] for p in producers if p.errors}
        assert not errors, f"produce errors reached the application: {errors}"
        total = C.check_acknowledged(C.read_back(c), producers)
        assert len(stopped) == 3, f"every node stopped in turn: {dict(stopped)}"
        print(f"\nsigterm: stops {dict(stopped)}, {total} acknowledged records, 0 produce errors, "
              f"SIGTERM to exit s: {[round(m, 2) for m in moves]}")
    finally:
        for p in producers:
            p.stopping.set()
        c.stop()
