"""`kwire serve` with Kafka's listener syntax: PLAINTEXT, SSL and SASL_SSL listeners served at
once by one process; each client is told the addresses of the listener it came in on."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kwire.testing.broker import free_port, wait_for_port, _kill_orphan
from kwire.testing.certs import CertificateAuthority
from kwire.testing.secured import jaas_users

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def three_listeners(tmp_path_factory):
    d = tmp_path_factory.mktemp("listeners")
    ca = CertificateAuthority(str(d / "tls"))
    server = ca.issue("localhost", server=True, password="kpw", file_name="broker")
    ports = {n: free_port() for n in ("PLAINTEXT", "SSL", "EXTERNAL")}
    props = d / "server.properties"
    props.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{ports['PLAINTEXT']},SSL://127.0.0.1:{ports['SSL']},"
        f"EXTERNAL://:{ports['EXTERNAL']}\n"
        f"advertised.listeners=EXTERNAL://localhost:{ports['EXTERNAL']}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,EXTERNAL:SASL_SSL\n"
        f"log.dirs={d / 'data'}\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.location={server.keystore}\nssl.key.password=kpw\n"
        f"ssl.truststore.location={ca.ca_file}\n"
        "listener.name.external.sasl.enabled.mechanisms=SCRAM-SHA-512\n"
        f"listener.name.external.scram-sha-512.sasl.jaas.config={jaas_users({'carol': 'c-pw'})}\n"
        "metrics.listen=\n"
        "group.initial.rebalance.delay.ms=0\n")      # its consumers join classic groups
    log = open(d / "kwire.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--config", str(props)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        for p in ports.values():
            wait_for_port("127.0.0.1", p, timeout=30, proc=proc)
        yield ports, ca
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            _kill_orphan(proc)
        log.close()


def test_three_listeners_at_once(three_listeners):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    ports, ca = three_listeners
    plain = {"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"}
    tls = {"bootstrap.servers": f"127.0.0.1:{ports['SSL']}", "security.protocol": "SSL",
           "ssl.ca.location": ca.ca_file}
    sasl = {"bootstrap.servers": f"localhost:{ports['EXTERNAL']}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": ca.ca_file, "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "carol",
            "sasl.password": "c-pw"}
    for conf, name in ((plain, "PLAINTEXT"), (tls, "SSL"), (sasl, "EXTERNAL")):
        md = AdminClient(conf).list_topics(timeout=10)
        (b,) = md.brokers.values()
        assert b.port == ports[name]          # the address of the listener asked
    assert next(iter(AdminClient(sasl).list_topics(timeout=10).brokers.values())).host == "localhost"
    admin = AdminClient(plain)
    admin.create_topics([NewTopic("three", 1, 1)])["three"].result(10)
    p = Producer({**sasl, "acks": "all"})
    for i in range(3):
        p.produce("three", f"v{i}".encode())
    assert p.flush(15) == 0
    for conf in (plain, tls):
        c = Consumer({**conf, "group.id": f"g-{conf['bootstrap.servers']}", "auto.offset.reset": "earliest"})
        c.subscribe(["three"])
        got = []
        try:
            for _ in range(60):
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append(m.value())
                if len(got) == 3:
                    break
        finally:
            c.close()
        assert got == [b"v0", b"v1", b"v2"]
    # PLAIN is not enabled on EXTERNAL (only SCRAM-SHA-512 is)
    from confluent_kafka import KafkaException
    with pytest.raises(KafkaException):
        AdminClient({**sasl, "sasl.mechanism": "PLAIN"}).list_topics(timeout=2.5)
