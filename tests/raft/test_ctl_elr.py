"""Eligible leader replicas (KIP-966) on three real kwire processes, as Kafka 4.3's controller
keeps them: a replica that leaves the ISR below min.insync.replicas (here in its controlled
shutdown) stays eligible; when the last ISR member then dies, the ISR empties and the
eligible replica, back after its clean shutdown, is elected from the ELR. Without ELR the
dead broker would stay the lone ISR member and the partition offline until it returned.
DescribeTopicPartitions shows the ELR and LastKnownElr, to kwire's codec and to Kafka 4.3's
own kafka-topics (TopicCommand, whose Admin.describeTopics asks DescribeTopicPartitions)."""
from __future__ import annotations

import signal
import subprocess

import pytest

from kwire.codec.apis import api
from kwire.testing.apache_kafka import KafkaUnavailable, java_bin, jvm_flags, kafka_classpath

from .cluster import Cluster, call, wait_for
from .test_ctl_replication import controller_of, create, partitions

pytestmark = pytest.mark.slow

SESSION_MS = 3000   # the dead leader is fenced this long after it dies


def describe(port: int, topic: str):
    T = api("DescribeTopicPartitions").request.struct("TopicRequest")
    r = call(port, "DescribeTopicPartitions", 0, topics=[T(name=topic)], response_partition_limit=10, cursor=None)
    return r.topics[0].partitions[0]


def test_a_cleanly_stopped_eligible_replica_leads_when_the_isr_dies(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=("--override", f"broker.session.timeout.ms={SESSION_MS}"))
    cluster.start()
    try:
        ports = {i: n.port for i, n in cluster.nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        leader, eligible, other = 1, 2, 3
        assert create(ports[other], "e", -1, -1, {0: [leader, eligible]},
                      {"min.insync.replicas": "2"}).error_code == 0
        assert wait_for(lambda: partitions(ports[other], "e")[0].isr_nodes == [leader, eligible], 10)

        # a clean stop: the controlled shutdown takes it out of the ISR, which falls below min ISR
        cluster.nodes[eligible].kill(signal.SIGTERM)
        p = describe(ports[other], "e")
        assert (p.leader_id, p.isr_nodes, p.eligible_leader_replicas, p.last_known_elr) == (leader, [leader],
                                                                                          [eligible], [])

        # the last ISR member dies (the quorum is back once the eligible replica returns)
        cluster.nodes[leader].kill(signal.SIGKILL)
        cluster.restart(eligible)
        p = wait_for(lambda: (lambda q: q if q.leader_id == eligible else None)(describe(ports[other], "e")), 15)
        # fenced: the ISR empties, the dead leader joins the ELR, the eligible replica leads from it
        assert (p.isr_nodes, p.eligible_leader_replicas, p.last_known_elr) == ([eligible], [leader], [])
        assert p.leader_epoch >= 1
        assert "controlled shutdown done" in cluster.nodes[eligible].log_tail(400_000)
        out = kafka_topics_describe(ports[other], "e")
        assert f"Leader: {eligible}\tReplicas: {leader},{eligible}\tIsr: {eligible}\tElr: {leader}\tLastKnownElr: " \
            in out, out
    finally:
        cluster.stop()


def kafka_topics_describe(port: int, topic: str) -> str:
    """``kafka-topics.sh --describe`` of Kafka 4.3.1 (its jars in ~/.cache/kwire), or a skip."""
    try:
        cmd = [java_bin(), *jvm_flags("128m"), "-cp", kafka_classpath(), "org.apache.kafka.tools.TopicCommand",
               "--bootstrap-server", f"127.0.0.1:{port}", "--describe", "--topic", topic]
    except KafkaUnavailable as exc:
        pytest.skip(str(exc))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout
