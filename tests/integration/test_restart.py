"""Graceful shutdown writes checkpoints; a restarted broker serves everything back."""
import os
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
import pytest

from kwire.testing import Broker

pytestmark = pytest.mark.slow


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


def test_sigterm_finishes_in_flight_requests(tmp_path):
    """A long-poll Fetch in flight when SIGTERM arrives still gets its answer."""
    import signal
    import socket
    import struct
    import threading

    from kwire.codec import frame as FR
    from kwire.codec.apis import api

    from .kafka_wire import WireClient

    b = Broker(mode="process", data_dir=str(tmp_path))
    try:
        b.start()
        c = WireClient(b.bootstrap_servers)
        T = api("Metadata").request.struct("MetadataRequestTopic")
        c.request("Metadata", 12, topics=[T(name="quiet")], allow_auto_topic_creation=True)
        f = api("Fetch")
        FT = f.request.struct("FetchTopic")
        FP = f.request.struct("FetchPartition")
        req = f.request.cls(max_wait_ms=1500, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                            session_id=0, session_epoch=-1,
                            topics=[FT(topic="quiet", partitions=[FP(partition=0, fetch_offset=0,
                                                                     partition_max_bytes=1 << 20)])])
        c.send_raw(FR.encode_request(f, 12, 4242, req))
        time.sleep(0.3)
        b.proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        frame = c.recv_frame()
        corr, resp = FR.decode_response(f, 12, frame)
        assert corr == 4242 and resp.error_code == 0
        assert time.monotonic() - start < 3
        assert b.proc.wait(10) == 0
    finally:
        b.cleanup()
