"""The stock Java client (kafka-clients 4.3, through the compat suite's driver) against a kwire
emulating Kafka 4.3, the default: it picks the 4.x versions kwire now serves in full (Produce v13
and OffsetCommit/OffsetFetch v10 by topic id, Fetch v18, ListOffsets v11, Metadata v13) and its
records, transaction and KIP-848 group commit come back right. Needs a JDK (javac) and
Apache Kafka's client jars (make kafka), as the compat suite's Java column does."""
from __future__ import annotations

import collections
import logging
import uuid

from compat_tests.clients.base import Rec
import pytest
from kwire.emulation import DEFAULT_KAFKA_VERSION
from kwire.testing import Broker

pytestmark = pytest.mark.slow


class _Versions(logging.Handler):
    """(api, version) of each request the broker answered (kwire.requests debug lines)."""

    def __init__(self):
        super().__init__()
        self.seen = collections.Counter()

    def emit(self, record):
        self.seen[(record.args[0], record.args[1])] += 1


def test_java_client_uses_the_4x_versions():
    from compat_tests.clients.java import JavaClient, stop_driver

    assert DEFAULT_KAFKA_VERSION == "4.3"
    versions = _Versions()
    log = logging.getLogger("kwire.requests")
    level = log.level
    log.addHandler(versions)
    log.setLevel(logging.DEBUG)
    try:
        with Broker(mode="thread", overrides={"group.initial.rebalance.delay.ms": 0}) as b:
            c = JavaClient(b.bootstrap_servers)
            topic, group = f"jv-{uuid.uuid4().hex[:6]}", f"jvg-{uuid.uuid4().hex[:6]}"
            c.create_topic(topic, 2)
            acked = c.produce(topic, [Rec(b"a", partition=0), Rec(b"b", partition=0)])
            assert [a.offset for a in acked] == [0, 1]
            c.produce_transactional(topic, f"jv-{uuid.uuid4().hex[:6]}", [Rec(b"c", partition=0)],
                                    [Rec(b"d", partition=0)])
            assert c.watermarks(topic, 0) == (0, 6)    # 2 + (record, marker) twice
            assert c.offset_for_time(topic, 0, 0) == 0
            got = c.consume(topic, (0,), count=3, read_committed=True)   # Fetch: the aborted d is left out
            assert [r.value for r in got] == [b"a", b"b", b"c"]
            m = c.group_member(group, [topic], **{"group.protocol": "consumer"})
            try:
                for _ in range(60):
                    m.poll(0.5)
                    if m.assignment():
                        break
                m.commit({(topic, 0): 1})
                assert m.committed((topic, 0)) == 1
            finally:
                m.close()
    finally:
        log.removeHandler(versions)
        log.setLevel(level)
        stop_driver()
    used = {api: max(v for (a, v) in versions.seen if a == api) for api, _ in versions.seen}
    assert {k: used.get(k) for k in ("Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit",
                                     "OffsetFetch")} == {
        "Produce": 13, "Fetch": 18, "ListOffsets": 11, "Metadata": 13, "OffsetCommit": 10, "OffsetFetch": 10}
