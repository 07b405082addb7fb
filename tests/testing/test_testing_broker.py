"""kwire.testing.Broker and KafkaContainer: lifecycle, helpers, restart on the same data."""
import os

import pytest
import trio

from kwire.testing import Broker, KafkaContainer
from kwire.testing.client import KafkaWireError

pytestmark = pytest.mark.slow


def test_thread_broker_helpers_and_restart_on_same_data():
    with Broker(storage="memory") as b:
        assert b.running and b.data_dir.startswith("/dev/shm/")
        b.create_topic("orders", partitions=3, config={"retention.ms": 60000})
        with pytest.raises(KafkaWireError):
            b.create_topic("orders")
        b.create_topic("orders", exist_ok=True)
        assert b.produce("orders", [b"a", ("k", "b", [("h", b"1")])], partition=2) == [0, 1]
        assert b.produce("orders", ["c"], partition=0) == [0]
        port = b.port
        b.restart()
        assert b.running and b.port == port
        recs = b.consume("orders", 3, partition=None)
        assert [(r.key, r.value) for r in recs] == [(None, b"c"), (None, b"a"), (b"k", b"b")]
        assert recs[2].headers == [("h", b"1")]
        with b.client() as c:
            assert c.partitions("orders") == [0, 1, 2]
        with pytest.raises(TimeoutError):
            b.consume("orders", 2, partition=0, timeout=0.3)
        data_dir = b.data_dir
    assert not b.running and not os.path.exists(data_dir)


def test_process_broker_restart_keeps_records(tmp_path):
    with Broker(mode="process", data_dir=str(tmp_path / "data")) as b:
        b.create_topic("p")
        b.produce("p", [b"1", b"2"])
        b.restart()
        assert [r.value for r in b.consume("p", 2)] == [b"1", b"2"]
        with pytest.raises(RuntimeError):
            b.faults
    assert (tmp_path / "data").exists()  # a caller's data dir is left alone


def test_async_context_manager():
    async def main():
        async with Broker() as b:
            b.create_topic("x")
            assert b.produce("x", [b"v"]) == [0]
            return b

    b = trio.run(main)
    assert not b.running


def test_kafka_container_shape_with_confluent_kafka():
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft().with_env("KAFKA_NUM_PARTITIONS", "2") \
            .with_bind_ports(9093, 9093).with_name("ignored") as kafka:
        bootstrap = kafka.get_bootstrap_server()
        assert kafka.status() == "running" and bootstrap.endswith(f":{kafka.get_exposed_port(9093)}")
        p = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
        p.produce("auto-created", b"hello", partition=1)
        assert p.flush(10) == 0
        assert kafka.broker.client().partitions("auto-created") == [0, 1]
        assert [r.value for r in kafka.broker.consume("auto-created", 1, partition=1)] == [b"hello"]
    assert kafka.status() == "exited"


def test_async_context_manager_under_asyncio():
    import asyncio

    async def main():
        async with Broker() as b:
            await asyncio.sleep(0)  # the loop still runs while the broker serves
            b.create_topic("y")
            return b.produce("y", [b"1", b"2"])

    assert asyncio.run(main()) == [0, 1]


def test_stop_from_a_trio_task_does_not_deadlock():
    b = Broker().start()

    async def main():
        b.stop()

    trio.run(main)
    assert not b.running
    b.cleanup()
