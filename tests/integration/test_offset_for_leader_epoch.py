"""OffsetForLeaderEpoch over the wire: kwire's own client and kafka-python's protocol classes
(an independent encoder) against a running broker; leader epochs bumped through the metadata
quorum (a PartitionChangeRecord, as a leader election writes); stock consumers
(confluent-kafka, kafka-python) validate their positions with it and keep consuming."""
import os
import time
import uuid

import pytest
import trio
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

from kwire.testing.client import WireClient
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.testing import Broker
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

VERSIONS = [2, 3, 4]


@pytest.fixture(scope="module")
def broker():
    with Broker(mode="thread", overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture
def topic(broker):
    name = f"ep-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 2)
    return name


def change_partition(broker, topic: str, partition: int, leader: int) -> None:
    """Commit a PartitionChangeRecord (a new leader, so a new leader epoch) and wait until it
    applied on the broker."""
    b = broker.broker
    t = b.image.topics[topic]
    before = t.partitions[partition].leader_epoch
    rec = (R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(topic_id=t.topic_id, partition_id=partition, leader=leader))
    trio.from_thread.run(b.submit_metadata, [rec], trio_token=broker._trio_token)
    wait_until(lambda: b.replica_manager.leader_epoch(topic, partition) == before + 1, timeout=10)


def ask(broker, version, topic, partitions, replica_id=-1):
    """partitions: [(partition, current_leader_epoch, leader_epoch)] -> {partition: (error, epoch, end)}"""
    from kwire.codec.apis import api

    req = api("OffsetForLeaderEpoch").request
    T, P = req.struct("OffsetForLeaderTopic"), req.struct("OffsetForLeaderPartition")
    with broker.client() as c:
        r = c.request("OffsetForLeaderEpoch", version, replica_id=replica_id, topics=[T(topic=topic, partitions=[
            P(partition=p, current_leader_epoch=cur, leader_epoch=e) for p, cur, e in partitions])])
    assert [t.topic for t in r.topics] == [topic]
    return {p.partition: (p.error_code, p.leader_epoch, p.end_offset) for p in r.topics[0].partitions}


@pytest.mark.parametrize("version", VERSIONS)
def test_end_offsets_of_the_current_epoch(broker, topic, version):
    broker.produce(topic, [b"a", b"b", b"c"], partition=0)
    got = ask(broker, version, topic, [(0, -1, 0), (1, -1, 0)])
    # partition 1: nothing written, but its leader recorded that epoch 0 starts at 0 when it
    # became leader (Kafka's makeLeader), so epoch 0 ends at its log end offset, 0
    assert got == {0: (0, 0, 3), 1: (0, 0, 0)}
    assert ask(broker, version, topic, [(0, 0, 0)]) == {0: (0, 0, 3)}
    assert ask(broker, version, topic, [(0, -1, 3)]) == {0: (0, -1, -1)}   # above every epoch
    assert ask(broker, version, topic, [(0, -1, -1)]) == {0: (0, -1, -1)}  # undefined epoch


@pytest.mark.parametrize("version", VERSIONS)
def test_current_leader_epoch_is_checked(broker, topic, version):
    broker.produce(topic, [b"a"], partition=0)
    assert ask(broker, version, topic, [(0, 1, 0)])[0][0] == ErrorCode.UNKNOWN_LEADER_EPOCH
    change_partition(broker, topic, 0, broker.broker.node_id)   # epoch 0 -> 1
    assert ask(broker, version, topic, [(0, 0, 0)])[0][0] == ErrorCode.FENCED_LEADER_EPOCH
    assert ask(broker, version, topic, [(0, 1, 0)]) == {0: (0, 0, 1)}


def test_unknown_topics_and_partitions(broker, topic):
    assert ask(broker, 4, topic, [(9, -1, 0)]) == {9: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)}
    assert ask(broker, 4, "no-such-topic", [(0, -1, 0)]) == {0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)}


def test_a_partition_led_elsewhere_is_not_answered(broker, topic):
    broker.produce(topic, [b"a"], partition=1)
    change_partition(broker, topic, 1, 4242)   # a leader that is not this node
    assert ask(broker, 4, topic, [(1, -1, 0)])[1][0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert ask(broker, 3, topic, [(1, -1, 0)], replica_id=4242)[1][0] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_epochs_after_leader_changes(broker, topic):
    """Records in epochs 0, 1 and 3 (2 had no writes): each epoch ends where the next begins,
    an epoch with no records answers the one below it."""
    me = broker.broker.node_id
    broker.produce(topic, [b"0a", b"0b"], partition=0)             # offsets 0-1 in epoch 0
    change_partition(broker, topic, 0, me)
    broker.produce(topic, [b"1a", b"1b", b"1c"], partition=0)      # 2-4 in epoch 1
    change_partition(broker, topic, 0, me)
    change_partition(broker, topic, 0, me)
    broker.produce(topic, [b"3a"], partition=0)                    # 5 in epoch 3
    plog = broker.broker.replica_manager.local_log(topic, 0)
    assert plog.leader_epoch_cache.entries() == [(0, 0), (1, 2), (3, 5)]
    got = ask(broker, 4, topic, [(0, 3, 0)])
    assert got == {0: (0, 0, 2)}
    assert ask(broker, 4, topic, [(0, 3, 1)]) == {0: (0, 1, 5)}
    assert ask(broker, 4, topic, [(0, 3, 2)]) == {0: (0, 1, 5)}
    assert ask(broker, 4, topic, [(0, 3, 3)]) == {0: (0, 3, 6)}
    # the stored batches carry their epochs
    records = broker.consume(topic, 6, partition=0)
    assert [r.value for r in records] == [b"0a", b"0b", b"1a", b"1b", b"1c", b"3a"]


@pytest.mark.parametrize("version", VERSIONS)
def test_kafka_python_protocol_classes(broker, topic, version):
    """kafka-python's own encoder and decoder of OffsetForLeaderEpoch (v2-4) against kwire."""
    me = broker.broker.node_id
    broker.produce(topic, [b"x", b"y"], partition=0)
    change_partition(broker, topic, 0, me)
    broker.produce(topic, [b"z"], partition=0)
    Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    Part = Topic.OffsetForLeaderPartition
    req = OffsetForLeaderEpochRequest[version](replica_id=-1, topics=[
        Topic(topic=topic, partitions=[Part(partition=0, current_leader_epoch=1, leader_epoch=0),
                                       Part(partition=1, current_leader_epoch=0, leader_epoch=0)]),
        Topic(topic="no-such-topic", partitions=[Part(partition=0, current_leader_epoch=-1, leader_epoch=0)]),
    ])
    req.with_header(correlation_id=77, client_id="kafka-python-probe")
    with WireClient(broker.bootstrap_servers) as c:
        c.send_raw(req.encode(header=True, framed=True))
        resp = OffsetForLeaderEpochResponse[version].decode(c.recv_frame(), header=True)
    assert resp.header.correlation_id == 77
    got = {(t.topic, p.partition): (p.error_code, p.leader_epoch, p.end_offset)
           for t in resp.topics for p in t.partitions}
    assert got == {
        (topic, 0): (0, 0, 2),
        (topic, 1): (0, 0, 0),       # epoch 0 began at 0 when the leader took over
        ("no-such-topic", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    }


def test_api_versions_lists_it(broker):
    with broker.client() as c:
        r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert keys[23] == (2, 4)   # Kafka 4.x (the default emulation) dropped v0-1 (KIP-896)


def _produce(broker, topic, values):
    broker.produce(topic, values, partition=0)


def test_confluent_kafka_keeps_consuming_across_a_leader_epoch_change(broker, topic):
    """librdkafka sees the new leader epoch in Metadata, validates its fetch position with
    OffsetForLeaderEpoch (KIP-320) and goes on from where it was: nothing lost, nothing twice."""
    ck = pytest.importorskip("confluent_kafka")
    faults = broker.faults
    seen_before = faults.seen("OffsetForLeaderEpoch")
    me = broker.broker.node_id
    _produce(broker, topic, [f"a{i}".encode() for i in range(5)])
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{topic}",
                     "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 200,
                     "enable.auto.commit": False})
    got = []
    try:
        c.assign([ck.TopicPartition(topic, 0, 0)])

        def drain(n, timeout=20):
            deadline = time.monotonic() + timeout
            while len(got) < n and time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is not None and m.error() is None:
                    got.append(m.value())
            return len(got) >= n

        assert drain(5)
        change_partition(broker, topic, 0, me)
        _produce(broker, topic, [f"b{i}".encode() for i in range(5)])
        assert drain(10)
        # the client asked where its epoch ends once it saw the new epoch
        wait_until(lambda: faults.seen("OffsetForLeaderEpoch") > seen_before, timeout=10)
        change_partition(broker, topic, 0, me)
        _produce(broker, topic, [f"c{i}".encode() for i in range(5)])
        assert drain(15)
    finally:
        c.close()
    assert got == [f"{p}{i}".encode() for p in "abc" for i in range(5)]


def test_kafka_python_consumer_validates_and_keeps_consuming(broker, topic):
    from kafka import KafkaConsumer, TopicPartition

    me = broker.broker.node_id
    _produce(broker, topic, [f"a{i}".encode() for i in range(3)])
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                      enable_auto_commit=False, metadata_max_age_ms=300, consumer_timeout_ms=200)
    got = []
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])

        def drain(n, timeout=20):
            deadline = time.monotonic() + timeout
            while len(got) < n and time.monotonic() < deadline:
                for recs in c.poll(timeout_ms=200).values():
                    got.extend(r.value for r in recs)
            return len(got) >= n

        assert drain(3)
        change_partition(broker, topic, 0, me)
        _produce(broker, topic, [f"b{i}".encode() for i in range(3)])
        assert drain(6)
    finally:
        c.close()
    assert got == [f"{p}{i}".encode() for p in "ab" for i in range(3)]


def test_a_new_leaders_epoch_file_is_written_before_any_flush(broker, topic):
    # issue 32: the new epoch's entry goes to leader-epoch-checkpoint soon after the leader
    # change, in a worker thread without fsync (Kafka's makeLeader writes it at once), so a
    # clean shutdown right after thousands of partitions were created creates no file for them;
    # the close (or the next flush) only fsyncs it
    from kwire.log.leader_epoch import read_checkpoint

    plog = broker.broker.logs.get(topic, 1)
    path = os.path.join(plog.dir, "leader-epoch-checkpoint")
    wait_until(lambda: os.path.exists(path) and read_checkpoint(path) == [(0, 0)], timeout=10)
    change_partition(broker, topic, 1, broker.broker.node_id)   # a new epoch, no record in it yet
    # epoch 0 held no record: the new entry replaces it (Kafka's assign)
    wait_until(lambda: read_checkpoint(path) == [(1, 0)], timeout=10)
    assert plog.leader_epoch_cache.unsynced and not plog.leader_epoch_cache.dirty
    assert plog.recovery_point == 0   # not a flush: no record yet, nothing else synced
    plog.flush()
    assert not plog.leader_epoch_cache.unsynced
