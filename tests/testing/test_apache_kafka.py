"""ApacheKafka: the real Kafka 4.3 broker the project compares itself with, run from Maven's jars."""
from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from kwire.testing.apache_kafka import KAFKA_VERSION, ApacheKafka, kafka_libs

pytestmark = [pytest.mark.xdist_group("apache-kafka")]

ROOT = Path(__file__).resolve().parents[2]


def test_pinned_version_matches_pom():
    pom = (ROOT / "jvm" / "pom.xml").read_text()
    assert re.search(r"<kafka.version>(.*)</kafka.version>", pom).group(1) == KAFKA_VERSION
    libs = kafka_libs()   # make test depends on make kafka: missing jars fail here, never skip
    assert (libs / f"kafka-clients-{KAFKA_VERSION}.jar").is_file()
    assert (libs / f"kafka-tools-{KAFKA_VERSION}.jar").is_file()


@pytest.mark.slow
def test_one_node_serves_a_stock_client_and_is_cleaned_up():
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    kafka = ApacheKafka(nodes=1).start()
    try:
        directory, pid = kafka.directory, kafka.pids()[0]
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        md = admin.list_topics(timeout=10)
        assert list(md.brokers) == [1] and md.cluster_id == kafka.cluster_id
        admin.create_topics([NewTopic("ref", 2, 1)])["ref"].result(30)
        p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
        for i in range(50):
            p.produce("ref", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "ref-g",
                      "auto.offset.reset": "earliest"})
        c.subscribe(["ref"])
        got = set()
        for _ in range(100):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.add(m.value())
            if len(got) == 50:
                break
        c.close()
        assert got == {b"v%d" % i for i in range(50)}
        assert "Kafka Server started" in kafka.nodes[0].log_file.read_text()
    finally:
        kafka.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not directory.exists()


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("KWIRE_KAFKA_CLUSTER_TEST") != "1",
                    reason="three Kafka JVMs (~30 s on 2 cores, past make test's budget); set KWIRE_KAFKA_CLUSTER_TEST=1 "
                           "(python -m bench vs-kafka runs a three-node Kafka for its RF=3 rows too)")
def test_three_nodes_survive_a_sigkill():
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    # a killed follower leaves the ISR after replica.lag.time.max.ms (Kafka's 30 s): 2 s here, so the
    # acks=all produce below goes on with two replicas soon after the kill
    with ApacheKafka(nodes=3, overrides={"replica.lag.time.max.ms": 2000}) as kafka:
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3]
        admin.create_topics([NewTopic("rf3", 1, 3)])["rf3"].result(30)
        kafka.kill(kafka.nodes[2], signal.SIGKILL)
        p = Producer({"bootstrap.servers": kafka.nodes[0].bootstrap, "acks": "all"})
        for i in range(20):
            p.produce("rf3", b"x%d" % i)
        assert p.flush(60) == 0
