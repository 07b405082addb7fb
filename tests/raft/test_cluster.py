"""A real three-process kwire cluster on loopback (KRaft quorum of three voters, each node
broker and controller): agreement on brokers and topics, DescribeQuorum, SIGKILL of the
quorum leader, topic creation through the survivors, catch-up of the restarted node."""
from __future__ import annotations

import time

import pytest

from kwire.errors import ErrorCode

from kwire.codec.apis import api

from .cluster import Cluster, call, create_topic, describe_quorum, metadata, produce, wait_for

pytestmark = pytest.mark.slow



def _agreed_topics(ports, names):
    views = [metadata(p) for p in ports]
    topics = [{n: v[2].get(n) for n in names} for v in views]
    if all(t == topics[0] for t in topics) and all(topics[0][n] for n in names):
        return topics[0]
    return None


def test_three_node_cluster_survives_leader_kill(tmp_path):
    cluster = Cluster(str(tmp_path)).start()
    try:
        nodes = cluster.nodes
        ports = [n.port for n in nodes.values()]

        # every node lists every live broker, and names the same controller
        views = wait_for(lambda: [metadata(p) for p in ports]
                         if all(metadata(p)[0] == [1, 2, 3] for p in ports) else None, 15)
        assert views, [metadata(p) for p in ports]

        # DescribeQuorum names the leader, with all three voters caught up
        dq = wait_for(lambda: (lambda d: d if d.error_code == 0 and d.leader_id > 0 else None)(
            describe_quorum(ports[0])), 10)
        assert dq is not None
        leader, epoch = dq.leader_id, dq.leader_epoch
        assert sorted(v.replica_id for v in dq.current_voters) == [1, 2, 3]
        assert dq.high_watermark > 0
        assert all(metadata(p)[1] == leader for p in ports)
        # v2 names every voter's controller endpoint (kafka-metadata-quorum's "endpoints"), on a
        # follower too (its answer is the leader's, relayed)
        a = api("DescribeQuorum")
        for port in (nodes[leader].port, next(n.port for n in nodes.values() if n.node_id != leader)):
            r = call(port, "DescribeQuorum", 2, topics=[a.request.struct("TopicData")(
                topic_name="__cluster_metadata", partitions=[a.request.struct("PartitionData")(partition_index=0)])])
            assert [(n.node_id, [(x.name, x.host, x.port) for x in n.listeners]) for n in r.nodes] == [
                (i, [("CONTROLLER", "127.0.0.1", n.controller_port)]) for i, n in sorted(nodes.items())], r.nodes

        # a topic created through a follower reaches the controller; all agree; leaders spread
        follower = next(n for n in nodes.values() if n.node_id != leader)
        assert create_topic(follower.port, "alpha", 3) == ErrorCode.NONE
        alpha = wait_for(lambda: _agreed_topics(ports, ["alpha"]), 10)
        assert alpha, [metadata(p) for p in ports]
        assert sorted(alpha["alpha"].values()) == [1, 2, 3]
        assert create_topic(ports[0], "alpha", 3) == ErrorCode.TOPIC_ALREADY_EXISTS
        # each partition takes produce on its leader only
        for part, owner in alpha["alpha"].items():
            other = next(n for n in nodes.values() if n.node_id != owner)
            assert produce(other.port, "alpha", part) == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert produce(nodes[owner].port, "alpha", part) == ErrorCode.NONE

        # SIGKILL the quorum leader: a survivor reports a new leader in a higher epoch within 5 s
        t0 = time.monotonic()
        nodes[leader].kill()
        survivors = [n for n in nodes.values() if n.node_id != leader]

        def new_leader():
            d = describe_quorum(survivors[0].port)
            return d if d.leader_id not in (-1, leader) and d.leader_epoch > epoch else None
        got = wait_for(new_leader, 8.0)
        elapsed = time.monotonic() - t0
        assert got is not None, survivors[0].log_tail()
        assert elapsed < 5.0, f"new leader after {elapsed:.2f}s"
        new_leader_id = got.leader_id

        # topic creation through each survivor works, and both agree
        for i, n in enumerate(survivors):
            assert create_topic(n.port, f"beta{i}", 2) == ErrorCode.NONE
        sports = [n.port for n in survivors]
        agreed = wait_for(lambda: _agreed_topics(sports, ["alpha", "beta0", "beta1"]), 10)
        assert agreed, [metadata(p) for p in sports]
        assert all(metadata(p)[1] == new_leader_id for p in sports)

        # the killed node restarts and catches up: same topics, brokers [1, 2, 3] again
        cluster.restart(leader)
        caught = wait_for(lambda: _agreed_topics(ports, ["alpha", "beta0", "beta1"]), 15)
        assert caught, [metadata(p) for p in ports]
        assert wait_for(lambda: all(metadata(p)[0] == [1, 2, 3] for p in ports), 15)
        d = wait_for(lambda: (lambda q: q if q.error_code == 0 and all(
            v.log_end_offset >= q.high_watermark for v in q.current_voters) else None)(
            describe_quorum(nodes[leader].port)), 10)
        assert d is not None and d.leader_id == new_leader_id
    finally:
        cluster.stop()
