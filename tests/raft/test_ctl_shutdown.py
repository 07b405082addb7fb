"""Controlled shutdown and preferred leaders on three real kwire processes: a SIGTERMed broker
has its leaderships moved and leaves the ISRs before it exits (long before the controller
would fence it), stays out until it registers again; back in the ISR, the controller's
auto.leader.rebalance gives it back the partitions it prefers; the active controller itself
does the same, then hands the quorum over."""
from __future__ import annotations

import re
import signal
import time

import pytest

from .cluster import Cluster, wait_for
from .test_ctl_replication import alter_partition, controller_of, create, partitions, topic_id

pytestmark = pytest.mark.slow

SESSION_MS = 30000     # fencing cannot explain anything seen here


def test_controlled_shutdown_and_preferred_leaders_return(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=(
        "--override", f"broker.session.timeout.ms={SESSION_MS}",
        "--override", "leader.imbalance.check.interval.seconds=1"))
    cluster.start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        cports = {i: n.controller_port for i, n in nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        x = min(i for i in ports if i != ctl)
        assert create(ports[ctl], "r3", 3, 3).error_code == 0
        assert create(ports[ctl], "one", -1, -1, {0: [x]}).error_code == 0
        before = wait_for(lambda: (lambda ps: ps if len(ps) == 3 else None)(partitions(ports[ctl], "r3")), 10)
        led = [i for i, p in before.items() if p.leader_id == x]
        assert len(led) == 1
        tid = topic_id(ports[ctl], "r3")

        # SIGTERM: the controller moves x's leaderships and takes it out of the ISRs before it exits
        t0 = time.monotonic()
        nodes[x].kill(signal.SIGTERM)
        took = time.monotonic() - t0
        assert took < 10, took
        assert "controlled shutdown done" in nodes[x].log_tail(200_000)
        now = partitions(ports[ctl], "r3")       # at once: x is not fenced yet (30 s session)
        for i, p in now.items():
            assert x not in p.isr_nodes and p.leader_id != x, (i, p)
            if i in led:
                assert p.leader_epoch == 1 and p.leader_id == next(b for b in p.replica_nodes if b != x)
            else:
                assert (p.leader_id, p.leader_epoch) == (before[i].leader_id, 0)
        one = partitions(ports[ctl], "one")[0]
        # no one to hand over to: offline; with ELR (KIP-966, on in a 4.3-formatted cluster) the
        # ISR empties and x stays an eligible leader replica, as on Kafka 4.3
        assert (one.leader_id, one.isr_nodes) == (-1, [])
        assert f"broker {x} in controlled shutdown" in nodes[ctl].log_tail(200_000)

        # back: registered again, eligible again; the offline partition is its at once
        cluster.restart(x)
        one = wait_for(lambda: (lambda p: p if p.leader_id == x else None)(partitions(ports[ctl], "one")[0]), 15)
        assert one.leader_epoch == 2
        # its leader adds it back to the ISR once it has caught up (the leader's own AlterPartition);
        # within leader.imbalance.check.interval.seconds it leads again
        i = led[0]
        assert wait_for(lambda: x in partitions(ports[ctl], "r3")[i].isr_nodes, 15), partitions(ports[ctl], "r3")
        back = wait_for(lambda: (lambda q: q if q.leader_id == x else None)(partitions(ports[ctl], "r3")[i]), 10)
        assert back and back.leader_epoch == 2, partitions(ports[ctl], "r3")
        assert re.search(r"preferred leaders back for \d+ partition", nodes[ctl].log_tail(200_000))

        # the active controller itself: it does the work, then hands the quorum over
        ctl_led = [j for j, q in partitions(ports[ctl], "r3").items() if q.leader_id == ctl]
        assert ctl_led
        nodes[ctl].kill(signal.SIGTERM)
        assert "controlled shutdown done" in nodes[ctl].log_tail(200_000)
        rest = [j for j in ports if j != ctl]
        assert wait_for(lambda: controller_of(ports[rest[0]]) in rest, 10)
        after = partitions(ports[rest[0]], "r3")
        assert all(q.leader_id in rest and ctl not in q.isr_nodes for q in after.values()), after
    finally:
        cluster.stop()
