"""Fault injection seen by real clients: injected errors and dropped connections, then the
client's retry succeeds and every record is there once."""
import pytest

from kwire.errors import ErrorCode

pytestmark = pytest.mark.slow


def test_confluent_producer_retries_not_leader(kafka_broker, kafka_faults, kafka_topic):
    ck = pytest.importorskip("confluent_kafka")
    kafka_faults.fail_next("Produce", 2, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic=kafka_topic)
    p = ck.Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "retry.backoff.ms": 20,
                     "linger.ms": 0})
    reports = []
    p.produce(kafka_topic, b"survives", on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert p.flush(15) == 0
    assert reports == [(None, 0)]
    assert kafka_faults.injected("Produce") == 2
    assert kafka_faults.seen("Produce") >= 3  # two refused, then the retry
    assert [r.value for r in kafka_broker.consume(kafka_topic, 1)] == [b"survives"]


def test_kafka_python_producer_retries_not_leader(kafka_broker, kafka_faults, kafka_topic):
    kafka = pytest.importorskip("kafka")
    kafka_faults.fail_next("Produce", 2, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic=kafka_topic)
    p = kafka.KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, enable_idempotence=False,
                            retries=5, retry_backoff_ms=20, acks=1)
    try:
        md = p.send(kafka_topic, b"kp").get(timeout=15)
    finally:
        p.close(5)
    assert md.offset == 0
    assert kafka_faults.injected("Produce") == 2
    assert [r.value for r in kafka_broker.consume(kafka_topic, 1)] == [b"kp"]


def test_confluent_consumer_survives_dropped_fetch(kafka_broker, kafka_faults, kafka_topic):
    ck = pytest.importorskip("confluent_kafka")
    kafka_broker.produce(kafka_topic, [b"one", b"two"])
    kafka_faults.drop_connections("Fetch", 2)
    c = ck.Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": kafka_topic,
                     "auto.offset.reset": "earliest", "reconnect.backoff.ms": 10,
                     "log_level": 0})
    try:
        c.assign([ck.TopicPartition(kafka_topic, 0, 0)])
        got = []
        for _ in range(100):
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
            if len(got) == 2:
                break
    finally:
        c.close()
    assert got == [b"one", b"two"]
    assert kafka_faults.injected("Fetch") == 2


def test_drop_after_handling_makes_a_duplicate_without_idempotence(kafka_broker, kafka_faults, kafka_topic):
    """The classic lost-ack: the broker appended, the answer never came, the client resent."""
    ck = pytest.importorskip("confluent_kafka")
    kafka_faults.drop_after_handling("Produce", 1, topic=kafka_topic)
    p = ck.Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "retry.backoff.ms": 20,
                     "enable.idempotence": False, "reconnect.backoff.ms": 10, "log_level": 0})
    p.produce(kafka_topic, b"dup")
    assert p.flush(15) == 0
    assert [r.value for r in kafka_broker.consume(kafka_topic, 2)] == [b"dup", b"dup"]
