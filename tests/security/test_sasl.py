"""SASL_PLAINTEXT and SASL_SSL listeners: stock clients with PLAIN and both SCRAMs; wrong
password, wrong mechanism and requests before authentication end the connection (never a hang)."""
from __future__ import annotations

import socket
import time

import pytest

from kwire.codec.apis import api
from kwire.connection import NEED_DATA, KafkaClientConnection
from kwire.testing.broker import Broker
from tests.security.clients import confluent_roundtrip, kafka_python_roundtrip

pytestmark = pytest.mark.slow

USERS = {"alice": "alice-secret", "bob": "bob,=secret"}


@pytest.fixture(scope="module", params=["SASL_PLAINTEXT", "SASL_SSL"])
def sasl_broker(request):
    with Broker(security=request.param, users=USERS, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_with_each_mechanism(sasl_broker, mech):
    b = sasl_broker
    topic = f"c-{mech}".lower()
    b.create_topic(topic, 1)
    got = confluent_roundtrip(b.client_config("confluent", "alice", mech), topic, 10, size=5000)
    assert sorted(v[:4] for v in got) == [f"{i:04d}".encode() for i in range(10)]
    principals = {c.principal for c in list(b.server.connections) if c.listener == b.security}
    assert principals <= {"User:alice"}


# kafka-python: each mechanism once (SCRAM-SHA-256 over SASL_PLAINTEXT, the others over SASL_SSL)
@pytest.mark.parametrize(("sasl_broker", "mech"), [("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "PLAIN"),
                                                   ("SASL_SSL", "SCRAM-SHA-512")], indirect=["sasl_broker"])
def test_kafka_python_with_each_mechanism(sasl_broker, mech):
    b = sasl_broker
    topic = f"kp-{mech}".lower()
    b.create_topic(topic, 1)
    got = kafka_python_roundtrip(b.client_config("kafka-python", "bob", mech), topic, 5)
    assert [v[:4] for v in got] == [f"{i:04d}".encode() for i in range(5)]


# ---------------------------------------------------------------------------- raw wire
def _open(b):
    raw = socket.create_connection((b.host, b.port), timeout=5)
    if b.tls is None:
        return raw
    import ssl
    return ssl.create_default_context(cafile=b.tls.ca_file).wrap_socket(raw, server_hostname="localhost")


def _call(s, conn, name, version, **fields):
    a = api(name)
    _, data = conn.send_request(a, version, a.request.cls(**fields))
    s.sendall(data)
    while (r := conn.next_response()) is NEED_DATA:
        chunk = s.recv(65536)
        assert chunk, f"closed before answering {name}"
        conn.receive_data(chunk)
    return r.body


def _closed(s) -> bool:
    s.settimeout(5)
    try:
        return s.recv(100) == b""
    except ConnectionResetError:
        return True


def test_wrong_password_is_refused_and_closed(sasl_broker):
    b = sasl_broker
    with _open(b) as s:
        conn = KafkaClientConnection()
        assert _call(s, conn, "SaslHandshake", 1, mechanism="PLAIN").error_code == 0
        t0 = time.monotonic()
        r = _call(s, conn, "SaslAuthenticate", 1, auth_bytes=b"\x00alice\x00wrong")
        assert r.error_code == 58 and "Invalid username or password" in r.error_message   # SASL_AUTHENTICATION_FAILED
        assert _closed(s) and time.monotonic() - t0 < 3


def test_wrong_mechanism_is_refused_and_closed(sasl_broker):
    b = sasl_broker
    with _open(b) as s:
        conn = KafkaClientConnection()
        r = _call(s, conn, "SaslHandshake", 1, mechanism="GSSAPI")
        assert r.error_code == 33 and set(r.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
        assert _closed(s)


def test_requests_before_authentication_close_the_connection(sasl_broker):
    b = sasl_broker
    with _open(b) as s:
        conn = KafkaClientConnection()
        assert _call(s, conn, "ApiVersions", 0).error_code == 0      # allowed before authentication
        a = api("Metadata")
        s.sendall(conn.send_request(a, 1, a.request.cls(topics=None))[1])
        assert _closed(s)
    with _open(b) as s:   # SaslAuthenticate before the handshake
        conn = KafkaClientConnection()
        a = api("SaslAuthenticate")
        s.sendall(conn.send_request(a, 1, a.request.cls(auth_bytes=b"\x00alice\x00alice-secret"))[1])
        assert _closed(s)
    # and the broker serves on
    with _open(b) as s:
        conn = KafkaClientConnection()
        _call(s, conn, "SaslHandshake", 1, mechanism="PLAIN")
        assert _call(s, conn, "SaslAuthenticate", 1, auth_bytes=b"\x00alice\x00alice-secret").error_code == 0
        assert _call(s, conn, "Metadata", 1, topics=None).brokers[0].port == b.port


def test_confluent_wrong_password_fails_fast(sasl_broker):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    b = sasl_broker
    conf = {**b.client_config("confluent", "alice", "SCRAM-SHA-256"), "sasl.password": "nope"}
    t0 = time.monotonic()
    with pytest.raises(KafkaException):
        AdminClient(conf).list_topics(timeout=2.5)
    assert time.monotonic() - t0 < 4


def test_plaintext_sasl_handshake_is_illegal_state():
    with Broker() as b:
        with socket.create_connection((b.host, b.port), timeout=5) as s:
            conn = KafkaClientConnection()
            assert _call(s, conn, "SaslHandshake", 1, mechanism="PLAIN").error_code == 34   # ILLEGAL_SASL_STATE
            assert _call(s, conn, "Metadata", 1, topics=None).brokers


def test_reauthentication_with_confluent_and_expiry_on_the_wire():
    """connections.max.reauth.ms: librdkafka re-authenticates on its open connections and keeps
    working; a client that does not is cut off at its first request after expiry."""
    with Broker(security="SASL_PLAINTEXT", users=USERS, overrides={"connections.max.reauth.ms": 1500}) as b:
        b.create_topic("reauth", 1)
        from confluent_kafka import Producer
        p = Producer({**b.client_config("confluent", "alice", "SCRAM-SHA-256"), "acks": "all"})
        p.produce("reauth", b"before")
        assert p.flush(10) == 0
        time.sleep(3.5)
        p.poll(0)
        p.produce("reauth", b"after")
        assert p.flush(10) == 0
        assert any(c.sasl is not None and c.sasl.authentications >= 2 for c in list(b.server.connections))
        assert [r.value for r in b.consume("reauth", 2)] == [b"before", b"after"]
        with _open(b) as s:
            conn = KafkaClientConnection()
            _call(s, conn, "SaslHandshake", 1, mechanism="PLAIN")
            r = _call(s, conn, "SaslAuthenticate", 1, auth_bytes=b"\x00alice\x00alice-secret")
            assert r.error_code == 0 and r.session_lifetime_ms == 1500
            assert _call(s, conn, "Metadata", 1, topics=None).brokers
            time.sleep(1.7)
            a = api("Metadata")
            s.sendall(conn.send_request(a, 1, a.request.cls(topics=None))[1])
            assert _closed(s)


def test_handshake_v0_with_bare_tokens(sasl_broker):
    """SaslHandshake v0: the tokens that follow have no Kafka header, only a size prefix."""
    b = sasl_broker
    with _open(b) as s:
        conn = KafkaClientConnection()
        assert _call(s, conn, "SaslHandshake", 0, mechanism="PLAIN").error_code == 0
        token = b"\x00alice\x00alice-secret"
        s.sendall(len(token).to_bytes(4, "big") + token)
        assert s.recv(4) == b"\x00\x00\x00\x00"          # an empty server token: done
        assert _call(s, conn, "Metadata", 1, topics=None).brokers
    with _open(b) as s:
        conn = KafkaClientConnection()
        _call(s, conn, "SaslHandshake", 0, mechanism="PLAIN")
        token = b"\x00alice\x00wrong"
        s.sendall(len(token).to_bytes(4, "big") + token)
        assert _closed(s)
