"""The admin commands' client security, from Kafka's ``--command-config client.properties``.

Kafka's tools read the Java client's keys; so does this: ``security.protocol`` (PLAINTEXT,
SSL, SASL_PLAINTEXT, SASL_SSL), ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with
``sasl.jaas.config`` (``... required username="..." password="...";``), and for TLS the PEM
forms of the trust and key stores (``ssl.truststore.type=PEM`` with ``ssl.truststore.location``
or ``ssl.truststore.certificates``, ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` or
``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``, ``ssl.key.password``) and
``ssl.endpoint.identification.algorithm`` (``https``, Kafka's default, checks the broker's host
name; empty does not). What Python cannot read (JKS and PKCS12 stores, GSSAPI and OAUTHBEARER)
is refused in one line that names the key and the way out; other keys are the Java client's
business and are left alone, as Kafka's tools leave keys they do not use.
"""
from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass

from kwire.cmdline import UsageError
from kwire.listeners import uses_sasl, uses_tls

__all__ = ["ClientSecurity", "PLAINTEXT", "from_properties"]

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @property
    def tls(self) -> bool:
        return uses_tls(self.protocol)

    @property
    def sasl(self) -> bool:
        return uses_sasl(self.protocol)


PLAINTEXT = ClientSecurity()


def from_properties(props: dict[str, str], where: str) -> ClientSecurity:
    """``where`` names the source in errors (``kwire topics: --command-config FILE``)."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in _PROTOCOLS:
        raise UsageError(f"{where}: security.protocol={protocol} is not one of {', '.join(_PROTOCOLS)}")
    context = _ssl_context(props, where) if protocol in ("SSL", "SASL_SSL") else None
    mechanism = username = password = None
    if protocol.startswith("SASL"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism not in _MECHANISMS:
            default = " (Kafka's default)" if "sasl.mechanism" not in props else ""
            raise UsageError(f"{where}: sasl.mechanism={mechanism}{default} is not supported by kwire's admin "
                             f"commands; set sasl.mechanism to {', '.join(_MECHANISMS)}")
        jaas = props.get("sasl.jaas.config")
        if not jaas:
            raise UsageError(f"{where}: security.protocol={protocol} needs sasl.jaas.config "
                             f"(e.g. org.apache.kafka.common.security.plain.PlainLoginModule required "
                             f"username=\"alice\" password=\"...\";)")
        from kwire.security.jaas import JaasError  # noqa: PLC0415 - SASL settings only
        from kwire.security.sasl_client import jaas_options  # noqa: PLC0415 - SASL settings only

        try:
            options = jaas_options(jaas)
        except JaasError as exc:
            raise UsageError(f"{where}: sasl.jaas.config: {exc}") from None
        username, password = options.get("username"), options.get("password")
        if username is None or password is None:
            raise UsageError(f"{where}: sasl.jaas.config needs username=\"...\" and password=\"...\"")
    return ClientSecurity(protocol, context, mechanism, username or "", password or "")


def _ssl_context(props: dict[str, str], where: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ctx.check_hostname = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower() == "https"
    trust_type = props.get("ssl.truststore.type", "JKS" if "ssl.truststore.location" in props else "PEM").upper()
    if "ssl.truststore.location" in props or "ssl.truststore.certificates" in props:
        if trust_type != "PEM":
            raise UsageError(f"{where}: ssl.truststore.type={trust_type} cannot be read here; give the CA "
                             f"certificates as PEM (ssl.truststore.type=PEM; keytool -exportcert -rfc makes one)")
        try:
            if "ssl.truststore.certificates" in props:
                ctx.load_verify_locations(cadata=props["ssl.truststore.certificates"])
            else:
                ctx.load_verify_locations(cafile=props["ssl.truststore.location"])
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"{where}: ssl.truststore: {getattr(exc, 'strerror', None) or exc}") from None
    key_type = props.get("ssl.keystore.type", "JKS" if "ssl.keystore.location" in props else "PEM").upper()
    if "ssl.keystore.location" in props or "ssl.keystore.certificate.chain" in props:
        if key_type != "PEM":
            raise UsageError(f"{where}: ssl.keystore.type={key_type} cannot be read here; give the certificate "
                             f"chain and key as PEM (ssl.keystore.type=PEM)")
        password = props.get("ssl.key.password") or None
        try:
            if "ssl.keystore.location" in props:
                ctx.load_cert_chain(props["ssl.keystore.location"], password=password or _no_prompt)
            else:
                _load_inline_chain(ctx, props["ssl.keystore.certificate.chain"], props.get("ssl.keystore.key", ""),
                                   password)
        except ssl.SSLError as exc:
            raise UsageError(f"{where}: ssl.keystore: cannot load the certificate and key ({exc.reason or exc}"
                             f"{'' if password else '; an encrypted key needs ssl.key.password'})") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{where}: ssl.keystore: {getattr(exc, 'strerror', None) or exc}") from None
    return ctx


def _no_prompt() -> str:
    """An encrypted key without ssl.key.password: no pass-phrase prompt on the terminal."""
    raise ValueError("the key is encrypted and ssl.key.password is not set")


def _load_inline_chain(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    fd, path = tempfile.mkstemp(prefix="kwire-admin-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(chain.strip() + "\n" + key.strip() + "\n")
        ctx.load_cert_chain(path, password=password or _no_prompt)
    finally:
        os.unlink(path)
