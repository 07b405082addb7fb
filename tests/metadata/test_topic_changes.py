"""The controller's checks for CreateTopics / CreatePartitions (kwire.metadata.topic_changes)
against its image: Kafka's codes and messages, placement with any replication factor up to
the usable brokers."""
from __future__ import annotations

import uuid

import pytest

from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata import topic_changes as TC

from .imageutil import LiveImage


def image(n=3, fenced=(), racks=None) -> LiveImage:
    im = LiveImage()
    for i in range(1, n + 1):
        im.replay([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
            broker_id=i, incarnation_id=uuid.uuid4(), broker_epoch=1,
            end_points=[R.REGISTER_BROKER.struct("BrokerEndpoint")(name="PLAINTEXT", host="127.0.0.1", port=9000 + i,
                                                                  security_protocol=0)],
            rack=racks[i - 1] if racks else None, fenced=i in fenced))])
    return im


def create(im, req, **kw):
    kw.setdefault("default_partitions", 1)
    kw.setdefault("default_replication_factor", 1)
    plan = TC.plan_create_topic(im, req, **kw)
    im.replay(plan.records)
    return plan


def refused(fn, *args, **kw) -> TC.TopicRefused:
    with pytest.raises(TC.TopicRefused) as ei:
        fn(*args, **kw)
    return ei.value


def test_leaders_spread_evenly_and_records_match():
    im = image(3)
    plan = create(im, TC.CreateTopic("t", 9, 1))
    leaders = [im.topics["t"].partitions[p].leader for p in range(9)]
    assert sorted(leaders) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert all(im.topics["t"].partitions[p].replicas == [leaders[p]] == im.topics["t"].partitions[p].isr
               for p in range(9))
    assert plan.replication_factor == 1 and len(plan.replicas) == 9


def test_defaults_and_configs():
    im = image(1)
    plan = create(im, TC.CreateTopic("d", -1, -1, configs={"retention.ms": "5", "cleanup.policy": None}),
                  default_partitions=4)
    assert len(plan.replicas) == 4 and im.topics["d"].configs == {"retention.ms": "5"}
    e = refused(TC.plan_create_topic, im, TC.CreateTopic("c", 1, 1, configs={"nope": "1"}),
                default_partitions=1, default_replication_factor=1)
    assert (e.code, e.message) == (ErrorCode.INVALID_CONFIG, "Unknown topic config name: nope")


@pytest.mark.parametrize("req,code,message", [
    (TC.CreateTopic("bad/name", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION, None),
    (TC.CreateTopic("t", 0, 1), ErrorCode.INVALID_PARTITIONS,
     "Number of partitions was set to an invalid non-positive value."),
    (TC.CreateTopic("t", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Replication factor must be larger than 0, or -1 to use the default value."),
    (TC.CreateTopic("t", 1, 4), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached because "
     "only 3 broker(s) are registered or some brokers have all their log directories cordoned."),
    (TC.CreateTopic("t", 2, -1, assignments={0: [1]}), ErrorCode.INVALID_REQUEST,
     "A manual partition assignment was specified, but numPartitions was not set to -1."),
    (TC.CreateTopic("t", -1, 1, assignments={0: [1]}), ErrorCode.INVALID_REQUEST,
     "A manual partition assignment was specified, but replication factor was not set to -1."),
    (TC.CreateTopic("t", assignments={0: [1], 2: [2]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
    (TC.CreateTopic("t", assignments={0: [1], 1: [7]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 7, but no such broker is registered."),
    (TC.CreateTopic("t", assignments={0: [1], 1: [2, 3]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes a partition with 2 replica(s), but this is not consistent with "
     "previous partitions, which have 1 replica(s)."),
    (TC.CreateTopic("t", assignments={0: [2, 2]}), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes the broker 2 more than once."),
])
def test_create_topic_refusals(req, code, message):
    im = image(3)
    e = refused(TC.plan_create_topic, im, req, default_partitions=1, default_replication_factor=1)
    assert e.code == code
    if message is not None:
        assert e.message == message
    assert not im.topics


def test_fenced_brokers_do_not_count():
    im = image(3, fenced={2, 3})
    e = refused(TC.plan_create_topic, im, TC.CreateTopic("t", 1, 2), default_partitions=1,
                default_replication_factor=1)
    assert e.code == ErrorCode.INVALID_REPLICATION_FACTOR and "only 1 broker(s)" in e.message
    create(im, TC.CreateTopic("t", 4, 1))
    assert {p.leader for p in im.topics["t"].partitions.values()} == {1}
    e = refused(TC.plan_create_topic, im, TC.CreateTopic("m", assignments={0: [2]}), default_partitions=1,
                default_replication_factor=1)
    assert e.message == ("All brokers specified in the manual partition assignment for partition 0 are fenced or "
                         "in controlled shutdown.")


def test_existing_and_in_flight_names():
    im = image(1)
    create(im, TC.CreateTopic("t", 1, 1))
    for name, flight in (("t", set()), ("u", {"u"})):
        e = refused(TC.plan_create_topic, im, TC.CreateTopic(name, 1, 1), default_partitions=1,
                    default_replication_factor=1, in_flight=flight)
        assert (e.code, e.message) == (ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")


def test_manual_assignment_places_as_asked():
    im = image(3)
    create(im, TC.CreateTopic("m", assignments={1: [3], 0: [2]}))
    assert [im.topics["m"].partitions[p].leader for p in (0, 1)] == [2, 3]


def test_create_partitions():
    im = image(3)
    create(im, TC.CreateTopic("t", 2, 1))
    plan = TC.plan_create_partitions(im, TC.CreatePartitions("t", 6))
    im.replay(plan.records)
    leaders = sorted(p.leader for p in im.topics["t"].partitions.values())
    assert leaders == [1, 1, 2, 2, 3, 3] and sorted(plan.replicas) == [2, 3, 4, 5]
    cases = [
        (TC.CreatePartitions("nope", 2), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
        (TC.CreatePartitions("t", 6), ErrorCode.INVALID_PARTITIONS, "Topic already has 6 partition(s)."),
        (TC.CreatePartitions("t", 3), ErrorCode.INVALID_PARTITIONS,
         "The topic t currently has 6 partition(s); 3 would not be an increase."),
        (TC.CreatePartitions("t", 8, [[1]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
        (TC.CreatePartitions("t", 7, [[12]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 12, but no such broker is registered."),
        (TC.CreatePartitions("t", 7, [[1, 2]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes a partition with 2 replica(s), but this is not consistent "
         "with previous partitions, which have 1 replica(s)."),
    ]
    for req, code, message in cases:
        e = refused(TC.plan_create_partitions, im, req)
        assert (e.code, e.message) == (code, message)
    plan = TC.plan_create_partitions(im, TC.CreatePartitions("t", 7, [[3]]))
    assert plan.replicas == {6: [3]}


def test_replicated_topics_spread_leaders_and_followers():
    im = image(3)
    plan = create(im, TC.CreateTopic("r3", 6, 3))
    parts = im.topics["r3"].partitions
    assert plan.replication_factor == 3
    for p in parts.values():
        assert sorted(p.replicas) == [1, 2, 3] and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
    assert sorted(p.leader for p in parts.values()) == [1, 1, 2, 2, 3, 3]
    plan = create(im, TC.CreateTopic("r2", 6, 2))
    parts = im.topics["r2"].partitions
    assert sorted(p.leader for p in parts.values()) == [1, 1, 2, 2, 3, 3]
    followers = sorted(p.replicas[1] for p in parts.values())
    assert followers == [1, 1, 2, 2, 3, 3] and all(p.replicas[0] != p.replicas[1] for p in parts.values())
    # manual assignments of any factor; CreatePartitions keeps the topic's factor
    create(im, TC.CreateTopic("m", assignments={0: [1, 2], 1: [3, 1]}))
    assert [im.topics["m"].partitions[i].isr for i in (0, 1)] == [[1, 2], [3, 1]]
    plan = TC.plan_create_partitions(im, TC.CreatePartitions("r3", 9))
    assert all(sorted(r) == [1, 2, 3] for r in plan.replicas.values())


def test_fenced_and_shutting_down_brokers_hold_no_new_isr_or_leadership():
    im = image(3, fenced={3})
    create(im, TC.CreateTopic("m", assignments={0: [3, 1, 2]}))
    p = im.topics["m"].partitions[0]
    assert (p.replicas, p.isr, p.leader) == ([3, 1, 2], [1, 2], 1)
    im.brokers[1].in_controlled_shutdown = True
    e = refused(TC.plan_create_topic, im, TC.CreateTopic("t", 1, 2), default_partitions=1,
                default_replication_factor=1)
    assert e.code == ErrorCode.INVALID_REPLICATION_FACTOR and "only 1 broker(s)" in e.message
