"""What the secured differential pair (SASL_PLAINTEXT, StandardAuthorizer) found apart from Apache
Kafka 4.3 and was fixed to Kafka's answers, against an in-process kwire alone: each test states
what Kafka answered side by side."""
from __future__ import annotations

import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing.broker import Broker

from differential.pair import SECURED_COMMON, USERS
from differential.wire import AuthenticationFailed, Conn

pytestmark = pytest.mark.slow

E = ErrorCode


@pytest.fixture(scope="module")
def kw():
    b = Broker(security="SASL_PLAINTEXT", users=USERS, overrides=SECURED_COMMON).start()
    try:
        b.create_topic("t", 1)   # the harness listener's principal (ANONYMOUS) is a super user
        yield b
    finally:
        b.cleanup()


def conn(b: Broker, user: str = "alice") -> Conn:
    return Conn(b.bootstrap_servers, "secured-fixes", sasl=(user, USERS[user]))


def test_a_wrong_password_is_refused(kw):
    with pytest.raises(AuthenticationFailed):
        Conn(kw.bootstrap_servers, sasl=("alice", "nope"))


def test_config_denials_carry_the_errors_default_message(kw):
    c = conn(kw)
    R = api("DescribeConfigs").request.struct("DescribeConfigsResource")
    r = c.call("DescribeConfigs", 4, resources=[R(resource_type=2, resource_name="t", configuration_keys=None),
                                                R(resource_type=4, resource_name="1", configuration_keys=None)]).body
    assert [(x.error_code, x.error_message) for x in r.results] == [
        (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]
    R = api("IncrementalAlterConfigs").request.struct("AlterConfigsResource")
    C = api("IncrementalAlterConfigs").request.struct("AlterableConfig")
    r = c.call("IncrementalAlterConfigs", 1, validate_only=True, resources=[
        R(resource_type=2, resource_name="t", configs=[C(name="retention.ms", config_operation=0, value="1")])]).body
    assert [(x.error_code, x.error_message) for x in r.responses] == [
        (E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")]
    c.close()


def test_delete_topics_denial_message(kw):
    c = conn(kw)
    D = api("DeleteTopics").request.struct("DeleteTopicState")
    r = c.call("DeleteTopics", 6, topics=[D(name="t", topic_id=None)], timeout_ms=5000).body
    # by name: the id as asked (none), not the topic's
    assert [(x.name, x.topic_id, x.error_code, x.error_message) for x in r.responses] == [
        ("t", uuid.UUID(int=0), E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")]
    # by id, without DESCRIBE on the topic: its name is not told
    tid = kw.broker.image.topics["t"].topic_id
    r = c.call("DeleteTopics", 6, topics=[D(name=None, topic_id=tid)], timeout_ms=5000).body
    assert [(x.name, x.topic_id, x.error_code) for x in r.responses] == [(None, tid, E.TOPIC_AUTHORIZATION_FAILED)]
    c.close()


def test_find_coordinator_denials_say_the_default_message_up_to_v3_and_nothing_from_v4(kw):
    c = conn(kw)
    r = c.call("FindCoordinator", 3, key="g", key_type=0).body
    assert (r.error_code, r.error_message) == (E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    r = c.call("FindCoordinator", 3, key="x", key_type=1).body
    assert (r.error_code, r.error_message) == (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                               "Transactional Id authorization failed.")
    r = c.call("FindCoordinator", 4, key_type=0, coordinator_keys=["g"]).body
    assert [(x.error_code, x.error_message) for x in r.coordinators] == [(E.GROUP_AUTHORIZATION_FAILED, "")]
    c.close()


def test_created_topic_hides_its_shape_without_describe_configs_and_validate_only_has_an_id(kw):
    admin = conn(kw, "admin")
    Cr = api("CreateAcls").request.struct("AclCreation")
    r = admin.call("CreateAcls", 3, creations=[Cr(resource_type=2, resource_name="made", resource_pattern_type=3,
                                                  principal="User:bob", host="*", operation=5, permission_type=3)]).body
    assert r.results[0].error_code == E.NONE
    d = admin.call("DescribeAcls", 3, resource_type_filter=2, resource_name_filter="made", pattern_type_filter=3,
                   principal_filter=None, host_filter=None, operation=1, permission_type=1).body
    assert (d.error_code, d.error_message) == (E.NONE, "")   # Kafka: "" when all is well
    admin.close()
    c = conn(kw, "bob")
    T = api("CreateTopics").request.struct("CreatableTopic")
    r = c.call("CreateTopics", 7, timeout_ms=5000, validate_only=True, topics=[
        T(name="made", num_partitions=2, replication_factor=1, assignments=[], configs=[])]).body
    t = r.topics[0]
    assert (t.error_code, t.topic_config_error_code, t.num_partitions, t.replication_factor, t.configs) == (
        E.NONE, E.TOPIC_AUTHORIZATION_FAILED, -1, -1, [])
    assert t.topic_id != uuid.UUID(int=0)   # Kafka's controller draws the id before it knows it only validates
    c.close()
