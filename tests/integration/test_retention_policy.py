"""Retention by cleanup.policy through the broker: with a short log.retention.ms, delete-policy
topics lose old segments while __consumer_offsets (compact-only, as Kafka creates it) keeps
every committed offset, also across a restart (compact topics are compacted, never deleted)."""
from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition
import pytest

from kwire.groups.records import OFFSETS_TOPIC
from kwire.testing import Broker
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow


def test_short_retention_keeps_committed_offsets(tmp_path):
    overrides = {"log.retention.ms": 1, "offsets.topic.segment.bytes": 1024, "log.retention.check.interval.ms": 100,
                 "offsets.topic.num.partitions": 1, "group.initial.rebalance.delay.ms": 0}
    with Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=overrides) as b:
        b.create_topic("events", config={"internal.segment.bytes": 1024})
        b.create_topic("connect-offsets", config={"cleanup.policy": "compact", "internal.segment.bytes": 1024})
        for i in range(12):
            b.produce("events", [b"x" * 300])
            b.produce("connect-offsets", [(b"source-%d" % (i % 3), b"%02d" % i + b"y" * 300)])
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
        try:
            for n in range(1, 31):  # enough commits to roll __consumer_offsets' segments
                c.commit(offsets=[TopicPartition("events", 0, n)], asynchronous=False)
        finally:
            c.close()
        logs = b.broker.logs
        # a retention pass after every commit: the delete-policy topic loses segments again
        start = logs.get("events", 0).log_start_offset
        for _ in range(6):
            b.produce("events", [b"x" * 300])
        wait_until(lambda: logs.get("events", 0).log_start_offset > start, timeout=15,
                   message="retention deletes old segments of a delete-policy topic")
        assert len(logs.get(OFFSETS_TOPIC, 0).segments) > 1
        assert logs.get(OFFSETS_TOPIC, 0).log_start_offset == 0
        assert logs.get("connect-offsets", 0).log_start_offset == 0
        b.restart()
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
        try:
            (tp,) = c.committed([TopicPartition("events", 0)], timeout=10)
            assert tp.offset == 30
        finally:
            c.close()
        # retention never removed them; the cleaner (started again with the broker) may have
        # compacted the topic to the latest record per key
        # (read to the end: a read racing a cleaning pass may see a key's older record early and
        # its latest later, as from Kafka; what must hold is the latest value per key at the end)
        latest, offset = {}, 0
        while offset < 12:
            (r,) = b.consume("connect-offsets", 1, offset=offset)
            latest[bytes(r.key)] = bytes(r.value)
            offset = r.offset + 1
        assert latest == {b"source-%d" % k: b"%02d" % (9 + k) + b"y" * 300 for k in range(3)}
