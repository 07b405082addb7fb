"""Secured test brokers: ``Broker(security="SSL" | "SASL_PLAINTEXT" | "SASL_SSL", users={...})``.

A throwaway CA and a server certificate are made in the broker's data dir (TLS), users go
into Kafka's ``sasl.jaas.config`` shape (SASL; PLAIN and both SCRAMs are served), and
``client_config`` returns the settings a stock client needs, ready to pass on. The broker also
opens a PLAINTEXT listener on 127.0.0.1 (``harness_port``) that only this harness's own
helpers (``create_topic``, ``produce``, ``consume``) use.
"""
from __future__ import annotations

import os

from kwire.testing.ports import free_port

__all__ = ["configure", "client_config", "jaas_users"]

PROTOCOLS = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")


def jaas_users(users: dict[str, str], module: str = "org.apache.kafka.common.security.plain.PlainLoginModule") -> str:
    """A ``sasl.jaas.config`` value that declares ``users`` (Kafka's ``user_NAME="password"``)."""
    entries = " ".join(f'user_{u}="{_quote(p)}"' for u, p in users.items())
    return f"{module} required {entries};"


def _quote(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def configure(b, client_auth: str = "none") -> None:
    """Overrides, certificates and the harness listener of a secured ``Broker``."""
    sec = b.security
    if sec not in PROTOCOLS:
        raise ValueError(f"security is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not {sec!r}")
    if sec.startswith("SASL") and not b.users:
        raise ValueError(f"security={sec} needs users={{name: password}}")
    b.harness_port = free_port("127.0.0.1")
    o = b.overrides
    o.setdefault("listeners", f"{sec}://{b.host}:{b.port},HARNESS://127.0.0.1:{b.harness_port}")
    o.setdefault("listener.security.protocol.map", f"{sec}:{sec},HARNESS:PLAINTEXT")
    if sec in ("SSL", "SASL_SSL"):
        from kwire.testing.certs import CertificateAuthority  # noqa: PLC0415 - optional dependency: cryptography (TLS)

        b.tls = ca = CertificateAuthority(os.path.join(b.data_dir, "tls"))
        server = ca.issue("localhost", server=True, file_name="broker")
        o.setdefault("ssl.keystore.type", "PEM")
        o.setdefault("ssl.keystore.location", server.keystore)
        o.setdefault("ssl.truststore.type", "PEM")
        o.setdefault("ssl.truststore.location", ca.ca_file)
        o.setdefault("ssl.client.auth", client_auth)
        if client_auth != "none":
            b.client_cert = ca.issue("client", file_name="client")
    if sec.startswith("SASL"):
        o.setdefault("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")
        o.setdefault("sasl.jaas.config", jaas_users(b.users))


def client_config(b, client: str = "confluent", user: str | None = None, mechanism: str = "PLAIN") -> dict:
    """Settings of a stock client for the secured ``Broker`` ``b``."""
    sec = b.security
    name = user or (next(iter(b.users)) if b.users else None)
    password = b.users.get(name) if name else None
    cert = getattr(b, "client_cert", None)
    if client == "confluent":
        out = {"bootstrap.servers": b.bootstrap_servers, "security.protocol": sec}
        if b.tls is not None:
            out["ssl.ca.location"] = b.tls.ca_file
            if cert is not None:
                out.update({"ssl.certificate.location": cert.cert, "ssl.key.location": cert.key})
        if sec.startswith("SASL"):
            out.update({"sasl.mechanism": mechanism, "sasl.username": name, "sasl.password": password})
        return out
    if client in ("kafka-python", "aiokafka"):
        out = {"bootstrap_servers": b.bootstrap_servers, "security_protocol": sec}
        if b.tls is not None:
            if client == "kafka-python":
                out["ssl_cafile"] = b.tls.ca_file
                if cert is not None:
                    out.update({"ssl_certfile": cert.cert, "ssl_keyfile": cert.key})
            else:
                import ssl  # noqa: PLC0415 - start-up time: TLS client settings only
                ctx = ssl.create_default_context(cafile=b.tls.ca_file)
                if cert is not None:
                    ctx.load_cert_chain(cert.cert, cert.key)
                out["ssl_context"] = ctx
        if sec.startswith("SASL"):
            out.update({"sasl_mechanism": mechanism, "sasl_plain_username": name, "sasl_plain_password": password})
        return out
    raise ValueError(f"client is 'confluent', 'kafka-python' or 'aiokafka', not {client!r}")
