"""Kafka's command-line tools on a secured pair: one kwire node and one Apache Kafka 4.3.1 node, each
with a SASL_SSL listener (PLAIN), Kafka's StandardAuthorizer and no ACL at first (conftest
``secured_pair``). Every tool connects with ``--command-config`` (SASL_SSL, the cluster's CA), as
the super user ``admin`` or as ``alice``, who may do only what the ACLs kafka-acls adds allow.
Compared as test_kafka_tools.py compares: exit codes, stdout and stderr after masking."""
from __future__ import annotations

import re

import pytest

from tests.ecosystem.steps import SideSteps, acl_blocks_sorted


@pytest.fixture(scope="module")
def sides(secured_pair):
    return secured_pair


ADMIN = ("--bootstrap-server", "{B}", "--command-config", "{admin}")
ALICE = ("--bootstrap-server", "{B}", "--command-config", "{alice}")


def _create_acls_denied(kw, ka) -> None:
    """docs/differences.md T04 (W30): CreateAcls without ALTER on the cluster fails with
    CLUSTER_AUTHORIZATION_FAILED on both; Kafka's message is its forwarded request object's toString
    (connection ids, session hashes), kwire sends none and the client falls back to the error's
    default message. The rest of the output (the stack trace, the ACL it tried) is the same."""
    kafka_message = re.compile(r"ClusterAuthorizationException: Request Request\(.*\) needs ALTER permission\.")
    default = "ClusterAuthorizationException: Cluster authorization failed."
    assert kafka_message.search(ka[2]) or kafka_message.search(ka[1]), ka
    assert (kw[0], kw[1], kw[2]) == (ka[0], kafka_message.sub(default, ka[1]), kafka_message.sub(default, ka[2])), (kw, ka)


def test_kafka_acls(sides):
    st = SideSteps(sides, post=acl_blocks_sorted)
    acls = ("kafka-acls", *ADMIN)
    st.same("kafka-topics", *ADMIN, "--create", "--topic", "at1", "--partitions", "2")
    st.same("kafka-topics", *ADMIN, "--create", "--topic", "pre-x")
    st.same(*acls, "--list")
    st.same(*acls, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
            "--topic", "at1")
    st.same(*acls, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "pre-",
            "--resource-pattern-type", "prefixed")
    st.same(*acls, "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "All",
            "--group", "g1")
    st.same(*acls, "--add", "--producer", "--allow-principal", "User:alice", "--topic", "pt",
            "--transactional-id", "tx1", "--idempotent")
    st.same(*acls, "--add", "--consumer", "--allow-principal", "User:alice", "--topic", "ct", "--group", "cg")
    st.same(*acls, "--add", "--allow-principal", "User:alice", "--operation", "Describe", "--cluster")
    i0 = st.same(*acls, "--list", "--topic", "at1")
    st.same(*acls, "--list", "--principal", "User:alice")
    st.same(*acls, "--list", "--topic", "pre-x", "--resource-pattern-type", "match")
    st.same(*acls, "--list", "--resource-pattern-type", "prefixed")
    st.same(*acls, "--list", "--group", "g1")
    # alice: she may describe at1, the pre-* topics (WRITE implies DESCRIBE) and the cluster
    i1 = st.same("kafka-topics", *ALICE, "--list")
    st.same("kafka-topics", *ALICE, "--create", "--topic", "alice1", rc=1)
    st.same("kafka-acls", *ALICE, "--list", "--topic", "at1")           # DESCRIBE on the cluster: allowed
    st.same("kafka-acls", *ALICE, "--add", "--allow-principal", "User:alice", "--operation", "All",
            "--topic", "at1", rc=1, listed=_create_acls_denied)         # ALTER on the cluster: denied
    st.same(*acls, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "at1")
    st.same(*acls, "--remove", "--force", "--topic", "ct")
    st.same(*acls, "--remove", "--force", "--consumer", "--allow-principal", "User:alice", "--topic", "ct",
            "--group", "cg")
    st.same(*acls, "--remove", "--force", "--topic", "pre-", "--resource-pattern-type", "prefixed")
    i2 = st.same(*acls, "--list")
    st.same(*acls, "--add", "--allow-principal", "alice", "--operation", "Read", "--topic", "x", rc=1)
    st.same(*acls, "--remove", "--force", "--topic", "nosuch")      # no ACL to remove: not an error
    outs = st.run()
    assert "operation=READ" in outs[i0] and "operation=DESCRIBE" in outs[i0], outs[i0]
    assert outs[i1].split() == ["at1", "pre-x"], outs[i1]     # WRITE on pre-* implies DESCRIBE
    assert "name=ct" not in outs[i2] and "name=pre-" not in outs[i2] and "name=at1" in outs[i2], outs[i2]


def test_tools_over_sasl_ssl(sides):
    """--command-config for a few tools beyond kafka-acls: topics, configs, groups, offsets, quorum."""
    st = SideSteps(sides)
    st.same("kafka-topics", *ADMIN, "--create", "--topic", "st1", "--partitions", "3")
    st.same("kafka-topics", *ADMIN, "--describe", "--topic", "st1")
    st.same("kafka-configs", *ADMIN, "--alter", "--entity-type", "topics", "--entity-name", "st1",
            "--add-config", "retention.ms=60000")
    st.same("kafka-configs", *ADMIN, "--describe", "--entity-type", "topics", "--entity-name", "st1")
    st.same("kafka-configs", *ALICE, "--describe", "--entity-type", "topics", "--entity-name", "st1")
    st.same("kafka-get-offsets", "--bootstrap-server", "{B}", "--command-config", "{admin}", "--topic", "st1")
    st.same("kafka-consumer-groups", *ADMIN, "--list")
    st.same("kafka-consumer-groups", *ALICE, "--describe", "--group", "nosuch")
    st.same("kafka-metadata-quorum", "--bootstrap-server", "{B}", "--command-config", "{admin}",
            "describe", "--replication")
    st.same("kafka-log-dirs", *ADMIN, "--describe", "--topic-list", "st1")
    st.same("kafka-transactions", *ADMIN, "list")
    st.run()
