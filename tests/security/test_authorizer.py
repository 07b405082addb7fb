"""The authorizer's decisions, after Kafka's StandardAuthorizerTest and AclBindingFilterTest."""
from __future__ import annotations

import uuid

from kwire.metadata.delta import replay, replay_bytes
from kwire.config import BrokerConfig
from kwire.security.authorizer import (
    ALLOW, ANY, CLUSTER, DENY, GROUP, LITERAL, MATCH, PREFIXED, TOPIC, TRANSACTIONAL_ID, AclBinding,
    AclBindingFilter, AclStore, Authorizer, validate_binding,
)
from kwire.security.operations import AclOperation as Op


def acl(rtype, name, pattern, principal, op, perm, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def make(*bindings, super_users="", allow_everyone=False):
    store = AclStore()
    for b in bindings:
        store.add(uuid.uuid4(), b)
    return Authorizer(store, super_users, allow_everyone)


def test_no_acls_denies_unless_allow_everyone():
    assert not make().authorize("User:alice", "1.2.3.4", Op.READ, TOPIC, "foo")
    assert make(allow_everyone=True).authorize("User:alice", "1.2.3.4", Op.READ, TOPIC, "foo")


def test_allow_everyone_applies_only_where_no_acl_names_the_resource():
    a = make(acl(TOPIC, "foo", LITERAL, "User:bob", Op.READ, ALLOW), allow_everyone=True)
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "foo")   # foo has an ACL: not alice's
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "bar")


def test_super_users_are_always_allowed():
    a = make(acl(TOPIC, "*", LITERAL, "User:*", Op.ALL, DENY), super_users="User:admin;User:ops")
    assert a.authorize("User:admin", "h", Op.WRITE, TOPIC, "foo")
    assert a.authorize("User:ops", "h", Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    assert not a.authorize("User:alice", "h", Op.WRITE, TOPIC, "foo")


def test_literal_prefixed_and_wildcard_patterns():
    a = make(acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, ALLOW),
             acl(TOPIC, "pre", PREFIXED, "User:alice", Op.WRITE, ALLOW),
             acl(GROUP, "*", LITERAL, "User:alice", Op.READ, ALLOW))
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "foo")
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "foobar")
    assert a.authorize("User:alice", "h", Op.WRITE, TOPIC, "prefix-topic")
    assert not a.authorize("User:alice", "h", Op.WRITE, TOPIC, "pr")
    assert a.authorize("User:alice", "h", Op.READ, GROUP, "any-group")
    assert not a.authorize("User:bob", "h", Op.READ, GROUP, "any-group")


def test_deny_wins_over_allow():
    a = make(acl(TOPIC, "*", LITERAL, "User:*", Op.ALL, ALLOW),
             acl(TOPIC, "secret", PREFIXED, "User:alice", Op.READ, DENY))
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "public")
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "secret-1")
    assert a.authorize("User:alice", "h", Op.WRITE, TOPIC, "secret-1")   # the deny is of READ only
    assert a.authorize("User:bob", "h", Op.READ, TOPIC, "secret-1")


def test_deny_all_denies_every_operation():
    a = make(acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, ALLOW),
             acl(TOPIC, "foo", LITERAL, "User:alice", Op.ALL, DENY))
    for op in (Op.READ, Op.DESCRIBE, Op.WRITE):
        assert not a.authorize("User:alice", "h", op, TOPIC, "foo")


def test_implied_operations():
    # testAuthorizationWithImpliedOperations: READ/WRITE/DELETE/ALTER imply DESCRIBE; ALTER_CONFIGS DESCRIBE_CONFIGS
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        a = make(acl(TOPIC, "foo", LITERAL, "User:alice", op, ALLOW))
        assert a.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "foo"), op
        assert not a.authorize("User:alice", "h", Op.DESCRIBE_CONFIGS, TOPIC, "foo")
    a = make(acl(TOPIC, "foo", LITERAL, "User:alice", Op.ALTER_CONFIGS, ALLOW))
    assert a.authorize("User:alice", "h", Op.DESCRIBE_CONFIGS, TOPIC, "foo")
    assert not a.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "foo")
    # a DENY of READ does not deny DESCRIBE (denies are not implied)
    a = make(acl(TOPIC, "foo", LITERAL, "User:alice", Op.WRITE, ALLOW),
             acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, DENY))
    assert a.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "foo")


def test_host_matching():
    a = make(acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, ALLOW, host="10.0.0.1"))
    assert a.authorize("User:alice", "10.0.0.1", Op.READ, TOPIC, "foo")
    assert not a.authorize("User:alice", "10.0.0.2", Op.READ, TOPIC, "foo")


def test_resource_types_are_separate():
    a = make(acl(TRANSACTIONAL_ID, "tx", LITERAL, "User:alice", Op.WRITE, ALLOW))
    assert a.authorize("User:alice", "h", Op.WRITE, TRANSACTIONAL_ID, "tx")
    assert not a.authorize("User:alice", "h", Op.WRITE, TOPIC, "tx")


def test_removing_an_acl_takes_effect():
    store = AclStore()
    i = uuid.uuid4()
    store.add(i, acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, ALLOW))
    a = Authorizer(store)
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "foo")
    store.remove(i)
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "foo")
    assert len(store) == 0


def test_authorize_by_resource_type():
    a = make(acl(TOPIC, "foo", LITERAL, "User:alice", Op.WRITE, ALLOW))
    assert a.authorize_any("User:alice", "h", Op.WRITE, TOPIC)
    assert not a.authorize_any("User:bob", "h", Op.WRITE, TOPIC)
    a = make(acl(TOPIC, "foo", LITERAL, "User:alice", Op.WRITE, ALLOW),
             acl(TOPIC, "f", PREFIXED, "User:alice", Op.WRITE, DENY))
    assert not a.authorize_any("User:alice", "h", Op.WRITE, TOPIC)


def test_filters():
    lit = acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, ALLOW)
    pre = acl(TOPIC, "fo", PREFIXED, "User:alice", Op.READ, ALLOW)
    wild = acl(TOPIC, "*", LITERAL, "User:bob", Op.WRITE, DENY)
    grp = acl(GROUP, "foo", LITERAL, "User:alice", Op.READ, ALLOW)
    every = [lit, pre, wild, grp]
    assert [b for b in every if AclBindingFilter().matches(b)] == every
    assert [b for b in every if AclBindingFilter(TOPIC, "foo", LITERAL).matches(b)] == [lit]
    assert [b for b in every if AclBindingFilter(TOPIC, "foo", MATCH).matches(b)] == [lit, pre, wild]
    assert [b for b in every if AclBindingFilter(TOPIC, "fo", ANY).matches(b)] == [pre]
    assert [b for b in every if AclBindingFilter(ANY, None, PREFIXED).matches(b)] == [pre]
    assert [b for b in every if AclBindingFilter(principal="User:bob").matches(b)] == [wild]
    assert [b for b in every if AclBindingFilter(permission_type=ALLOW, operation=Op.READ).matches(b)] == [lit, pre, grp]


def test_validation():
    assert validate_binding(acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, ALLOW)) is None
    assert validate_binding(acl(TOPIC, "foo", MATCH, "User:alice", Op.READ, ALLOW))
    assert validate_binding(acl(TOPIC, "foo", LITERAL, "User:alice", Op.ANY, ALLOW))
    assert validate_binding(acl(TOPIC, "foo", LITERAL, "User:alice", Op.READ, ANY))
    assert validate_binding(acl(TOPIC, "", LITERAL, "User:alice", Op.READ, ALLOW))
    assert validate_binding(acl(TOPIC, "foo", LITERAL, "alice", Op.READ, ALLOW))
    assert validate_binding(acl(CLUSTER, "other", LITERAL, "User:alice", Op.ALTER, ALLOW))
    assert validate_binding(acl(ANY, "foo", LITERAL, "User:alice", Op.READ, ALLOW))


def test_from_config():
    assert Authorizer.from_config(BrokerConfig(), AclStore()) is None
    cfg = BrokerConfig({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                        "super.users": "User:admin", "allow.everyone.if.no.acl.found": "true"})
    a = Authorizer.from_config(cfg, AclStore())
    assert a.super_users == {"User:admin"} and a.allow_everyone


def test_image_applies_acl_records_and_snapshots_keep_them():
    from kwire.metadata import records as R  # noqa: PLC0415
    from kwire.metadata.image import MetadataImage  # noqa: PLC0415
    from kwire.metadata.snapshot import decode_snapshot, encode_snapshot  # noqa: PLC0415

    image = MetadataImage()
    ids = [uuid.uuid4(), uuid.uuid4()]
    for i, (name, perm) in zip(ids, (("orders", ALLOW), ("secret", DENY))):
        rec = R.ACCESS_CONTROL_ENTRY.cls(id=i, resource_type=TOPIC, resource_name=name, pattern_type=LITERAL,
                                         principal="User:alice", host="*", operation=Op.READ, permission_type=perm)
        image = replay_bytes(image, [R.encode_record(R.ACCESS_CONTROL_ENTRY, rec)])   # through the wire form
    assert len(image.acls) == 2
    a = Authorizer(lambda: image.acls)
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "orders")
    again = decode_snapshot(encode_snapshot(image))
    assert again.acls.by_id == image.acls.by_id
    image = replay(image, [(R.REMOVE_ACCESS_CONTROL_ENTRY, R.REMOVE_ACCESS_CONTROL_ENTRY.cls(id=ids[0]))])
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "orders")
    assert list(image.acls.by_id) == [ids[1]]
