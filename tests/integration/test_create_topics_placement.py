"""CreateTopics / CreatePartitions on one node through stock admin clients: the controller's
checks and Kafka's messages (replication factor beyond the live brokers, manual assignments),
validate_only answering what the controller would make."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kwire.codec.apis import api
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"num.partitions": 3}) as b:
        yield b


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _refused(fut) -> KafkaError:
    with pytest.raises(KafkaException) as ei:
        fut.result(30)
    return ei.value.args[0]


def test_replication_factor_checks(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    name = _name("rf")
    e = _refused(admin.create_topics([NewTopic(name, 1, 2)], operation_timeout=10)[name])
    assert e.code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert ("Unable to replicate the partition 2 time(s): The target replication factor of 2 cannot be reached "
            "because only 1 broker(s) are registered or some brokers have all their log directories cordoned.") in e.str()
    e = _refused(admin.create_topics([NewTopic(name, 1, -1, replica_assignment=[[1, 1]])], operation_timeout=10)[name])
    assert e.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
    assert "The manual partition assignment includes the broker 1 more than once." in e.str()
    e = _refused(admin.create_topics([NewTopic(name, 2, -1, replica_assignment=[[1], [5]])],
                                     operation_timeout=10)[name])
    assert e.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
    assert "The manual partition assignment includes broker 5, but no such broker is registered." in e.str()
    assert name not in admin.list_topics(timeout=10).topics


def test_manual_assignment_and_create_partitions(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    name = _name("manual")
    admin.create_topics([NewTopic(name, 2, -1, replica_assignment=[[1], [1]])], operation_timeout=10)[name].result(30)
    md = admin.list_topics(name, timeout=10).topics[name]
    assert sorted(md.partitions) == [0, 1] and all(p.replicas == [1] == p.isrs for p in md.partitions.values())
    e = _refused(admin.create_partitions([NewPartitions(name, 4, [[1]])], operation_timeout=10)[name])
    assert e.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
    assert "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified." in e.str()
    admin.create_partitions([NewPartitions(name, 4, [[1], [1]])], operation_timeout=10)[name].result(30)
    assert sorted(admin.list_topics(name, timeout=10).topics[name].partitions) == [0, 1, 2, 3]


def test_validate_only_answers_what_the_controller_would_make(broker):
    name = _name("dry")
    a = api("CreateTopics").request
    ct = a.struct("CreatableTopic")(name=name, num_partitions=-1, replication_factor=-1, assignments=[], configs=[])
    with WireClient(broker.bootstrap_servers) as c:
        r = c.request("CreateTopics", 7, topics=[ct], timeout_ms=10000, validate_only=True).topics[0]
        assert (r.error_code, r.num_partitions, r.replication_factor) == (0, 3, 1)
        md = c.request("Metadata", 9, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False)
        assert name not in {t.name for t in md.topics}
        ct.replication_factor, ct.num_partitions = 3, 1
        r = c.request("CreateTopics", 7, topics=[ct], timeout_ms=10000, validate_only=True).topics[0]
        assert r.error_code == KafkaError.INVALID_REPLICATION_FACTOR
