"""A test suite written against testcontainers' KafkaContainer API: only the import differs
from the Docker version (``from testcontainers.kafka import KafkaContainer``). kwire's own tests
run it unchanged (tests/testing/test_container_project.py); run it yourself with
``pytest examples/testcontainers``."""
from __future__ import annotations

import pathlib
import socket

import pytest
from confluent_kafka import Consumer, Producer
from testcontainers.core.waiting_utils import wait_for_logs

from kwire.testing import KafkaContainer  # was: from testcontainers.kafka import KafkaContainer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = _free_port()


@pytest.fixture(scope="module")
def kafka():
    container = (KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft()
                 .with_env("KAFKA_NUM_PARTITIONS", "3")
                 .with_bind_ports(9093, PORT))
    container.start(timeout=60)
    yield container
    container.stop()


def test_the_bound_port_is_the_bootstrap_port(kafka):
    assert kafka.get_bootstrap_server().endswith(f":{PORT}")
    assert kafka.get_exposed_port(9093) == PORT


def test_produce_and_consume(kafka):
    bootstrap = kafka.get_bootstrap_server()
    kafka.exec("kafka-topics --bootstrap-server localhost:9092 --create --topic orders")
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        p.produce("orders", f"order-{i}".encode(), key=str(i % 3).encode())
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "auto.offset.reset": "earliest"})
    c.subscribe(["orders"])
    seen = []
    for _ in range(200):
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            seen.append(m.value())
        if len(seen) == 10:
            break
    c.close()
    assert sorted(seen) == sorted(f"order-{i}".encode() for i in range(10))
    described = kafka.exec("kafka-topics --bootstrap-server localhost:9092 --describe --topic orders")
    assert b"PartitionCount: 3" in described.output          # KAFKA_NUM_PARTITIONS took effect


def test_shell_pipes_in_exec(kafka):
    kafka.exec("kafka-topics --bootstrap-server localhost:9092 --create --topic audit")
    count = kafka.exec(["sh", "-c", "kafka-topics --bootstrap-server localhost:9092 --list | grep -c audit"])
    assert count.exit_code == 0 and count.output.strip() == b"1"
    lines = kafka.exec(["sh", "-c", "kafka-topics --bootstrap-server localhost:9092 --list | wc -l"])
    assert lines.exit_code == 0 and int(lines.output) >= 2
    r = kafka.exec(["bash", "-c", "kafka-topics --bootstrap-server localhost:9092 --describe --topic nope "
                                  "2>/dev/null || echo missing"])
    assert r.output.endswith(b"missing\n")


def test_files_in_and_out_of_the_container(kafka, tmp_path: pathlib.Path):
    kafka.create_file(b"security.protocol=PLAINTEXT\n", "/etc/kafka/client.properties")
    r = kafka.exec("kafka-topics --bootstrap-server localhost:9092 --command-config /etc/kafka/client.properties "
                   "--list")
    assert r.exit_code == 0, r.output
    (tmp_path / "lines.txt").write_text("a\nb\nc\n")
    kafka.copy_into_container(str(tmp_path / "lines.txt"), "/tmp/lines.txt")
    r = kafka.exec(["sh", "-c", "kafka-console-producer --bootstrap-server localhost:9092 --topic lines "
                                "< /tmp/lines.txt && echo sent"])
    assert r.exit_code == 0 and r.output == b"sent\n", r.output
    kafka.exec(["sh", "-c", "kafka-topics --bootstrap-server localhost:9092 --list > /tmp/topics.txt"])
    kafka.copy_from_container("/tmp/topics.txt", tmp_path / "topics.txt")
    assert "lines" in (tmp_path / "topics.txt").read_text().split()


def test_logs_and_inspect(kafka):
    assert wait_for_logs(kafka, r"Kafka Server started", timeout=10) < 10
    out, err = kafka.get_logs()
    assert b"ready: serving clients" in err                   # the broker's own log
    info = kafka.get_container_info()
    assert info.State.Running and info.Config.Image == "confluentinc/cp-kafka:7.6.0"
