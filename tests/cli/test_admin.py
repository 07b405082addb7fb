"""``kwire topics|groups|configs|cluster|acls`` against a running kwire, checked against the
broker's state through stock clients. The commands run in this process (``kwire.cli.main``,
output captured) for speed; the --help and usage-error cases run as subprocesses."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kwire.testing import Broker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka():
    with Broker(overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture
def kw(capsys):
    from kwire.cli import main

    def run(kafka, *argv: str, ok: bool = True) -> subprocess.CompletedProcess:
        capsys.readouterr()
        rc = main([argv[0], "--bootstrap-server", kafka.bootstrap_servers, *argv[1:]])
        out, err = capsys.readouterr()
        proc = subprocess.CompletedProcess(argv, rc, out, err)
        if ok:
            assert proc.returncode == 0, proc.stderr
            assert proc.stderr == "", proc.stderr
        return proc
    return run


def test_topics(kafka, kw):
    assert kw(kafka, "topics", "--create", "--topic", "adm-orders", "--partitions", "3", "--config",
              "retention.ms=86400000").stdout == "Created topic adm-orders.\n"
    again = kw(kafka, "topics", "--create", "--topic", "adm-orders", ok=False)
    assert again.returncode == 1 and again.stderr == ("kwire topics: TOPIC_ALREADY_EXISTS: Topic 'adm-orders' "
                                                      "already exists.\n")
    assert kw(kafka, "topics", "--create", "--topic", "adm-orders", "--if-not-exists").stdout == ""
    assert "adm-orders" in kw(kafka, "topics", "--list").stdout.split("\n")
    assert "__consumer_offsets" not in kw(kafka, "topics", "--list", "--exclude-internal").stdout
    out = kw(kafka, "topics", "--describe", "--topic", "adm-orders").stdout.splitlines()
    assert re.fullmatch(r"Topic: adm-orders\tTopicId: [\w-]{22}\tPartitionCount: 3\tReplicationFactor: 1\t"
                        r"Configs: min\.insync\.replicas=1,retention\.ms=86400000", out[0]), out[0]
    assert out[1:] == [f"\tTopic: adm-orders\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: N/A\t"
                       f"LastKnownElr: N/A" for p in range(3)]
    kw(kafka, "topics", "--alter", "--topic", "adm-orders", "--partitions", "5")
    with kafka.client() as c:
        assert c.partitions("adm-orders") == [0, 1, 2, 3, 4]
    assert kw(kafka, "topics", "--describe", "--topic", "adm-ord.*", "--under-replicated-partitions").stdout == ""
    kw(kafka, "topics", "--delete", "--topic", "adm-orders")
    gone = kw(kafka, "topics", "--describe", "--topic", "adm-orders", ok=False)
    assert gone.returncode == 1 and gone.stderr == "kwire topics: Topic 'adm-orders' does not exist as expected\n"


def test_configs(kafka, kw):
    kafka.create_topic("adm-cfg")
    out = kw(kafka, "configs", "--alter", "--topic", "adm-cfg", "--add-config",
             "cleanup.policy=[compact,delete],retention.ms=1000").stdout
    assert out == "Completed updating config for topic adm-cfg.\n"
    out = kw(kafka, "configs", "--describe", "--entity-type", "topics", "--entity-name", "adm-cfg").stdout
    lines = out.splitlines()
    assert lines[:2] == [
        "Dynamic configs for topic adm-cfg are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,"
        "delete, DEFAULT_CONFIG:log.cleanup.policy=delete}"]
    assert lines[2].startswith("  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000")
    assert len(lines) == 3
    kw(kafka, "configs", "--alter", "--topic", "adm-cfg", "--delete-config", "retention.ms")
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "adm-cfg")], config_filter="all")
    finally:
        admin.close()
    entries = got["topic"]["adm-cfg"]
    assert entries["cleanup.policy"]["value"] == "compact,delete"
    assert entries["retention.ms"]["value"] == "604800000"     # back to the default
    assert "  retention.ms=" in kw(kafka, "configs", "--describe", "--topic", "adm-cfg", "--all").stdout
    out = kw(kafka, "configs", "--alter", "--broker-defaults", "--add-config", "log.cleaner.threads=2").stdout
    assert out == "Completed updating default config for brokers in the cluster.\n"
    out = kw(kafka, "configs", "--describe", "--broker-defaults").stdout
    assert "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2}" in out
    bad = kw(kafka, "configs", "--alter", "--topic", "adm-cfg", "--add-config", "retention.ms=soon", ok=False)
    assert bad.returncode == 1 and "INVALID_CONFIG" in bad.stderr and bad.stderr.count("\n") == 1


def test_groups_describe_lag_reset_delete(kafka, kw):
    from confluent_kafka import Consumer
    from kafka.admin import KafkaAdminClient

    kafka.create_topic("adm-events", 2)
    kafka.produce("adm-events", [b"a", b"b", b"c", b"d"], partition=0)
    kafka.produce("adm-events", [b"e", b"f"], partition=1)
    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "adm-billing", "client.id": "bill-1",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe(["adm-events"])
        got = 0
        while got < 6:
            m = c.poll(1)
            if m is not None and not m.error():
                got += 1
        from confluent_kafka import TopicPartition
        c.commit(offsets=[TopicPartition("adm-events", 0, 1), TopicPartition("adm-events", 1, 2)], asynchronous=False)
        assert "adm-billing" in kw(kafka, "groups", "--list").stdout.split()
        out = kw(kafka, "groups", "--describe", "--group", "adm-billing").stdout.splitlines()
        assert out[0] == "" and out[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                                                   "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
        rows = [r.split() for r in out[2:]]
        assert [r[:6] for r in rows] == [["adm-billing", "adm-events", "0", "1", "4", "3"],
                                         ["adm-billing", "adm-events", "1", "2", "2", "0"]]
        assert all(r[6].startswith("bill-1-") and r[8] == "bill-1" for r in rows)
        state = kw(kafka, "groups", "--describe", "--group", "adm-billing", "--state").stdout.splitlines()
        assert state[2].split()[-2:] == ["Stable", "1"]
        members = kw(kafka, "groups", "--describe", "--group", "adm-billing", "--members", "--verbose").stdout
        assert "adm-events(0,1)" in members
        busy = kw(kafka, "groups", "--reset-offsets", "--group", "adm-billing", "--all-topics", "--to-earliest",
                  "--execute", ok=False)
        assert busy.returncode == 1 and busy.stderr == (
            "kwire groups: Assignments can only be reset if the group 'adm-billing' is inactive, but the current "
            "state is Stable.\n")
    finally:
        c.close()
    out = kw(kafka, "groups", "--describe", "--group", "adm-billing").stdout
    assert "Consumer group 'adm-billing' has no active members." in out
    dry = kw(kafka, "groups", "--reset-offsets", "--group", "adm-billing", "--topic", "adm-events", "--to-latest",
             "--dry-run").stdout.splitlines()
    assert [r.split() for r in dry[1:]] == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                                            ["adm-billing", "adm-events", "0", "4"],
                                            ["adm-billing", "adm-events", "1", "2"]]
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        committed = lambda: {tp.partition: om.offset for tp, om in   # noqa: E731
                             admin.list_group_offsets("adm-billing")["adm-billing"].items()}
        assert committed() == {0: 1, 1: 2}          # a dry run changes nothing
        kw(kafka, "groups", "--reset-offsets", "--group", "adm-billing", "--topic", "adm-events:0", "--shift-by", "2",
           "--execute")
        assert committed() == {0: 3, 1: 2}
        kw(kafka, "groups", "--reset-offsets", "--group", "adm-billing", "--all-topics", "--to-earliest", "--execute")
        assert committed() == {0: 0, 1: 0}
        past = kw(kafka, "groups", "--reset-offsets", "--group", "adm-billing", "--all-topics", "--to-offset", "99",
                  "--execute", ok=False)
        assert past.returncode == 0 and past.stderr.splitlines() == [
            "WARN New offset (99) is higher than latest offset for topic partition adm-events-0. Value will be set to 4",
            "WARN New offset (99) is higher than latest offset for topic partition adm-events-1. Value will be set to 2"]
        assert committed() == {0: 4, 1: 2}         # held to the log end, with Kafka's warning
        listed = kw(kafka, "groups", "--list", "--state", "--type").stdout.splitlines()
        width = max(15, len("adm-billing")) + 10
        assert listed[0] == "GROUP".ljust(width) + " " + "TYPE".ljust(20) + " " + "STATE".ljust(20)
        assert "adm-billing".ljust(width) + " " + "Classic".ljust(20) + " " + "Empty".ljust(20) in listed
        assert kw(kafka, "groups", "--list", "--state", "stable").stdout.splitlines() == ["GROUP".ljust(25) + " " +
                                                                                         "STATE".ljust(20)]
        deleted = kw(kafka, "groups", "--delete-offsets", "--group", "adm-billing", "--topic", "adm-events:0").stdout
        assert deleted == ("Request succeeded for deleting offsets from group adm-billing.\n\n"
                           + "TOPIC".ljust(15) + " " + "PARTITION".ljust(10) + " " + "STATUS".ljust(15) + "\n"
                           + "adm-events".ljust(15) + " " + "0".ljust(10) + " " + "Successful".ljust(15) + "\n")
        assert committed() == {1: 2}
        unknown = kw(kafka, "groups", "--delete-offsets", "--group", "adm-billing", "--topic", "adm-nope", ok=False)
        assert unknown.returncode == 1 and unknown.stdout.startswith(
            "\nError: Encountered some partition-level error, see the follow-up details.\n")
        assert "adm-nope".ljust(15) + " " + "-".ljust(10) + " Error: org.apache.kafka.common.errors." \
            "UnknownTopicOrPartitionException: This server does not host this topic-partition." in unknown.stdout
    finally:
        admin.close()
    assert kw(kafka, "groups", "--delete", "--group", "adm-billing").stdout == (
        "Deletion of requested consumer groups ('adm-billing') was successful.\n")
    assert "does not exist" in kw(kafka, "groups", "--describe", "--group", "adm-billing").stdout


def test_cluster_and_acls(kafka, kw):
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        cluster_id = admin.describe_cluster()["cluster_id"]
    finally:
        admin.close()
    assert kw(kafka, "cluster", "id").stdout == f"Cluster ID: {cluster_id}\n"
    out = kw(kafka, "cluster", "describe").stdout
    assert out == f"Cluster ID: {cluster_id}\nController: 1\nBrokers:\n  1 at {kafka.bootstrap_servers}\n"
    quorum = dict(line.split(":", 1) for line in kw(kafka, "cluster", "quorum").stdout.splitlines())
    assert quorum["LeaderId"].strip() == "1" and quorum["CurrentVoters"].strip() == "[1]"
    assert int(quorum["HighWatermark"]) > 0
    status = dict(line.split(":", 1) for line in kw(kafka, "metadata-quorum", "describe", "--status").stdout.splitlines())
    assert status.keys() == quorum.keys() and status["LeaderId"].strip() == "1"    # kafka-metadata-quorum's words
    assert kw(kafka, "metadata-quorum", "describe", "--replication").stdout.split()[:6] == [
        "NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"]
    kafka.create_topic("adm-elect", 2)
    assert kw(kafka, "leader-election", "--election-type", "preferred", "--topic", "adm-elect", "--partition",
              "1").stdout == "Valid replica already elected for partitions adm-elect-1\n"
    missing = kw(kafka, "leader-election", "--election-type", "PREFERRED", "--topic", "adm-none", "--partition", "0",
                 ok=False)
    assert missing.returncode == 1 and missing.stdout.startswith(
        "Error completing leader election (PREFERRED) for partition: adm-none-0: ")
    assert missing.stderr == "kwire leader-election: 1 replica(s) could not be elected\n"
    acls = kw(kafka, "acls", "--list", ok=False)
    assert acls.returncode == 1 and acls.stderr.startswith("kwire acls: No Authorizer is configured on the broker")


@pytest.mark.parametrize("cmd", ["topics", "groups", "configs", "cluster", "acls", "metadata-quorum",
                                 "leader-election"])
def test_admin_help(cmd):
    proc = subprocess.run([sys.executable, "-m", "kwire", cmd, "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "--bootstrap-server" in proc.stdout
    assert cmd in ("acls", "metadata-quorum", "leader-election") or "examples:" in proc.stdout


@pytest.mark.parametrize("argv,rc,words", [
    (["topics", "--bootstrap-server", "127.0.0.1:1", "--list"], 1, "no broker answered at 127.0.0.1:1"),
    (["topics", "--list", "--describe"], 2, "not allowed with argument"),
    (["topics"], 2, "one of the arguments --list --describe --create --alter --delete is required"),
    (["topics", "--bootstrap-server", "localhost", "--list"], 2, "is not HOST:PORT"),
    (["topics", "--create"], 2, "--create and --alter need --topic"),
    (["groups", "--describe"], 2, "need --group GROUP or --all-groups"),
    (["configs", "--describe"], 2, "--entity-type topics|brokers|groups"),
    (["configs", "--alter", "--topic", "t", "--add-config", "novalue"], 2, "is not KEY=VALUE"),
    (["groups", "--bootstrap-servers", "x:1", "--list"], 2, "use --bootstrap-server"),
    (["groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--state", "Stabel"], 2,
     "Invalid state list 'Stabel'. Valid states are: PreparingRebalance, CompletingRebalance, Stable"),
    (["groups", "--delete-offsets", "--group", "g"], 2, "--delete-offsets needs one --group GROUP and --topic"),
    (["acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--allow-principal", "User:a", "--operation", "Reed",
      "--topic", "t"], 2, "--operation 'Reed' is not an operation"),
    (["acls", "--bootstrap-server", "127.0.0.1:1", "--remove", "--force"], 2, "--remove needs a resource"),
    (["leader-election", "--bootstrap-server", "127.0.0.1:1", "--election-type", "preferred", "--topic", "t"], 2,
     "--topic needs --partition"),
    (["leader-election", "--election-type", "fastest", "--all-topic-partitions"], 2, "write preferred or unclean"),
    (["metadata-quorum", "describe"], 2, "one of the arguments --status --replication is required"),
])
def test_admin_usage_errors(argv, rc, words):
    proc = subprocess.run([sys.executable, "-m", "kwire", *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == rc and words in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
