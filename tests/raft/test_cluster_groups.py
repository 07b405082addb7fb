"""Consumer groups on a three-node cluster: every node names the same coordinator (the leader
of the group's __consumer_offsets partition), the others answer NOT_COORDINATOR, and stock
clients bootstrapping from all nodes share partitions exactly once."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
import pytest

from kwire.errors import ErrorCode

from .cluster import Cluster, call, create_topic, metadata, wait_for

pytestmark = pytest.mark.slow


def test_groups_on_a_three_node_cluster(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=("--override", "group.initial.rebalance.delay.ms=0",
                                                   "--override", "offsets.topic.num.partitions=6")).start()
    try:
        ports = [n.port for n in cluster.nodes.values()]
        assert wait_for(lambda: all(metadata(p)[0] == [1, 2, 3] for p in ports), 15)
        # every node names the same coordinator for a group
        def coordinator(port, group):
            r = call(port, "FindCoordinator", 3, key=group, key_type=0)
            return (r.error_code, r.node_id, r.port)
        groups = [f"group-{i}" for i in range(6)]
        answers = wait_for(lambda: (lambda a: a if all(x[0] == 0 for row in a for x in row) else None)(
            [[coordinator(p, g) for p in ports] for g in groups]), 20)
        assert answers, [[coordinator(p, g) for p in ports] for g in groups]
        for row in answers:
            assert len(set(row)) == 1, row
        assert len({row[0][1] for row in answers}) >= 2  # coordinators spread over the brokers
        # a broker that does not coordinate the group says so
        g0 = groups[0]
        owner = answers[0][0][1]
        other = next(n for n in cluster.nodes.values() if n.node_id != owner)
        r = call(other.port, "Heartbeat", 3, group_id=g0, generation_id=1, member_id="m", group_instance_id=None)
        assert r.error_code == ErrorCode.NOT_COORDINATOR

        assert create_topic(ports[0], "orders", 6) == ErrorCode.NONE
        assert wait_for(lambda: all(len(metadata(p)[2].get("orders", {})) == 6 for p in ports), 10)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
        prod = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(600):
            prod.produce("orders", f"{i}".encode(), partition=i % 6)
        assert prod.flush(30) == 0

        consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": "shop", "auto.offset.reset": "earliest",
                               "session.timeout.ms": 6000, "heartbeat.interval.ms": 300}) for _ in range(2)]
        for c in consumers:
            c.subscribe(["orders"])
        got = []
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and len(got) < 600:
            for c in consumers:
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    got.append(int(m.value()))
        owned = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
        for c in consumers:
            c.close()
        assert sorted(got) == list(range(600))
        assert all(owned) and sorted(p for o in owned for p in o) == list(range(6)), owned
    finally:
        cluster.stop()
