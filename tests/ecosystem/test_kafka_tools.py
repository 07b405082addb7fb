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
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.ecosystem.conftest import run_tool

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


def run_both(pair, tool: str, *args: str, input: str | None = None, timeout: float = 120.0):
    """The command on kwire and on Kafka at once ({B} in an argument is the cluster's bootstrap);
    returns ((rc, stdout, stderr) on kwire, the same on Kafka), masked."""
    def one(bootstrap: str) -> tuple[int, str, str]:
        res: subprocess.CompletedProcess = run_tool(
            tool, *(a.replace("{B}", bootstrap) for a in args), input=input, timeout=timeout)
        return res.returncode, _masked(res.stdout, bootstrap), _masked(res.stderr, bootstrap)
    futures = [_POOL.submit(one, b) for b in pair]
    return futures[0].result(), futures[1].result()


def same(pair, tool: str, *args: str, input: str | None = None, rc: int = 0) -> str:
    """Runs the command on both clusters, asserts identical masked results and the exit code;
    returns the (common) stdout."""
    kw, ka = run_both(pair, tool, *args, input=input)
    assert kw == ka, f"{tool} {' '.join(args)}\n--- kwire ---\n{kw}\n--- kafka ---\n{ka}"
    assert kw[0] == rc, kw
    return kw[1]


# ---------------------------------------------------------------------------------------- topics
def test_kafka_topics(pair):
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt1", "--partitions", "3",
         "--replication-factor", "1", "--config", "retention.ms=1000000", "--config", "cleanup.policy=compact")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt2")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt2", rc=1)
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt3", "--if-not-exists",
         "--replication-factor", "2", rc=1)
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt4", "--config",
         "no.such.key=1", rc=1)
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--alter", "--topic", "tt1", "--partitions", "5")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--alter", "--topic", "tt1", "--partitions", "2",
         rc=1)
    out = same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topic", "tt1")
    assert "PartitionCount: 5" in out and "retention.ms=1000000" in out, out
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topic", "tt.*",
         "--exclude-internal")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--describe", "--under-replicated-partitions")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--describe", "--unavailable-partitions")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topics-with-overrides",
         "--topic", "tt.*")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--delete", "--topic", "tt2")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--delete", "--topic", "nosuch", rc=1)
    out = same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--list", "--topic", "tt.*")
    assert out.split() == ["tt1"], out


# --------------------------------------------------------------------------------------- configs
def test_kafka_configs_topics_and_brokers(pair):
    cfg = ("kafka-configs", "--bootstrap-server", "{B}")
    same(pair, "kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "ct1", "--config",
         "cleanup.policy=compact")
    same(pair, *cfg, "--alter", "--entity-type", "topics", "--entity-name", "ct1",
         "--add-config", "retention.ms=5000,max.message.bytes=2000", "--delete-config", "cleanup.policy")
    out = same(pair, *cfg, "--describe", "--entity-type", "topics", "--entity-name", "ct1")
    assert "retention.ms=5000" in out and "cleanup.policy" not in out, out
    same(pair, *cfg, "--describe", "--entity-type", "topics", "--entity-name", "ct1", "--all")
    same(pair, *cfg, "--alter", "--entity-type", "topics", "--entity-name", "ct1", "--add-config",
         "retention.ms=abc", rc=1)
    same(pair, *cfg, "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
         "log.cleaner.threads=2")
    out = same(pair, *cfg, "--describe", "--entity-type", "brokers", "--entity-default")
    assert "log.cleaner.threads=2" in out, out
    same(pair, *cfg, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
         "log.cleaner.threads=3")
    out = same(pair, *cfg, "--describe", "--entity-type", "brokers", "--entity-name", "1")
    assert "log.cleaner.threads=3" in out, out
    same(pair, *cfg, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--delete-config",
         "log.cleaner.threads")
    same(pair, *cfg, "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config",
         "log.cleaner.threads")
    same(pair, *cfg, "--describe", "--entity-type", "brokers", "--entity-default")


def test_kafka_configs_users_quotas_groups(pair):
    cfg = ("kafka-configs", "--bootstrap-server", "{B}")
    same(pair, *cfg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
         "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    same(pair, *cfg, "--alter", "--entity-type", "users", "--entity-name", "carol", "--add-config",
         "SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=b]", rc=1)
    out = same(pair, *cfg, "--describe", "--entity-type", "users", "--entity-name", "alice")
    assert "SCRAM-SHA-256=iterations=8192" in out, out
    same(pair, *cfg, "--alter", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients",
         "--entity-name", "c1", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    same(pair, *cfg, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
         "request_percentage=50")
    out = same(pair, *cfg, "--describe", "--entity-type", "users", "--entity-name", "bob", "--entity-type",
               "clients", "--entity-name", "c1")
    assert "producer_byte_rate=1024.0" in out, out
    same(pair, *cfg, "--describe", "--entity-type", "clients", "--entity-default")
    same(pair, *cfg, "--describe", "--entity-type", "users")
    same(pair, *cfg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config",
         "SCRAM-SHA-256")
    same(pair, *cfg, "--describe", "--entity-type", "users", "--entity-name", "alice")
    same(pair, *cfg, "--alter", "--entity-type", "groups", "--entity-name", "cg1", "--add-config",
         "consumer.session.timeout.ms=50000")
    out = same(pair, *cfg, "--describe", "--entity-type", "groups", "--entity-name", "cg1")
    assert "consumer.session.timeout.ms=50000" in out, out
    same(pair, *cfg, "--alter", "--entity-type", "groups", "--entity-name", "cg1", "--add-config",
         "consumer.session.timeout.ms=1", rc=1)
