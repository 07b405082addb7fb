"""__consumer_offsets is created with min(offsets.topic.replication.factor, live brokers)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kwire.config import BrokerConfig
from kwire.groups.edge import offsets_topic_replication_factor
from kwire.groups.records import OFFSETS_TOPIC
from kwire.metadata import topic_changes
from kwire.testing.broker import Broker


def fake_broker(live: int, **overrides):
    cfg = BrokerConfig.from_properties("", {k.replace("_", "."): str(v) for k, v in overrides.items()})
    image = SimpleNamespace(live_brokers=lambda: [object()] * live)
    return SimpleNamespace(config=cfg, image=image)


def test_default_is_three_at_most_the_live_brokers(monkeypatch):
    monkeypatch.delattr(topic_changes, "MAX_KEPT_REPLICAS", raising=False)   # a controller that replicates
    assert offsets_topic_replication_factor(fake_broker(5)) == 3
    assert offsets_topic_replication_factor(fake_broker(2)) == 2
    assert offsets_topic_replication_factor(fake_broker(1)) == 1
    assert offsets_topic_replication_factor(fake_broker(0)) == 1   # none registered yet: this one
    assert offsets_topic_replication_factor(fake_broker(5, offsets_topic_replication_factor=1)) == 1
    assert offsets_topic_replication_factor(fake_broker(5, offsets_topic_replication_factor=4)) == 4


def test_bridge_to_a_controller_that_keeps_one_copy(monkeypatch):
    monkeypatch.setattr(topic_changes, "MAX_KEPT_REPLICAS", 1, raising=False)
    assert offsets_topic_replication_factor(fake_broker(3)) == 1


@pytest.mark.slow
def test_single_broker_creates_it_with_one_replica():
    with Broker(overrides={"offsets.topic.num.partitions": 2}) as b:
        assert OFFSETS_TOPIC not in b.broker.image.topics   # created on a group's first FindCoordinator
        with b.client() as c:
            r = c.request("FindCoordinator", 3, key="g", key_type=0)
        assert (r.error_code, r.node_id) == (0, b.broker.node_id)
        t = b.broker.image.topics[OFFSETS_TOPIC]
        assert [len(p.replicas) for p in t.partitions.values()] == [1, 1]
