"""Kafka's own command-line tools against kwire and against Apache Kafka 4.3.1, side by side.

Each step runs the same tool command against ``kwire_one`` and ``kafka_one`` (the two JVMs at
once), masks what legitimately differs between two clusters (topic and cluster ids, the
bootstrap address, log timestamps, throughput figures) and asserts that exit codes, stdout and
stderr are equal. Where kwire answers differently for a reason it keeps, the difference is listed
in docs/differences.md ("Kafka's command-line tools") and the step checks exactly that
difference. One node, PLAINTEXT; three nodes and SASL_SSL with --command-config are follow-ups.

Every test uses topics and groups of its own, so the module-scoped pair can be shared in any order."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.ecosystem.conftest import run_tools

_POOL = ThreadPoolExecutor(2)


@pytest.fixture(scope="module")
def pair(kwire_one, kafka_one):
    return kwire_one.bootstrap_servers, kafka_one.bootstrap_servers


def _masked(text: str, bootstrap: str) -> str:
    text = text.replace(bootstrap, "<bootstrap>")
    text = re.sub(r"\b\d\d:\d\d:\d\d\.\d{3}\b", "<time>", text)             # log4j's time of day
    text = re.sub(r"(TopicId: ?)[A-Za-z0-9_-]{22}", r"\1<topic-id>", text)
    text = re.sub(r"(ClusterId:\s*)[A-Za-z0-9_-]{22}", r"\1<cluster-id>", text)
    return text


class Steps:
    """A command sequence run in one JVM per cluster (conftest.run_tools), both clusters at once.
    ``same(tool, *args, rc=0)`` adds a step; ``run()`` runs them and asserts, step by step, equal
    masked (exit code, stdout, stderr) and the expected exit code; it returns each step's stdout."""

    def __init__(self, pair):
        self.pair = pair
        self.steps: list[tuple[int, tuple[str, ...]]] = []

    def same(self, tool: str, *args: str, rc: int = 0) -> int:
        self.steps.append((rc, (tool, *args)))
        return len(self.steps) - 1

    def results(self) -> tuple[list, list]:
        def one(bootstrap: str):
            cmds = [tuple(a.replace("{B}", bootstrap) for a in cmd) for _, cmd in self.steps]
            return [(rc, _masked(out, bootstrap), _masked(err, bootstrap)) for rc, out, err in run_tools(cmds)]
        futures = [_POOL.submit(one, b) for b in self.pair]
        return futures[0].result(), futures[1].result()

    def run(self) -> list[str]:
        kw, ka = self.results()
        for (rc, cmd), a, b in zip(self.steps, kw, ka):
            assert a == b, f"{' '.join(cmd)}\n--- kwire ---\n{a}\n--- kafka ---\n{b}"
            assert a[0] == rc, (cmd, a)
        return [a[1] for a in kw]


# ---------------------------------------------------------------------------------------- topics

def test_kafka_topics(pair):
    st = Steps(pair)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt1", "--partitions", "3",
            "--replication-factor", "1", "--config", "retention.ms=1000000", "--config", "cleanup.policy=compact")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt2")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt2", rc=1)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt3", "--if-not-exists",
            "--replication-factor", "2", rc=1)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt4", "--config",
            "no.such.key=1", rc=1)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--alter", "--topic", "tt1", "--partitions", "5")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--alter", "--topic", "tt1", "--partitions", "2",
            rc=1)
    i0 = st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topic", "tt1")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topic", "tt.*",
            "--exclude-internal")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--under-replicated-partitions")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--unavailable-partitions")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topics-with-overrides",
            "--topic", "tt.*")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--delete", "--topic", "tt2")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--delete", "--topic", "nosuch", rc=1)
    i1 = st.same("kafka-topics", "--bootstrap-server", "{B}", "--list", "--topic", "tt.*")
    outs = st.run()
    assert "PartitionCount: 5" in outs[i0] and "retention.ms=1000000" in outs[i0], outs[i0]
    assert outs[i1].split() == ["tt1"], outs[i1]


# --------------------------------------------------------------------------------------- configs

def test_kafka_configs_topics_and_brokers(pair):
    st = Steps(pair)
    cfg = ("kafka-configs", "--bootstrap-server", "{B}")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "ct1", "--config",
            "cleanup.policy=compact")
    st.same(*cfg, "--alter", "--entity-type", "topics", "--entity-name", "ct1",
            "--add-config", "retention.ms=5000,max.message.bytes=2000", "--delete-config", "cleanup.policy")
    i0 = st.same(*cfg, "--describe", "--entity-type", "topics", "--entity-name", "ct1")
    st.same(*cfg, "--describe", "--entity-type", "topics", "--entity-name", "ct1", "--all")
    st.same(*cfg, "--alter", "--entity-type", "topics", "--entity-name", "ct1", "--add-config",
            "retention.ms=abc", rc=1)
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
            "log.cleaner.threads=2")
    i1 = st.same(*cfg, "--describe", "--entity-type", "brokers", "--entity-default")
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
            "log.cleaner.threads=3")
    i2 = st.same(*cfg, "--describe", "--entity-type", "brokers", "--entity-name", "1")
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--delete-config",
            "log.cleaner.threads")
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config",
            "log.cleaner.threads")
    st.same(*cfg, "--describe", "--entity-type", "brokers", "--entity-default")
    outs = st.run()
    assert "retention.ms=5000" in outs[i0] and "cleanup.policy" not in outs[i0], outs[i0]
    assert "log.cleaner.threads=2" in outs[i1], outs[i1]
    assert "log.cleaner.threads=3" in outs[i2], outs[i2]


def test_kafka_configs_users_quotas_groups(pair):
    st = Steps(pair)
    cfg = ("kafka-configs", "--bootstrap-server", "{B}")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "carol", "--add-config",
            "SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=b]", rc=1)
    i0 = st.same(*cfg, "--describe", "--entity-type", "users", "--entity-name", "alice")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients",
            "--entity-name", "c1", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    st.same(*cfg, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
            "request_percentage=50")
    i1 = st.same(*cfg, "--describe", "--entity-type", "users", "--entity-name", "bob", "--entity-type",
            "clients", "--entity-name", "c1")
    st.same(*cfg, "--describe", "--entity-type", "clients", "--entity-default")
    st.same(*cfg, "--describe", "--entity-type", "users")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config",
            "SCRAM-SHA-256")
    st.same(*cfg, "--describe", "--entity-type", "users", "--entity-name", "alice")
    st.same(*cfg, "--alter", "--entity-type", "groups", "--entity-name", "cg1", "--add-config",
            "consumer.session.timeout.ms=50000")
    i2 = st.same(*cfg, "--describe", "--entity-type", "groups", "--entity-name", "cg1")
    st.same(*cfg, "--alter", "--entity-type", "groups", "--entity-name", "cg1", "--add-config",
            "consumer.session.timeout.ms=1", rc=1)
    outs = st.run()
    assert "SCRAM-SHA-256=iterations=8192" in outs[i0], outs[i0]
    assert "producer_byte_rate=1024.0" in outs[i1], outs[i1]
    assert "consumer.session.timeout.ms=50000" in outs[i2], outs[i2]
