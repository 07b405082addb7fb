"""A restarted leader is fetched from at once (kwire.replication.fetcher), on three processes.

A follower's fetcher for a broker that stops leading anything must not sit on its connection
to it; and a connection that had been answering and is closed by the leader (it restarted,
or shut down) is reopened at once, not after replica.fetch.backoff.ms. Here the back-off is
made long (20 s): a leader that shuts down cleanly, restarts and is made preferred leader
again must get its first acks=all write acknowledged by the whole ISR within a few seconds.
"""
from __future__ import annotations

import signal
import time

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode

from tests.raft.cluster import Cluster, call, produce, wait_for
from tests.raft.test_ctl_replication import controller_of, create, partitions

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_followers_reconnect_at_once_to_a_restarted_leader(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=(
        "--override", "broker.session.timeout.ms=3000", "--override", "replica.fetch.backoff.ms=20000",
        "--override", "auto.leader.rebalance.enable=false", "--override", "min.insync.replicas=3"))
    cluster.start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        x = next(i for i in sorted(ports) if i != ctl)   # the leader that restarts (not the controller)
        others = [i for i in sorted(ports) if i != x]
        assert create(ports[ctl], "r", -1, -1, {0: [x, *others]}).error_code == 0
        assert wait_for(lambda: sorted(partitions(ports[ctl], "r")[0].isr_nodes) == [1, 2, 3], 20)
        assert wait_for(lambda: produce(ports[x], "r", 0, b"before") == ErrorCode.NONE, 20)   # followers fetch from x

        # a clean shutdown moves the leadership away; x comes back and rejoins the ISR
        nodes[x].kill(signal.SIGTERM)
        assert wait_for(lambda: partitions(ports[ctl], "r")[0].leader_id in others, 20)
        cluster.restart(x)
        assert wait_for(lambda: sorted(partitions(ports[ctl], "r")[0].isr_nodes) == [1, 2, 3], 30)

        # x leads again (preferred election); min.insync.replicas=3: the write needs both followers
        Rq = api("ElectLeaders").request
        r = call(ports[ctl], "ElectLeaders", 2, election_type=0, timeout_ms=10000, topic_partitions=[
            Rq.struct("TopicPartitions")(topic="r", partitions=[0])])
        assert r.replica_election_results[0].partition_result[0].error_code == 0
        assert wait_for(lambda: all(partitions(p, "r")[0].leader_id == x for p in ports.values()), 20)
        t0 = time.monotonic()
        assert produce(ports[x], "r", 0, b"after") == ErrorCode.NONE
        assert time.monotonic() - t0 < 10, "a follower waited out replica.fetch.backoff.ms"
    finally:
        cluster.stop()
