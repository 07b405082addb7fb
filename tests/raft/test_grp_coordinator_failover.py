"""Coordinator failover on a three-node cluster: __consumer_offsets is replicated (RF 3), so
when the coordinator of a group is SIGKILLed the new leader of the group's partition loads the
group from its replica and answers with the committed offsets; a consumer resumes from them.
An idempotent producer's retry of its last batch is answered as a duplicate by the new leader
of its partition (producer state replicated to the followers).
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition
import pytest

from kwire.codec import records as RB
from kwire.codec.apis import api
from kwire.errors import ErrorCode

from .cluster import Cluster, call, wait_for

pytestmark = pytest.mark.slow

E = ErrorCode
GROUP = "shop"


def create_topic_rf(port: int, name: str, partitions: int, rf: int) -> int:
    a = api("CreateTopics")
    ct = a.request.struct("CreatableTopic")(name=name, num_partitions=partitions, replication_factor=rf,
                                            assignments=[], configs=[])
    r = call(port, "CreateTopics", 5, timeout=30.0, topics=[ct], timeout_ms=15000, validate_only=False)
    return r.topics[0].error_code


def partitions_of(port: int, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """{partition: (leader, replicas, isr)} as node ``port`` sees it."""
    r = call(port, "Metadata", 9, topics=[api("Metadata").request.struct("MetadataRequestTopic")(name=topic)],
             allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    t = r.topics[0]
    return {p.partition_index: (p.leader_id, list(p.replica_nodes), list(p.isr_nodes)) for p in t.partitions}


def coordinator(port: int, group: str) -> int | None:
    r = call(port, "FindCoordinator", 3, key=group, key_type=0)
    return r.node_id if r.error_code == 0 else None


def commit(port: int, group: str, topic: str, offsets: dict[int, int]) -> list[int]:
    Req = api("OffsetCommit").request
    r = call(port, "OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
             group_instance_id=None, topics=[Req.struct("OffsetCommitRequestTopic")(name=topic, partitions=[
                 Req.struct("OffsetCommitRequestPartition")(partition_index=p, committed_offset=o,
                                                            committed_leader_epoch=-1, committed_metadata=None)
                 for p, o in offsets.items()])])
    return [p.error_code for p in r.topics[0].partitions]


def fetch(port: int, group: str, topic: str, parts) -> dict[int, int] | None:
    Req = api("OffsetFetch").request
    r = call(port, "OffsetFetch", 7, group_id=group, require_stable=False, topics=[
        Req.struct("OffsetFetchRequestTopic")(name=topic, partition_indexes=list(parts))])
    if r.error_code:
        return None
    return {p.partition_index: p.committed_offset for p in r.topics[0].partitions}


def produce_idempotent(port: int, topic: str, partition: int, pid: int, seq: int, n: int = 3) -> tuple[int, int]:
    batch = RB.build_batch([(None, f"r{seq + i}".encode(), [], int(time.time() * 1000)) for i in range(n)],
                           producer_id=pid, producer_epoch=0, base_sequence=seq)
    Req = api("Produce").request
    data = Req.struct("TopicProduceData")(name=topic, partition_data=[Req.struct("PartitionProduceData")(
        index=partition, records=batch)])
    r = call(port, "Produce", 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[data])
    pr = r.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


def test_group_coordinator_and_producer_state_move_with_leadership(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=(
        "--override", "group.initial.rebalance.delay.ms=0", "--override", "offsets.topic.num.partitions=3",
        "--override", "broker.session.timeout.ms=2000", "--override", "replica.lag.time.max.ms=3000")).start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        wait_for(lambda: all(call(p, "Metadata", 9, topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False).brokers.__len__() == 3
                             for p in ports.values()), 20)
        any_port = ports[1]
        # with broker.session.timeout.ms=2000 a loaded machine can fence a broker for a moment, and then
        # RF=3 answers INVALID_REPLICATION_FACTOR (nothing created), as Kafka does: ask again
        created = wait_for(lambda: (lambda e: None if e == E.INVALID_REPLICATION_FACTOR else [e])(
            create_topic_rf(any_port, "orders", 2, 3)), 20)
        assert created == [E.NONE]
        # the group's first FindCoordinator creates __consumer_offsets, as in Kafka: three replicas, all in sync
        wait_for(lambda: coordinator(any_port, GROUP), 20)
        offsets_topic = wait_for(lambda: (lambda m: m if m and all(len(isr) == 3 for _, _, isr in m.values())
                                          else None)(partitions_of(any_port, "__consumer_offsets")), 20)
        assert all(len(r) == 3 for _, r, _ in offsets_topic.values()), offsets_topic
        wait_for(lambda: all(len(isr) == 3 for _, _, isr in partitions_of(any_port, "orders").values()), 20)

        first = wait_for(lambda: coordinator(any_port, GROUP), 20)
        assert wait_for(lambda: commit(ports[first], GROUP, "orders", {0: 123, 1: 45}) == [0, 0], 20)
        assert fetch(ports[first], GROUP, "orders", [0, 1]) == {0: 123, 1: 45}

        # the idempotent producer writes to orders-0 through its leader
        leader0 = partitions_of(any_port, "orders")[0][0]
        pid = 4242
        for seq in range(0, 12, 3):
            err, base = produce_idempotent(ports[leader0], "orders", 0, pid, seq)
            assert err == 0
        last_base = base

        # SIGKILL the coordinator (and, if the same node, the partition leader)
        nodes[first].kill()
        survivors = {i: p for i, p in ports.items() if i != first}
        some = next(iter(survivors.values()))
        second = wait_for(lambda: (lambda c: c if c in survivors else None)(coordinator(some, GROUP)), 30)
        got = wait_for(lambda: fetch(ports[second], GROUP, "orders", [0, 1]), 30)
        assert got == {0: 123, 1: 45}
        assert wait_for(lambda: commit(ports[second], GROUP, "orders", {0: 130}) == [0], 20)

        # the producer retries its last batch on orders-0's (maybe new) leader: a duplicate
        new_leader0 = wait_for(lambda: (lambda l: l if l in survivors else None)(
            partitions_of(some, "orders")[0][0]), 30)
        err, base = wait_for(lambda: (lambda r: r if r[0] == 0 else None)(
            produce_idempotent(ports[new_leader0], "orders", 0, pid, 9)), 20)
        assert base == last_base
        err, base = produce_idempotent(ports[new_leader0], "orders", 0, pid, 12)
        assert err == 0 and base == last_base + 3

        # a consumer of the group resumes from the committed offsets
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in survivors.values())
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "session.timeout.ms": 6000})
        try:
            c.assign([TopicPartition("orders", 0)])
            committed = c.committed([TopicPartition("orders", 0)], timeout=20)
            assert committed[0].offset == 130
        finally:
            c.close()

        # the old coordinator comes back as a follower; the second one dies: the group moves again
        cluster.restart(first)
        # (needs ISR expansion: a caught-up follower rejoins the ISR through AlterPartition)
        wait_for(lambda: all(len(isr) == 3 for _, _, isr in partitions_of(some, "__consumer_offsets").values()), 30)
        nodes[second].kill()
        rest = {i: p for i, p in ports.items() if i != second}
        port = next(iter(rest.values()))
        third = wait_for(lambda: (lambda c: c if c in rest else None)(coordinator(port, GROUP)), 30)
        assert wait_for(lambda: fetch(ports[third], GROUP, "orders", [0, 1]), 30) == {0: 130, 1: 45}
    finally:
        cluster.stop()


def test_a_consumer_group_rides_through_its_coordinator_dying(tmp_path):
    """Stock consumers (confluent-kafka) in one group keep consuming and committing while their
    coordinator is SIGKILLed: they find the new coordinator, rejoin, and every record is read;
    a consumer started afterwards resumes exactly after the last commit."""
    from confluent_kafka import Producer   # noqa: PLC0415

    cluster = Cluster(str(tmp_path), extra_args=(
        "--override", "group.initial.rebalance.delay.ms=0", "--override", "offsets.topic.num.partitions=3",
        "--override", "broker.session.timeout.ms=2000", "--override", "replica.lag.time.max.ms=3000")).start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        any_port = ports[1]
        wait_for(lambda: len(call(any_port, "Metadata", 9, topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False).brokers) == 3, 20)
        assert create_topic_rf(any_port, "events", 3, 3) == E.NONE
        wait_for(lambda: all(len(isr) == 3 for _, _, isr in partitions_of(any_port, "events").values()), 20)
        wait_for(lambda: all(len(isr) == 3 for _, _, isr in partitions_of(any_port, "__consumer_offsets").values()),
                 20)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
        prod = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
        for i in range(900):
            prod.produce("events", str(i).encode(), partition=i % 3)
        assert prod.flush(30) == 0

        boss = wait_for(lambda: coordinator(any_port, "riders"), 20)
        conf = {"bootstrap.servers": bootstrap, "group.id": "riders", "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 300}
        consumers = [Consumer(conf) for _ in range(2)]
        for c in consumers:
            c.subscribe(["events"])
        seen: list[int] = []
        killed = False
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len(set(seen)) < 900:
            for c in consumers:
                # a batch per consumer: poll(0.1) of one record each would hold the loop 0.1 s on a
                # consumer that has nothing left while the other one has hundreds waiting
                for m in c.consume(50, 0.05):
                    if m.error() is not None:
                        continue
                    seen.append(int(m.value()))
                    if len(seen) % 10:
                        continue        # commit every tenth record (each commit waits for 3 replicas)
                    try:
                        c.commit(message=m, asynchronous=False)
                    except Exception:   # noqa: BLE001 - a commit during the failover may fail: retried later
                        pass
            if not killed and len(seen) >= 300:
                nodes[boss].kill()   # the coordinator dies in the middle
                killed = True
        assert killed and sorted(set(seen)) == list(range(900)), (len(set(seen)), boss)
        # commit what was read last, once more (commits during the failover may have failed)
        for c in consumers:
            try:
                c.commit(asynchronous=False)
            except Exception:   # noqa: BLE001 - nothing to commit for this one
                pass
            c.close()
        survivors = {i: p for i, p in ports.items() if i != boss}
        port = next(iter(survivors.values()))
        new_boss = wait_for(lambda: (lambda c: c if c in survivors else None)(coordinator(port, "riders")), 30)
        assert new_boss != boss
        assert fetch(ports[new_boss], "riders", "events", [0, 1, 2]) == {0: 300, 1: 300, 2: 300}
    finally:
        cluster.stop()
