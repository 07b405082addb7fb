"""The testcontainers drop-in: wait_for_logs, exec of Kafka's tools, logs, with_cluster_id."""
from __future__ import annotations

import logging
import pathlib
import subprocess
import sys
import warnings

import pytest

from kwire.testing import KafkaContainer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka():
    with KafkaContainer("confluentinc/cp-kafka:7.6.0").with_cluster_id("MkU3OEVBNTcwNTJENDM2Qk") as k:
        yield k


def test_wait_for_logs_and_wait_strategies(kafka):
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy
    from testcontainers.core.waiting_utils import wait_for_logs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert wait_for_logs(kafka, r"\[KafkaServer id=\d+\] started", timeout=10) < 10
    LogMessageWaitStrategy("started").with_startup_timeout(10).wait_until_ready(kafka)
    assert kafka.status == "running" and kafka.status() == "running"
    wrapped = kafka.get_wrapped_container()
    wrapped.reload()
    assert wrapped.status == "running" and wrapped.attrs["State"]["Running"]
    assert kafka.get_docker_client().host() == kafka.get_container_host_ip()


def test_exec_kafka_tools(kafka):
    r = kafka.exec(["kafka-topics", "--bootstrap-server", "localhost:9092", "--create", "--topic", "tc-orders",
                    "--partitions", "2"])
    assert r.exit_code == 0 and r.output == b"Created topic tc-orders.\n"
    r = kafka.exec("/usr/bin/kafka-topics --bootstrap-server localhost:9092 --describe --topic tc-orders")
    assert r.exit_code == 0 and b"PartitionCount: 2" in r.output
    r = kafka.exec(["bash", "-c", "echo -e 'k1:one\\nk2:two' | kafka-console-producer.sh --bootstrap-server "
                    "localhost:9092 --topic tc-orders --property parse.key=true --property key.separator=:"])
    assert r.exit_code == 0, r.output
    r = kafka.exec("kafka-console-consumer --bootstrap-server localhost:9092 --topic tc-orders --from-beginning "
                   "--max-messages 2 --property print.key=true --property key.separator==")
    assert r.exit_code == 0
    lines = r.output.decode().splitlines()
    assert sorted(lines[:2]) == ["k1=one", "k2=two"] and lines[2] == "Processed a total of 2 messages"
    r = kafka.exec("kafka-cluster.sh cluster-id --bootstrap-server localhost:9092")
    assert r.output == b"Cluster ID: MkU3OEVBNTcwNTJENDM2Qk\n"          # with_cluster_id is honoured
    r = kafka.exec("kafka-configs --bootstrap-server localhost:9092 --entity-type topics --entity-name tc-orders "
                   "--alter --add-config retention.ms=1000")
    assert r.exit_code == 0 and r.output == b"Completed updating config for topic tc-orders.\n"
    r = kafka.exec("kafka-topics --bootstrap-server localhost:9092 --describe --topic nope")
    assert r.exit_code == 1 and b"does not exist" in r.output
    assert kafka.exec("kafka-server-stop").exit_code == 127


def test_logs_of_a_process_container():
    with KafkaContainer(mode="process") as k:
        from testcontainers.core.wait_strategies import LogMessageWaitStrategy

        LogMessageWaitStrategy("ready: serving clients").with_startup_timeout(20).wait_until_ready(k)
        out, err = k.get_logs()
        assert b"started" in out and b"kwire broker 1 ready" in err
    assert k.status == "exited"


def test_thread_mode_logs_hold_the_brokers_info_log_without_changing_the_tests_logging():
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    keep = Keep()
    root = logging.getLogger()
    root.addHandler(keep)
    kwire_logger = logging.getLogger("kwire")
    before = (kwire_logger.level, kwire_logger.propagate, kwire_logger.getEffectiveLevel())
    try:
        with KafkaContainer() as k:
            _, err = k.get_logs()
            assert b"INFO kwire broker 1 ready: serving clients" in err
            logging.getLogger("kwire.test").warning("a warning still reaches the test's handlers")
    finally:
        root.removeHandler(keep)
    assert (kwire_logger.level, kwire_logger.propagate, kwire_logger.getEffectiveLevel()) == before
    if before[2] > logging.INFO:
        assert not [r for r in seen if r.name.startswith("kwire") and r.levelno < before[2]]
    assert any(r.getMessage() == "a warning still reaches the test's handlers" for r in seen)


def test_a_project_written_for_testcontainers_runs_unchanged():
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
                           "ignore::DeprecationWarning", str(root / "examples" / "testcontainers")],
                          capture_output=True, text=True, timeout=240, cwd=root)
    assert done.returncode == 0 and "5 passed" in done.stdout, done.stdout + done.stderr
