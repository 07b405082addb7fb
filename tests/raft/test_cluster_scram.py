"""SCRAM credentials in a three-node cluster: AlterUserScramCredentials sent to a node that is
not the controller is committed through the active controller (UserScramCredentialRecord);
every node's SASL listener then authenticates the user (no JAAS users at all: SCRAM users
come only from the quorum, as in Kafka), and a deletion through yet another node refuses it
everywhere."""
from __future__ import annotations

import os

import pytest

from kwire.codec.apis import api
from kwire.security.sasl import salted_password
from kwire.testing.broker import free_port
from tests.security.clients import confluent_roundtrip, login_error

from .cluster import Cluster, call, wait_for
from .test_ctl_replication import controller_of, create

pytestmark = pytest.mark.slow


def _alter(port, deletions=(), upsertions=()):
    R = api("AlterUserScramCredentials").request
    D, U = R.struct("ScramCredentialDeletion"), R.struct("ScramCredentialUpsertion")
    r = call(port, "AlterUserScramCredentials", 0, deletions=[D(name=n, mechanism=m) for n, m in deletions],
             upsertions=[U(name=n, mechanism=m, iterations=i, salt=s, salted_password=p)
                         for n, m, i, s, p in upsertions])
    return {x.user: x.error_code for x in r.results}


def _described(port):
    r = call(port, "DescribeUserScramCredentials", 0, users=None)
    return {x.user: [(c.mechanism, c.iterations) for c in x.credential_infos] for x in r.results}


def _authenticates(sasl_port: int, user: str, password: str, mech: str) -> str | None:
    """None when ``user`` authenticates on ``sasl_port``; else librdkafka's error."""
    return login_error({"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password})


def test_scram_user_created_on_one_node_authenticates_on_every_node(tmp_path):
    cluster = Cluster(str(tmp_path))
    sasl = {i: free_port() for i in cluster.nodes}
    try:
        for i, n in cluster.nodes.items():
            n.start(cluster.voters, (
                "--override", f"listeners=PLAINTEXT://127.0.0.1:{n.port},SASL_PLAINTEXT://127.0.0.1:{sasl[i]}",
                "--override", "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
                "--override", "group.initial.rebalance.delay.ms=0"))
        for n in cluster.nodes.values():
            cluster.wait_serving(n, 30)
        ports = {i: n.port for i, n in cluster.nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        first, second = [i for i in ports if i != ctl]    # nodes that forward to the controller
        salt = os.urandom(24)
        assert _alter(ports[first], upsertions=[
            ("ivy", 2, 8192, salt, salted_password("SCRAM-SHA-512", "ivy-pw", salt, 8192)),
            ("jon", 1, 4096, salt, salted_password("SCRAM-SHA-256", "jon-pw", salt, 4096))]) == {"ivy": 0, "jon": 0}
        for port in ports.values():
            assert wait_for(lambda p=port: _described(p) == {"ivy": [(2, 8192)], "jon": [(1, 4096)]}, 15)
        for i in ports:
            assert _authenticates(sasl[i], "ivy", "ivy-pw", "SCRAM-SHA-512") is None, i
        assert "Invalid user credentials" in _authenticates(sasl[ctl], "ivy", "wrong", "SCRAM-SHA-512")
        assert create(ports[ctl], "scram-cluster", 3, 3).error_code == 0
        conf = {"bootstrap.servers": f"127.0.0.1:{sasl[second]}", "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "jon", "sasl.password": "jon-pw"}
        got = confluent_roundtrip(conf, "scram-cluster", 6)      # leaders on all three nodes
        assert sorted(v[:4] for v in got) == [f"{i:04d}".encode() for i in range(6)]

        assert _alter(ports[second], deletions=[("ivy", 2)]) == {"ivy": 0}
        for i, port in ports.items():
            assert wait_for(lambda p=port: "ivy" not in _described(p), 15)
            assert "Invalid user credentials" in _authenticates(sasl[i], "ivy", "ivy-pw", "SCRAM-SHA-512")
        assert _alter(ports[first], deletions=[("ivy", 2)]) == {"ivy": 91}     # RESOURCE_NOT_FOUND
    finally:
        cluster.stop()
