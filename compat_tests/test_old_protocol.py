"""Old protocol: clients pinned to the protocol versions Kafka 4.0 removed (KIP-896), per emulated
Kafka release.

A Kafka 3.9 broker serves Produce v0-2 (message formats v0/v1), Fetch v0-3, ListOffsets v0,
OffsetCommit v0-1, JoinGroup v0-1 ...; Kafka 4 refuses them by closing the connection. Against kwire
each scenario runs on a kwire emulating 3.9 and one emulating 4.0 (``kwire.emulate.kafka.version``);
against another target it runs on that broker, expecting what its ApiVersions says (Fetch from v0:
a 3.x broker, from v4: a 4.x one), and the other release's row is skipped.

Clients: kafka-python's own classic protocol classes at the old versions (``classic-classes``),
kafka-python pinned with ``api_version`` (it then sends the versions of that Kafka release without
asking: (0, 9) Produce v1 / Fetch v1 with magic 0, (0, 10) Produce v2 / Fetch v2 with magic 1 and
ListOffsets v0 / JoinGroup v0, (0, 8, 2) OffsetCommit v1 with no group generation, as sarama's
default does), and confluent-kafka with ``api.version.request=false`` and
``broker.version.fallback=0.9.0`` (librdkafka then sends Metadata v0, Produce v1, Fetch v1).
"""
from __future__ import annotations

import time
import uuid

import pytest

from compat_tests.old_wire import OldWire, legacy_set, lend_xxhash, read_legacy
from compat_tests.targets import api_versions

RELEASES = ["3.9", "4.0"]
PINNED = ["kafka-python api_version=0.8.2", "kafka-python api_version=0.9", "kafka-python api_version=0.10",
          "kafka-python api_version=2.0", "confluent-kafka fallback=0.9.0"]


@pytest.fixture(scope="module", params=RELEASES)
def release(request, target):
    """(bootstrap, True when the broker serves the removed versions)."""
    if target.name.startswith("kwire"):
        from kwire.testing import Broker

        b = Broker(mode="thread", overrides={"kwire.emulate.kafka.version": request.param,
                                             "group.initial.rebalance.delay.ms": 0}).start()
        yield b.bootstrap_servers, request.param.startswith("3.")
        b.stop()
        return
    old = api_versions(target.bootstrap).get(1, (4, 0))[0] == 0
    if old != request.param.startswith("3."):
        pytest.skip(f"the target serves {'3.x' if old else '4.x'} protocol versions; this row is for {request.param}")
    yield target.bootstrap, old


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        a.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        a.close()


@pytest.mark.parametrize("client_name", ["classic-classes"])
def test_old_protocol_requests(release, client_name, monkeypatch):
    """Produce v0/v1/v2 (plain and gzip/snappy/lz4 message sets), Fetch v0-v3, OffsetCommit v1 and
    OffsetFetch v1, ListOffsets v0 with kafka-python's classic protocol classes: answered by a 3.x
    broker (offsets assigned in order, the fetch format by version, the commit read back), the
    connection closed by a 4.x broker, which keeps serving everyone else."""
    from kafka.protocol.old import commit as C
    from kafka.protocol.old import fetch as F
    from kafka.protocol.old import list_offsets as L
    from kafka.protocol.old import produce as P

    lend_xxhash(monkeypatch)   # Fetch v0-1 of lz4 data: magic-0 lz4
    bootstrap, old = release
    topic = f"compat-old-{uuid.uuid4().hex[:8]}"
    _create(bootstrap, topic)
    produce = [(P.ProduceRequest_v0, 0, 0), (P.ProduceRequest_v1, 0, 1), (P.ProduceRequest_v2, 1, 2),
               (P.ProduceRequest_v2, 1, 3)]
    with OldWire(bootstrap) as w:
        for i, (cls, magic, codec) in enumerate(produce):
            r = w.send(cls(1, 10000, [(topic, [(0, legacy_set(magic, codec))])]))
            if not old:
                assert r is None, "a 4.x broker closes the connection on Produce v0-2"
                break
            part = r.topics[0][1][0]
            assert (part[1], part[2]) == (0, 3 * i)
    if not old:
        for req in (F.FetchRequest_v2(-1, 100, 1, [(topic, [(0, 0, 1 << 20)])]),
                    L.ListOffsetsRequest_v0(-1, [(topic, [(0, -1, 1)])]),
                    C.OffsetCommitRequest_v1("compat-old", -1, "", [(topic, [(0, 1, -1, "")])])):
            with OldWire(bootstrap) as w:
                assert w.send(req) is None, f"a 4.x broker closes the connection on {type(req).__name__}"
        with OldWire(bootstrap) as w:   # the broker lives
            assert w.send(F.FetchRequest_v4(-1, 100, 1, 1 << 20, 0, [(topic, [(0, 0, 1 << 20)])])) is not None
        return
    with OldWire(bootstrap) as w:
        for fv, cls in enumerate([F.FetchRequest_v0, F.FetchRequest_v1, F.FetchRequest_v2]):
            part = w.send(cls(-1, 100, 1, [(topic, [(0, 0, 1 << 20)])])).topics[0][1][0]
            got = read_legacy(part[3])
            assert [o for o, *_ in got] == list(range(12)) and part[2] == 12
            assert all((t is None) == (fv < 2) for _, t, _, _ in got)
        part = w.send(F.FetchRequest_v3(-1, 100, 1, 1 << 20, [(topic, [(0, 4, 1 << 20)])])).topics[0][1][0]
        assert [o for o, *_ in read_legacy(part[3])] == list(range(4, 12))
        r = w.send(L.ListOffsetsRequest_v0(-1, [(topic, [(0, -1, 1)])]))
        assert list(r.topics[0][1][0][2]) == [12]
        group = f"compat-old-{uuid.uuid4().hex[:6]}"
        from kafka.protocol.old.find_coordinator import FindCoordinatorRequest_v0
        w.send(FindCoordinatorRequest_v0(group))   # as the clients of then did before committing
        for _ in range(100):
            codes = [p[1] for t in w.send(C.OffsetCommitRequest_v1(group, -1, "", [(topic, [(0, 7, -1, "m")])])).topics
                     for p in t[1]]
            if codes != [15] and codes != [14]:   # coordinator not available / loading: retry as clients do
                break
            time.sleep(0.1)
        assert codes == [0]
        r = w.send(C.OffsetFetchRequest_v1(group, [(topic, [0])]))
        assert [(p[1], p[2], p[3]) for t in r.topics for p in t[1]] == [(7, "m", 0)]


def _pinned_producer(name: str, bootstrap: str):
    if name.startswith("confluent"):
        import confluent_kafka as ck

        return ck.Producer({"bootstrap.servers": bootstrap, "api.version.request": False,
                            "broker.version.fallback": "0.9.0", "compression.type": "snappy",
                            "message.timeout.ms": 5000, "log_level": 0})
    from kafka import KafkaProducer

    version = tuple(int(x) for x in name.rsplit("=", 1)[1].split("."))
    return KafkaProducer(bootstrap_servers=bootstrap, api_version=version, compression_type="gzip",
                         request_timeout_ms=3000, max_block_ms=5000, retries=0)


def _produce(name: str, producer, topic: str, n: int) -> list[int]:
    """Offsets acknowledged; raises when the broker refuses."""
    if name.startswith("confluent"):
        got, errs = [], []
        for i in range(n):
            producer.produce(topic, key=b"k", value=b"v%d" % i, partition=0,
                             on_delivery=lambda e, m: errs.append(e) if e else got.append(m.offset()))
        producer.flush(10)
        if errs or len(got) < n:
            raise RuntimeError(f"not delivered: {errs or 'no answer'}")
        return got
    futs = [producer.send(topic, key=b"k", value=b"v%d" % i, partition=0) for i in range(n)]
    producer.flush(timeout=6)
    return [f.get(timeout=6).offset for f in futs]


def _consume_and_commit(name: str, bootstrap: str, topic: str, group: str, n: int) -> list[int]:
    """Read n records from the group's position (the earliest first), commit, return offsets."""
    if name.startswith("confluent"):
        import confluent_kafka as ck

        c = ck.Consumer({"bootstrap.servers": bootstrap, "api.version.request": False,
                         "broker.version.fallback": "0.9.0", "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "log_level": 0})
        c.assign([ck.TopicPartition(topic, 0)])
        got, deadline = [], time.monotonic() + 15
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.offset())
        c.commit(asynchronous=False)
        c.close()
        return got
    from kafka import KafkaConsumer, TopicPartition

    version = tuple(int(x) for x in name.rsplit("=", 1)[1].split("."))
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, api_version=version, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=4000, request_timeout_ms=5000)
    c.assign([tp])
    got = []
    for m in c:
        got.append(m.offset)
        if len(got) == n:
            break
    c.commit()
    c.close()
    return got


@pytest.mark.parametrize("client_name", PINNED)
def test_pinned_client_produces_consumes_commits(release, client_name):
    """A client pinned to an old Kafka release's protocol produces (compressed), consumes from the
    earliest offset and commits, and a second consumer of the group resumes after the commit, on a
    3.x broker; a client pinned to versions Kafka 4 removed is refused on a 4.x broker (nothing is
    written; the broker lives) while one pinned to 2.0 still works there."""
    bootstrap, old = release
    topic = f"compat-pin-{uuid.uuid4().hex[:8]}"
    group = f"compat-pin-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, topic)
    served = old or client_name.endswith("=2.0")
    p = _pinned_producer(client_name, bootstrap)
    try:
        if not served:
            with pytest.raises(Exception):
                _produce(client_name, p, topic, 3)
            from kafka import KafkaConsumer, TopicPartition
            c = KafkaConsumer(bootstrap_servers=bootstrap)   # a current client: nothing was written
            assert c.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)] == 0
            c.close()
            return
        assert _produce(client_name, p, topic, 6) == list(range(6))
    finally:
        (p.close() if hasattr(p, "close") else p.flush(1))
    assert _consume_and_commit(client_name, bootstrap, topic, group, 4) == [0, 1, 2, 3]
    assert _consume_and_commit(client_name, bootstrap, topic, group, 2) == [4, 5]
