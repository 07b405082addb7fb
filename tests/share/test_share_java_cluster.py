"""Share groups (KIP-932) with the stock Java client on a three-process kwire cluster.

The scenarios of java/ShareCheck.java (3 KafkaShareConsumers on one group with every record
delivered once and commitSync; explicit ACCEPT / RELEASE / REJECT; a poison record archived at
the delivery count limit; the share-group offsets admin APIs) against three ``kwire serve``
nodes (tests/raft/cluster.py), each topic with replication factor 3 and its leader placed away
from the coordinators: the group coordinator (FindCoordinator key type 0, where
ShareGroupHeartbeat goes: the leader of the one __consumer_offsets partition) and the share
coordinator (key type 2, the leader of the one __share_group_state partition, which the
partition leader writes the share state to). So ShareFetch / ShareAcknowledge, the group's
heartbeats and the state writes are served by different brokers.

Two JVM runs: "share3" first (its first state write creates __share_group_state), then, with the
share coordinator known, "acks,poison,offsets" on topics led by the node that is neither
coordinator (when the two coordinators share a node, by one of the other two).

Three processes and two JVMs (15-40 s on 2 cores), past make test's budget: set
KWIRE_SHARE_JAVA_CLUSTER=1 (needs a JDK and make kafka's kafka-clients jar, as test_share_java.py).
"""
from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from kwire.codec.apis import api
from tests.raft.cluster import Cluster, call, wait_for
from tests.share.test_share_java import classes  # noqa: F401 - the compiled ShareCheck (module fixture)
from tests.transactions.java_build import JAVA_FLAGS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(os.environ.get("KWIRE_SHARE_JAVA_CLUSTER") != "1",
                                 reason="three kwire processes and two JVMs (15-40 s), past make test's budget; "
                                        "set KWIRE_SHARE_JAVA_CLUSTER=1 (needs a JDK and make kafka's jars)")]

LOCK_MS = 1500
SETTINGS = {"kwire.emulate.kafka.version": "4.3", "offsets.topic.num.partitions": 1,
            "share.coordinator.state.topic.num.partitions": 1,
            "group.share.record.lock.duration.ms": LOCK_MS, "group.share.min.record.lock.duration.ms": 1000,
            "group.share.delivery.count.limit": 3, "group.share.heartbeat.interval.ms": 500,
            "group.share.min.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    args: tuple[str, ...] = ()
    for k, v in SETTINGS.items():
        args += ("--override", f"{k}={v}")
    c = Cluster(str(tmp_path_factory.mktemp("sharejc")), 3, extra_args=args)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _bootstrap(c) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in c.nodes.values())


def _coordinator(c, key_type: int, key: str) -> int:
    def found():
        r = call(c.nodes[1].port, "FindCoordinator", 6, key_type=key_type, coordinator_keys=[key])
        co = r.coordinators[0]
        assert co.error_code == 0, (co.error_code, co.error_message)
        return co.node_id
    return wait_for(found, timeout=30)


def _partition(c, topic: str):
    """(leader, replicas, isr, topic id) of partition 0 of ``topic``."""
    r = call(c.nodes[1].port, "Metadata", 12, topics=[api("Metadata").request.struct("MetadataRequestTopic")(
        name=topic, topic_id=None)], allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    t = r.topics[0]
    assert t.error_code == 0, (topic, t.error_code)
    p = t.partitions[0]
    return p.leader_id, list(p.replica_nodes), sorted(p.isr_nodes), t.topic_id


def _run(c, classes: str, scenarios: str, prefix: str, replicas: list[int]) -> str:  # noqa: F811
    r = subprocess.run(["java", *JAVA_FLAGS, f"-Dsharecheck.replicas={','.join(map(str, replicas))}",
                        "-cp", classes, "ShareCheck", _bootstrap(c), scenarios, prefix],
                       capture_output=True, text=True, timeout=200)
    tails = "\n".join(f"--- node {n.node_id}\n{n.log_tail(3000)}" for n in c.nodes.values())
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:] + "\n" + tails
    for s in scenarios.split(","):
        assert f"OK {s}" in r.stdout, r.stdout
    return r.stdout


def _share_coordinator(c, group: str, topic_id) -> int:
    from kwire.share.records import kafka_uuid_string  # noqa: PLC0415
    return _coordinator(c, 2, f"{group}:{kafka_uuid_string(topic_id)}:0")


def test_java_share_consumers_on_three_nodes(cluster, classes):  # noqa: F811
    prefix = f"sjc-{uuid.uuid4().hex[:6]}"
    nodes = sorted(cluster.nodes)
    # every group of the run has its coordinator on the one __consumer_offsets partition's leader
    gc = _coordinator(cluster, 0, f"{prefix}-g-share3")
    lead = next(n for n in nodes if n != gc)
    _run(cluster, classes, "share3", prefix, [lead] + [n for n in nodes if n != lead])
    leader, replicas, isr, tid = _partition(cluster, f"{prefix}-share3")
    assert (leader, sorted(replicas)) == (lead, nodes)
    sc = _share_coordinator(cluster, f"{prefix}-g-share3", tid)

    # the rest on a leader apart from both coordinators
    lead2 = next(n for n in nodes if n not in (gc, sc))
    _run(cluster, classes, "acks,poison,offsets", prefix, [lead2] + [n for n in nodes if n != lead2])
    for s in ("acks", "poison", "offsets"):
        leader, replicas, isr, tid = _partition(cluster, f"{prefix}-{s}")
        assert (leader, sorted(replicas)) == (lead2, nodes), s
        assert _coordinator(cluster, 0, f"{prefix}-g-{s}") == gc
        if s != "offsets":   # (offsets ends deleting the group and its state)
            assert _share_coordinator(cluster, f"{prefix}-g-{s}", tid) == sc
    assert lead2 not in (gc, sc)
    print(f"group coordinator {gc}, share coordinator {sc}, leaders {lead} then {lead2}")
