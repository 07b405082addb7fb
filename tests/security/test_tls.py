"""TLS listeners (SSL): stock clients over TLS, mutual TLS and its principal, bad handshakes."""
from __future__ import annotations

import socket
import ssl

import pytest

from kwire.testing.broker import Broker
from tests.security.clients import confluent_roundtrip, kafka_python_roundtrip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ssl_broker():
    with Broker(security="SSL", overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def test_confluent_produces_and_consumes_over_tls(ssl_broker):
    b = ssl_broker
    b.create_topic("tls-c", 2)
    # records large enough that a Fetch carries file regions: sent through the buffered path
    got = confluent_roundtrip(b.client_config("confluent"), "tls-c", 30, size=20_000)
    assert sorted(v[:4] for v in got) == [f"{i:04d}".encode() for i in range(30)]


def test_kafka_python_produces_and_consumes_over_tls(ssl_broker):
    b = ssl_broker
    b.create_topic("tls-kp", 1)
    got = kafka_python_roundtrip(b.client_config("kafka-python"), "tls-kp", 10)
    assert [v[:4] for v in got] == [f"{i:04d}".encode() for i in range(10)]


def test_plaintext_bytes_on_a_tls_listener_close_the_connection_only(ssl_broker):
    b = ssl_broker
    with socket.create_connection((b.host, b.port), timeout=5) as s:
        s.sendall(b"\x00\x00\x00\x10" + b"\x00" * 16)   # a Kafka frame, not a ClientHello
        s.settimeout(5)
        got = b""
        try:   # the broker answers a TLS alert at most, then closes (recv -> b"" rather than a timeout)
            while chunk := s.recv(100):
                got += chunk
        except ConnectionResetError:
            pass
        assert len(got) < 100
    # the broker lives: a TLS client still gets through
    ctx = ssl.create_default_context(cafile=b.tls.ca_file)
    with socket.create_connection((b.host, b.port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="localhost") as s:
        assert s.version() in ("TLSv1.2", "TLSv1.3")


def test_close_notify_is_answered_and_the_connection_closed(ssl_broker):
    """A client that ends the session with close_notify gets the broker's close_notify and the
    TCP close at once (asyncio's SSL transport, under aiokafka, waits up to 30 s for them)."""
    b = ssl_broker
    raw = socket.create_connection((b.host, b.port), timeout=5)
    s = ssl.create_default_context(cafile=b.tls.ca_file).wrap_socket(raw, server_hostname="localhost")
    plain = s.unwrap()            # sends ours, returns once the broker's arrived (a timeout otherwise)
    try:
        assert plain.recv(10) == b""
    finally:
        plain.close()


def test_tls_below_1_2_is_refused(ssl_broker):
    b = ssl_broker
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(b.tls.ca_file)
    try:
        ctx.minimum_version = ssl.TLSVersion.TLSv1
        ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    except (ValueError, ssl.SSLError):
        pytest.skip("this OpenSSL cannot even offer TLS 1.1")
    with socket.create_connection((b.host, b.port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, OSError)):
            ctx.wrap_socket(raw, server_hostname="localhost")


def test_mutual_tls_required():
    """ssl.client.auth=required: a client with a certificate the CA signed gets in, with the
    certificate's subject as its principal; one without a certificate is refused."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    with Broker(security="SSL", client_auth="required", overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        b.create_topic("mtls", 1)
        conf = b.client_config("confluent")
        assert "ssl.certificate.location" in conf
        got = confluent_roundtrip(conf, "mtls", 5)
        assert len(got) == 5
        # no certificate: the handshake fails, nothing is served
        bare = {k: v for k, v in conf.items() if not k.startswith(("ssl.certificate", "ssl.key"))}
        admin = AdminClient({**bare, "socket.timeout.ms": 3000})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=4)
        # principal = certificate subject, seen by the connection
        ctx = ssl.create_default_context(cafile=b.tls.ca_file)
        ctx.load_cert_chain(b.client_cert.cert, b.client_cert.key)
        with socket.create_connection((b.host, b.port), timeout=5) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(_api_versions_request())
            assert len(s.recv(4)) == 4
            principals = {c.principal for c in list(b.server.connections) if c.listener == "SSL"}
            assert "User:CN=client" in principals, principals


def test_mutual_tls_requested():
    """ssl.client.auth=requested: a client certificate, when given, is verified and names the
    principal; a client without one is served as User:ANONYMOUS."""
    with Broker(security="SSL", client_auth="requested", overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        b.create_topic("req", 1)
        conf = b.client_config("confluent")
        bare = {k: v for k, v in conf.items() if not k.startswith(("ssl.certificate", "ssl.key"))}
        assert len(confluent_roundtrip(bare, "req", 3)) == 3

        def principal_of(ctx):
            with socket.create_connection((b.host, b.port), timeout=5) as raw, \
                    ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(_api_versions_request())
                assert len(s.recv(4)) == 4
                me = s.getsockname()
                return next(c.principal for c in list(b.server.connections)
                            if c.peer == f"{me[0]}:{me[1]}")
        with_cert = ssl.create_default_context(cafile=b.tls.ca_file)
        with_cert.load_cert_chain(b.client_cert.cert, b.client_cert.key)
        assert principal_of(with_cert) == "User:CN=client"
        assert principal_of(ssl.create_default_context(cafile=b.tls.ca_file)) == "User:ANONYMOUS"
        # a certificate the broker's CA did not sign is refused, even when only requested
        import tempfile

        from kwire.testing.certs import CertificateAuthority
        with tempfile.TemporaryDirectory() as d:
            other = CertificateAuthority(d).issue("mallory", file_name="mallory")
            rogue = ssl.create_default_context(cafile=b.tls.ca_file)
            rogue.load_cert_chain(other.cert, other.key)
            with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
                principal_of(rogue)


def _api_versions_request() -> bytes:
    import struct
    client = b"t"
    body = struct.pack(">hhih", 18, 0, 7, len(client)) + client
    return struct.pack(">i", len(body)) + body


def test_stalled_or_truncated_handshakes_are_dropped():
    """A peer that starts a TLS handshake and stops, or sends half a ClientHello and closes,
    costs one connection for at most the handshake deadline (min(10 s, request.timeout.ms))."""
    import time
    with Broker(security="SSL", overrides={"request.timeout.ms": 800, "group.initial.rebalance.delay.ms": 0}) as b:
        with socket.create_connection((b.host, b.port), timeout=5) as s:
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")    # the start of a ClientHello
            t0 = time.monotonic()
            s.settimeout(5)
            try:
                while s.recv(100):
                    pass
            except ConnectionResetError:
                pass
            assert time.monotonic() - t0 < 3
        with socket.create_connection((b.host, b.port), timeout=5) as s:
            s.sendall(b"\x16\x03\x01\xff\xff" + b"\x00" * 1000)
        deadline = time.monotonic() + 5
        while b.server.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not b.server.connections
        ctx = ssl.create_default_context(cafile=b.tls.ca_file)
        with socket.create_connection((b.host, b.port), timeout=5) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as s:
            assert s.version() in ("TLSv1.2", "TLSv1.3")
