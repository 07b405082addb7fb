"""The controller listener secured, in process: kwire's ControllerServer serves a SASL_PLAINTEXT /
SSL controller listener and kwire's own PeerLink connects to it (the two halves the cluster
test uses, one at a time): PLAIN and both SCRAMs, wrong passwords and mechanisms refused with
one line naming the peer, requests before authentication closed, and the authorizer asking
CLUSTER_ACTION / DESCRIBE on the cluster of the principal. Plus the start-up checks of
kwire.security.peers."""
from __future__ import annotations

import functools
from types import SimpleNamespace as NS

import pytest
import trio

from kwire.codec.apis import api
from kwire.config import BrokerConfig
from kwire.connection import KafkaClientConnection
from kwire.listeners import ClientListener, Endpoint
from kwire.metadata.controller_server import ControllerServer
from kwire.raft.transport import RaftTransport
from kwire.security.authorizer import Authorizer, AclStore
from kwire.security.edge import for_listener
from kwire.security.peers import PeerAuthenticationFailed, PeerConfigError, PeerLink, plan_peers
from kwire.security.peers import _round_trip
from kwire.testing.certs import CertificateAuthority

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="{u}" password="{p}" '
        'user_ctl="ctl-secret" user_alice="alice-secret";')


class _Driver:
    node_id = 1
    is_leader = True
    transport = reply_router = None

    def describe_quorum(self):
        return {"leader_id": 1, "leader_epoch": 3, "high_watermark": 10, "current_voters": [], "observers": []}


def _config(**props) -> BrokerConfig:
    return BrokerConfig.from_properties("\n".join(f"{k}={v}" for k, v in props.items()))


async def _describe_quorum(link: PeerLink, port: int):
    stream = await link.connect("127.0.0.1", port, timeout=5.0)
    try:
        a = api("DescribeQuorum")
        body = a.request.cls(topics=[a.request.struct("TopicData")(
            topic_name="__cluster_metadata", partitions=[a.request.struct("PartitionData")(partition_index=0)])])
        return await _round_trip(stream, KafkaClientConnection(client_id="t"), a, 1, body)
    finally:
        await trio.aclose_forcefully(stream)


def _serve_and(config, protocol: str, authorizer, fn):
    """Run a controller listener with ``config``'s settings and call ``fn(port)`` against it."""
    sec = for_listener(config, ClientListener(Endpoint("CONTROLLER", "127.0.0.1", 0), protocol))

    async def main():
        raft = RaftTransport(_Driver(), {}, link=PeerLink("controller"))
        server = ControllerServer(raft, listener_security=sec, authorizer=authorizer)
        async with trio.open_nursery() as n:
            listeners = await n.start(functools.partial(trio.serve_tcp, server._handle, 0, host="127.0.0.1"))
            try:
                return await fn(listeners[0].socket.getsockname()[1])
            finally:
                n.cancel_scope.cancel()
    return trio.run(main)


@pytest.mark.slow
@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_controller_listener(mech):
    cfg = _config(**{"listener.name.controller.sasl.jaas.config": JAAS.format(u="ctl", p="ctl-secret"),
                     "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"})
    authz = Authorizer(AclStore(), "User:ctl")
    good = PeerLink("controller", "CONTROLLER", "SASL_PLAINTEXT", None, mech, "ctl", "ctl-secret")
    wrong = PeerLink("controller", "CONTROLLER", "SASL_PLAINTEXT", None, mech, "ctl", "nope")
    ordinary = PeerLink("controller", "CONTROLLER", "SASL_PLAINTEXT", None, mech, "alice", "alice-secret")
    plaintext = PeerLink("controller")

    async def checks(port):
        r = await _describe_quorum(good, port)
        assert r.topics[0].partitions[0].leader_epoch == 3
        with pytest.raises(PeerAuthenticationFailed, match=rf"controller listener CONTROLLER .* at 127.0.0.1:{port}: "
                                                           rf"SASL {mech} authentication failed"):
            await _describe_quorum(wrong, port)
        for link in (ordinary, plaintext):   # authenticated without rights / not authenticated: closed
            with pytest.raises(trio.BrokenResourceError):
                await _describe_quorum(link, port)
    _serve_and(cfg, "SASL_PLAINTEXT", authz, checks)


@pytest.mark.slow
def test_mechanism_not_enabled_on_the_controller_listener():
    cfg = _config(**{"sasl.jaas.config": JAAS.format(u="ctl", p="ctl-secret"), "sasl.enabled.mechanisms": "PLAIN"})
    link = PeerLink("controller", "CONTROLLER", "SASL_PLAINTEXT", None, "SCRAM-SHA-512", "ctl", "ctl-secret")

    async def checks(port):
        with pytest.raises(PeerAuthenticationFailed, match="SCRAM-SHA-512 is not enabled there.*enabled: PLAIN"):
            await _describe_quorum(link, port)
    _serve_and(cfg, "SASL_PLAINTEXT", None, checks)


@pytest.mark.slow
def test_mutual_tls_controller_listener(tmp_path):
    ca = CertificateAuthority(str(tmp_path / "tls"))
    node = ca.issue("node1", server=True, client=True, file_name="node1")
    intruder = ca.issue("intruder", server=True, client=True, file_name="intruder")
    other_ca = CertificateAuthority(str(tmp_path / "other"))
    common = {"ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM", "ssl.truststore.location": ca.ca_file,
              "listener.name.controller.ssl.client.auth": "required"}
    server_cfg = _config(**common, **{"ssl.keystore.location": node.keystore})
    authz = Authorizer(AclStore(), "User:CN=node1")

    def link(keystore=None, trust=ca.ca_file):
        props = {**common, "ssl.truststore.location": trust}
        if keystore:
            props["ssl.keystore.location"] = keystore
        return plan_peers(_config(**props, **{"controller.listener.names": "CONTROLLER",
                                              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
                                              "listeners": "PLAINTEXT://127.0.0.1:9092"}),
                          [ClientListener(Endpoint("PLAINTEXT", "127.0.0.1", 9092))], None, alone=False).controller

    async def checks(port):
        r = await _describe_quorum(link(node.keystore), port)
        assert r.topics[0].partitions[0].leader_id == 1
        for bad in (link(None), link(intruder.keystore)):    # no certificate / not a super user: closed
            with pytest.raises((trio.BrokenResourceError, PeerAuthenticationFailed)):
                await _describe_quorum(bad, port)
        with pytest.raises(PeerAuthenticationFailed, match="TLS handshake with controller listener CONTROLLER"):
            await _describe_quorum(link(node.keystore, trust=other_ca.ca_file), port)   # an unknown server CA
    _serve_and(server_cfg, "SSL", authz, checks)


# ---------------------------------------------------------------------------- start-up checks
LISTENERS = [ClientListener(Endpoint("CLIENT", "127.0.0.1", 9092)),
             ClientListener(Endpoint("BROKER", "127.0.0.1", 9093), "SASL_SSL")]


@pytest.mark.parametrize("props, words", [
    ({"inter.broker.listener.name": "BROKER", "security.inter.broker.protocol": "SSL"}, ["Only one of"]),
    ({"inter.broker.listener.name": "NOPE"}, ["inter.broker.listener.name=NOPE", "CLIENT,BROKER"]),
    ({}, ["security.inter.broker.protocol=PLAINTEXT", "set inter.broker.listener.name"]),
    ({"inter.broker.listener.name": "BROKER", "controller.listener.names": "BROKER"},
     ["must not contain the inter-broker listener BROKER"]),
    ({"inter.broker.listener.name": "CLIENT", "controller.listener.names": "CTL",
      "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_SSL"}, ["CTL", "listener.security.protocol.map"]),
    ({"inter.broker.listener.name": "BROKER"}, ["sasl.mechanism.inter.broker.protocol=GSSAPI"]),
    ({"inter.broker.listener.name": "BROKER", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
      "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'},
     ["must be included in sasl.enabled.mechanisms"]),
    ({"inter.broker.listener.name": "BROKER", "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'}, ['username="..." password="..."', "sasl.jaas.config"]),
])
def test_bad_peer_settings_say_one_line(tmp_path, props, words):
    ca = CertificateAuthority(str(tmp_path))
    cert = ca.issue("b", server=True, client=True)
    cfg = _config(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": cert.keystore,
                     "ssl.truststore.type": "PEM", "ssl.truststore.location": ca.ca_file,
                     "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_SSL,CONTROLLER:PLAINTEXT"}
                  | props)
    with pytest.raises(PeerConfigError) as e:
        plan_peers(cfg, LISTENERS, ("127.0.0.1", 9094), alone=False)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_good_peer_settings_and_a_node_alone(tmp_path):
    ca = CertificateAuthority(str(tmp_path))
    cert = ca.issue("b", server=True, client=True)
    cfg = _config(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": cert.keystore,
                     "ssl.truststore.type": "PEM", "ssl.truststore.location": ca.ca_file,
                     "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_SSL",
                     "inter.broker.listener.name": "broker", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
                     "listener.name.broker.scram-sha-256.sasl.jaas.config":
                         'org.apache.kafka.common.security.plain.PlainLoginModule required username="b" password="pw" user_b="pw";'})
    peers = plan_peers(cfg, LISTENERS, ("127.0.0.1", 9094), alone=False)
    ib = peers.inter_broker
    assert (ib.listener, ib.protocol, ib.mechanism, ib.username, ib.password) == \
        ("BROKER", "SASL_SSL", "SCRAM-SHA-256", "b", "pw")
    assert ib.ssl_context is not None and ib.ssl_context.check_hostname
    assert "pw" not in repr(ib)
    assert peers.controller.protocol == "PLAINTEXT" and peers.controller_listener is None
    b = NS(host="h", port=1, endpoints={"CLIENT": ("c", 9092, 0), "BROKER": ("b", 9093, 3)})
    assert ib.address(b) == ("b", 9093) and ib.address(NS(host="h", port=1, endpoints={"X": ("x", 1, 0)})) is None
    # a node alone with no PLAINTEXT listener never reaches another broker: nothing to name
    alone = plan_peers(_config(), [ClientListener(Endpoint("SASL_SSL", "", 9092), "SASL_SSL")], alone=True)
    assert alone.inter_broker.listener is None and not alone.inter_broker.secured
