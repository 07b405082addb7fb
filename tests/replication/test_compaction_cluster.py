"""A compacted topic with replication factor 3 on three kwire processes: every replica's cleaner
compacts its own copy (followers append the leader's batches, gaps included), and after the
leader is killed the new leader serves the latest value of every key to a consumer reading
from the beginning."""
from __future__ import annotations

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient

from tests.raft.cluster import Cluster, wait_for
from tests.replication.test_replicated_cluster import bootstrap, create, log_dirs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("cmp3")), 3,
                extra_args=("--override", "broker.session.timeout.ms=3000",
                            "--override", "log.cleaner.backoff.ms=100"))
    c.start()
    yield c
    c.stop()


def _consume_all(c: Cluster, topic: str) -> list[tuple]:
    con = ck.Consumer({"bootstrap.servers": bootstrap(c), "group.id": "cmp3", "enable.auto.commit": False,
                       "enable.partition.eof": True})
    out = []
    try:
        con.assign([ck.TopicPartition(topic, 0, 0)])
        while True:
            m = con.poll(15)
            assert m is not None, "no end of partition within 15 s"
            if m.error():
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    break
                raise AssertionError(m.error())
            out.append((m.offset(), m.key(), m.value()))
    finally:
        con.close()
    return out


def test_compacted_rf3_through_cleaning_and_failover(cluster):
    create(cluster, "cmp3", 1, 3, {"cleanup.policy": "compact", "internal.segment.bytes": "4096",
                                   "min.cleanable.dirty.ratio": "0.01"})
    p = ck.Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all", "enable.idempotence": True,
                     "linger.ms": 2})
    model = {}
    for r in range(60):
        for k in range(10):
            key, value = b"key-%d" % k, b"round-%d-of-key-%d" % (r, k) * 3
            p.produce("cmp3", key=key, value=value, partition=0)
            model[key] = value
        p.flush(10)   # one small batch per round, so segments roll
    for k in range(2):
        p.produce("cmp3", key=b"key-%d" % k, value=None, partition=0)
        model[b"key-%d" % k] = None
    for i in range(40):   # roll the updates out of the active segment
        p.produce("cmp3", key=b"tail", value=b"t-%d" % i * 20, partition=0)
        model[b"tail"] = b"t-%d" % i * 20
        p.flush(10)
    assert p.flush(60) == 0
    raw = max(log_dirs(cluster, n, "cmp3").get(0, 0) for n in cluster.nodes)   # ~80 KB before cleaning
    sizes = {}

    def compacted_everywhere():
        sizes.update({n: log_dirs(cluster, n, "cmp3").get(0, -1) for n in cluster.nodes})
        return all(0 < s < 16_000 for s in sizes.values())

    assert wait_for(compacted_everywhere, 30), (raw, sizes)

    def check(rs):
        offsets = [o for o, _, _ in rs]
        assert offsets == sorted(set(offsets))
        last = {}
        for _, k, v in rs:
            last[k] = v
        for k, v in model.items():
            assert last.get(k) == v, k

    rs = _consume_all(cluster, "cmp3")
    assert len(rs) < 60 * 10
    check(rs)
    md = AdminClient({"bootstrap.servers": bootstrap(cluster)}).list_topics("cmp3", timeout=10)
    leader = md.topics["cmp3"].partitions[0].leader
    cluster.nodes[leader].kill()

    def new_leader():
        md = AdminClient({"bootstrap.servers": bootstrap(cluster)}).list_topics("cmp3", timeout=5)
        return md.topics["cmp3"].partitions[0].leader not in (leader, -1)

    assert wait_for(new_leader, 30)
    check(_consume_all(cluster, "cmp3"))
