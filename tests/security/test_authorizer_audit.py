"""Kafka's authorizer audit log (StandardAuthorizerData.logAuditMessage) on the logger
``kafka.authorizer.logger``: a denial of what a request asked for at INFO, a grant at DEBUG,
filters (Metadata of all topics, ListGroups) not at INFO; the line is Kafka's."""
from __future__ import annotations

import logging
import time
import uuid


import pytest

from kwire.security import authorizer as authz
from kwire.security.authorizer import ALLOW, DENY, LITERAL, TOPIC, AclBinding, AclStore, Authorizer
from kwire.security.operations import AclOperation as Op

LOGGER = "kafka.authorizer.logger"


def _audit(caplog) -> list[logging.LogRecord]:
    """The audit logger's records alone: caplog also catches what other loggers say meanwhile (a client
    of an earlier test on this worker, still reconnecting in its own thread, logs to aiokafka)."""
    return [r for r in caplog.records if r.name == LOGGER]


def _authorizer(*bindings, **kw) -> Authorizer:
    store = AclStore()
    for b in bindings:
        store.add(uuid.uuid4(), b)
    return Authorizer(store, **kw)


DENY_READ = AclBinding(TOPIC, "t", LITERAL, "User:alice", "*", Op.READ, DENY)
ALLOW_DESCRIBE = AclBinding(TOPIC, "t", LITERAL, "User:alice", "*", Op.DESCRIBE, ALLOW)


def test_denial_is_logged_at_info_with_kafkas_line(caplog):
    a = _authorizer(DENY_READ, ALLOW_DESCRIBE)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert not a.authorize("User:alice", "127.0.0.1", Op.READ, TOPIC, "t", "Fetch")
        assert a.authorize("User:alice", "127.0.0.1", Op.DESCRIBE, TOPIC, "t", "Metadata")   # DEBUG: not shown
        assert not a.authorize("User:bob", "10.0.0.2", Op.WRITE, TOPIC, "t", "Produce")
    assert [(r.name, r.levelno, r.getMessage()) for r in _audit(caplog)] == [
        (LOGGER, logging.INFO,
         "Principal = User:alice is Denied operation = READ from host = 127.0.0.1 on resource = Topic:LITERAL:t for "
         "request = Fetch with resourceRefCount = 1 based on rule MatchingAcl(acl=StandardAcl(resourceType=TOPIC, "
         "resourceName=t, patternType=LITERAL, principal=User:alice, host=*, operation=READ, permissionType=DENY))"),
        (LOGGER, logging.INFO,
         "Principal = User:bob is Denied operation = WRITE from host = 10.0.0.2 on resource = Topic:LITERAL:t for "
         "request = Produce with resourceRefCount = 1 based on rule DefaultDeny"),
    ]


def test_grants_at_debug_and_the_rules_kafka_names(caplog):
    a = _authorizer(ALLOW_DESCRIBE, super_users="User:admin", allow_everyone_if_no_acl_found=True)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        a.authorize("User:admin", "127.0.0.1", Op.ALTER, TOPIC, "t", "CreatePartitions")
        a.authorize("User:carol", "127.0.0.1", Op.READ, TOPIC, "free", "Fetch")
        a.authorize("User:alice", "127.0.0.1", Op.DESCRIBE, TOPIC, "t", "Metadata")
    got = [(r.levelno, r.getMessage().rpartition(" based on rule ")[2]) for r in _audit(caplog)]
    assert got == [(logging.DEBUG, "SuperUser"), (logging.DEBUG, "DefaultAllow"),
                   (logging.DEBUG, "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=t, patternType="
                                   "LITERAL, principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW))")]
    assert "Principal = User:admin is Allowed operation = ALTER" in _audit(caplog)[0].getMessage()


def test_filters_and_a_quiet_logger_build_nothing(caplog, monkeypatch):
    a = _authorizer(DENY_READ)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert not a.authorize("User:alice", "127.0.0.1", Op.DESCRIBE, TOPIC, "t", "Metadata", log_denied=False)
        assert a.operations("User:alice", "127.0.0.1", TOPIC, "t", (Op.READ, Op.DESCRIBE)) == []
    assert _audit(caplog) == []

    def boom(*args, **kw):
        raise AssertionError("an audit line was built while the logger is off")

    monkeypatch.setattr(authz, "audit_message", boom)
    with caplog.at_level(logging.WARNING, logger=LOGGER):       # denials (INFO) and grants (DEBUG) off
        assert not a.authorize("User:alice", "127.0.0.1", Op.READ, TOPIC, "t", "Fetch")
        assert not a.authorize("User:bob", "127.0.0.1", Op.READ, TOPIC, "u", "Fetch")


@pytest.mark.slow
def test_a_stock_consumer_denied_read_is_logged(tmp_path, caplog):
    """confluent-kafka as User:alice over SASL/PLAIN, DESCRIBE allowed and READ denied on t:
    its Fetch is refused and the broker logs Kafka's audit line."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    from confluent_kafka.admin import (AclBinding as CkAcl, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)

    from kwire.testing import Broker

    b = Broker(security="SASL_PLAINTEXT", users={"alice": "alice-secret"}, data_dir=str(tmp_path / "d"),
               overrides={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                          "allow.everyone.if.no.acl.found": True, "offsets.topic.num.partitions": 1})
    with b, caplog.at_level(logging.INFO, logger=LOGGER):
        b.create_topic("t")
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{b.harness_port}"})   # ANONYMOUS, no ACL on it
        acls = [CkAcl(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*", op, perm)
                for op, perm in ((AclOperation.DESCRIBE, AclPermissionType.ALLOW),
                                 (AclOperation.READ, AclPermissionType.DENY))]
        for f in admin.create_acls(acls, request_timeout=10).values():
            f.result(10)
        c = Consumer({**b.client_config("confluent", "alice"), "group.id": "g", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
        try:
            c.assign([TopicPartition("t", 0, 0)])
            error = None
            deadline = time.monotonic() + 20
            while error is None and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is not None:
                    error = m.error()
        finally:
            c.close()
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
        lines = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.INFO]
    assert ("Principal = User:alice is Denied operation = READ from host = 127.0.0.1 on resource = Topic:LITERAL:t "
            "for request = Fetch with resourceRefCount = 1 based on rule MatchingAcl(acl=StandardAcl(resourceType="
            "TOPIC, resourceName=t, patternType=LITERAL, principal=User:alice, host=*, operation=READ, "
            "permissionType=DENY))") in lines, lines
