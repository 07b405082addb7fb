"""Every stock client over every secured listener kind: confluent-kafka, kafka-python, aiokafka
and kcat each produce three records and read them back (assigned, from the beginning) over SSL,
SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512. KafkaJS has no
assign-only consumer (its consumer joins a group, seconds each), so it runs here over SSL and
SASL_PLAINTEXT; tests/security/test_kafkajs_sasl.py runs it over SASL_SSL with each mechanism.
A missing kcat, node or kafkajs fails its rows."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time

import pytest

from kwire.testing.broker import Broker

pytestmark = pytest.mark.slow

USERS = {"ann": "ann-secret", "ben": "ben=,secret"}
COMBOS = [("SSL", None)] + [(sec, m) for sec in ("SASL_PLAINTEXT", "SASL_SSL")
                            for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]
IDS = [f"{sec}-{m}" if m else sec for sec, m in COMBOS]
VALUES = [b"one", b"two", b"three"]
JS_DIR = os.path.join(os.path.dirname(__file__), "..", "js")


@pytest.fixture(scope="module")
def brokers():
    made: dict[str, Broker] = {}

    def get(sec: str) -> Broker:
        if sec not in made:
            made[sec] = Broker(security=sec, users=USERS if sec.startswith("SASL") else None,
                                   overrides={"group.initial.rebalance.delay.ms": 0}).start()
        return made[sec]

    yield get
    for b in made.values():
        b.stop()


def _topic(b: Broker, client: str, sec: str, mech: str | None) -> str:
    name = f"m-{client}-{sec}-{mech or 'tls'}".lower()
    b.create_topic(name, 1)
    return name


def _confluent(b, sec, mech, topic):
    from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: PLC0415

    conf = b.client_config("confluent", "ben", mech or "PLAIN")
    p = Producer({**conf, "acks": "all", "linger.ms": 0, "message.timeout.ms": 10000})
    for v in VALUES:
        p.produce(topic, v)
    assert p.flush(15) == 0
    c = Consumer({**conf, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 15
    try:
        while len(got) < len(VALUES) and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


def _kafka_python(b, sec, mech, topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: PLC0415

    conf = b.client_config("kafka-python", "ben", mech or "PLAIN")
    p = KafkaProducer(**conf, acks="all")
    try:
        for v in VALUES:
            p.send(topic, v).get(15)
    finally:
        p.close(5)
    c = KafkaConsumer(**conf, enable_auto_commit=False, consumer_timeout_ms=10000)
    try:
        c.assign([TopicPartition(topic, 0)])
        c.seek_to_beginning()
        got = []
        for m in c:
            got.append(m.value)
            if len(got) == len(VALUES):
                break
        return got
    finally:
        c.close()


def _aiokafka(b, sec, mech, topic):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: PLC0415

    conf = b.client_config("aiokafka", "ben", mech or "PLAIN")

    async def main():
        p = AIOKafkaProducer(**conf, acks="all")
        await p.start()
        try:
            for v in VALUES:
                await p.send_and_wait(topic, v)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(**conf, enable_auto_commit=False)
        await c.start()
        try:
            c.assign([TopicPartition(topic, 0)])
            await c.seek_to_beginning()
            got = []
            while len(got) < len(VALUES):
                got.append((await asyncio.wait_for(c.getone(), 10)).value)
            return got
        finally:
            await c.stop()

    return asyncio.run(main())


def _kcat(b, sec, mech, topic):
    kcat = shutil.which("kcat")
    assert kcat, "kcat is not installed (make deps installs it)"
    conf = b.client_config("confluent", "ben", mech or "PLAIN")
    args = ["-b", conf.pop("bootstrap.servers")]
    for k, v in conf.items():
        args += ["-X", f"{k}={v}"]
    p = subprocess.run([kcat, *args, "-P", "-t", topic], input=b"".join(v + b"\n" for v in VALUES),
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    c = subprocess.run([kcat, *args, "-C", "-t", topic, "-o", "beginning", "-e", "-c", str(len(VALUES))],
                       capture_output=True, timeout=30)
    assert c.returncode == 0, c.stderr.decode()[-2000:]
    return c.stdout.split()


def _kafkajs(b, sec, mech, topic):
    node = shutil.which("node")
    assert node, "node is not installed (make deps installs it)"
    assert os.path.isdir(os.path.join(JS_DIR, "node_modules", "kafkajs")), \
        "kafkajs is not installed: `make test` runs npm ci in tests/js"
    ca = [b.tls.ca_file] if b.tls is not None else []
    out = subprocess.run([node, os.path.join(JS_DIR, "sasl.js"), f"localhost:{b.port}", topic, str(len(VALUES)),
                          mech or "none", "ben", USERS["ben"], *ca], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert "error" not in res, res
    return [v.encode() for v in sorted(res["got"], key=lambda v: int(v.rsplit("-", 1)[1]))]


CLIENTS = {"confluent": _confluent, "kafka-python": _kafka_python, "aiokafka": _aiokafka, "kcat": _kcat}


@pytest.mark.parametrize(("sec", "mech"), COMBOS, ids=IDS)
@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_over_listener(brokers, client, sec, mech):
    b = brokers(sec)
    topic = _topic(b, client, sec, mech)
    assert CLIENTS[client](b, sec, mech, topic) == VALUES
    assert [r.value for r in b.consume(topic, len(VALUES))] == VALUES   # what the broker stored


@pytest.mark.parametrize(("sec", "mech"), [c for c in COMBOS if c[0] != "SASL_SSL"],
                         ids=[i for i in IDS if not i.startswith("SASL_SSL")])
def test_kafkajs_over_listener(brokers, sec, mech):
    b = brokers(sec)
    topic = _topic(b, "js", sec, mech)
    want = [f"{mech or 'none'}-{i}".encode() for i in range(len(VALUES))]
    assert _kafkajs(b, sec, mech, topic) == want
