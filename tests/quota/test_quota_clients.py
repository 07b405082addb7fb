"""Client quotas against a running kwire with stock clients.

The admin side uses kafka-python's own client machinery (its AdminClient has no client-quota
method and confluent-kafka 2.16's AdminClient has none either): kafka-python's
AlterClientQuotasRequest / DescribeClientQuotasRequest classes, sent with its version
negotiation (``KafkaAdminClient._manager.send``). The data side is confluent-kafka (librdkafka):
a producer over producer_byte_rate sees throttle_time_ms (throttle_cb) and is held to the
quota; a consumer over consumer_byte_rate too. The brokers run with quota.window.num=2 (one
whole 1 s window plus the current one; Kafka's default is 11) so that a test of a few hundred
KB shows the steady rate within seconds instead of after Kafka's 10 s burst allowance.
"""
from __future__ import annotations

import json
import time

import pytest

from kwire.testing import Broker

pytestmark = pytest.mark.slow

KB = 1024
WINDOW = {"quota.window.num": 2}


@pytest.fixture
def broker(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=WINDOW)
    b.start()
    yield b
    b.stop()


def _admin(b):
    from kafka.admin import KafkaAdminClient  # noqa: PLC0415
    return KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)


def alter(b, entity: dict, ops: dict, validate_only: bool = False):
    """ops: key -> value (None removes the key). Returns [(error code, message)] per entry."""
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest as Req  # noqa: PLC0415
    E = Req.EntryData
    a = _admin(b)
    try:
        r = a._manager.run(a._manager.send, Req(entries=[E(
            entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
            ops=[E.OpData(key=k, value=0.0 if v is None else float(v), remove=v is None) for k, v in ops.items()])],
            validate_only=validate_only))
    finally:
        a.close()
    return [(e.error_code, e.error_message) for e in r.entries]


def describe(b, components=(), strict=False):
    """{((type, name), ...): {key: value}}, or (error code, message)."""
    from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest as Req  # noqa: PLC0415
    a = _admin(b)
    try:
        r = a._manager.run(a._manager.send, Req(components=[
            Req.ComponentData(entity_type=t, match_type=mt, match=m) for t, mt, m in components], strict=strict))
    finally:
        a.close()
    if r.error_code:
        return r.error_code, r.error_message
    return {tuple(sorted((x.entity_type, x.entity_name) for x in e.entity)): {v.key: v.value for v in e.values}
            for e in r.entries}


def produce_timed(b, client_id: str, total: int, size: int = 1000, stats: list | None = None):
    """Produce ``total`` bytes of values with confluent-kafka; (seconds, throttle events ms).
    ``stats``: librdkafka's statistics (JSON) are appended to it."""
    from confluent_kafka import Producer  # noqa: PLC0415
    throttles: list[float] = []
    conf = {"bootstrap.servers": b.bootstrap_servers, "client.id": client_id, "batch.size": 16 * KB,
            "linger.ms": 5, "throttle_cb": lambda ev: throttles.append(ev.throttle_time * 1000)}
    if stats is not None:
        conf.update({"statistics.interval.ms": 200, "stats_cb": stats.append})
    p = Producer(conf)
    payload = b"x" * size
    t0 = time.monotonic()
    for _ in range(total // size):
        while True:
            try:
                p.produce("quota-topic", payload)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(30) == 0
    return time.monotonic() - t0, throttles


def test_alter_describe_validate_only_and_errors(broker):
    assert alter(broker, {"user": "alice"}, {"producer_byte_rate": 1024, "request_percentage": 25.5}) == [(0, None)]
    assert alter(broker, {"user": "alice", "client-id": None}, {"consumer_byte_rate": 2048}) == [(0, None)]
    assert alter(broker, {"client-id": None}, {"producer_byte_rate": 4096}) == [(0, None)]
    assert alter(broker, {"client-id": "dry"}, {"producer_byte_rate": 1}, validate_only=True) == [(0, None)]
    every = describe(broker)
    assert every == {(("user", "alice"),): {"producer_byte_rate": 1024.0, "request_percentage": 25.5},
                     (("client-id", None), ("user", "alice")): {"consumer_byte_rate": 2048.0},
                     (("client-id", None),): {"producer_byte_rate": 4096.0}}
    # exact user, strict: the user-only entity; default client id: one entity
    assert list(describe(broker, [("user", 0, "alice")], strict=True)) == [(("user", "alice"),)]
    assert list(describe(broker, [("client-id", 1, None)], strict=True)) == [(("client-id", None),)]
    assert len(describe(broker, [("user", 0, "alice")])) == 2
    # Kafka's validation errors
    code, msg = alter(broker, {"user": "alice"}, {"producer_byte_rate": 1.5})[0]
    assert code == 42 and "must be a Long value" in msg
    code, msg = alter(broker, {"user": "alice"}, {"no_such_quota": 1})[0]
    assert code == 42 and "Invalid configuration key" in msg
    assert alter(broker, {"group": "g"}, {"producer_byte_rate": 1})[0][0] == 42
    assert describe(broker, [("user", 0, None)])[0] == 42
    # removing
    assert alter(broker, {"user": "alice"}, {"request_percentage": None}) == [(0, None)]
    assert describe(broker, [("user", 0, "alice")], strict=True) == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0}}


def test_producer_is_throttled_to_its_byte_rate(broker):
    rate = 100 * KB
    assert alter(broker, {"client-id": "slow"}, {"producer_byte_rate": rate}) == [(0, None)]
    total = 400 * 1000
    stats: list[str] = []
    seconds, throttles = produce_timed(broker, "slow", total, stats=stats)
    assert throttles and max(throttles) > 0, "librdkafka saw no throttle_time_ms"
    # librdkafka's per-broker 'throttle' window in its statistics saw it too
    seen = [bs["throttle"]["max"] for s in stats for bs in json.loads(s)["brokers"].values() if bs["nodeid"] >= 0]
    assert max(seen) > 0
    # what the quota allows: one window's burst, then the rate (Kafka's tolerance: the quota
    # over the window; allow 25 % for the last throttled request and timer slack)
    allowed = rate * (WINDOW["quota.window.num"] - 1)
    assert (total - allowed) / seconds <= rate * 1.25, f"{total / seconds / KB:.0f} KB/s in {seconds:.2f}s"
    assert seconds < 10


def test_default_client_quota_applies_and_removal_stops_throttling(broker):
    assert alter(broker, {"client-id": None}, {"producer_byte_rate": 100 * KB}) == [(0, None)]
    seconds, throttles = produce_timed(broker, "any-client", 250 * KB)
    assert throttles and seconds >= 1.0
    assert alter(broker, {"client-id": None}, {"producer_byte_rate": None}) == [(0, None)]
    assert describe(broker) == {}
    seconds, throttles = produce_timed(broker, "any-client-2", 250 * KB)
    assert not throttles


def test_consumer_is_throttled_to_its_byte_rate(broker):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition  # noqa: PLC0415
    total = 300 * 1000
    produce_timed(broker, "loader", total)        # no quota for the producer
    rate = 100 * KB
    assert alter(broker, {"client-id": "reader"}, {"consumer_byte_rate": rate}) == [(0, None)]
    throttles: list[float] = []
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "reader", "group.id": "g-quota",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time * 1000)})
    parts = c.list_topics("quota-topic", timeout=10).topics["quota-topic"].partitions
    c.assign([TopicPartition("quota-topic", p, OFFSET_BEGINNING) for p in parts])
    got, t0, first = 0, time.monotonic(), None
    try:
        while got < total and time.monotonic() - t0 < 20:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            if first is None:
                first = time.monotonic()
            got += len(m.value())
    finally:
        c.close()
    seconds = time.monotonic() - first
    assert got == total
    assert throttles, "librdkafka saw no throttle_time_ms"
    allowed = rate * (WINDOW["quota.window.num"] - 1)
    assert (total - allowed) / seconds <= rate * 1.25, f"{total / seconds / KB:.0f} KB/s in {seconds:.2f}s"


def test_kafka_python_consumer_throttled_gets_every_record_once(broker):
    """kafka-python's consumer (fetch sessions) through throttled, empty Fetch answers."""
    from kafka import KafkaConsumer  # noqa: PLC0415
    n = 60
    produce_timed(broker, "loader", n * 1000)
    # 20 KB/s: a slow consumer on a loaded machine still goes over it (60 KB in well under 3 s)
    assert alter(broker, {"client-id": "kp-reader"}, {"consumer_byte_rate": 20 * KB}) == [(0, None)]
    c = KafkaConsumer("quota-topic", bootstrap_servers=broker.bootstrap_servers, client_id="kp-reader",
                      auto_offset_reset="earliest", enable_auto_commit=False)
    t0 = time.monotonic()
    offsets: list = []
    try:
        while len(offsets) < n and time.monotonic() - t0 < 15:
            for recs in c.poll(timeout_ms=200).values():
                offsets += [(m.partition, m.offset) for m in recs]
        time.sleep(0.3)     # nothing more comes
        for recs in c.poll(timeout_ms=200).values():
            offsets += [(m.partition, m.offset) for m in recs]
    finally:
        c.close()
    assert len(offsets) == n and len(set(offsets)) == n
    # the broker did throttle it (empty answers with throttle_time_ms)
    assert broker.server.broker.quotas.fetch.sensors[("", "kp-reader")].throttle_total_ms > 0


def test_quotas_survive_a_restart(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=WINDOW)
    b.start()
    try:
        assert alter(b, {"user": "ANONYMOUS"}, {"producer_byte_rate": 50 * KB}) == [(0, None)]
    finally:
        b.stop()
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=WINDOW)
    b.start()
    try:
        assert describe(b) == {(("user", "ANONYMOUS"),): {"producer_byte_rate": 50 * KB}}
        # a user quota: PLAINTEXT clients are User:ANONYMOUS, whatever their client id
        seconds, throttles = produce_timed(b, "whoever", 150 * KB)
        assert throttles and seconds >= 1.0
    finally:
        b.stop()


def test_authorization_needs_cluster_configs_rights(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": False})
    b.start()
    try:
        # User:ANONYMOUS has no ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster
        assert alter(b, {"user": "x"}, {"producer_byte_rate": 1})[0][0] == 31   # CLUSTER_AUTHORIZATION_FAILED
        assert describe(b)[0] == 31
    finally:
        b.stop()
