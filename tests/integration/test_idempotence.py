"""Idempotent producers against kwire: InitProducerId on the wire, duplicates and gaps in
Produce, and three client libraries producing while the broker drops the connection after
writing but before answering (every record must be in the log exactly once, in order)."""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from kwire.codec.records import build_batch, iter_batches
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def idem_broker():
    with Broker(mode="thread") as b:
        yield b


@pytest.fixture
def broker(idem_broker):
    idem_broker.faults.clear()
    yield idem_broker
    idem_broker.faults.clear()


def new_topic(bootstrap, partitions=1) -> str:
    name = f"idem-{uuid.uuid4().hex[:10]}"
    with WireClient(bootstrap) as c:
        c.create_topic(name, partitions)
    return name


def values_in_log(bootstrap, topic, partition=0) -> list[bytes]:
    """Every record value of the partition, read from offset 0 to the log end; offsets must be
    consecutive."""
    from kwire.codec.apis import api

    F = api("Fetch").request
    out = []
    with WireClient(bootstrap) as c:
        offset = 0
        while True:
            tp = F.struct("FetchTopic")(topic=topic, topic_id=None, partitions=[F.struct("FetchPartition")(
                partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=1 << 24)])
            resp = c.request("Fetch", 11, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 24,
                             isolation_level=0, session_id=0, session_epoch=-1, topics=[tp],
                             forgotten_topics_data=[], rack_id="")
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0
            data = bytes(part.records or b"")
            if not data:
                assert offset == part.high_watermark
                return out
            for b in iter_batches(data):
                for r in b.records():
                    assert r.offset == len(out)
                    out.append(r.value)
                offset = b.next_offset


def init_pid(c, version=4, **kw):
    fields = dict(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
    fields.update(kw)
    return c.request("InitProducerId", version, **fields)


def produce_raw(c, topic, batch, partition=0):
    from kwire.codec.apis import api

    P = api("Produce").request
    resp = c.request("Produce", 8, transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
        P.struct("TopicProduceData")(name=topic, partition_data=[
            P.struct("PartitionProduceData")(index=partition, records=batch)])])
    pr = resp.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


def idem(pid, epoch, seq, n=2, tag="v"):
    return build_batch([(None, f"{tag}{seq + i}".encode(), [], int(time.time() * 1000)) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


# --- the wire ------------------------------------------------------------------------------
def test_init_producer_id_on_the_wire(broker):
    with WireClient(broker.bootstrap_servers) as c:
        a = init_pid(c, 0)
        b = init_pid(c, 4)
        assert a.error_code == b.error_code == 0
        assert b.producer_id == a.producer_id + 1 and a.producer_epoch == b.producer_epoch == 0
        bumped = init_pid(c, 4, producer_id=b.producer_id, producer_epoch=0)
        assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (0, b.producer_id, 1)
        init_pid(c, 5, producer_id=b.producer_id, producer_epoch=1)
        assert init_pid(c, 5, producer_id=b.producer_id, producer_epoch=0).error_code == ErrorCode.PRODUCER_FENCED
        assert init_pid(c, 3, producer_id=b.producer_id, producer_epoch=0).error_code == \
            ErrorCode.INVALID_PRODUCER_EPOCH
        assert init_pid(c, 4, producer_id=b.producer_id).error_code == ErrorCode.INVALID_REQUEST
        # a transactional id goes to its transaction coordinator, found with FindCoordinator
        f = c.request("FindCoordinator", 4, key_type=1, coordinator_keys=["my-txn"]).coordinators[0]
        assert (f.error_code, f.node_id) == (0, 1)
        t = init_pid(c, 4, transactional_id="my-txn")
        assert (t.error_code, t.producer_epoch) == (0, 0) and t.producer_id >= 0
        assert init_pid(c, 4, transactional_id="").error_code == ErrorCode.INVALID_REQUEST


def test_produce_duplicate_gap_and_stale_epoch(broker):
    topic = new_topic(broker.bootstrap_servers)
    with WireClient(broker.bootstrap_servers) as c:
        pid = init_pid(c).producer_id
        assert produce_raw(c, topic, idem(pid, 0, 0)) == (0, 0)
        assert produce_raw(c, topic, idem(pid, 0, 2)) == (0, 2)
        assert produce_raw(c, topic, idem(pid, 0, 0)) == (0, 0)  # a retry: original offset, no write
        assert produce_raw(c, topic, idem(pid, 0, 7))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        bumped = init_pid(c, producer_id=pid, producer_epoch=0).producer_epoch
        assert produce_raw(c, topic, idem(pid, bumped, 3))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce_raw(c, topic, idem(pid, bumped, 0, tag="e1-")) == (0, 4)
        assert produce_raw(c, topic, idem(pid, 0, 4))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert values_in_log(broker.bootstrap_servers, topic) == [b"v0", b"v1", b"v2", b"v3", b"e1-0", b"e1-1"]


# --- clients under "written, answer lost" ----------------------------------------------------
N = 300


def expected(n=N):
    return [f"r{i}".encode() for i in range(n)]


def test_confluent_idempotent_with_dropped_answers(broker):
    from confluent_kafka import Producer

    topic = new_topic(broker.bootstrap_servers)
    broker.faults.drop_after_handling("Produce", 4, topic=topic)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                  "linger.ms": 2, "batch.num.messages": 20, "retry.backoff.ms": 20,
                  "log_level": 2})
    errors = []
    for i, v in enumerate(expected()):
        p.produce(topic, value=v, partition=0, on_delivery=lambda e, m: e and errors.append(e))
        if i % 25 == 0:
            p.poll(0.01)
    assert p.flush(60) == 0
    assert not errors
    assert broker.faults.injected("Produce") == 4
    assert values_in_log(broker.bootstrap_servers, topic) == expected()


def test_kafka_python_idempotent_with_dropped_answers(broker):
    from kafka import KafkaProducer

    topic = new_topic(broker.bootstrap_servers)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True, acks="all",
                      linger_ms=2, batch_size=400, retry_backoff_ms=20, request_timeout_ms=10000)
    p.send(topic, value=b"warm-up", partition=0).get(10)  # InitProducerId done, metadata known
    broker.faults.drop_after_handling("Produce", 4, topic=topic)
    futs = [p.send(topic, value=v, partition=0) for v in expected()]
    p.flush(60)
    offsets = [f.get(10).offset for f in futs]
    p.close(5)
    assert broker.faults.injected("Produce") == 4
    assert offsets == list(range(1, N + 1))
    assert values_in_log(broker.bootstrap_servers, topic) == [b"warm-up"] + expected()


def test_aiokafka_idempotent_with_dropped_answers(broker):
    from aiokafka import AIOKafkaProducer

    topic = new_topic(broker.bootstrap_servers)

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True,
                             linger_ms=2, max_batch_size=400, retry_backoff_ms=20, request_timeout_ms=10000)
        await p.start()
        try:
            await p.send_and_wait(topic, b"warm-up", partition=0)
            broker.faults.drop_after_handling("Produce", 4, topic=topic)
            futs = [await p.send(topic, v, partition=0) for v in expected()]
            return [(await f).offset for f in futs]
        finally:
            await p.stop()

    offsets = asyncio.run(asyncio.wait_for(go(), 60))
    assert broker.faults.injected("Produce") == 4
    assert offsets == list(range(1, N + 1))
    assert values_in_log(broker.bootstrap_servers, topic) == [b"warm-up"] + expected()


# --- restarts ----------------------------------------------------------------------------------
def test_producer_keeps_working_across_broker_restarts():
    """One confluent-kafka idempotent producer across two broker restarts (the second one while
    a batch's answer was lost): sequences continue, nothing is duplicated; a new producer after
    the restarts gets a producer id never handed out before."""
    from confluent_kafka import Producer

    with Broker(mode="thread") as b:
        topic = new_topic(b.bootstrap_servers)
        with WireClient(b.bootstrap_servers) as c:
            first_pid = init_pid(c).producer_id
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "enable.idempotence": True, "linger.ms": 1,
                      "retry.backoff.ms": 50, "reconnect.backoff.ms": 50, "log_level": 2})
        errors = []

        def send(lo, hi):
            for i in range(lo, hi):
                p.produce(topic, value=f"r{i}".encode(), partition=0, on_delivery=lambda e, m: e and errors.append(e))
            p.poll(0)

        send(0, 100)
        assert p.flush(30) == 0
        b.restart()
        send(100, 200)
        assert p.flush(60) == 0
        b.faults.drop_after_handling("Produce", 1, topic=topic)
        send(200, 201)
        deadline = time.monotonic() + 10
        while b.faults.injected("Produce") < 1 and time.monotonic() < deadline:
            p.poll(0.05)
        b.restart()  # the answer to r200 was lost; the client retries it against the new broker
        send(201, 300)
        assert p.flush(60) == 0
        assert not errors
        assert values_in_log(b.bootstrap_servers, topic) == expected(300)
        with WireClient(b.bootstrap_servers) as c:
            assert init_pid(c).producer_id >= first_pid + 1000  # a new block after each restart


def test_duplicate_detected_after_sigkill():
    """kill -9 right after a write: no snapshot was taken, the restarted broker rebuilds the
    producer state from the log's batch headers and still recognises the retry."""
    with Broker(mode="process") as b:
        topic = new_topic(b.bootstrap_servers)
        with WireClient(b.bootstrap_servers) as c:
            pid = init_pid(c).producer_id
            for seq in range(0, 12, 2):
                assert produce_raw(c, topic, idem(pid, 0, seq)) == (0, seq)
        b.kill()
        b.start()
        with WireClient(b.bootstrap_servers) as c:
            assert produce_raw(c, topic, idem(pid, 0, 10)) == (0, 10)  # the retry: no second copy
            assert produce_raw(c, topic, idem(pid, 0, 6)) == (0, 6)  # still among the last 5
            assert produce_raw(c, topic, idem(pid, 0, 14))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert produce_raw(c, topic, idem(pid, 0, 12)) == (0, 12)
            assert init_pid(c).producer_id >= pid + 1000  # the id block of the killed broker is not reused
        assert values_in_log(b.bootstrap_servers, topic) == [f"v{i}".encode() for i in range(14)]
