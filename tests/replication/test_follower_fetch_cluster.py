"""Fetch from follower (KIP-392) in a three-process kwire cluster with stock clients.

Brokers in racks r1, r2, r3 (``broker.rack``) with Kafka's RackAwareReplicaSelector
(``replica.selector.class``); each topic has one partition on [1, 2, 3], led by broker 1.
Racks are in Metadata; the leader answers a Fetch v11+ from rack r2 with preferred_read_replica
2 and no records, and broker 2 serves it; a confluent-kafka (librdkafka) consumer with
client.rack=r2, and the Java consumer (Kafka's ConsoleConsumer; KWIRE_FOLLOWER_FETCH_JAVA=1)
with client.rack=r3, read every record, and each broker's consumer bytes-out counter
(kafka_server_brokertopicmetrics_bytesout, replica fetches left out) shows the records went out
from the rack-local follower, none from the leader. One cluster for every case.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.request

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kwire.codec.apis import api
from kwire.codec.records import iter_batches
from kwire.errors import ErrorCode
from kwire.replication.replica_selector import RACK_AWARE
from kwire.testing.apache_kafka import KafkaUnavailable, kafka_libs
from kwire.testing.broker import free_port
from tests.raft.cluster import Cluster, call, wait_for

pytestmark = pytest.mark.timeout(180)
N = 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("ff")), 3,
                extra_args=("--override", f"replica.selector.class={RACK_AWARE}"))
    c.metrics = {}
    try:
        for n in c.nodes.values():
            c.metrics[n.node_id] = free_port()
            n.start(c.voters, c.extra_args + ("--override", f"broker.rack=r{n.node_id}",
                                              "--override", f"metrics.listen=127.0.0.1:{c.metrics[n.node_id]}"))
        for n in c.nodes.values():
            c.wait_serving(n, 30)
        yield c
    finally:
        c.stop()


def _bootstrap(c) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in c.nodes.values())


def _topic(c, name: str) -> None:
    """One partition on [1, 2, 3] (led by 1), N records acks=all, the ISR full everywhere."""
    a = AdminClient({"bootstrap.servers": _bootstrap(c)})
    for fu in a.create_topics([NewTopic(name, 1, -1, replica_assignment=[[1, 2, 3]])]).values():
        fu.result(20)
    p = ck.Producer({"bootstrap.servers": _bootstrap(c), "acks": "all", "linger.ms": 5})
    for i in range(N):
        p.produce(name, value=b"v%d" % i)
    assert p.flush(30) == 0

    def in_sync():
        r = call(c.nodes[1].port, "Metadata", 9, topics=[api("Metadata").request.struct("MetadataRequestTopic")(
            name=name)], allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        part = r.topics[0].partitions[0]
        assert (part.leader_id, sorted(part.isr_nodes)) == (1, [1, 2, 3])
        # the followers' high watermarks have caught up: they serve every record (asked at
        # offset N: no records, so no bytes out counted)
        for node in (2, 3):
            assert _fetch(c, node, name, N, "r%d" % node).high_watermark == N
        return True
    wait_for(in_sync, timeout=20)


def _fetch(c, node: int, topic: str, offset: int, rack: str, version: int = 12):
    R = api("Fetch").request
    FT, FP = R.struct("FetchTopic"), R.struct("FetchPartition")
    ft = FT(topic=topic, partitions=[FP(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])
    r = call(c.nodes[node].port, "Fetch", version, replica_id=-1, max_wait_ms=0, min_bytes=1,
             max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1, topics=[ft],
             forgotten_topics_data=[], rack_id=rack)
    return r.responses[0].partitions[0]


def _bytes_out(c, node: int, topic: str) -> float:
    """The consumer bytes one broker sent for ``topic`` (its Prometheus endpoint)."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{c.metrics[node]}/metrics", timeout=10).read().decode()
    m = re.search(r'^kafka_server_brokertopicmetrics_bytesout_total\{topic="%s"\} (\S+)$' % re.escape(topic),
                  body, re.M)
    return float(m.group(1)) if m else 0.0


@pytest.mark.slow
def test_racks_preferred_replica_and_follower_reads_on_the_wire(cluster):
    _topic(cluster, "ff-wire")
    r = call(cluster.nodes[1].port, "Metadata", 9, topics=None, allow_auto_topic_creation=False,
             include_topic_authorized_operations=False)
    assert {b.node_id: b.rack for b in r.brokers} == {1: "r1", 2: "r2", 3: "r3"}
    d = call(cluster.nodes[2].port, "DescribeCluster", 0, include_cluster_authorized_operations=False)
    assert {b.broker_id: b.rack for b in d.brokers} == {1: "r1", 2: "r2", 3: "r3"}

    p = _fetch(cluster, 1, "ff-wire", 0, "r2")           # the leader sends rack r2 to broker 2
    assert (p.error_code, p.preferred_read_replica, len(p.records or b""), p.high_watermark) == (0, 2, 0, N)
    assert _fetch(cluster, 1, "ff-wire", 0, "r3").preferred_read_replica == 3
    p = _fetch(cluster, 1, "ff-wire", 0, "r1")           # the leader's own rack: it serves
    assert (p.preferred_read_replica, len(p.records) > 0) == (-1, True)
    assert _fetch(cluster, 1, "ff-wire", 0, "r1", version=10).preferred_read_replica == -1   # v10: no field

    got, offset = [], 0
    while offset < N:                                    # broker 2 serves the consumer
        p = _fetch(cluster, 2, "ff-wire", offset, "r2")
        assert (p.error_code, p.preferred_read_replica, p.high_watermark) == (0, -1, N)
        recs = [r for b in iter_batches(bytes(p.records)) for r in b.records()]
        got += [bytes(r.value) for r in recs]
        offset = recs[-1].offset + 1
    assert got == [b"v%d" % i for i in range(N)]
    p = _fetch(cluster, 2, "ff-wire", N + 5, "r2")       # past its log end: back to the leader
    assert (p.error_code, p.high_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    # Fetch v10 carries no rack: the leader only, as Kafka
    assert _fetch(cluster, 2, "ff-wire", 0, "", version=10).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    R = api("ListOffsets").request
    lo = call(cluster.nodes[2].port, "ListOffsets", 7, replica_id=-1, isolation_level=0, topics=[
        R.struct("ListOffsetsTopic")(name="ff-wire", partitions=[R.struct("ListOffsetsPartition")(
            partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
    assert lo.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER   # ListOffsets: the leader


@pytest.mark.slow
def test_librdkafka_consumer_reads_from_its_rack_local_follower(cluster):
    _topic(cluster, "ff-ck")
    c = ck.Consumer({"bootstrap.servers": _bootstrap(cluster), "group.id": "ff-ck", "client.rack": "r2",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([ck.TopicPartition("ff-ck", 0, 0)])
        got = []
        for _ in range(300):
            if len(got) >= N:
                break
            for m in c.consume(N, 0.2):
                assert m.error() is None, m.error()
                got.append(m.value())
    finally:
        c.close()
    assert got == [b"v%d" % i for i in range(N)]
    out = {n: _bytes_out(cluster, n, "ff-ck") for n in (1, 2, 3)}
    assert out[2] > 0 and out[1] == 0 and out[3] == 0, out


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("KWIRE_FOLLOWER_FETCH_JAVA") != "1",
                    reason="a Kafka tools JVM (~10 s on 2 cores, past make test's budget); set "
                           "KWIRE_FOLLOWER_FETCH_JAVA=1 (needs make kafka's jars and a JDK)")
def test_java_consumer_reads_from_its_rack_local_follower(cluster):
    try:
        libs = kafka_libs()
    except KafkaUnavailable as exc:
        pytest.fail(f"the Java consumer needs Apache Kafka's jars: {exc}")
    java = shutil.which("java")
    assert java, "the Java consumer needs a JDK (java on PATH)"
    _topic(cluster, "ff-java")
    r = subprocess.run(
        [java, "-cp", os.path.join(str(libs), "*"), "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", _bootstrap(cluster), "--topic", "ff-java", "--partition", "0",
         "--offset", "earliest", "--max-messages", str(N), "--timeout-ms", "30000",
         "--command-property", "client.rack=r3"],
        capture_output=True, timeout=90)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    assert r.stdout.decode().split() == ["v%d" % i for i in range(N)]
    out = {n: _bytes_out(cluster, n, "ff-java") for n in (1, 2, 3)}
    assert out[3] > 0 and out[1] == 0 and out[2] == 0, out
