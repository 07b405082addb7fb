"""``kwire acls --add / --list / --remove`` against a kwire with the StandardAuthorizer, checked
with kafka-python's admin client and by the broker refusing what the ACLs deny."""
from __future__ import annotations

import subprocess

import pytest

from kwire.testing import Broker
from kwire.testing.client import KafkaWireError, WireClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    b = Broker(mode="thread", data_dir=str(tmp_path_factory.mktemp("aclcli") / "data"),
               overrides={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                          "allow.everyone.if.no.acl.found": True})
    b.start()
    yield b
    b.stop()


@pytest.fixture
def kw(capsys):
    from kwire.cli import main  # noqa: PLC0415

    def run(kafka, *argv: str, ok: bool = True) -> subprocess.CompletedProcess:
        capsys.readouterr()
        rc = main([argv[0], "--bootstrap-server", kafka.bootstrap_servers, *argv[1:]])
        out, err = capsys.readouterr()
        proc = subprocess.CompletedProcess(argv, rc, out, err)
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc
    return run


def test_add_list_remove(kafka, kw):
    from kafka.admin import (  # noqa: PLC0415
        ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient, ResourcePatternFilter,
        ResourceType,
    )
    with WireClient(kafka.bootstrap_servers) as c:
        c.create_topic("cli-orders")
    out = kw(kafka, "acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation",
             "Describe", "--topic", "cli-orders").stdout
    assert out.startswith("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=cli-orders, "
                          "patternType=LITERAL)`: ")
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in out
    kw(kafka, "acls", "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Write", "--topic", "cli-",
       "--resource-pattern-type", "prefixed")
    kw(kafka, "acls", "--add", "--consumer", "--allow-principal", "User:bob", "--topic", "cli-orders",
       "--group", "billing")
    listed = kw(kafka, "acls", "--list", "--topic", "cli-orders", "--resource-pattern-type", "match").stdout
    assert "name=cli-orders, patternType=LITERAL" in listed and "name=cli-, patternType=PREFIXED" in listed
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in listed
    a = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        flt = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                        ResourcePatternFilter(ResourceType.GROUP, "billing", ACLResourcePatternType.LITERAL))
        acls, _ = a.describe_acls(flt)
        assert [(x.principal, x.operation) for x in acls] == [("User:bob", ACLOperation.READ)]
    finally:
        a.close()
    # ANONYMOUS may not WRITE cli-orders (ACLs name it, none allows that; the prefixed DENY too)
    with WireClient(kafka.bootstrap_servers) as c:
        with pytest.raises(KafkaWireError) as e:
            c.produce("cli-orders", [b"x"])
        assert e.value.code == 29
    assert kw(kafka, "acls", "--remove", "--topic", "cli-", "--resource-pattern-type", "prefixed").stdout == \
        "Removed 1 ACL(s).\n"
    assert kw(kafka, "acls", "--remove", "--allow-principal", "User:alice", "--operation", "Read",
              "--topic", "cli-orders").stdout == "Removed 1 ACL(s).\n"
    listed = kw(kafka, "acls", "--list").stdout
    assert "User:alice, host=*, operation=READ" not in listed and "User:alice, host=*, operation=DESCRIBE" in listed
    bad = kw(kafka, "acls", "--add", "--allow-principal", "User:x", "--topic", "t", ok=False)
    assert bad.returncode == 2 and "--operation" in bad.stderr           # a usage error, found before asking
    reed = kw(kafka, "acls", "--add", "--allow-principal", "User:x", "--operation", "Reed", "--topic", "t", ok=False)
    assert reed.returncode == 2 and reed.stderr.endswith("; did you mean Read?\n"), reed.stderr
    # Kafka's --force (no confirmation prompt) is accepted
    kw(kafka, "acls", "--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "forced")
    assert kw(kafka, "acls", "--remove", "--force", "--topic", "forced").stdout == "Removed 1 ACL(s).\n"
