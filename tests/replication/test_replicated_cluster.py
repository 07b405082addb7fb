"""Three kwire processes, topics with replication factor 3, stock clients.

Every acknowledged (acks=all) record is on every replica, byte for byte; Metadata (and kcat
-L) shows the replicas and the ISR; min.insync.replicas larger than the ISR refuses acks=all
with NOT_ENOUGH_REPLICAS and lets acks=1 through; a follower that was down catches up when it
comes back.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.raft.cluster import Cluster, call, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("rf3")), 3,
                extra_args=("--override", "broker.session.timeout.ms=3000"))
    c.start()
    yield c
    c.stop()


def bootstrap(c: Cluster) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in c.nodes.values() if n.alive)


def create(c: Cluster, name: str, partitions: int, rf: int, config: dict | None = None) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap(c)})
    for fu in a.create_topics([NewTopic(name, partitions, rf, config=config or {})]).values():
        fu.result(20)


def log_dirs(c: Cluster, node_id: int, topic: str) -> dict[int, int]:
    """{partition: size in bytes} of ``topic`` on one node (DescribeLogDirs)."""
    r = call(c.nodes[node_id].port, "DescribeLogDirs", 4, topics=None)
    return {p.partition_index: p.partition_size for res in r.results for t in res.topics if t.name == topic
            for p in t.partitions}


def produce_all(c: Cluster, topic: str, n: int, **conf) -> list[tuple[int, int]]:
    p = ck.Producer({"bootstrap.servers": bootstrap(c), "acks": "all", "enable.idempotence": True,
                     "linger.ms": 2, **conf})
    acked, errors = [], []

    def done(err, msg):
        (errors if err else acked).append(err or (msg.partition(), msg.offset()))

    for i in range(n):
        p.produce(topic, value=b"value-%d" % i, key=b"k%d" % i, on_delivery=done)
        p.poll(0)
    assert p.flush(60) == 0
    assert errors == []
    return acked


def test_every_acknowledged_record_is_on_every_replica(cluster):
    create(cluster, "rf3", 3, 3)
    acked = produce_all(cluster, "rf3", 3000)
    assert len(acked) == 3000
    sizes = {nid: log_dirs(cluster, nid, "rf3") for nid in cluster.nodes}
    assert wait_for(lambda: len({tuple(sorted(log_dirs(cluster, nid, "rf3").items())) for nid in cluster.nodes}) == 1,
                    10), sizes
    assert all(len(s) == 3 and all(v > 0 for v in s.values()) for s in sizes.values())


def test_metadata_and_kcat_show_replicas_and_isr(cluster):
    create(cluster, "shown", 2, 3)
    md = AdminClient({"bootstrap.servers": bootstrap(cluster)}).list_topics("shown", timeout=10)
    for p in md.topics["shown"].partitions.values():
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
        assert p.leader == p.replicas[0]
    kcat = shutil.which("kcat")
    assert kcat, "kcat is not installed"
    out = subprocess.run([kcat, "-b", bootstrap(cluster), "-L", "-t", "shown", "-J"], capture_output=True,
                         timeout=30, check=True).stdout
    parts = json.loads(out)["topics"][0]["partitions"]
    for p in parts:
        assert sorted(r["id"] for r in p["replicas"]) == [1, 2, 3]
        assert sorted(r["id"] for r in p["isrs"]) == [1, 2, 3]


def test_min_insync_replicas_above_the_isr_refuses_acks_all_only(cluster):
    create(cluster, "strict", 1, 3, {"min.insync.replicas": "4"})
    p = ck.Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all", "retries": 0,
                     "message.timeout.ms": 5000})
    errs = []
    p.produce("strict", value=b"x", on_delivery=lambda e, m: errs.append(e))
    p.flush(20)
    assert errs and errs[0] is not None and errs[0].code() == ck.KafkaError.NOT_ENOUGH_REPLICAS
    p1 = ck.Producer({"bootstrap.servers": bootstrap(cluster), "acks": "1"})
    errs1 = []
    p1.produce("strict", value=b"y", on_delivery=lambda e, m: errs1.append(e))
    p1.flush(20)
    assert errs1 == [None]


def test_a_follower_that_was_down_catches_up(cluster):
    create(cluster, "catchup", 1, 3)
    md = AdminClient({"bootstrap.servers": bootstrap(cluster)}).list_topics("catchup", timeout=10)
    leader = md.topics["catchup"].partitions[0].leader
    follower = next(n for n in cluster.nodes if n != leader)
    produce_all(cluster, "catchup", 200, **{"acks": "1", "enable.idempotence": False})
    cluster.nodes[follower].kill()
    produce_all(cluster, "catchup", 300, **{"acks": "1", "enable.idempotence": False})
    cluster.restart(follower)
    want = log_dirs(cluster, leader, "catchup")
    assert wait_for(lambda: log_dirs(cluster, follower, "catchup") == want, 20)
