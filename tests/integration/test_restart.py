"""Graceful shutdown writes checkpoints; a restarted broker serves everything back."""
import os
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kwire.testing import Broker


def _consume_all(bootstrap, topic, partitions, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "r", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.timestamp()))
    c.close()
    return sorted(got)


def test_sigterm_then_restart_reads_everything_back(tmp_path):
    b = Broker(mode="process", data_dir=str(tmp_path))
    try:
        b.start()
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        admin.create_topics([NewTopic("keep", 3, 1, config={"retention.ms": "-1"})])["keep"].result(10)
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all", "compression.type": "lz4"})
        for i in range(3000):
            p.produce("keep", key=f"k{i}".encode(), value=os.urandom(50), headers=[("i", str(i).encode())],
                      partition=i % 3, timestamp=1_600_000_000_000 + i)
        assert p.flush(30) == 0
        before = _consume_all(b.bootstrap_servers, "keep", 3, 3000)
        assert len(before) == 3000
        b.stop()  # SIGTERM: graceful
        assert os.path.exists(tmp_path / ".kafka_cleanshutdown")
        assert os.path.exists(tmp_path / "recovery-point-offset-checkpoint")
        b.start()
        after = _consume_all(b.bootstrap_servers, "keep", 3, 3000)
        assert after == before
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        md = admin.list_topics(timeout=10)
        assert len(md.topics["keep"].partitions) == 3
    finally:
        b.cleanup()
