"""Replication throttling (kwire.quota.replication, Kafka's ReplicationQuotaManager, KIP-73): what
kafka-reassign-partitions --throttle sets. The leader side through ReplicaManager.read_for_follower
on the three in-process replica managers of tests/replication/test_followers.py (no sockets, the
clock passed in); the side by side with Apache Kafka (a throttled reassignment stays in progress
until --cancel, --verify removes the throttles) is tests/ecosystem/test_kafka_tools_three.py."""
from __future__ import annotations

import pytest

from kwire.config import BrokerConfig
from kwire.metadata import records as R
from kwire.metadata.delta import replay
from kwire.quota.replication import FOLLOWER, LEADER, ReplicationQuota, throttled_partitions
from tests.replication.test_followers import Nodes, T


def test_throttled_replicas_are_read_for_this_broker():
    assert throttled_partitions("0:1,0:2,1:2, 2:1", 1) == frozenset({0, 2})
    assert throttled_partitions("0:1,0:2,1:2", 3) == frozenset()
    assert throttled_partitions("*", 7) is True
    assert throttled_partitions("", 1) == frozenset()
    assert throttled_partitions(None, 1) == frozenset()


class _Config:
    def __init__(self, **dynamic):
        self.base = BrokerConfig({})
        self.dynamic = {k.replace("_", "."): v for k, v in dynamic.items()}

    def get(self, key):
        return self.dynamic[key] if key in self.dynamic else self.base.get(key)


def test_the_quota_is_exceeded_once_the_rate_over_the_window_passes_the_bound():
    cfg = _Config(leader_replication_throttled_rate=1000)
    topics = {"t": {"leader.replication.throttled.replicas": "0:1"}}
    q = ReplicationQuota(LEADER, 1, cfg, topics.get)
    assert q.is_throttled("t", 0) and not q.is_throttled("t", 1) and not q.is_throttled("u", 0)
    now = 1_000_000
    assert not q.is_exceeded(now)
    # 10 s of window (11 samples of 1 s, the first burst spread over 10): 10,000 B is the bound
    q.record(10_000, now)
    assert not q.is_exceeded(now)
    q.record(1, now)
    assert q.is_exceeded(now) and q.should_throttle("t", 0, False, now)
    assert not q.should_throttle("t", 0, True, now)       # an in-sync replica is never held back
    assert not q.should_throttle("t", 1, False, now)      # nor a partition not listed
    # the samples age out: 11 windows after the last one recorded, the rate is 0 again
    assert not q.is_exceeded(now + 11_000)
    # unset (Long.MAX_VALUE): never exceeded, whatever was recorded
    f = ReplicationQuota(FOLLOWER, 1, _Config(), {"t": {"follower.replication.throttled.replicas": "*"}}.get)
    f.record(10**12, now)
    assert f.is_throttled("t", 5) and not f.is_exceeded(now)


@pytest.fixture
def nodes(tmp_path):
    n = Nodes(tmp_path)
    yield n
    n.close()


def _throttle(nodes, replicas: str) -> None:
    nodes.image = replay(nodes.image, [(R.CONFIG, R.CONFIG.cls(
        resource_type=R.RESOURCE_TOPIC, resource_name=T, name="leader.replication.throttled.replicas", value=replicas))])


def test_the_leader_holds_back_a_replica_being_added_while_the_quota_is_exceeded(nodes):
    cfg = _Config(leader_replication_throttled_rate=2000)
    leader = nodes.rms[1]

    def configs(name):
        t = nodes.image.topics.get(name)
        return t.configs if t is not None else None
    leader.leader_quota = ReplicationQuota(LEADER, 1, cfg, configs)
    nodes.partition([1, 2, 3], isr=[1, 2])            # 3 is being added: outside the ISR
    for i in range(30):
        nodes.produce(1, b"x" * 1000)
    nodes.fetch(2, 1)
    _throttle(nodes, "0:1,0:2")                       # what --throttle sets: the current replicas
    nodes.fetch(3, 1, max_bytes=25_000)               # the quota not exceeded yet: a full answer
    got = nodes.plog(3).log_end_offset
    assert 0 < got < 30
    nodes.fetch(3, 1, max_bytes=25_000)               # over 2,000 B/s now: nothing
    assert nodes.plog(3).log_end_offset == got
    # the in-sync follower is never held back
    nodes.produce(1, b"y")
    nodes.fetch(2, 1)
    assert nodes.plog(2).log_end_offset == 31
    # the window passes: 3 fetches again
    nodes.now += 11_000
    nodes.fetch(3, 1, max_bytes=25_000)
    assert nodes.plog(3).log_end_offset > got
    # the throttle removed (--verify once the move completes, or --cancel): no more holding back
    _throttle(nodes, "")
    while nodes.plog(3).log_end_offset < 31:
        before = nodes.plog(3).log_end_offset
        nodes.fetch(3, 1, max_bytes=25_000)
        assert nodes.plog(3).log_end_offset > before
