"""Produce and consume with stock clients given ready settings (shared by the TLS and SASL tests)."""
from __future__ import annotations

import time


def confluent_roundtrip(conf: dict, topic: str, n: int = 20, *, size: int = 100) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    p = Producer({**conf, "linger.ms": 5, "acks": "all", "message.timeout.ms": 15000})
    for i in range(n):
        p.produce(topic, f"{i:04d}".encode() + b"x" * size)
    assert p.flush(20) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


def kafka_python_roundtrip(conf: dict, topic: str, n: int = 20, *, size: int = 100) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    p = KafkaProducer(**conf, acks="all")
    try:
        for i in range(n):
            p.send(topic, f"{i:04d}".encode() + b"y" * size)
        p.flush(20)
    finally:
        p.close(5)
    c = KafkaConsumer(topic, **conf, group_id=f"kp-{topic}", auto_offset_reset="earliest",
                      consumer_timeout_ms=15000)
    got: list[bytes] = []
    try:
        for m in c:
            got.append(m.value)
            if len(got) >= n:
                break
    finally:
        c.close()
    return got


def login_error(conf: dict, timeout: float = 15.0) -> str | None:
    """None when a confluent-kafka client with ``conf`` authenticates (it gets metadata); else
    the error librdkafka reports (a SASL_AUTHENTICATION_FAILED becomes its _AUTHENTICATION
    error, carrying the broker's message)."""
    from confluent_kafka import Producer

    errors: list = []
    p = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if p.list_topics(timeout=0.5).brokers:
                return None
        except Exception:  # noqa: BLE001 - not yet, or refused: error_cb says which
            pass
        p.poll(0.1)
        if errors:
            return str(errors[0])
    return "neither authenticated nor refused"
