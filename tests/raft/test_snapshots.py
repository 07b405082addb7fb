"""Metadata snapshots: the image survives encode/decode; a leader that trimmed its log serves
its snapshot with FetchSnapshot to a node that fell behind; a node restarts from its own."""
from __future__ import annotations

import os
import uuid

import pytest

from kwire.metadata.delta import replay
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot

from .cluster import Cluster, create_topic, describe_quorum, metadata, wait_for


def test_image_round_trips_through_a_snapshot():
    img = MetadataImage()
    tid = uuid.uuid4()
    for m, o in [
        (R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
            broker_id=2, incarnation_id=uuid.uuid4(), broker_epoch=3, rack="r1", fenced=False,
            end_points=[R.REGISTER_BROKER.struct("BrokerEndpoint")(name="PLAINTEXT", host="h", port=9,
                                                                  security_protocol=0)])),
        (R.FENCE_BROKER, R.FENCE_BROKER.cls(id=2, epoch=3)),
        (R.TOPIC, R.TOPIC.cls(name="t", topic_id=tid)),
        (R.PARTITION, R.PARTITION.cls(partition_id=0, topic_id=tid, replicas=[2], isr=[2], leader=2,
                                      leader_epoch=4, partition_epoch=5)),
        (R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_TOPIC, resource_name="t", name="retention.ms", value="9")),
        (R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_BROKER, resource_name="", name="log.retention.ms",
                                value="7")),
        (R.PRODUCER_IDS, R.PRODUCER_IDS.cls(broker_id=2, broker_epoch=3, next_producer_id=2000)),
    ]:
        img = replay(img, [(m, o)])
    back = decode_snapshot(encode_snapshot(img))
    assert back.brokers == img.brokers
    assert back.topics.keys() == img.topics.keys()
    assert back.topics["t"].partitions == img.topics["t"].partitions
    assert back.topics["t"].configs == {"retention.ms": "9"}
    assert back.broker_configs == {"": {"log.retention.ms": "7"}}
    assert back.next_producer_id == 2000


@pytest.mark.slow
def test_lagging_node_installs_the_leaders_snapshot(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=("--override", "metadata.snapshot.interval.entries=4")).start()
    try:
        nodes = cluster.nodes
        dq = wait_for(lambda: (lambda d: d if d.error_code == 0 and d.leader_id > 0 else None)(
            describe_quorum(nodes[1].port)), 10)
        leader = dq.leader_id
        lagging = next(n for n in nodes.values() if n.node_id != leader)
        lagging.kill()
        for i in range(8):      # two snapshot intervals past the lagging node's log end
            assert create_topic(nodes[leader].port, f"snap{i}", 1) == ErrorCode.NONE
        snaps = [f for f in os.listdir(os.path.join(nodes[leader].data_dir, "__cluster_metadata-0"))
                 if f.endswith(".checkpoint")]
        assert snaps
        cluster.restart(lagging.node_id)
        names = {f"snap{i}" for i in range(8)}
        assert wait_for(lambda: names <= set(metadata(lagging.port)[2]), 15), metadata(lagging.port)
        assert "installed the leader's snapshot" in lagging.log_tail(20000)
        # and it restarts from what it stored
        lagging.kill()
        cluster.restart(lagging.node_id)
        assert wait_for(lambda: names <= set(metadata(lagging.port)[2]), 15)
    finally:
        cluster.stop()
