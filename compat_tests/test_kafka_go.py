"""segmentio/kafka-go 0.2 (Go; Debian's golang-github-segmentio-kafka-go-dev), the "kafka-go
before 0.4" of issue 18: it sends fixed protocol versions and never asks ApiVersions (Metadata
v1, Produce v2 with message format v1, Fetch v2, ListOffsets v1, FindCoordinator v0, JoinGroup v1,
SyncGroup/Heartbeat/LeaveGroup v0, OffsetCommit v2, OffsetFetch v1; kwire counts them in
test_kafka_go_request_versions).

Under ``kwire.emulate.kafka.version=3.9`` its Writer produces (compressed), its Reader consumes
(Fetch v2 down-converted from record batch v2) and a Reader in a consumer group commits and,
restarted, resumes from the committed offset. Under 4.0 Produce v2, Fetch v2 and JoinGroup v1 are
refused the Kafka 4 way (connection closed, one log line naming the API and version): the Writer
reports the error; the Reader retries in silence, as kafka-go 0.2 does, and reads nothing.

The driver is compat_tests/go/kafkago_driver (our Go program), built by compat_tests.go_driver.
"""
from __future__ import annotations

import logging
import uuid

import pytest

from compat_tests import go_driver
from compat_tests.old_release import (RELEASES, create_topic, emulated, end_offset, offsets, produce_current, refused_logged,
                                      requests_since)

CLIENT = "kafka-go-0.2"
EXPECTED_REQUESTS = {("Metadata", 1), ("Produce", 2), ("Fetch", 2), ("ListOffsets", 1), ("FindCoordinator", 0),
                     ("JoinGroup", 1), ("SyncGroup", 0), ("OffsetCommit", 2), ("OffsetFetch", 1)}


@pytest.fixture(scope="module")
def go_built():
    try:
        return go_driver.build("kafkago_driver")
    except go_driver.GoUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module", params=RELEASES)
def release(request, target, go_built):
    """(bootstrap, True when the broker serves the removed versions, the kwire server or None)."""
    yield from emulated(request, target)


def kafka_go(bootstrap: str, topic: str, op: str, *args: str, timeout: float = 10.0) -> dict:
    return go_driver.run("kafkago_driver", "-op", op, "-brokers", bootstrap, "-topic", topic, *args, timeout=timeout)


@pytest.mark.parametrize("client_name", [CLIENT])
def test_kafka_go_produce_consume_commit(release, client_name, caplog):
    """kafka-go 0.2 produces (gzip), consumes from the first offset, and a consumer group member
    commits (OffsetCommit v2) and, restarted, resumes after its commit, on a 3.x broker; on a 4.x
    broker Produce v2, Fetch v2 and JoinGroup v1 are refused (the Writer gets an error, the Reader
    reads nothing, one log line per refused connection, the broker serves a current client)."""
    caplog.set_level(logging.INFO, logger="kwire")
    bootstrap, old, server = release
    topic = f"compat-kafkago-{uuid.uuid4().hex[:8]}"
    group = f"compat-kafkago-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic)
    if old:
        before = dict(server.metrics.requests) if server is not None else {}
        assert "error" not in kafka_go(bootstrap, topic, "produce", "-n", "6", "-compression", "gzip")
        got = kafka_go(bootstrap, topic, "consume", "-n", "6")
        assert offsets(got) == list(range(6)) and got["values"] == [f"v{i}" for i in range(6)]
        assert offsets(kafka_go(bootstrap, topic, "group", "-group", group, "-n", "4")) == [0, 1, 2, 3]
        again = kafka_go(bootstrap, topic, "group", "-group", group, "-n", "2")
        assert offsets(again) == [4, 5], f"a restarted group member re-read from {again}"
        if server is not None:   # the versions kafka-go 0.2 sends, as kwire counts them
            sent = requests_since(server, before)
            sent -= {("Heartbeat", 0), ("LeaveGroup", 0)}   # when a session lasts a heartbeat / leaves
            assert sent == EXPECTED_REQUESTS, sorted(sent)
        return
    r = kafka_go(bootstrap, topic, "produce", "-n", "6", "-compression", "gzip", timeout=5)
    assert "error" in r, r
    assert end_offset(bootstrap, topic) == 0, "a refused produce wrote records"
    produce_current(bootstrap, topic, 6)   # the broker lives: a current client writes
    assert "error" in kafka_go(bootstrap, topic, "consume", "-n", "6", timeout=2)
    assert "error" in kafka_go(bootstrap, topic, "group", "-group", group, "-n", "4", timeout=2)
    assert end_offset(bootstrap, topic) == 6, "the broker stopped serving"
    if server is not None:
        logged = refused_logged(caplog)
        assert logged == {"Produce v2", "Fetch v2", "JoinGroup v1"}, logged
