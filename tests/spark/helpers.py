"""Shared bits of the Spark tests: producing with confluent-kafka, reading back, waiting."""
from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def produce(bootstrap: str, topic: str, records, *, codec: str = "none", partition=None) -> None:
    """records: iterable of (key, value, headers)."""
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5,
                  "enable.idempotence": True})
    errors = []

    def cb(err, _msg):
        if err is not None:
            errors.append(err)
    for k, v, h in records:
        kw = {"partition": partition} if partition is not None else {}
        while True:
            try:
                p.produce(topic, v, k, headers=h, on_delivery=cb, **kw)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    assert not errors, errors[:3]


def consume_all(bootstrap: str, topic: str, partitions: int, *, isolation: str = "read_uncommitted",
                timeout: float = 60.0) -> list:
    """Every record of ``topic`` up to its current end: list of (key, value, headers)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out, eof = [], set()
        deadline = time.monotonic() + timeout
        while len(eof) < partitions:
            assert time.monotonic() < deadline, f"reading {topic}: {len(out)} records, eof {sorted(eof)}"
            for m in c.consume(10_000, 0.5):
                if m.error():
                    if m.error().code() == m.error()._PARTITION_EOF:
                        eof.add(m.partition())
                    continue
                eof.discard(m.partition())
                out.append((m.key(), m.value(), tuple(m.headers() or ())))
        return out
    finally:
        c.close()


def wait_until(cond, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
