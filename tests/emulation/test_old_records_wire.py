"""Produce v0-2 and Fetch v0-3 on the wire, with kafka-python's classic protocol classes and its
legacy record builder and reader: under 3.9 emulation message sets go in and come out (offsets
and timestamps as Kafka assigns them, compression kept), and the same records written by a
current client come out down-converted; under 4.0 the connection is closed."""
from __future__ import annotations

import uuid

import pytest
from kafka.protocol.old import fetch as F
from kafka.protocol.old import produce as P

from kwire.errors import ErrorCode as E
from kwire.testing import Broker

from compat_tests.old_wire import OldWire
from compat_tests.old_wire import legacy_set, read_legacy

from .test_message_sets import xxhash_for_kafka_python  # noqa: F401 - autouse

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker39():
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "3.9"}) as b:
        yield b


@pytest.fixture(scope="module")
def broker40():
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "4.0"}) as b:
        yield b


def _produce(w, version, topic, records, acks=1):
    cls = [P.ProduceRequest_v0, P.ProduceRequest_v1, P.ProduceRequest_v2][version]
    r = w.send(cls(acks, 10000, [(topic, [(0, records)])]))
    if r is None:
        return None
    (_, parts), = r.topics
    return parts[0]   # (index, error_code, base_offset[, log_append_time])


def _fetch(w, version, topic, offset, pmax=1 << 20, max_bytes=1 << 20):
    if version == 3:
        req = F.FetchRequest_v3(-1, 100, 1, max_bytes, [(topic, [(0, offset, pmax)])])
    else:
        req = [F.FetchRequest_v0, F.FetchRequest_v1, F.FetchRequest_v2][version](-1, 100, 1, [(topic, [(0, offset, pmax)])])
    r = w.send(req)
    if r is None:
        return None
    (_, parts), = r.topics
    return parts[0]   # (partition, error_code, high_watermark, records)


@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_produce_v0_v1_v2_then_fetch_v0_to_v3(broker39, codec):
    topic = f"ms-{codec}-{uuid.uuid4().hex[:6]}"
    broker39.create_topic(topic, 1)
    with OldWire(broker39.bootstrap_servers) as w:
        assert _produce(w, 0, topic, legacy_set(0, codec))[1:3] == (0, 0)
        assert _produce(w, 1, topic, legacy_set(0, codec))[1:3] == (0, 3)
        part = _produce(w, 2, topic, legacy_set(1, codec, base_ts=1_600_000_000_000))
        assert part[1:] == (0, 6, -1)   # v2: log_append_time -1 under CreateTime
        for fv in range(4):
            p = _fetch(w, fv, topic, 1)
            assert p[1] == 0 and p[2] == 9
            got = read_legacy(p[3])
            assert [o for o, *_ in got] == list(range(1, 9))
            assert [v for *_, v in got] == [b"value-%d" % i * (i + 1) for i in (1, 2, 0, 1, 2, 0, 1, 2)]
            ts = [t for _, t, _, _ in got]
            if fv >= 2:   # magic 1: the v1 producer's timestamps; v0 messages had none (-1)
                assert ts[-3:] == [1_600_000_000_000 + i for i in range(3)] and ts[:5] == [-1] * 5
            else:
                assert ts == [None] * 8
    # a current client reads the same records, in v2 batches with the codec kept
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=broker39.bootstrap_servers, auto_offset_reset="earliest",
                      consumer_timeout_ms=3000)
    c.assign([TopicPartition(topic, 0)])
    offsets = []
    for m in c:
        offsets.append(m.offset)
        if len(offsets) == 9:
            break
    assert offsets == list(range(9))
    c.close()


def test_current_records_down_converted_for_old_fetchers(broker39):
    from kafka import KafkaProducer

    topic = f"dc-{uuid.uuid4().hex[:6]}"
    broker39.create_topic(topic, 1)
    p = KafkaProducer(bootstrap_servers=broker39.bootstrap_servers, compression_type="gzip", linger_ms=50)
    for i in range(20):
        p.send(topic, key=b"k%d" % i, value=b"x" * 100, headers=[("h", b"dropped")], partition=0,
               timestamp_ms=1_650_000_000_000 + i)
    p.flush()
    p.close()
    with OldWire(broker39.bootstrap_servers) as w:
        for fv in (0, 2, 3):
            got = read_legacy(_fetch(w, fv, topic, 5)[3])
            assert [o for o, *_ in got] == list(range(5, 20))
            assert [k for _, _, k, _ in got] == [b"k%d" % i for i in range(5, 20)]
            assert [t for _, t, _, _ in got] == ([1_650_000_000_000 + i for i in range(5, 20)] if fv >= 2
                                                 else [None] * 15)


def test_size_limits(broker39):
    """v0-2: partition_max_bytes is a hard limit (a larger first message is sent cut); v3: the
    first message whole, then max_bytes (KIP-74); always whole messages otherwise."""
    topic = f"sz-{uuid.uuid4().hex[:6]}"
    broker39.create_topic(topic, 1)
    with OldWire(broker39.bootstrap_servers) as w:
        for i in range(4):
            big = bytes(legacy_set(1, 0, n=1))   # ~40 bytes of value: one small message
            assert _produce(w, 2, topic, big)[1] == 0
        whole = _fetch(w, 2, topic, 0)[3]
        one = len(whole) // 4
        stored = _stored_batch_size(broker39, topic)   # limits count the stored (v2) bytes, as Kafka's
        p = _fetch(w, 2, topic, 0, pmax=stored * 2 + 5)
        assert len(p[3]) == one * 2 and len(read_legacy(p[3])) == 2
        p = _fetch(w, 1, topic, 0, pmax=10)        # hard limit: a partial first message
        assert len(p[3]) == 10 and read_legacy(p[3]) == []
        p = _fetch(w, 3, topic, 0, pmax=10)        # v3: the first message whole
        assert len(read_legacy(p[3])) == 1
        p = _fetch(w, 3, topic, 0, pmax=1 << 20, max_bytes=stored * 3)
        assert len(read_legacy(p[3])) == 3


def _stored_batch_size(broker, topic) -> int:
    from kwire.codec.apis import api
    F4 = api("Fetch").request
    with broker.client() as c:
        r = c.request("Fetch", 4, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                      topics=[F4.struct("FetchTopic")(topic=topic, partitions=[
                          F4.struct("FetchPartition")(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    return len(bytes(r.responses[0].partitions[0].records)) // 4


def test_bad_message_sets(broker39):
    topic = f"bad-{uuid.uuid4().hex[:6]}"
    broker39.create_topic(topic, 1)
    from kwire.codec.records import build_batch
    with OldWire(broker39.bootstrap_servers) as w:
        corrupt = bytearray(legacy_set(1, 1))
        corrupt[-1] ^= 0xFF
        assert _produce(w, 2, topic, bytes(corrupt))[1] == E.CORRUPT_MESSAGE
        assert _produce(w, 2, topic, build_batch([(b"k", b"v")]))[1] == E.INVALID_RECORD
        assert _produce(w, 2, "no-such-topic-here", legacy_set(1, 0))[1] == E.UNKNOWN_TOPIC_OR_PARTITION
        assert _fetch(w, 2, topic, 0)[2] == 0     # nothing was written


@pytest.mark.parametrize("what", ["produce-v2", "produce-v0", "fetch-v3", "fetch-v0"])
def test_refused_under_40(broker40, what):
    topic = f"r-{uuid.uuid4().hex[:6]}"
    broker40.create_topic(topic, 1)
    with OldWire(broker40.bootstrap_servers) as w:
        kind, v = what.split("-v")
        if kind == "produce":
            assert _produce(w, int(v), topic, legacy_set(1, 0)) is None
        else:
            assert _fetch(w, int(v), topic, 0) is None
