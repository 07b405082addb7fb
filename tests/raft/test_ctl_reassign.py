"""Partition reassignment on three real kwire processes through kafka-python's admin client:
AlterPartitionReassignments sent to a node that is not the controller adds the new replica,
ListPartitionReassignments shows it in progress; once the leader reports the new replica in
the ISR (AlterPartition, sent here by the test) the old one is dropped; a second
reassignment is cancelled. The controller's decisions are checked, as metadata: the new replica
is cut off from the leader (kwire.link_faults), so it never catches up and the real leader never
completes a reassignment on its own, which would race the test's steps."""
from __future__ import annotations

import pytest

from kwire.errors import ErrorCode

from kwire.codec.apis import api

from .cluster import Cluster, call, wait_for
from .test_ctl_replication import alter_partition, controller_of, create, partitions, topic_id

pytestmark = pytest.mark.slow


def test_reassignment_through_kafka_python(tmp_path):
    from kafka import TopicPartition  # noqa: PLC0415
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415

    # AlterPartitionReassignments v1 (allow_replication_factor_change) is Kafka 4.1+
    cluster = Cluster(str(tmp_path), extra_args=("--override", "kwire.emulate.kafka.version=4.3"))
    cluster.start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        a, b = sorted(i for i in ports if i != ctl)
        cut = tmp_path / "b-cannot-reach"
        cut.write_text(str(a))
        nodes[b].kill()
        nodes[b].start(cluster.voters, cluster.extra_args + ("--override", f"kwire.test.unreachable.nodes.file={cut}"))
        cluster.wait_serving(nodes[b], 30)
        assert create(ports[ctl], "move", -1, -1, {0: [a, ctl], 1: [a, ctl]}).error_code == 0
        assert wait_for(lambda: len(partitions(ports[a], "move")) == 2, 10)
        tid = topic_id(ports[ctl], "move")
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{ports[a]}", request_timeout_ms=20000)
        try:
            tp0, tp1 = TopicPartition("move", 0), TopicPartition("move", 1)
            # [a, ctl] -> [b, ctl]: b is added, a (the leader) stays until b is in the ISR
            got = admin.alter_partition_reassignments({tp0: [b, ctl], tp1: [b, ctl]})
            assert got == {tp0: None, tp1: None}, got
            ongoing = admin.list_partition_reassignments()
            assert ongoing[tp0] == {"replicas": [b, ctl, a], "adding_replicas": [b], "removing_replicas": [a]}, ongoing
            # (kafka-python sends these to the controller, which has applied them when it answers)
            p = wait_for(lambda: (lambda q: q if q.replica_nodes == [b, ctl, a] else None)(
                partitions(ports[a], "move")[0]), 10)
            assert (p.leader_id, sorted(p.isr_nodes)) == (a, sorted([a, ctl]))
            # the leader reports b caught up: the reassignment completes, a leaves, b leads (preferred order)
            r = alter_partition(nodes[ctl].controller_port, a, tid, 0, 0, 1, [a, ctl, b])
            assert (r.error_code, r.leader_id, r.isr, r.leader_epoch) == (ErrorCode.NEW_LEADER_ELECTED, b,
                                                                          [ctl, b], 1)
            p = wait_for(lambda: (lambda q: q if q.replica_nodes == [b, ctl] else None)(partitions(ports[b], "move")[0]),
                         10)
            assert (p.leader_id, p.isr_nodes, p.leader_epoch) == (b, [ctl, b], 1)
            # the other one is cancelled: back to the replicas it had
            assert admin.alter_partition_reassignments({tp1: None}) == {tp1: None}
            assert admin.list_partition_reassignments() == {}
            p = wait_for(lambda: (lambda q: q if q.replica_nodes == [ctl, a] else None)(
                partitions(ports[a], "move")[1]), 10)
            assert p.leader_id == a
            # through a node that is not the controller (forwarded): applied there when it answers
            body = api("AlterPartitionReassignments").request
            t = body.struct("ReassignableTopic")(name="move", partitions=[
                body.struct("ReassignablePartition")(partition_index=1, replicas=[ctl, a, b])])
            r = call(ports[a], "AlterPartitionReassignments", 1, timeout_ms=20000, allow_replication_factor_change=False,
                     topics=[t])
            assert (r.error_code, r.responses[0].partitions[0].error_code) == (0, ErrorCode.INVALID_REPLICATION_FACTOR)
            r = call(ports[a], "AlterPartitionReassignments", 1, timeout_ms=20000, allow_replication_factor_change=True,
                     topics=[t])
            assert (r.error_code, r.responses[0].partitions[0].error_code) == (0, 0)
            p = partitions(ports[a], "move")[1]
            assert p.replica_nodes == [ctl, a, b]
            listed = call(ports[a], "ListPartitionReassignments", 0, timeout_ms=20000, topics=None).topics
            assert [(x.name, [(q.partition_index, q.adding_replicas, q.removing_replicas) for q in x.partitions])
                    for x in listed] == [("move", [(1, [b], [])])]
            assert admin.alter_partition_reassignments({tp1: None}) == {tp1: None}
            # nothing to cancel now; an unknown broker
            errs = admin.alter_partition_reassignments({tp1: None, tp0: [9, ctl]})
            assert errs[tp1].errno == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
            assert errs[tp0].errno == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        finally:
            admin.close()
    finally:
        cluster.stop()
