"""A three-node cluster whose inter-broker listener is SASL_SSL (SCRAM-SHA-512, the broker user
in super.users) and whose controller listener is SSL with mutual TLS (each node's certificate
subject in super.users), clients on a PLAINTEXT listener, an authorizer on.

Followers fetch as User:broker (CLUSTER_ACTION passes: the ISR stays whole) while an ordinary
principal's replica fetch is refused; a topic with RF=3 takes acks=all writes, the leader is
killed, and every acknowledged record is read back from the new leader; a node restarted with
the wrong inter-broker password stays out of the ISR and says why in one line naming the peer,
while the others serve. Processes as the other cluster tests (tests/raft/cluster.py).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing.broker import free_port
from kwire.testing.certs import CertificateAuthority
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until as _wait_until

# one cluster for the module's tests: on one xdist worker, in file order
pytestmark = [pytest.mark.slow, pytest.mark.timeout(120), pytest.mark.xdist_group("secured_cluster")]


def wait_until(predicate, timeout: float) -> object:
    """Poll a cluster whose nodes may be down or not agreed yet."""
    return _wait_until(predicate, timeout, ignore=(OSError, ConnectionError, KeyError, IndexError))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
        'password="{password}" user_broker="broker-secret";')


class Node:
    def __init__(self, node_id: int, base: str, ca: CertificateAuthority):
        self.node_id = node_id
        self.client, self.broker, self.controller = free_port(), free_port(), free_port()
        self.secure = free_port()       # SASL_SSL for clients (the admin commands' --command-config)
        self.dir = os.path.join(base, f"node{node_id}")
        self.cert = ca.issue(f"node{node_id}", server=True, client=True, file_name=f"node{node_id}")
        self.ca = ca
        self.proc: subprocess.Popen | None = None

    def properties(self, voters: str, password: str) -> str:
        return "\n".join([
            f"node.id={self.node_id}", "process.roles=broker,controller",
            f"listeners=CLIENT://127.0.0.1:{self.client},BROKER://127.0.0.1:{self.broker},"
            f"CONTROLLER://127.0.0.1:{self.controller},SECURE://127.0.0.1:{self.secure}",
            "listener.security.protocol.map=CLIENT:PLAINTEXT,BROKER:SASL_SSL,CONTROLLER:SSL,SECURE:SASL_SSL",
            "listener.name.secure.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
            "listener.name.secure.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            'required user_admin="admin-secret";',
            "inter.broker.listener.name=BROKER", "controller.listener.names=CONTROLLER",
            f"controller.quorum.voters={voters}", f"log.dirs={self.dir}", "metrics.listen=",
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
            "listener.name.broker.sasl.enabled.mechanisms=SCRAM-SHA-512",
            "listener.name.broker.scram-sha-512.sasl.jaas.config=" + JAAS.format(password=password),
            "ssl.keystore.type=PEM", f"ssl.keystore.location={self.cert.keystore}",
            "ssl.truststore.type=PEM", f"ssl.truststore.location={self.ca.ca_file}",
            "listener.name.controller.ssl.client.auth=required",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:broker;User:CN=node1;User:CN=node2;User:CN=node3;User:admin",
            "allow.everyone.if.no.acl.found=true",
            "broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=500",
            "replica.fetch.backoff.ms=200", "transaction.state.log.num.partitions=1", ""])

    def start(self, voters: str, password: str = "broker-secret") -> None:
        path = self.dir + ".properties"
        with open(path, "w") as f:
            f.write(self.properties(voters, password))
        self.log = open(self.dir + ".log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--config", path], cwd=ROOT,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def log_text(self) -> str:
        with open(self.dir + ".log", "rb") as f:
            return f.read().decode(errors="replace")

    def wait_serving(self, timeout: float = 40.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.log_text()[-3000:]
            try:
                c = WireClient(f"127.0.0.1:{self.client}", 1.0)
                c.request("ApiVersions", 0)
                c.close()
                return
            except (OSError, ConnectionError):
                time.sleep(0.05)
        raise TimeoutError(f"node {self.node_id} not serving:\n{self.log_text()[-3000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("secured"))
    ca = CertificateAuthority(os.path.join(base, "tls"))
    nodes = {i: Node(i, base, ca) for i in (1, 2, 3)}
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller}" for n in nodes.values())
    for n in nodes.values():
        n.start(voters)
    try:
        for n in nodes.values():
            n.wait_serving()
        yield nodes, voters
    finally:
        for n in nodes.values():
            n.kill()


def bootstrap(nodes) -> str:
    return ",".join(f"127.0.0.1:{n.client}" for n in nodes.values() if n.proc is not None)


def call(node: Node, api_name: str, version: int, **fields):
    c = WireClient(f"127.0.0.1:{node.client}", 10.0)
    try:
        return c.request(api_name, version, **fields)
    finally:
        c.close()


def partition_state(node: Node, topic: str) -> dict[int, tuple[int, list[int]]]:
    """{partition: (leader, ISR)} as Metadata on ``node`` answers."""
    r = call(node, "Metadata", 9, topics=[api("Metadata").request.struct("MetadataRequestTopic")(name=topic)],
             allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return {p.partition_index: (p.leader_id, sorted(p.isr_nodes)) for t in r.topics for p in t.partitions}


def test_admin_commands_on_a_sasl_ssl_listener_with_command_config(cluster, tmp_path, capsys):
    """kwire's admin commands take Kafka's --command-config (security.protocol, sasl.*, PEM
    trust store) and manage the cluster through its SASL_SSL listener; a client without it, a
    wrong password and an untrusted certificate are one line each, exit code 1."""
    from kwire.cli import main

    nodes, _ = cluster
    ca = nodes[1].ca
    secure = ",".join(f"127.0.0.1:{n.secure}" for n in nodes.values())

    def props(name: str, **keys: str) -> str:
        path = tmp_path / name
        path.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
        return str(path)

    tls = {"security.protocol": "SASL_SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": ca.ca_file}
    admin = props("admin.properties", **tls, **{"sasl.mechanism": "PLAIN", "sasl.jaas.config":
                  'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                  'password="admin-secret";'})

    def kwire(*argv: str, config: str | None = admin) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main([*argv, "--bootstrap-server", secure, *(["--command-config", config] if config else []),
                   "--timeout", "10"])
        out, err = capsys.readouterr()
        return rc, out, err

    assert kwire("topics", "--create", "--topic", "cli-secured", "--partitions", "3", "--replication-factor", "3") \
        == (0, "Created topic cli-secured.\n", "")
    rc, out, _ = kwire("topics", "--describe", "--topic", "cli-secured")
    assert rc == 0 and "PartitionCount: 3\tReplicationFactor: 3" in out, out
    # a SCRAM user made through the secured listener logs in with SCRAM-SHA-256
    rc, out, err = kwire("configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
                         "--add-config", "SCRAM-SHA-256=[iterations=4096,password=alice-secret]")
    assert rc == 0, err
    alice = props("alice.properties", **tls, **{"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config":
                  'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
                  'password="alice-secret";'})
    rc, out, err = wait_until(lambda: (r := kwire("topics", "--list", config=alice))[0] == 0 and r, 10)
    assert "cli-secured" in out.split(), (out, err)
    rc, out, err = kwire("groups", "--list")
    assert rc == 0, err

    # what goes wrong says so in one line
    rc, out, err = kwire("topics", "--list", config=None)
    assert rc == 1 and err.count("\n") == 1 and "--command-config with security.protocol=SSL" in err, err
    wrong = props("wrong.properties", **tls, **{"sasl.mechanism": "PLAIN", "sasl.jaas.config":
                  'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                  'password="nope";'})
    rc, out, err = kwire("topics", "--list", config=wrong)
    assert rc == 1 and err.count("\n") == 1 and "login as 'admin'" in err and "failed" in err, err
    untrusted = props("untrusted.properties", **{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                                 "sasl.jaas.config": 'org.apache.kafka.common.security.plain.'
                                                 'PlainLoginModule required username="admin" password="x";'})
    rc, out, err = kwire("topics", "--list", config=untrusted)
    assert rc == 1 and err.count("\n") == 1 and "certificate verify failed" in err, err
    jks = props("jks.properties", **{"security.protocol": "SSL", "ssl.truststore.location": "/x/truststore.jks"})
    rc, out, err = kwire("topics", "--list", config=jks)
    assert rc == 2 and "ssl.truststore.type=JKS cannot be read here" in err, err


def test_secured_inter_broker_and_controller_listeners(cluster):
    nodes, voters = cluster
    any_node = nodes[1]
    # the cluster resource gets ACLs: an ordinary principal (here User:ANONYMOUS) may CREATE and
    # DESCRIBE there, but not CLUSTER_ACTION; topics have none (allow.everyone.if.no.acl.found)
    C = api("CreateAcls").request.struct("AclCreation")
    r = call(any_node, "CreateAcls", 3, creations=[
        C(resource_type=4, resource_name="kafka-cluster", resource_pattern_type=3, principal="User:ANONYMOUS",
          host="*", operation=op, permission_type=3) for op in (7, 8)])       # CREATE, DESCRIBE
    assert [x.error_code for x in r.results] == [0, 0]
    assert wait_until(lambda: all(len(call(n, "DescribeAcls", 3, resource_type_filter=1, resource_name_filter=None,
                                                 pattern_type_filter=1, principal_filter=None, host_filter=None,
                                                 operation=1, permission_type=1).resources) == 1
                                  for n in nodes.values()), 15)

    admin = AdminClient({"bootstrap.servers": bootstrap(nodes)})
    admin.create_topics([NewTopic("secured", 1, 3)])["secured"].result(20)
    p = ck.Producer({"bootstrap.servers": bootstrap(nodes), "acks": "all", "linger.ms": 2})
    acked = []
    for i in range(500):
        p.produce("secured", value=b"v%d" % i,
                  on_delivery=lambda err, m: acked.append(m.value()) if err is None else None)
        p.poll(0)
    assert p.flush(30) == 0 and len(acked) == 500
    # followers fetch through the SASL_SSL listener as User:broker: the ISR is whole
    assert wait_until(lambda: list(partition_state(any_node, "secured").values())[0][1] == [1, 2, 3], 15)

    # an ordinary principal's replica fetch is refused (CLUSTER_ACTION)
    leader = partition_state(any_node, "secured")[0][0]
    F = api("Fetch").request
    topic_id = next(t.topic_id for t in call(nodes[leader], "Metadata", 12, topics=None,
                                             allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=False).topics if t.name == "secured")
    fr = call(nodes[leader], "Fetch", 15, replica_state=F.struct("ReplicaState")(replica_id=2, replica_epoch=1),
              max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
              topics=[F.struct("FetchTopic")(topic_id=topic_id, partitions=[F.struct("FetchPartition")(
                  partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                  partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")
    assert [pd.error_code for t in fr.responses for pd in t.partitions] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]

    # transaction markers travel the SASL_SSL listener too: the coordinator writes them to a
    # partition another broker leads, and a read_committed consumer sees the records only then
    tp = ck.Producer({"bootstrap.servers": bootstrap(nodes), "transactional.id": "secured-tx"})
    tp.init_transactions(20)
    coordinator = call(any_node, "FindCoordinator", 4, key_type=1, coordinator_keys=["secured-tx"]) \
        .coordinators[0].node_id
    other = next(i for i in nodes if i != coordinator)
    admin.create_topics([NewTopic("secured-tx", 1, -1, replica_assignment=[[other, coordinator]])])["secured-tx"] \
        .result(20)
    assert wait_until(lambda: partition_state(any_node, "secured-tx")[0][0] == other, 10)
    tp.begin_transaction()
    for i in range(10):
        tp.produce("secured-tx", b"t%d" % i)
    tp.commit_transaction(20)
    rc = ck.Consumer({"bootstrap.servers": bootstrap(nodes), "group.id": "tx-reader", "isolation.level":
                      "read_committed", "enable.auto.commit": False})
    rc.assign([ck.TopicPartition("secured-tx", 0, 0)])
    seen = []
    deadline = time.monotonic() + 15
    while len(seen) < 10 and time.monotonic() < deadline:
        m = rc.poll(0.5)
        if m is not None and m.error() is None:
            seen.append(m.value())
    rc.close()
    assert seen == [b"t%d" % i for i in range(10)]

    # the leader dies; a new one (from the ISR) serves every acknowledged record
    nodes[leader].kill()
    rest = [n for n in nodes.values() if n.proc is not None]
    assert wait_until(lambda: partition_state(rest[0], "secured")[0][0] not in (-1, leader), 20)
    c = ck.Consumer({"bootstrap.servers": bootstrap(nodes), "group.id": "secured-reader",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([ck.TopicPartition("secured", 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 500 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert sorted(got) == sorted(acked)

    # back with the wrong inter-broker password: it rejoins the quorum (mutual TLS) but cannot
    # fetch, stays out of the ISR and says why, naming the peer; the others serve
    bad = nodes[leader]
    bad.start(voters, password="not-the-password")
    bad.wait_serving()
    new_leader = partition_state(rest[0], "secured")[0][0]
    assert wait_until(lambda: re.search(rf"cannot fetch from broker {new_leader}: inter-broker listener BROKER "
                                        rf".*authentication failed", bad.log_text()), 15), bad.log_text()[-3000:]
    time.sleep(1.0)
    leader_now, isr = partition_state(rest[0], "secured")[0]
    assert bad.node_id not in isr and leader_now == new_leader
    p = ck.Producer({"bootstrap.servers": bootstrap(nodes), "acks": "all"})
    more = []
    p.produce("secured", b"after", on_delivery=lambda err, m: more.append(err))
    assert p.flush(15) == 0 and more == [None]
    lines = [line for line in bad.log_text().splitlines() if f"cannot fetch from broker {new_leader}" in line]
    assert len(lines) == 1      # said once, not at every retry
    for n in rest:              # a peer that went away is a lost connection, not a refused one
        assert "ERROR" not in n.log_text(), n.log_text()[-3000:]
