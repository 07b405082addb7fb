"""The non-record APIs at the versions Kafka 4 removed, sent with kafka-python's classic protocol
classes: answered as Kafka 3.9 answers them under 3.9 emulation, refused as Kafka 4 refuses them
(the connection is closed) under 4.0."""
from __future__ import annotations

import uuid

import pytest
from kafka.protocol.old import admin as A
from kafka.protocol.old import commit as C
from kafka.protocol.old import list_offsets as L
from kafka.protocol.old import offset_for_leader_epoch as OE

from kwire.errors import ErrorCode as E
from kwire.testing import Broker

from compat_tests.old_wire import OldWire

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker39():
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "3.9",
                                          "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture(scope="module")
def broker40():
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "4.0"}) as b:
        yield b


def _produce(bootstrap: str, topic: str, n: int) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i in range(n):
        p.send(topic, value=b"v%d" % i, partition=0)
    p.flush()
    p.close()


def test_create_and_delete_topics_v0_v1(broker39):
    name = f"old-{uuid.uuid4().hex[:8]}"
    with OldWire(broker39.bootstrap_servers) as w:
        r = w.send(A.CreateTopicsRequest_v1([(name, 2, 1, [], [])], 10000, True))   # validate only
        assert [(t[0], t[1]) for t in r.topics] == [(name, 0)]
        r = w.send(A.CreateTopicsRequest_v0([(name, 2, 1, [], [("retention.ms", "3600000")])], 10000))
        assert [(t[0], t[1]) for t in r.topics] == [(name, 0)]
        r = w.send(A.CreateTopicsRequest_v0([(name, 2, 1, [], [])], 10000))
        assert r.topics[0][1] == E.TOPIC_ALREADY_EXISTS
        assert name in broker39.broker.image.topics
        r = w.send(A.DeleteTopicsRequest_v0([name], 10000))
        assert [(t[0], t[1]) for t in r.responses] == [(name, 0)]


def test_list_offsets_v0(broker39):
    topic = f"lo-{uuid.uuid4().hex[:8]}"
    broker39.create_topic(topic, 1)
    _produce(broker39.bootstrap_servers, topic, 5)
    with OldWire(broker39.bootstrap_servers) as w:
        def ask(ts, n):
            r = w.send(L.ListOffsetsRequest_v0(-1, [(topic, [(0, ts, n)])]))
            (_, parts), = r.topics
            (index, err, offsets), = parts
            return err, list(offsets)
        assert ask(-1, 1) == (0, [5])
        assert ask(-2, 1) == (0, [0])
        assert ask(-1, 10) == (0, [5, 0])        # the log end, then the one segment's base
        assert ask(0, 10) == (0, [])             # nothing modified at or before 1970
        assert ask(2**62, 1) == (0, [5])
        r = w.send(L.ListOffsetsRequest_v0(-1, [(topic, [(7, -1, 1)])]))
        assert r.topics[0][1][0][1] == E.UNKNOWN_TOPIC_OR_PARTITION


def test_offset_commit_v1_and_fetch_v1(broker39):
    topic = f"oc-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    broker39.create_topic(topic, 2)
    with OldWire(broker39.bootstrap_servers) as w:
        from kafka.protocol.old.find_coordinator import FindCoordinatorRequest_v0
        r = w.send(FindCoordinatorRequest_v0(group))
        assert r.error_code in (0, E.COORDINATOR_NOT_AVAILABLE)
        for _ in range(50):
            r = w.send(C.OffsetCommitRequest_v1(group, -1, "", [(topic, [(0, 42, -1, "meta"), (1, 7, 1700000000000, "")])]))
            codes = [p[1] for t in r.topics for p in t[1]]
            if codes != [E.COORDINATOR_NOT_AVAILABLE] * 2 and codes != [E.COORDINATOR_LOAD_IN_PROGRESS] * 2:
                break
        assert codes == [0, 0]
        r = w.send(C.OffsetFetchRequest_v1(group, [(topic, [0, 1, 2])]))
        got = {p[0]: (p[1], p[2], p[3]) for t in r.topics for p in t[1]}
        assert got[0] == (42, "meta", 0) and got[1] == (7, "", 0) and got[2][0] == -1
        # a member of no generation of a group with members is refused as Kafka does
        r = w.send(C.OffsetCommitRequest_v1(group, 3, "nobody", [(topic, [(0, 1, -1, "")])]))
        assert r.topics[0][1][0][1] in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID)


def test_zookeeper_versions_answered_the_kraft_way(broker39):
    """OffsetCommit v0 / OffsetFetch v0 kept offsets in ZooKeeper: a KRaft 3.9 broker answers
    UNSUPPORTED_VERSION for every partition (unknown ones only when nothing else was named)."""
    topic = f"zk-{uuid.uuid4().hex[:8]}"
    broker39.create_topic(topic, 1)
    with OldWire(broker39.bootstrap_servers) as w:
        r = w.send(C.OffsetCommitRequest_v0("g-zk", [(topic, [(0, 1, "")]), ("missing-topic", [(0, 1, "")])]))
        assert [p[1] for t in r.topics for p in t[1]] == [E.UNSUPPORTED_VERSION] * 2
        r = w.send(C.OffsetCommitRequest_v0("g-zk", [("missing-topic", [(0, 1, "")])]))
        assert [p[1] for t in r.topics for p in t[1]] == [E.UNKNOWN_TOPIC_OR_PARTITION]
        r = w.send(C.OffsetFetchRequest_v0("g-zk", [(topic, [0])]))
        assert [(p[1], p[3]) for t in r.topics for p in t[1]] == [(-1, E.UNSUPPORTED_VERSION)]


def test_offset_commit_v0_answered_before_any_coordinator():
    """On a fresh broker (no __consumer_offsets yet, no FindCoordinator sent) OffsetCommit v0
    still gets UNSUPPORTED_VERSION, not COORDINATOR_NOT_AVAILABLE: Kafka's KafkaApis answers v0
    before any coordinator is asked."""
    with Broker(overrides={"kwire.emulate.kafka.version": "3.9"}) as b:
        topic = f"zk0-{uuid.uuid4().hex[:8]}"
        b.create_topic(topic, 1)
        with OldWire(b.bootstrap_servers) as w:
            r = w.send(C.OffsetCommitRequest_v0("g-zk0", [(topic, [(0, 1, "")])]))
            assert [p[1] for t in r.topics for p in t[1]] == [E.UNSUPPORTED_VERSION]


def test_other_removed_versions(broker39):
    topic = f"ep-{uuid.uuid4().hex[:8]}"
    broker39.create_topic(topic, 1)
    with OldWire(broker39.bootstrap_servers) as w:
        r = w.send(OE.OffsetForLeaderEpochRequest_v0([(topic, [(0, 0)])])).to_object()
        assert [(p["error_code"], p["partition"], p["end_offset"]) for t in r["topics"] for p in t["partitions"]] \
            == [(0, 0, 0)]
        r = w.send(OE.OffsetForLeaderEpochRequest_v1([(topic, [(0, 0)])])).to_object()
        assert [(p["error_code"], p["leader_epoch"], p["end_offset"]) for t in r["topics"] for p in t["partitions"]] \
            == [(0, 0, 0)]
        r = w.send(A.DescribeAclsRequest_v0(2, None, None, None, 1, 1))
        assert r.error_code == E.SECURITY_DISABLED


REMOVED_IN_4 = [
    lambda: L.ListOffsetsRequest_v0(-1, [("t", [(0, -1, 1)])]),
    lambda: C.OffsetCommitRequest_v1("g", -1, "", [("t", [(0, 1, -1, "")])]),
    lambda: C.OffsetCommitRequest_v0("g", [("t", [(0, 1, "")])]),
    lambda: C.OffsetFetchRequest_v0("g", [("t", [0])]),
    lambda: A.CreateTopicsRequest_v1([("t", 1, 1, [], [])], 1000, True),
    lambda: A.DeleteTopicsRequest_v0(["nope"], 1000),
    lambda: OE.OffsetForLeaderEpochRequest_v1([("t", [(0, 0)])]),
    lambda: A.DescribeAclsRequest_v0(2, None, None, None, 1, 1),
]


@pytest.mark.parametrize("make", REMOVED_IN_4, ids=[f"{m().__class__.__name__}" for m in REMOVED_IN_4])
def test_refused_the_kafka4_way_under_40(broker40, make):
    with OldWire(broker40.bootstrap_servers) as w:
        assert w.send(make()) is None
    # the broker lives: a fresh connection is served
    with OldWire(broker40.bootstrap_servers) as w:
        assert w.send(A.DescribeAclsRequest_v1(2, None, 3, None, None, 1, 1)).error_code == E.SECURITY_DISABLED


def test_group_membership_at_the_oldest_versions(broker39):
    """kafka-python pinned to Kafka 0.10's protocol subscribes with JoinGroup v0, SyncGroup v0,
    Heartbeat v0 and LeaveGroup v0, finds its offsets with ListOffsets v0 and commits with
    OffsetCommit v2; Metadata v0 and DescribeGroups v0 from the classic classes see the group."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.protocol.old import metadata as M

    topic = f"grp-{uuid.uuid4().hex[:8]}"
    group = f"old-{uuid.uuid4().hex[:6]}"
    broker39.create_topic(topic, 2)
    p = KafkaProducer(bootstrap_servers=broker39.bootstrap_servers, api_version=(0, 10))
    for i in range(6):
        p.send(topic, value=b"%d" % i, partition=i % 2)
    p.flush()
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=broker39.bootstrap_servers, api_version=(0, 10), group_id=group,
                      auto_offset_reset="earliest", consumer_timeout_ms=6000)
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == 6:
            break
    assert sorted(got) == [b"%d" % i for i in range(6)]
    c.commit()
    with OldWire(broker39.bootstrap_servers) as w:
        md = w.send(M.MetadataRequest_v0([topic])).to_object()
        assert [t["name"] for t in md["topics"]] == [topic] and len(md["topics"][0]["partitions"]) == 2
        dg = w.send(A.DescribeGroupsRequest_v0([group])).to_object()
        assert dg["groups"][0]["error_code"] == 0 and dg["groups"][0]["group_state"] == "Stable"
        assert len(dg["groups"][0]["members"]) == 1
    c.close()
    with OldWire(broker39.bootstrap_servers) as w:
        r = w.send(C.OffsetFetchRequest_v1(group, [(topic, [0, 1])]))
        assert sorted(p[1] for t in r.topics for p in t[1]) == [3, 3]


def test_join_group_v0_refused_under_40(broker40):
    from kafka.protocol.old import group as G

    with OldWire(broker40.bootstrap_servers) as w:
        assert w.send(G.JoinGroupRequest_v0("g", 10000, "", "consumer", [("range", b"")])) is None
    with OldWire(broker40.bootstrap_servers) as w:
        assert w.send(G.JoinGroupRequest_v2("g", 10000, 10000, "", "consumer", [("range", b"")])) is not None
