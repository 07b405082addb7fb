"""A crash of the whole cluster: three processes (RF=3, min.insync.replicas=2) SIGKILLed at
once under stock idempotent acks=all producers come back with every acknowledged record (log
recovery, leader epochs, high watermarks and the metadata log all restart from disk)."""
from __future__ import annotations

import collections
import os
import signal

import pytest

from tests.raft.cluster import wait_for
from tests.replication import chaos as C

pytestmark = pytest.mark.slow


def test_sigkill_of_the_whole_cluster_under_load_keeps_every_acknowledged_record(tmp_path):
    """All three nodes SIGKILLed at once under load, then started again (once; KWIRE_CHAOS_ROUNDS/5
    times in the long run): every record acknowledged before the crash is read back once, in
    order, every replica holds the same log, and the producers go on."""
    c = C.start_cluster(str(tmp_path / "cluster"))
    producers = []
    try:
        C.create_topic(c)
        producers = [P(c) for P in C.PRODUCERS]
        for p in producers:
            p.start()
        for r in range(max(1, C.rounds(0) // 5)):
            acked = [p.acked_count() for p in producers]
            wait_for(lambda: all(p.acked_count() > a + 100 for p, a in zip(producers, acked)), 60,
                     message=f"crash {r}: every producer acknowledged")
            for n in c.nodes.values():      # as close to at once as three signals get
                os.kill(n.proc.pid, signal.SIGKILL)
            for n in c.nodes.values():
                n.kill()
            for n in c.nodes.values():
                n.start(c.voters, c.extra_args)
            for n in c.nodes.values():
                c.wait_serving(n, 60)
            C.wait_healthy(c, [C.TOPIC], 60)
        acked = [p.acked_count() for p in producers]
        wait_for(lambda: all(p.acked_count() > a for p, a in zip(producers, acked)), 60,
                 message="every producer acknowledged after the crashes")
        for p in producers:
            p.stop()
        C.wait_replicas_agree(c)
        total = C.check_acknowledged(C.read_back(c), producers)
        errors = [e for p in producers for e in p.errors]
        print(f"\nwhole-cluster crash x{max(1, C.rounds(0) // 5)}: {total} acknowledged records, {len(errors)} produce errors "
              f"{collections.Counter(e for _, e in errors).most_common(3)}")
    finally:
        for p in producers:
            p.stopping.set()
        c.stop()
