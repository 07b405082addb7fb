"""The share-group offsets admin APIs (KIP-932) on a three-node cluster, for a partition led
by a broker other than the group's coordinator: AlterShareGroupOffsets reaches its state at
the share coordinator (InitializeShareGroupState at the next state epoch), the partition's
leader picks the new start offset up (the state epoch: a new share session reads the state
again), DescribeShareGroupOffsets (named and all topics) answers it from the share
coordinator (ReadShareGroupStateSummary), and DeleteShareGroupOffsets sends the consumer
back to share.auto.offset.reset, as DeleteGroups of the share group does. confluent-kafka's AdminClient has no share-group offsets
calls, so the admin requests go over kwire's WireClient as the Java Admin sends them; the
consumers are confluent-kafka ShareConsumers. About 15-25 s."""
from __future__ import annotations

import confluent_kafka as ck
import pytest

from kwire.codec.apis import api
from tests.raft.cluster import call, wait_for
from tests.replication.chaos import bootstrap, coordinator, create_topic, leaders, live_port, start_cluster
from tests.share.test_share_wire import _res

if not hasattr(ck, "ShareConsumer"):
    pytest.skip("this confluent-kafka has no ShareConsumer (2.16+)", allow_module_level=True)

pytestmark = pytest.mark.slow
AT = ck.AcknowledgeType
TOPIC, GROUP = "share-admin", "share-admin-g"


def _consume(c, want: int, timeout: float = 20) -> list:
    """(offset, delivery count) of ``want`` records accepted by a new share consumer, closed after."""
    import time  # noqa: PLC0415

    sc = ck.ShareConsumer({"bootstrap.servers": bootstrap(c), "group.id": GROUP,
                           "share.acknowledgement.mode": "explicit"})
    got: list = []
    try:
        sc.subscribe([TOPIC])
        until = time.monotonic() + timeout
        while len(got) < want and time.monotonic() < until:
            batch = [m for m in sc.poll(0.3) if m.error() is None]
            for m in batch:
                got.append((m.partition(), m.offset(), m.delivery_count()))
                sc.acknowledge(m, AT.ACCEPT)
            if batch:
                sc.commit_sync()
    finally:
        sc.close()
    return got


def _describe(port: int, partition: int | None, field: str = "start_offset") -> dict:
    """{(topic, partition): start offset (or ``field``)} from DescribeShareGroupOffsets v1
    (None: all topics)."""
    R = api("DescribeShareGroupOffsets").request
    topics = None if partition is None else [R.struct("DescribeShareGroupOffsetsRequestTopic")(
        topic_name=TOPIC, partitions=[partition])]
    r = call(port, "DescribeShareGroupOffsets", 1, timeout=10.0, groups=[R.struct(
        "DescribeShareGroupOffsetsRequestGroup")(group_id=GROUP, topics=topics)])
    g = r.groups[0]
    assert g.error_code == 0, g
    return {(t.topic_name, p.partition_index): getattr(p, field) for t in g.topics for p in t.partitions
            if p.error_code == 0}


def _alter(port: int, partition: int, start: int):
    R = api("AlterShareGroupOffsets").request
    r = call(port, "AlterShareGroupOffsets", 0, timeout=15.0, group_id=GROUP, topics=[R.struct(
        "AlterShareGroupOffsetsRequestTopic")(topic_name=TOPIC, partitions=[R.struct(
            "AlterShareGroupOffsetsRequestPartition")(partition_index=partition, start_offset=start)])])
    return r


def _delete(port: int):
    R = api("DeleteShareGroupOffsets").request
    return call(port, "DeleteShareGroupOffsets", 0, timeout=15.0, group_id=GROUP, topics=[R.struct(
        "DeleteShareGroupOffsetsRequestTopic")(topic_name=TOPIC)])


def test_alter_and_delete_reach_a_partition_led_elsewhere(tmp_path):
    c = start_cluster(str(tmp_path), "--override", "kwire.emulate.kafka.version=4.3",
                      "--override", "share.coordinator.state.topic.num.partitions=3",
                      "--override", "share.coordinator.state.topic.replication.factor=3")
    try:
        create_topic(c, TOPIC, partitions=3)
        r = call(live_port(c), "IncrementalAlterConfigs", 1, timeout=5.0, validate_only=False,
                 resources=[_res(None, GROUP, "share.auto.offset.reset", "earliest")])
        assert r.responses[0].error_code == 0
        wait_for(lambda: coordinator(live_port(c), GROUP) >= 0, 20, message="the group coordinator")
        gc = coordinator(live_port(c), GROUP)
        part = next(p for p, leader in sorted(leaders(c, TOPIC).items()) if leader not in (gc, -1))
        port = c.nodes[gc].port
        print(f"group coordinator {gc}, partition {part} led by {leaders(c, TOPIC)[part]}")
        p = ck.Producer({"bootstrap.servers": bootstrap(c), "acks": "all", "linger.ms": 20})
        for i in range(10):
            p.produce(TOPIC, f"v{i}".encode(), partition=part)
        assert p.flush(15) == 0

        got = _consume(c, 10)
        assert sorted(o for _, o, _ in got) == list(range(10)), got
        wait_for(lambda: _describe(port, part) == {(TOPIC, part): 10}, 15, message="start offset 10")

        # Alter (the group is empty once the consumer's leave is through)
        r = wait_for(lambda: (r := _alter(port, part, 3)).error_code == 0 and r, 15, message="AlterShareGroupOffsets")
        assert r.responses[0].partitions[0].error_code == 0, r
        assert _describe(port, part) == {(TOPIC, part): 3}
        # the lag of a partition led elsewhere: its leader's high watermark (10) - 3
        assert _describe(port, part, "lag") == {(TOPIC, part): 7}
        # all topics: every partition the group has state for (the consumer fetched from the
        # empty ones too: start 0), the ones led elsewhere from their share coordinators
        every = _describe(port, None)
        assert every[(TOPIC, part)] == 3, every
        assert {k: v for k, v in every.items() if k != (TOPIC, part)}.items() <= {
            (TOPIC, q): 0 for q in range(3) if q != part}.items(), every
        got = _consume(c, 7)
        assert sorted((q, o, n) for q, o, n in got) == [(part, o, 1) for o in range(3, 10)], got
        wait_for(lambda: _describe(port, part) == {(TOPIC, part): 10}, 15, message="start offset 10 again")

        # Delete: back to share.auto.offset.reset (earliest)
        r = wait_for(lambda: (r := _delete(port)).error_code == 0 and r, 15, message="DeleteShareGroupOffsets")
        assert r.responses[0].error_code == 0, r
        assert _describe(port, part) == {(TOPIC, part): -1}
        assert _describe(port, None) == {}
        got = _consume(c, 10)
        assert sorted((q, o, n) for q, o, n in got) == [(part, o, 1) for o in range(10)], got
        wait_for(lambda: _describe(port, part) == {(TOPIC, part): 10}, 15, message="start offset 10 at the end")

        # DeleteGroups of the (empty) share group deletes the state at the share coordinators
        # too: the group created again starts over from share.auto.offset.reset (earliest)
        r = wait_for(lambda: (r := call(port, "DeleteGroups", 2, timeout=15.0, groups_names=[GROUP]))
                     .results[0].error_code == 0 and r, 15, message="DeleteGroups")
        got = _consume(c, 10)
        assert sorted((q, o, n) for q, o, n in got) == [(part, o, 1) for o in range(10)], got
    finally:
        c.stop()
