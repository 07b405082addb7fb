"""Sarama 1.22 (Go; Debian's golang-github-shopify-sarama-dev), the client of issue 18: its
default ``config.Version`` is the oldest it knows (0.8.2.0), and that version alone decides the
protocol versions it sends (1.22 never asks ApiVersions). From its source (client.go,
produce_set.go, consumer.go, consumer_group.go, offset_manager.go):

==============  ==========================================================================
config.Version  requests
==============  ==========================================================================
0.8.2.x         Metadata v0, Produce v0 (message format v0), Fetch v0, ListOffsets v0
(the default)
0.9.0.x         Fetch v1; the rest as 0.8.2
0.10.0.x        Metadata v1, Produce v2 (format v1), Fetch v2, ListOffsets v0
0.10.1.x        Fetch v3, ListOffsets v1, JoinGroup v1; the rest as 0.10.0
0.10.2.x        as 0.10.1; the oldest Version its ConsumerGroup accepts
0.11.0.x        Produce v3 (record batch v2), Fetch v4
1.0.0 - 2.2.0   Metadata v5; the rest as 0.11
every Version   FindCoordinator v0, OffsetFetch v1, OffsetCommit v1 (v2 only with
                Consumer.Offsets.Retention set), SyncGroup / Heartbeat / LeaveGroup v0
==============  ==========================================================================

So every Sarama 1.22 consumer that commits sends OffsetCommit v1, which Kafka 4 removed (and
every group member JoinGroup v1, which 4.0 removed and 4.1 brought back). The scenario runs the
default, 0.10.2.0 and 2.0.0 and checks, in the 3.9 row, the requests kwire counted against this
table. Under ``kwire.emulate.kafka.version=3.9`` each Version produces, consumes (Fetch v0-3
down-converted from record batch v2), commits and, restarted, resumes from the committed offset;
under 4.0 the removed versions are refused the Kafka 4 way (the connection closed, one log line
naming the API and version): Sarama reports an error (a group used to re-read everything without
a word), and the broker serves everyone else. Under 4.1 (JoinGroup v1 back) a group commits
once Consumer.Offsets.Retention is set, which makes Sarama send OffsetCommit v2.

The driver is compat_tests/go/sarama_driver (our Go program), built by compat_tests.go_driver. A
missing Go toolchain or Sarama package fails these tests with what to install.
"""
from __future__ import annotations

import logging
import uuid

import pytest

from compat_tests import go_driver
from compat_tests.old_release import (RELEASES, create_topic, emulated, end_offset, offsets, produce_current, refused_logged,
                                      requests_since)

# client name -> Sarama config.Version ("" = Sarama's default), compression
SARAMA = {"sarama-1.22 default": ("", "gzip"), "sarama-1.22 Version=0.10.2.0": ("0.10.2.0", "lz4"),
          "sarama-1.22 Version=2.0.0": ("2.0.0", "snappy")}
GROUPS_FROM = (0, 10, 2)   # Sarama 1.22's ConsumerGroup needs Version >= V0_10_2_0

_V = {"": [("Metadata", 0), ("Produce", 0), ("Fetch", 0), ("ListOffsets", 0)],
      "0.10.2.0": [("Metadata", 1), ("Produce", 2), ("Fetch", 3), ("ListOffsets", 1)],
      "2.0.0": [("Metadata", 5), ("Produce", 3), ("Fetch", 4), ("ListOffsets", 1)]}
_COMMIT = [("FindCoordinator", 0), ("OffsetFetch", 1), ("OffsetCommit", 1)]
_GROUP = [("JoinGroup", 1), ("SyncGroup", 0), ("LeaveGroup", 0)]   # + Heartbeat v0 when a session lasts 1 s
EXPECTED_REQUESTS = {v: set(base + _COMMIT + (_GROUP if v else [])) for v, base in _V.items()}


def _groups(version: str) -> bool:
    return bool(version) and tuple(int(x) for x in version.split(".")[:3]) >= GROUPS_FROM


@pytest.fixture(scope="module")
def go_built():
    try:
        return go_driver.build("sarama_driver")
    except go_driver.GoUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module", params=RELEASES)
def release(request, target, go_built):
    """(bootstrap, True when the broker serves the removed versions, the kwire server or None)."""
    yield from emulated(request, target)


def sarama(bootstrap: str, topic: str, version: str, op: str, *args: str, timeout: float = 10.0) -> dict:
    return go_driver.run("sarama_driver", "-op", op, "-brokers", bootstrap, "-topic", topic, "-version", version,
                         *args, timeout=timeout)


@pytest.mark.parametrize("client_name", list(SARAMA))
def test_sarama_produce_consume_commit(release, client_name, caplog):
    """Sarama 1.22 at its default Version and pinned to 0.10.2.0 / 2.0.0 produces (compressed),
    consumes from the oldest offset, commits with OffsetCommit v1 (the OffsetManager, and a
    ConsumerGroup where its Version allows) and, restarted, resumes after the commit, on a 3.x
    broker, sending the protocol versions of the module's table; on a 4.x broker each request
    Kafka 4 removed is refused (Sarama gets an error, the broker logs one line per refused
    connection naming the API and version, nothing is written, and it serves a current client
    afterwards)."""
    caplog.set_level(logging.INFO, logger="kwire")
    bootstrap, old, server = release
    version, codec = SARAMA[client_name]
    topic = f"compat-sarama-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    before = dict(server.metrics.requests) if server is not None else {}
    produced = sarama(bootstrap, topic, version, "produce", "-n", "6", "-compression", codec)
    if old:
        assert offsets(produced) == list(range(6))
        got = sarama(bootstrap, topic, version, "consume", "-n", "6")
        assert offsets(got) == list(range(6)) and got["values"] == [f"v{i}" for i in range(6)]
        for op in ["commit"] + (["group"] if _groups(version) else []):
            group = f"compat-sarama-{op}-{uuid.uuid4().hex[:6]}"
            assert offsets(sarama(bootstrap, topic, version, op, "-group", group, "-n", "4")) == [0, 1, 2, 3]
            again = sarama(bootstrap, topic, version, op, "-group", group, "-n", "2")
            assert offsets(again) == [4, 5], f"{op}: a restarted consumer re-read from {again}"
        if server is not None:   # the versions this Version sends (the module's table), as kwire counts them
            sent = requests_since(server, before)
            sent.discard(("Heartbeat", 0))   # when a session lasts a heartbeat interval
            assert sent == EXPECTED_REQUESTS[version], sorted(sent)
        return
    # what each Version sends first that Kafka 4 removed (the module's table)
    refused = {"": ["Produce v0", "ListOffsets v0", "ListOffsets v0"],
               "0.10.2.0": ["Produce v2", "Fetch v3", "Fetch v3", "JoinGroup v1"],
               "2.0.0": [None, None, "OffsetCommit v1", "JoinGroup v1"]}[version]
    if refused[0]:
        assert "error" in produced, produced
        assert end_offset(bootstrap, topic) == 0, "a refused produce wrote records"
        produce_current(bootstrap, topic, 6)   # the broker lives: a current client writes
    else:
        assert offsets(produced) == list(range(6))
    got = sarama(bootstrap, topic, version, "consume", "-n", "6")
    if refused[1]:
        assert "error" in got, got
    else:   # Metadata v5, Fetch v4, ListOffsets v1: all still in Kafka 4
        assert offsets(got) == list(range(6))
    r = sarama(bootstrap, topic, version, "commit", "-group", f"compat-sarama-{uuid.uuid4().hex[:6]}", "-n", "4")
    assert "error" in r, r
    if _groups(version):
        r = sarama(bootstrap, topic, version, "group", "-group", f"compat-sarama-{uuid.uuid4().hex[:6]}", "-n", "4")
        assert "error" in r, r
    assert end_offset(bootstrap, topic) == 6, "the broker stopped serving"
    if server is not None:
        logged = refused_logged(caplog)
        assert {r for r in refused if r} == logged, (refused, logged)


def test_sarama_group_on_kafka_41_with_retention(target, go_built, caplog):
    """Kafka 4.1 brought JoinGroup v0-1 back but not OffsetCommit v1: a Sarama 1.22 group at
    Version 2.0.0 fails to commit there (the error is reported), and with
    Consumer.Offsets.Retention set (OffsetCommit v2, which Kafka 4 serves) it commits and resumes."""
    if not target.name.startswith("kwire"):
        pytest.skip("needs a kwire emulating 4.1")
    from kwire.testing import Broker

    caplog.set_level(logging.INFO, logger="kwire")
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "4.1",
                                          "group.initial.rebalance.delay.ms": 0}) as b:
        bootstrap = b.bootstrap_servers
        topic = f"compat-sarama-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic)
        produce_current(bootstrap, topic, 6)
        r = sarama(bootstrap, topic, "2.0.0", "group", "-group", f"g-{uuid.uuid4().hex[:6]}", "-n", "4")
        assert "error" in r and "EOF" in r["error"], r   # OffsetCommit v1: the connection closed
        assert refused_logged(caplog) == {"OffsetCommit v1"}
        group = f"g-{uuid.uuid4().hex[:6]}"
        assert offsets(sarama(bootstrap, topic, "2.0.0", "group", "-group", group, "-n", "4",
                              "-retention", "24h")) == [0, 1, 2, 3]
        assert offsets(sarama(bootstrap, topic, "2.0.0", "group", "-group", group, "-n", "2",
                              "-retention", "24h")) == [4, 5]
