"""SASL principals meet the authorizer: on a SASL_SSL listener with the StandardAuthorizer and no
allow-everyone fallback, each stock client acts as the user it authenticated as. An admin in
super.users grants alice WRITE on a topic and bob READ on it (and on his group); then alice
produces but may not consume, bob consumes but may not produce, carol (authenticated, no ACLs)
can do neither and sees no topic, each refused with Kafka's error codes."""
from __future__ import annotations

import time

import pytest

from kwire.testing.broker import Broker

pytestmark = pytest.mark.slow

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
TOPIC = "orders"


@pytest.fixture(scope="module")
def broker():
    overrides = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:admin", "allow.everyone.if.no.acl.found": False,
                 "group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 1}
    with Broker(security="SASL_SSL", users=USERS, overrides=overrides) as b:
        from confluent_kafka.admin import (  # noqa: PLC0415
            AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
        )
        admin = AdminClient(b.client_config("confluent", "admin", "SCRAM-SHA-512"))
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(15)

        def allow(rtype, name, user, op):
            return AclBinding(rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op,
                              AclPermissionType.ALLOW)
        acls = [allow(ResourceType.TOPIC, TOPIC, "alice", AclOperation.WRITE),
                allow(ResourceType.TOPIC, TOPIC, "bob", AclOperation.READ),
                allow(ResourceType.GROUP, "bobs", "bob", AclOperation.READ)]
        for f in admin.create_acls(acls, request_timeout=10).values():
            f.result(10)
        yield b


def _produce(conf, n=5):
    from confluent_kafka import Producer  # noqa: PLC0415

    errors = []
    p = Producer({**conf, "acks": "all", "message.timeout.ms": 10000, "linger.ms": 5})
    for i in range(n):
        p.produce(TOPIC, f"r{i}".encode(), on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    return errors


def _consume(conf, group, n, timeout=15):
    from confluent_kafka import Consumer  # noqa: PLC0415

    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    c.subscribe([TOPIC])
    got, errors = [], []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < n and not errors and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                errors.append(m.error().name())
            else:
                got.append(m.value())
    finally:
        c.close()
    return got, errors


def test_alice_writes_bob_reads(broker):
    assert _produce(broker.client_config("confluent", "alice", "SCRAM-SHA-256")) == [None] * 5
    got, errors = _consume(broker.client_config("confluent", "bob", "PLAIN"), "bobs", 5)
    assert (got, errors) == ([f"r{i}".encode() for i in range(5)], [])


def test_bob_may_not_write(broker):
    errors = _produce(broker.client_config("confluent", "bob", "SCRAM-SHA-512"), n=1)
    assert [e.name() for e in errors] == ["TOPIC_AUTHORIZATION_FAILED"]


def test_alice_may_not_consume_with_a_group(broker):
    got, errors = _consume(broker.client_config("confluent", "alice", "PLAIN"), "alices", 1)
    assert got == [] and errors[:1] == ["GROUP_AUTHORIZATION_FAILED"]


def test_bob_may_not_use_another_group(broker):
    got, errors = _consume(broker.client_config("confluent", "bob", "PLAIN"), "not-bobs", 1)
    assert got == [] and errors[:1] == ["GROUP_AUTHORIZATION_FAILED"]


def test_carol_has_no_rights_and_sees_no_topic(broker):
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415

    conf = broker.client_config("confluent", "carol", "SCRAM-SHA-256")
    assert TOPIC not in AdminClient(conf).list_topics(timeout=10).topics
    assert TOPIC in AdminClient(broker.client_config("confluent", "admin", "PLAIN")).list_topics(timeout=10).topics
    assert [e.name() for e in _produce(conf, n=1)] == ["TOPIC_AUTHORIZATION_FAILED"]


def test_kafka_python_acts_as_its_user(broker):
    from kafka import KafkaProducer  # noqa: PLC0415
    from kafka.errors import KafkaError, TopicAuthorizationFailedError  # noqa: PLC0415

    ok = KafkaProducer(**broker.client_config("kafka-python", "alice", "SCRAM-SHA-512"), acks="all")
    try:
        assert ok.send(TOPIC, b"kp").get(15).offset >= 0
    finally:
        ok.close(5)
    # bob has READ only: a plain producer is refused on the topic; an idempotent one already at
    # InitProducerId (IDEMPOTENT_WRITE on the cluster, or WRITE on some topic, as Kafka asks)
    denied = KafkaProducer(**broker.client_config("kafka-python", "bob", "SCRAM-SHA-512"), acks="all",
                           enable_idempotence=False, max_block_ms=10000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            denied.send(TOPIC, b"kp").get(15)
    finally:
        denied.close(5)
    idem = KafkaProducer(**broker.client_config("kafka-python", "bob", "SCRAM-SHA-512"), acks="all",
                         enable_idempotence=True, max_block_ms=10000)
    try:
        with pytest.raises(KafkaError, match="ClusterAuthorizationFailed"):
            idem.send(TOPIC, b"kp").get(15)
    finally:
        idem.close(5)
