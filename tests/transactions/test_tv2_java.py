"""Transaction version 2 (KIP-890 part 2) with the stock Java client (kafka-clients 4.x) against
a kwire broker that finalizes transaction.version=2: the client then skips AddPartitionsToTxn
and AddOffsetsToTxn (Produce v12 and TxnOffsetCommit v5 add the partitions) and takes the
bumped epoch from every EndTxn v5. Scenarios in java/Tv2Check.java: commit / abort with
read_committed and read_uncommitted readers, fencing by a second producer, transactional
offsets. Also: under 3.9 emulation, and at level 1 under 4.x, the same client stays on
version 1; unset, the level is the emulated release's default (2 under 4.x).

Needs a JDK (javac, java) and Apache Kafka's kafka-clients jar (make kafka resolves it from
Maven); without them the tests fail. One JVM per scenario.
"""
from __future__ import annotations

import subprocess
import uuid

import pytest

from kwire.testing import Broker
from tests.transactions.java_build import JAVA_FLAGS, compile_java

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    return compile_java(tmp_path_factory.mktemp("tv2java"), "Tv2Check.java")


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"transaction.version": 2, "transaction.state.log.num.partitions": 3,
                           "group.initial.rebalance.delay.ms": 0,
                           "kwire.emulate.kafka.version": "4.0"}) as b:   # transaction version 2 is Kafka 4's
        yield b


def run(classes: str, bootstrap: str, *args: str) -> str:
    r = subprocess.run(["java", *JAVA_FLAGS, "-cp", classes, "Tv2Check", bootstrap, *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    return r.stdout


def _topic(broker, prefix: str) -> str:
    from kwire.testing.client import WireClient

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c:
        c.create_topic(name, 1)
    return name


@pytest.mark.parametrize("scenario", ["commit", "fence", "offsets"])
def test_java_client_transaction_version_2(classes, broker, scenario):
    topic = _topic(broker, f"tv2-{scenario}")
    tid = f"tv2-{uuid.uuid4().hex[:8]}"
    out = run(classes, broker.bootstrap_servers, scenario, topic, tid, f"g-{uuid.uuid4().hex[:8]}")
    assert f"OK {scenario}" in out
    d = broker.broker.txn_edge.coordinator.describe(tid)
    if scenario == "commit":   # InitProducerId gave epoch 0; each of the 3 ends bumped it
        assert (d.state, d.producer_epoch) == ("CompleteCommit", 3)
    elif scenario == "fence":  # A: 0; B's InitProducerId fenced (1), aborted A's (2), took 3; B's end: 4
        assert "A fenced" in out and (d.state, d.producer_epoch) == ("CompleteCommit", 4)
    else:                      # an abort and a commit
        assert (d.state, d.producer_epoch) == ("CompleteCommit", 2)


@pytest.mark.parametrize("overrides", [{"kwire.emulate.kafka.version": "3.9"},
                                       {"kwire.emulate.kafka.version": "4.0", "transaction.version": 1}],
                         ids=["3.9", "4.0-level-1"])
def test_java_client_stays_on_version_1(classes, overrides):
    """Kafka 3.9 has no transaction version 2; under 4.x a cluster finalized at level 1 keeps it."""
    with Broker(overrides={"transaction.state.log.num.partitions": 1, **overrides}) as b:
        topic = _topic(b, "tv1")
        r = subprocess.run(["java", *JAVA_FLAGS, "-cp", classes, "Tv2Check", b.bootstrap_servers, "commit", topic,
                            f"tv1-{uuid.uuid4().hex[:8]}"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "did not take transaction version 2" in r.stdout + r.stderr


def test_java_client_takes_version_2_by_default_under_kafka_4():
    """transaction.version unset under 4.x emulation: level 2, as a new Kafka 4 cluster is formatted."""
    from kwire.testing.client import WireClient

    with Broker(overrides={"kwire.emulate.kafka.version": "4.3"}) as b, WireClient(b.bootstrap_servers) as c:
        r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
        # (share.version, KIP-932, is finalized beside it under 4.1+)
        assert ("transaction.version", 2, 2) in \
            [(f.name, f.min_version_level, f.max_version_level) for f in r.finalized_features]
        assert {k.api_key: k.max_version for k in r.api_keys}[0] >= 12


@pytest.mark.parametrize("scenario", ["commit", "offsets"])
def test_java_client_transaction_version_2_across_brokers(classes, tmp_path, scenario):
    """Two brokers; the partition's leader is not the transaction coordinator, so Produce v12
    (and, when the group's coordinator is the other broker, TxnOffsetCommit v5) add the
    partition with AddPartitionsToTxn v5 over the wire, and the markers carry the bumped
    epoch to the other broker."""
    from kwire.testing.client import WireClient
    from tests.raft.cluster import Cluster, create_topic, metadata, wait_for

    cluster = Cluster(str(tmp_path), size=2, extra_args=(
        "--override", "transaction.version=2", "--override", "kwire.emulate.kafka.version=4.0",
        "--override", "transaction.state.log.replication.factor=1",
        "--override", "transaction.state.log.num.partitions=4",
        "--override", "offsets.topic.replication.factor=1",
        "--override", "offsets.topic.num.partitions=4",
        "--override", "group.initial.rebalance.delay.ms=0")).start()
    try:
        ports = {n.node_id: n.port for n in cluster.nodes.values()}
        assert wait_for(lambda: all(metadata(p)[0] == [1, 2] for p in ports.values()), 20)
        topic = f"x-{uuid.uuid4().hex[:6]}"
        assert create_topic(ports[1], topic, 1) == 0
        leader = wait_for(lambda: metadata(ports[1])[2].get(topic, {}).get(0), 20)
        with WireClient(f"127.0.0.1:{ports[1]}") as c:
            for i in range(64):   # a transactional id coordinated by the broker that does not lead the partition
                tid = f"tv2x-{uuid.uuid4().hex[:6]}"
                r = wait_for(lambda: (x := c.request("FindCoordinator", 4, key_type=1, coordinator_keys=[tid])
                                      .coordinators[0]).error_code == 0 and x, 20)
                if r.node_id != leader:
                    break
            assert r.node_id != leader
        bootstrap = f"127.0.0.1:{ports[leader]}"
        out = run(classes, bootstrap, scenario, topic, tid, f"g-{uuid.uuid4().hex[:8]}")
        assert f"OK {scenario}" in out
    finally:
        cluster.stop()
