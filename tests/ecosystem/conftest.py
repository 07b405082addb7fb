"""The JVM world against kwire and against Apache Kafka side by side (issue: Kafka's own
command-line tools, Kafka Streams, MirrorMaker 2, Spark's Kafka connector, Kafka Connect).

Each tool runs as Kafka's ``bin/kafka-*.sh`` scripts run it: ``java -cp libs/* <main class>``
with make kafka's jars, a small heap and the serial GC. These tests start JVMs by the dozen and
take minutes: they are not part of ``make test`` (its ten-minute budget); ``make ecosystem`` (or
``pytest tests/ecosystem`` after ``make kafka``) runs them, and a missing JDK or jar fails them.

Environment flags: ``STREAMS_N`` (test_kafka_streams.py's input lines, default 4,000; the issue's
100,000 passed, see its docstring); ``KWIRE_SPARK_FAILOVER=0`` (leaves out test_spark_kafka.py's
broker failover on three kwire nodes, minutes of its own; it runs by default).

Fixtures: ``kwire_one`` (one kwire node, a subprocess) and ``kafka_one`` (one Apache Kafka
node), both module-scoped and stopped by PID; ``run_tool(main, *args)`` runs a tool's main class
and returns its CompletedProcess."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

from kwire.testing import Broker
from kwire.testing.apache_kafka import ApacheKafka, java_bin, jvm_flags, kafka_classpath

# Kafka's main classes behind its scripts (bin/kafka-*.sh -> kafka-run-class.sh <class>)
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
}


def run_tool(tool: str, *args: str, timeout: float = 120.0, input: str | None = None,
             heap: str = "256m") -> subprocess.CompletedProcess:
    """``bin/<tool>.sh args...``: the tool's main class in a JVM of its own (stdout, stderr as text)."""
    main = TOOLS.get(tool, tool)
    env = dict(os.environ, KAFKA_LOG4J_OPTS="")
    return subprocess.run([java_bin(), *jvm_flags(heap, True), "-cp", kafka_classpath(), main, *args],
                          capture_output=True, text=True, timeout=timeout, input=input, env=env)


@pytest.fixture(scope="module")
def kwire_one():
    with Broker(mode="process", overrides={"kwire.emulate.kafka.version": "4.3"}) as b:
        yield b


@pytest.fixture(scope="module")
def kafka_one():
    with ApacheKafka(nodes=1) as k:
        yield k


_BATCH_SOURCE = os.path.join(os.path.dirname(__file__), "java", "ToolBatch.java")
_batch_classes: str | None = None


def _tool_batch_classes() -> str:
    """ToolBatch.java compiled once per session (javac, no Kafka classes needed: it loads them by name)."""
    global _batch_classes
    if _batch_classes is None:
        out = tempfile.mkdtemp(prefix="kwire-toolbatch-")
        javac = os.path.join(os.path.dirname(java_bin()), "javac")
        subprocess.run([javac if os.path.exists(javac) else "javac", "-d", out, _BATCH_SOURCE],
                       check=True, capture_output=True, timeout=120)
        _batch_classes = out
    return _batch_classes


def run_tools(commands: list[tuple[str, ...]], *, timeout: float = 300.0,
              heap: str = "384m") -> list[tuple[int, str, str]]:
    """Several tool commands ((tool, *args) each) one after the other in ONE JVM (ToolBatch: Kafka's
    Exit procedures turned into exceptions): [(exit code, stdout, stderr)] in order."""
    work = tempfile.mkdtemp(prefix="kwire-tools-")
    try:
        script = os.path.join(work, "commands")
        with open(script, "w") as f:
            for tool, *args in commands:
                assert not any("\t" in a or "\n" in a for a in args), args
                f.write("\t".join([TOOLS.get(tool, tool), *args]) + "\n")
        env = dict(os.environ, KAFKA_LOG4J_OPTS="")
        res = subprocess.run([java_bin(), *jvm_flags(heap, True), "-cp",
                              _tool_batch_classes() + os.pathsep + kafka_classpath(), "ToolBatch", work, script],
                             capture_output=True, text=True, timeout=timeout, env=env)
        results = []
        for i in range(len(commands)):
            try:
                with open(os.path.join(work, f"{i}.rc")) as f:
                    rc = int(f.read())
            except FileNotFoundError:
                raise AssertionError(f"ToolBatch stopped before command {i} {commands[i]} (exit {res.returncode}):"
                                     f"\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}") from None
            with open(os.path.join(work, f"{i}.out")) as f:
                out = f.read()
            with open(os.path.join(work, f"{i}.err")) as f:
                err = f.read()
            results.append((rc, out, err))
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------ secured and three-node pairs
# Fixtures for the side-by-side tool tests beyond one PLAINTEXT node: each yields a ``Side`` per
# cluster (kwire first, Kafka second), whose ``subs`` fill the placeholders of a tool command
# ("{B}" the bootstrap, "{admin}" / "{alice}" a --command-config file).
from dataclasses import dataclass, field  # noqa: E402


@dataclass
class Side:
    name: str                                     # "kwire" or "kafka"
    bootstrap: str
    subs: dict = field(default_factory=dict)      # placeholder -> value, "{B}" included
    cluster: object = None                        # the kwire Cluster / Broker or the ApacheKafka

    def fill(self, arg: str) -> str:
        for k, v in self.subs.items():
            arg = arg.replace(k, v)
        return arg


# SASL_SSL with PLAIN on both, Kafka's StandardAuthorizer, no ACL at first. ``admin`` is a super
# user; ANONYMOUS too, because Kafka's controller listener (and kwire's harness listener, which no
# tool uses) is PLAINTEXT and Kafka's broker registers and heartbeats on it as ANONYMOUS.
SECURED_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SECURED_OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
    "sasl.enabled.mechanisms": "PLAIN",
}


def _command_config(path: str, user: str, ca_file: str) -> str:
    """A --command-config file: SASL_SSL, PLAIN as ``user``, the cluster's CA as a PEM truststore."""
    with open(path, "w") as f:
        f.write("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{user}" password="{SECURED_USERS[user]}";\n'
                f"ssl.truststore.type=PEM\nssl.truststore.location={ca_file}\n")
    return path


@pytest.fixture(scope="module")
def secured_pair(tmp_path_factory):
    from kwire.testing.certs import CertificateAuthority
    from kwire.testing.secured import jaas_users

    work = tmp_path_factory.mktemp("secured")
    kw = Broker(mode="process", security="SASL_SSL", users=SECURED_USERS,
                overrides={**SECURED_OVERRIDES, "kwire.emulate.kafka.version": "4.3"})
    ca = CertificateAuthority(str(work / "kafka-tls"))
    server = ca.issue("localhost", server=True, file_name="broker")
    jaas = jaas_users(SECURED_USERS).replace(" required ", ' required username="admin" password="admin-secret" ')
    ka = ApacheKafka(nodes=1, heap="256m", listener="SASL_SSL", overrides={
        **SECURED_OVERRIDES, "ssl.keystore.type": "PEM", "ssl.keystore.location": server.keystore,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": ca.ca_file,
        # Kafka's broker talks to itself on this listener (the transaction verification), as admin
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas})
    with kw, ka:
        sides = []
        for name, cluster, ca_file in (("kwire", kw, kw.tls.ca_file), ("kafka", ka, ca.ca_file)):
            subs = {"{B}": cluster.bootstrap_servers}
            for user in SECURED_USERS:
                subs["{%s}" % user] = _command_config(str(work / f"{name}-{user}.properties"), user, ca_file)
            sides.append(Side(name, cluster.bootstrap_servers, subs, cluster))
        yield sides


@pytest.fixture(scope="module")
def three_pair(tmp_path_factory):
    """Three kwire nodes (tests/raft/cluster.py: ``kwire serve`` processes, each a voter) and three
    Apache Kafka nodes (combined broker+controller), node ids 1-3 on both."""
    from tests.raft.cluster import Cluster

    kw = Cluster(str(tmp_path_factory.mktemp("kwire3")), 3,
                 extra_args=("--override", "kwire.emulate.kafka.version=4.3"))
    ka = ApacheKafka(nodes=3, heap="256m")
    try:
        kw.start()
        ka.start()
        kw_boot = ",".join(f"127.0.0.1:{n.port}" for n in kw.nodes.values())
        yield [Side("kwire", kw_boot, {"{B}": kw_boot}, kw), Side("kafka", ka.bootstrap_servers,
                                                               {"{B}": ka.bootstrap_servers}, ka)]
    finally:
        try:
            ka.close()
        finally:
            kw.stop()
