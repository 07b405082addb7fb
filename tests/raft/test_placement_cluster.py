"""Three kwire processes: CreateTopics / CreatePartitions sent to a node that is not the
active controller are placed by the controller (its log line, leaders even over the three
brokers whichever node got the request); INVALID_REPLICATION_FACTOR beyond the live brokers,
replication factor 3 accepted, through confluent-kafka's AdminClient."""
from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode

from .cluster import Cluster, call, metadata, wait_for

pytestmark = pytest.mark.slow

SESSION_MS = 2000


def create(port: int, name: str, partitions: int, rf: int = 1, assignments=None):
    a = api("CreateTopics").request
    asg = [a.struct("CreatableReplicaAssignment")(partition_index=p, broker_ids=b)
           for p, b in (assignments or {}).items()]
    ct = a.struct("CreatableTopic")(name=name, num_partitions=partitions, replication_factor=rf,
                                    assignments=asg, configs=[])
    r = call(port, "CreateTopics", 7, timeout=30.0, topics=[ct], timeout_ms=15000, validate_only=False)
    return r.topics[0]


def add_partitions(port: int, name: str, count: int):
    a = api("CreatePartitions").request
    t = a.struct("CreatePartitionsTopic")(name=name, count=count, assignments=None)
    r = call(port, "CreatePartitions", 3, timeout=30.0, topics=[t], timeout_ms=15000, validate_only=False)
    return r.results[0]


def leaders_of(port: int, name: str) -> dict[int, int]:
    return metadata(port)[2].get(name) or {}


def test_topics_are_placed_by_the_active_controller(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=("--override", f"broker.session.timeout.ms={SESSION_MS}")).start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        assert wait_for(lambda: all(metadata(p)[0] == [1, 2, 3] and metadata(p)[1] > 0 for p in ports.values()), 20)
        controller = metadata(ports[1])[1]
        others = [i for i in ports if i != controller]

        # a 9-partition topic through each non-controller node: three leaders each, every time
        spreads = []
        for i, via in enumerate(others):
            r = create(ports[via], f"nine-{i}", 9)
            assert r.error_code == 0, r.error_message
            assert (r.num_partitions, r.replication_factor) == (9, 1)
            got = wait_for(lambda: (lambda m: m if len(m) == 9 else None)(leaders_of(ports[via], f"nine-{i}")), 10)
            spreads.append(sorted(Counter(got.values()).items()))
        assert spreads == [[(1, 3), (2, 3), (3, 3)]] * 2
        log = nodes[controller].log_tail(200_000)
        assert f"controller {controller} placed topic nine-0" in log and f"controller {controller} placed topic nine-1" in log
        for i in others:   # the receiving nodes forwarded; they placed nothing
            assert "placed topic" not in nodes[i].log_tail(200_000)

        # CreatePartitions through a non-controller node: 9 -> 12 keeps the topic even
        r = add_partitions(ports[others[0]], "nine-0", 12)
        assert r.error_code == 0, r.error_message
        got = wait_for(lambda: (lambda m: m if len(m) == 12 else None)(leaders_of(ports[others[1]], "nine-0")), 10)
        assert sorted(Counter(got.values()).values()) == [4, 4, 4]
        assert f"controller {controller} placed new partitions of nine-0" in nodes[controller].log_tail(200_000)
        # the controller's checks answer through the forwarding node
        r = add_partitions(ports[others[0]], "nine-0", 12)
        assert (r.error_code, r.error_message) == (ErrorCode.INVALID_PARTITIONS, "Topic already has 12 partition(s).")
        r = create(ports[others[1]], "nine-1", 3)
        assert r.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        r = create(ports[others[1]], "manual", -1, -1, {0: [others[0]], 1: [7]})
        assert (r.error_code, r.error_message) == (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 7, but no such broker is registered.")
        r = create(ports[others[1]], "manual", -1, -1, {0: [others[0]], 1: [controller]})
        assert r.error_code == 0
        assert wait_for(lambda: leaders_of(ports[others[1]], "manual") == {0: others[0], 1: controller}, 10)

        # the same topic asked of all three nodes at once: the controller creates it once
        with ThreadPoolExecutor(3) as pool:
            codes = sorted(f.result().error_code for f in [pool.submit(create, p, "race", 3) for p in ports.values()])
        assert codes == [0, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.TOPIC_ALREADY_EXISTS]
        # different topics at once: placed one after another, so the cluster's leaders stay even
        with ThreadPoolExecutor(3) as pool:
            assert [f.result().error_code for f in [pool.submit(create, p, f"burst-{i}", 2)
                                                    for i, p in enumerate(ports.values())]] == [0, 0, 0]
        everything = wait_for(lambda: (lambda m: m if sum(n.startswith("burst-") for n in m) == 3 else None)(
            metadata(ports[1])[2]), 10)
        totals = Counter(leader for t in everything.values() for leader in t.values())
        assert max(totals.values()) - min(totals.values()) <= 1, totals   # every topic started where load said

        # the stock admin client: RF beyond the live brokers refused, RF 3 placed on all three
        confluent_kafka = pytest.importorskip("confluent_kafka")
        from confluent_kafka.admin import AdminClient, NewTopic  # noqa: PLC0415

        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[others[0]]}"})

        def refusal(topic: NewTopic):
            with pytest.raises(confluent_kafka.KafkaException) as ei:
                admin.create_topics([topic], operation_timeout=15)[topic.topic].result(30)
            return ei.value.args[0]

        e = refusal(NewTopic("rf4", 1, 4))
        assert e.code() == confluent_kafka.KafkaError.INVALID_REPLICATION_FACTOR
        assert ("Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
                "because only 3 broker(s) are registered or some brokers have all their log directories cordoned.") in e.str()
        admin.create_topics([NewTopic("rf3", 3, 3)], operation_timeout=15)["rf3"].result(30)
        md = wait_for(lambda: (lambda t: t if t is not None and len(t.partitions) == 3 else None)(
            admin.list_topics("rf3", timeout=10).topics.get("rf3")), 10)
        assert all(sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3] and p.leader == p.replicas[0]
                   for p in md.partitions.values())
        assert sorted(p.leader for p in md.partitions.values()) == [1, 2, 3]

        # a broker down: fenced after broker.session.timeout.ms, so only two are live
        gone = others[1]
        nodes[gone].kill()
        live = [p for i, p in ports.items() if i != gone]
        assert wait_for(lambda: all(metadata(p)[0] == sorted(set(ports) - {gone}) for p in live), 20)
        e = refusal(NewTopic("rf3-two-live", 1, 3))
        assert e.code() == confluent_kafka.KafkaError.INVALID_REPLICATION_FACTOR
        assert "because only 2 broker(s) are registered or some brokers have all their log directories cordoned." in e.str()
        r = create(ports[others[0]], "six", 6)
        assert r.error_code == 0, r.error_message
        got = wait_for(lambda: (lambda m: m if len(m) == 6 else None)(leaders_of(ports[others[0]], "six")), 10)
        assert sorted(Counter(got.values()).items()) == sorted((i, 3) for i in ports if i != gone)
    finally:
        cluster.stop()
