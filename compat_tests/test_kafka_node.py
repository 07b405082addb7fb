"""kafka-node 5.0 (npm; an old pure-JavaScript client "for Kafka 0.9-0.11", still deployed), pinned
in tests/js/package.json and installed by ``npm ci`` there (``make test`` does it). It asks
ApiVersions v0 and then sends the versions it knows, which Kafka 4 removed: Produce v2 (gzip
message sets, format v1), Fetch v2, ListOffsets v0, Metadata v1, JoinGroup v0, SyncGroup /
Heartbeat / LeaveGroup v0, FindCoordinator v0, OffsetCommit v2, OffsetFetch v1.

Under ``kwire.emulate.kafka.version=3.9`` its Producer writes and a ConsumerGroup reads from the
earliest offset, commits, and a restarted member resumes after the commit. Under 4.0 Produce v2
and JoinGroup v0 are refused the Kafka 4 way (connection closed, one log line each): kafka-node
reports the error, nothing is written, the broker serves a current client.

The driver is tests/js/kafka_node.js (our script). A missing node or kafka-node fails these
tests with what to run, never a skip.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from compat_tests.old_release import (RELEASES, create_topic, emulated, end_offset, offsets, produce_current, refused_logged,
                                      requests_since)

JS_DIR = Path(__file__).resolve().parent.parent / "tests" / "js"
CLIENT = "kafka-node-5.0"
EXPECTED_REQUESTS = {("ApiVersions", 0), ("Metadata", 1), ("Produce", 2), ("Fetch", 2), ("ListOffsets", 0),
                     ("FindCoordinator", 0), ("JoinGroup", 0), ("SyncGroup", 0), ("LeaveGroup", 0),
                     ("OffsetCommit", 2), ("OffsetFetch", 1)}


@pytest.fixture(scope="module")
def node():
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("the kafka-node tests need node and npm (make deps installs them)", pytrace=False)
    if not (JS_DIR / "node_modules" / "kafka-node").is_dir():
        pytest.fail("kafka-node is not installed: `make test` runs npm ci in tests/js", pytrace=False)
    return exe


@pytest.fixture(scope="module", params=RELEASES)
def release(request, target, node):
    yield from emulated(request, target)


def kafka_node(node: str, *args: str, timeout: float = 10.0) -> dict:
    env = dict(os.environ, KAFKA_NODE_TIMEOUT_MS=str(int(timeout * 1000)))
    p = subprocess.run([node, str(JS_DIR / "kafka_node.js"), *args], capture_output=True, text=True,
                       timeout=timeout + 30, env=env)
    lines = p.stdout.strip().splitlines()
    assert lines, f"kafka_node.js {args}: no answer (exit {p.returncode}): {p.stderr[-2000:]}"
    return json.loads(lines[-1])


@pytest.mark.parametrize("client_name", [CLIENT])
def test_kafka_node_produce_consume_commit(release, node, client_name, caplog):
    """kafka-node produces (gzip), a ConsumerGroup member reads from the earliest offset and
    commits, and a restarted member resumes after the commit, on a 3.x broker; on a 4.x broker
    Produce v2 and JoinGroup v0 are refused (kafka-node gets an error, one log line per refused
    connection, the broker serves a current client)."""
    caplog.set_level(logging.INFO, logger="kwire")
    bootstrap, old, server = release
    topic = f"compat-knode-{uuid.uuid4().hex[:8]}"
    group = f"compat-knode-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic)
    if old:
        before = dict(server.metrics.requests) if server is not None else {}
        assert offsets(kafka_node(node, "produce", bootstrap, topic, "4", "v")) == [0, 1, 2, 3]
        got = kafka_node(node, "group", bootstrap, topic, group, "4")
        assert offsets(got) == [0, 1, 2, 3] and got["values"] == ["v0", "v1", "v2", "v3"]
        assert offsets(kafka_node(node, "produce", bootstrap, topic, "2", "w")) == [4, 5]
        again = kafka_node(node, "group", bootstrap, topic, group, "2")
        assert offsets(again) == [4, 5] and again["values"] == ["w0", "w1"], \
            f"a restarted group member re-read from {again}"
        if server is not None:   # the versions kafka-node sends, as kwire counts them
            sent = requests_since(server, before)
            sent.discard(("Heartbeat", 0))
            assert sent == EXPECTED_REQUESTS, sorted(sent)
        return
    r = kafka_node(node, "produce", bootstrap, topic, "4", "v", timeout=5)
    assert "error" in r, r
    assert end_offset(bootstrap, topic) == 0, "a refused produce wrote records"
    produce_current(bootstrap, topic, 4)   # the broker lives: a current client writes
    r = kafka_node(node, "group", bootstrap, topic, group, "4", timeout=5)
    assert "error" in r, r
    assert end_offset(bootstrap, topic) == 4, "the broker stopped serving"
    if server is not None:
        assert refused_logged(caplog) == {"Produce v2", "JoinGroup v0"}
