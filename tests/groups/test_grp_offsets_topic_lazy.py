"""__consumer_offsets is created on a group's first FindCoordinator, as Kafka creates it: a fresh
broker's data dir holds none of its partitions (a first start writes 50 fewer logs), and a
stock client's group then works (subscribe, consume, commit, committed offsets read back by
another consumer of the group). Empty offsets partitions are not logged one by one."""
from __future__ import annotations

import logging
import os

from confluent_kafka import Consumer, Producer, TopicPartition
import pytest

from kwire.groups.records import OFFSETS_TOPIC
from kwire.testing import Broker

pytestmark = pytest.mark.slow


def offsets_dirs(data_dir: str) -> list[str]:
    return sorted(d for d in os.listdir(data_dir) if d.startswith(OFFSETS_TOPIC + "-"))


def test_a_fresh_broker_has_no_offsets_partitions_until_a_group_is_used(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="kwire.groups")
    data = str(tmp_path / "data")
    with Broker(mode="thread", data_dir=data, overrides={"group.initial.rebalance.delay.ms": 0}) as kafka:
        kafka.create_topic("orders", 2)
        p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0})
        for i in range(10):
            p.produce("orders", f"m{i}".encode(), partition=i % 2)
        assert p.flush(10) == 0
        # produce, topic creation and metadata do not create it
        assert offsets_dirs(data) == []
        assert OFFSETS_TOPIC not in p.list_topics(timeout=10).topics

        c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "billing",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            c.subscribe(["orders"])
            got = []
            for _ in range(200):
                m = c.poll(0.2)
                if m is not None and not m.error():
                    got.append(m.value())
                if len(got) == 10:
                    break
            assert sorted(got) == sorted(f"m{i}".encode() for i in range(10))
            c.commit(asynchronous=False)
        finally:
            c.close()
        assert offsets_dirs(data) == sorted(f"{OFFSETS_TOPIC}-{i}" for i in range(50))
        t = kafka.broker.image.topics[OFFSETS_TOPIC]
        assert len(t.partitions) == 50

        again = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "billing"})
        try:
            committed = again.committed([TopicPartition("orders", 0), TopicPartition("orders", 1)], timeout=10)
        finally:
            again.close()
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 5), (1, 5)]
    infos = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO and r.name == "kwire.groups"]
    assert not [m for m in infos if m.startswith("loaded 0 groups") or m.startswith("became leader of")], infos
    assert any("created on the first FindCoordinator" in m for m in infos), infos
