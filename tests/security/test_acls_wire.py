"""CreateAcls / DescribeAcls / DeleteAcls against a running kwire with the StandardAuthorizer,
through confluent-kafka's and kafka-python's admin clients; the ACLs are metadata records, so
they outlive a restart; without an authorizer the APIs answer SECURITY_DISABLED."""
from __future__ import annotations

import pytest

from kwire.testing import Broker

pytestmark = pytest.mark.slow

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": True}


@pytest.fixture
def secured(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=AUTHORIZER)
    b.start()
    yield b
    b.stop()


def _ck_admin(b):
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415
    return AdminClient({"bootstrap.servers": b.bootstrap_servers})


def test_confluent_create_describe_delete(secured):
    from confluent_kafka.admin import (  # noqa: PLC0415
        AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType,
    )
    a = _ck_admin(secured)
    read = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                      AclOperation.READ, AclPermissionType.ALLOW)
    deny = AclBinding(ResourceType.TOPIC, "secret-", ResourcePatternType.PREFIXED, "User:*", "*",
                      AclOperation.ALL, AclPermissionType.DENY)
    group = AclBinding(ResourceType.GROUP, "g1", ResourcePatternType.LITERAL, "User:alice", "*",
                       AclOperation.READ, AclPermissionType.ALLOW)
    for f in a.create_acls([read, deny, group], request_timeout=10).values():
        assert f.result(10) is None
    # again: nothing changes, no error
    for f in a.create_acls([read], request_timeout=10).values():
        assert f.result(10) is None
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    got = a.describe_acls(everything, request_timeout=10).result(10)
    assert sorted(got) == sorted([read, deny, group])
    match = AclBindingFilter(ResourceType.TOPIC, "secret-stuff", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    assert a.describe_acls(match, request_timeout=10).result(10) == [deny]
    topics = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)
    deleted = list(a.delete_acls([topics], request_timeout=10).values())[0].result(10)
    assert sorted(deleted) == sorted([read, deny])
    assert a.describe_acls(everything, request_timeout=10).result(10) == [group]


def test_confluent_invalid_binding_is_invalid_request(secured):
    from confluent_kafka import KafkaException  # noqa: PLC0415
    from confluent_kafka.admin import (  # noqa: PLC0415
        AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType,
    )
    a = _ck_admin(secured)
    bad = AclBinding(ResourceType.BROKER, "not-the-cluster", ResourcePatternType.LITERAL, "User:alice", "*",
                     AclOperation.ALTER, AclPermissionType.ALLOW)
    f = list(a.create_acls([bad], request_timeout=10).values())[0]
    with pytest.raises(KafkaException) as e:
        f.result(10)
    assert e.value.args[0].code() == 42 or "INVALID_REQUEST" in str(e.value)


def test_kafka_python_admin_and_restart(tmp_path):
    from kafka.admin import (  # noqa: PLC0415
        ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
        ResourcePattern, ResourcePatternFilter, ResourceType,
    )
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=AUTHORIZER)
    b.start()
    try:
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        acl = ACL("User:bob", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                  ResourcePattern(ResourceType.TOPIC, "logs", ACLResourcePatternType.PREFIXED))
        res = a.create_acls([acl])
        assert res["succeeded"] == [acl] and not res["failed"]
        a.close()
    finally:
        b.stop()
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=AUTHORIZER)
    b.start()
    try:
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        flt = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
        acls, err = a.describe_acls(flt)
        assert err.errno == 0
        assert [(x.principal, x.operation, x.resource_pattern.resource_name) for x in acls] == \
            [("User:bob", ACLOperation.WRITE, "logs")]
        [(_, matched, err)] = a.delete_acls([flt])
        assert err.errno == 0 and len(matched) == 1
        assert a.describe_acls(flt)[0] == []
        a.close()
    finally:
        b.stop()


def test_no_authorizer_is_security_disabled(tmp_path):
    """librdkafka drops DescribeAcls' top-level error; kafka-python reports it."""
    import kafka.errors as Errors  # noqa: PLC0415
    from kafka.admin import (  # noqa: PLC0415
        ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient, ResourcePatternFilter,
        ResourceType,
    )
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"))
    b.start()
    try:
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        flt = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
        try:
            _, err = a.describe_acls(flt)
        except Errors.SecurityDisabledError:
            err = Errors.SecurityDisabledError
        assert err is Errors.SecurityDisabledError or isinstance(err, Errors.SecurityDisabledError)
        a.close()
    finally:
        b.stop()
