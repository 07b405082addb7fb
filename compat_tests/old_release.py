"""Shared by the old-client scenarios (test_sarama, test_kafka_go, test_kafka_node): a broker per
emulated Kafka release, and small set-up helpers that use a current client (kafka-python).

On kwire each release is a kwire started with ``kwire.emulate.kafka.version`` set (and its request
metrics on, so a test can read which API versions a client sent); on another target the scenario
runs on that broker for the release its ApiVersions shows (Fetch from v0: 3.x, from v4: 4.x) and
the other release's row is skipped.
"""
from __future__ import annotations

import pytest

from compat_tests.targets import api_versions

RELEASES = ["3.9", "4.0"]


def emulated(request, target):
    """Generator for a module fixture parametrized by RELEASES: yields (bootstrap, True when the
    broker serves the versions Kafka 4 removed, the kwire server or None)."""
    if target.name.startswith("kwire"):
        from kwire.testing import Broker, free_port

        b = Broker(mode="thread", overrides={"kwire.emulate.kafka.version": request.param,
                                             "group.initial.rebalance.delay.ms": 0,
                                             "metrics.listen": f"127.0.0.1:{free_port()}"}).start()
        from kwire.server import LogThrottle

        # the scenarios check that each refused request is logged; one broker serves them all,
        # from one host, within the server's 10 s log throttle: log every refusal here
        b.server.close_log = LogThrottle(interval=0.0)
        try:
            yield b.bootstrap_servers, request.param.startswith("3."), b.server
        finally:
            b.stop()
        return
    old = api_versions(target.bootstrap).get(1, (4, 0))[0] == 0
    if old != request.param.startswith("3."):
        pytest.skip(f"the target serves {'3.x' if old else '4.x'} protocol versions; this row is for {request.param}")
    yield target.bootstrap, old, None


def create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        a.create_topics([NewTopic(topic, 1, 1)])
    finally:
        a.close()


def requests_since(server, before: dict) -> set[tuple[str, int]]:
    """(api, version) of the requests the broker counted since ``before`` (a copy of its
    ``metrics.requests``), less the set-up's own CreateTopics (kafka-python's admin client, v5+,
    which no old client sends): a request is counted once its answer is written, so the
    set-up's can land just after ``before`` was taken."""
    sent = {k for k, n in server.metrics.requests.items() if n > before.get(k, 0)}
    return {k for k in sent if not (k[0] == "CreateTopics" and k[1] >= 5)}


def end_offset(bootstrap: str, topic: str) -> int:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return c.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
    finally:
        c.close()


def produce_current(bootstrap: str, topic: str, n: int) -> None:
    """n records v0..v{n-1} to partition 0 with a current client (the broker lives)."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for i in range(n):
            p.send(topic, value=b"v%d" % i, key=b"k", partition=0)
        p.flush(10)
    finally:
        p.close()


def offsets(r: dict) -> list[int]:
    assert "error" not in r, r
    return r["offsets"]


def refused_logged(caplog) -> set[str]:
    """The "API vN" of each connection kwire closed for a version it does not serve, as logged."""
    return {m.split(": no handler for ", 1)[1] for m in caplog.messages if ": no handler for " in m}
