"""DescribeProducers (KIP-664) from the partition leader's producer state: the stock kafka-python
admin client's describe_producers after confluent-kafka's idempotent and transactional producers,
and NOT_LEADER_OR_FOLLOWER from a broker that does not lead the partition."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from kwire.codec.apis import api
from kwire.codec.records import build_batch
from kwire.errors import ErrorCode as E
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker():
    with Broker(mode="thread", overrides={"transaction.state.log.replication.factor": 1,
                                          "transaction.state.log.num.partitions": 2}) as b:
        yield b


def test_kafka_python_describe_producers(broker):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.errors import UnknownTopicOrPartitionError

    topic = f"dp-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 3)
    bs = broker.bootstrap_servers
    idem = Producer({"bootstrap.servers": bs, "enable.idempotence": True})
    for i in range(3):
        idem.produce(topic, b"i%d" % i, partition=0)
    assert idem.flush(20) == 0
    txn = Producer({"bootstrap.servers": bs, "transactional.id": f"dp-{uuid.uuid4().hex[:6]}"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, b"t0", partition=1)
    txn.produce(topic, b"t1", partition=1)
    assert txn.flush(20) == 0
    admin = KafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=10000)
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        got = admin.describe_producers(tps)
        [a] = got[tps[0]].active_producers
        assert (a.producer_epoch, a.last_sequence, a.current_transaction_start_offset) == (0, 2, -1)
        assert a.producer_id >= 0 and abs(a.last_timestamp - time.time() * 1000) < 60_000
        [b] = got[tps[1]].active_producers
        assert b.producer_id != a.producer_id and b.last_sequence == 1 and b.current_transaction_start_offset == 0
        assert got[tps[2]].active_producers == []          # no producer ever wrote there
        txn.commit_transaction(30)
        [b2] = admin.describe_producers([tps[1]])[tps[1]].active_producers
        assert b2.producer_id == b.producer_id and b2.current_transaction_start_offset == -1
        assert b2.coordinator_epoch >= 0
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.describe_producers([TopicPartition(topic, 7)], broker_id=broker.broker.node_id)
    finally:
        admin.close()
        idem.flush(5)


def test_only_the_leader_answers(tmp_path):
    """Two brokers: the leader lists the producer, the other broker answers NOT_LEADER_OR_FOLLOWER."""
    from tests.raft.cluster import Cluster, create_topic, metadata, wait_for

    cluster = Cluster(str(tmp_path), size=2).start()
    try:
        ports = {n.node_id: n.port for n in cluster.nodes.values()}
        assert wait_for(lambda: all(metadata(p)[0] == [1, 2] for p in ports.values()), 20)
        assert create_topic(ports[1], "dp", 2) == E.NONE
        leaders = wait_for(lambda: (m := metadata(ports[1])[2].get("dp")) and len(m) == 2 and
                           all(v in (1, 2) for v in m.values()) and m, 20)
        leader = leaders[0]
        with WireClient(f"127.0.0.1:{ports[leader]}") as c:
            r = c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=-1,
                          producer_id=-1, producer_epoch=-1)
            pid, epoch = r.producer_id, r.producer_epoch
            assert r.error_code == 0
            batch = build_batch([(None, b"x", [], int(time.time() * 1000))] * 2, producer_id=pid,
                                producer_epoch=epoch, base_sequence=0)
            R = api("Produce").request
            pr = c.request("Produce", 9, transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
                R.struct("TopicProduceData")(name="dp", partition_data=[
                    R.struct("PartitionProduceData")(index=0, records=batch)])])
            assert pr.responses[0].partition_responses[0].error_code == 0
        TR = api("DescribeProducers").request.struct("TopicRequest")
        for node in (1, 2):
            with WireClient(f"127.0.0.1:{ports[node]}") as c:
                r = c.request("DescribeProducers", 0, topics=[TR(name="dp", partition_indexes=[0])])
            p = r.topics[0].partitions[0]
            if node == leader:
                assert p.error_code == 0
                assert [(s.producer_id, s.producer_epoch, s.last_sequence) for s in p.active_producers] == \
                    [(pid, epoch, 1)]
            else:
                assert p.error_code == E.NOT_LEADER_OR_FOLLOWER and p.active_producers == []
    finally:
        cluster.stop()
