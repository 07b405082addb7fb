"""``kwire groups`` on KIP-848 consumer groups (kwire.admin.consumer_groups) against a running
kwire with confluent-kafka members (group.protocol=consumer): --list, --describe --state
[--verbose], --members [--verbose], the offsets view, --reset-offsets of the empty group;
the numbers are checked against the broker's ConsumerGroupDescribe answer."""
from __future__ import annotations

import subprocess
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kwire.testing import Broker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka():
    with Broker(overrides={"kwire.emulate.kafka.version": "4.0", "group.initial.rebalance.delay.ms": 0,
                           "group.consumer.heartbeat.interval.ms": 200,
                           "group.consumer.min.heartbeat.interval.ms": 100}) as b:
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
        return proc
    return run


def test_describe_consumer_group_epochs_members_and_assignments(kafka, kw):
    kafka.create_topic("cg-cli", partitions=4)
    group = "cg-cli-g"
    cs = [Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group, "group.protocol": "consumer",
                    "client.id": f"cli-{i}", "auto.offset.reset": "earliest", "enable.auto.commit": False})
          for i in range(2)]
    try:
        for c in cs:
            c.subscribe(["cg-cli"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for c in cs:
                c.poll(0.05)
            owned = sorted(tp.partition for c in cs for tp in c.assignment())
            if owned == [0, 1, 2, 3] and all(c.assignment() for c in cs):
                break
        cs[0].commit(offsets=[TopicPartition("cg-cli", p, 0) for p in
                              sorted(tp.partition for tp in cs[0].assignment())], asynchronous=False)
        for _ in range(10):   # let the acks of the last assignment arrive (group Stable)
            for c in cs:
                c.poll(0.05)
        with kafka.client() as w:
            d = w.request("ConsumerGroupDescribe", 1, group_ids=[group], include_authorized_operations=False).groups[0]
        assert d.group_state == "Stable"
        assert group in kw(kafka, "groups", "--list").stdout.split()

        state = kw(kafka, "groups", "--describe", "--group", group, "--state", "--verbose").stdout.splitlines()
        assert state[0] == ""
        assert state[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                                    "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
        row = state[2].split()
        assert row[0] == group and row[-5:] == ["uniform", "Stable", str(d.group_epoch), str(d.assignment_epoch), "2"]
        plain = kw(kafka, "groups", "--describe", "--group", group, "--state").stdout.splitlines()
        assert plain[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]

        members = kw(kafka, "groups", "--describe", "--group", group, "--members", "--verbose").stdout.splitlines()
        assert members[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                                      "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        rows = {r.split()[1]: r.split() for r in members[2:]}
        assert set(rows) == {m.member_id for m in d.members}
        for m in d.members:
            r = rows[m.member_id]
            parts = sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions)
            want = "cg-cli(" + ",".join(map(str, parts)) + ")"
            assert r[3] == m.client_id and r[4] == str(len(parts))
            assert r[5:] == [str(m.member_epoch), want, str(d.assignment_epoch), want]
        short = kw(kafka, "groups", "--describe", "--group", group, "--members").stdout.splitlines()
        assert short[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]

        offsets = kw(kafka, "groups", "--describe", "--group", group).stdout.splitlines()
        lines = [r.split() for r in offsets[2:]]
        assert sorted(int(r[2]) for r in lines) == [0, 1, 2, 3]
        owners = {int(r[2]): r[6] for r in lines}
        for m in d.members:
            for tp in m.assignment.topic_partitions:
                for p in tp.partitions:
                    assert owners[p] == m.member_id
        busy = kw(kafka, "groups", "--reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute",
                  ok=False)
        assert busy.returncode == 1 and "current state is Stable" in busy.stderr
    finally:
        for c in cs:
            c.close()
    # empty now: its offsets can be reset, as Kafka allows for an inactive group
    empty = kw(kafka, "groups", "--describe", "--group", group, "--state").stdout.splitlines()
    assert empty[2].split()[-2:] == ["Empty", "0"]
    kw(kafka, "groups", "--reset-offsets", "--group", group, "--topic", "cg-cli:0", "--to-offset", "0", "--execute")
