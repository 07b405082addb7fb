"""Transactions on three kwire processes: the transaction coordinator (the leader of the id's
__transaction_state partition, replicated 3 times) sends WriteTxnMarkers over the network to
the leaders of the partitions on other brokers; after a SIGKILL of the coordinator, the new
leader of its __transaction_state partition loads the transaction and a new producer with
the same transactional.id fences the old one and aborts its open transaction. A
read_committed consumer sees only committed records."""
from __future__ import annotations

import time

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.raft.cluster import Cluster, call, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("txn3")), 3,
                extra_args=("--override", "broker.session.timeout.ms=3000",
                            "--override", "transaction.state.log.num.partitions=3"))
    c.start()
    yield c
    c.stop()


def bootstrap(c: Cluster) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in c.nodes.values() if n.alive)


def read_committed(c: Cluster, topic: str, partitions: int, expect: int, timeout: float = 20.0) -> list[str]:
    cons = ck.Consumer({"bootstrap.servers": bootstrap(c), "group.id": f"rc-{time.monotonic_ns()}",
                        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                        "enable.auto.commit": False})
    cons.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[str] = []
    deadline = time.monotonic() + timeout
    settle = None
    while time.monotonic() < deadline:
        m = cons.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value().decode())
        if len(got) >= expect:
            settle = settle or time.monotonic() + 1.0
            if time.monotonic() > settle:
                break
    cons.close()
    return got


def coordinator_of(c: Cluster, tid: str) -> int:
    def ask():
        alive = next(n for n in c.nodes.values() if n.alive)
        r = call(alive.port, "FindCoordinator", 4, key_type=1, coordinator_keys=[tid]).coordinators[0]
        assert r.error_code == 0 and c.nodes[r.node_id].alive
        return r.node_id
    return wait_for(ask, 30)


def test_markers_cross_brokers_and_a_new_coordinator_fences_after_sigkill(cluster):
    topic, tid = "txn-rf3", "cluster-txn"
    a = AdminClient({"bootstrap.servers": bootstrap(cluster)})
    for fu in a.create_topics([NewTopic(topic, 3, 3)]).values():
        fu.result(20)
    leaders = {p.id: p.leader for p in a.list_topics(topic, timeout=10).topics[topic].partitions.values()}
    assert len(set(leaders.values())) > 1        # partitions led by several brokers

    p = ck.Producer({"bootstrap.servers": bootstrap(cluster), "transactional.id": tid, "linger.ms": 5})
    p.init_transactions(60)
    coord = coordinator_of(cluster, tid)
    p.begin_transaction()
    for i in range(9):
        p.produce(topic, value=f"one-{i}".encode(), partition=i % 3)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"aborted-{i}".encode(), partition=i % 3)
    p.flush(30)
    p.abort_transaction(60)
    # an open transaction, then its coordinator dies
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"orphan-{i}".encode(), partition=i % 3)
    p.flush(30)
    cluster.nodes[coord].kill()
    new_coord = coordinator_of(cluster, tid)
    assert new_coord != coord
    p2 = ck.Producer({"bootstrap.servers": bootstrap(cluster), "transactional.id": tid})
    p2.init_transactions(60)           # the new coordinator aborts the orphan, fences p
    p2.begin_transaction()
    for i in range(3):
        p2.produce(topic, value=f"two-{i}".encode(), partition=i % 3)
    p2.commit_transaction(60)
    got = read_committed(cluster, topic, 3, 12)
    assert sorted(got) == sorted([f"one-{i}" for i in range(9)] + [f"two-{i}" for i in range(3)])
    cluster.restart(coord)
