"""TLS for SSL and SASL_SSL listeners: a server ``ssl.SSLContext`` from Kafka's settings, and
the principal of a client certificate. No I/O beyond reading the PEM files at start.

Served: ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (certificate chain and private
key in one PEM file; ``ssl.key.password`` when the key is encrypted) or the inline
``ssl.keystore.certificate.chain`` / ``ssl.keystore.key``; ``ssl.truststore.location`` (PEM CA
certificates; ``ssl.truststore.type=PEM``) or inline ``ssl.truststore.certificates``;
``ssl.client.auth=required|requested|none``; ``ssl.enabled.protocols`` narrowed to TLSv1.2 and
TLSv1.3 (older protocols are never served); ``ssl.cipher.suites`` as an OpenSSL cipher list
(TLSv1.2 only, as OpenSSL applies it). Each key may be given per listener with Kafka's prefix
``listener.name.<name lower case>.ssl.*``.

Left out: JKS and PKCS12 keystores (Java formats: convert them to PEM), keystore reloading,
``ssl.principal.mapping.rules`` other than DEFAULT.

The principal of a client certificate is Kafka's DEFAULT mapping: ``User:`` + the subject as
RFC 2253 writes it (``X500Principal.getName()``: most specific RDN first, e.g.
``User:CN=alice,O=acme``).
"""
from __future__ import annotations

import ssl
import tempfile
import os

from kwire.security.principal import user

__all__ = ["TlsConfigError", "server_context", "client_context", "certificate_principal", "listener_setting"]

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class TlsConfigError(ValueError):
    """TLS settings the broker cannot use (one line naming the key)."""


class KeystoreError(TlsConfigError):
    """The keystore file cannot be used as configured (unreadable, no key, an encrypted key
    without its password or with a wrong one): a runtime failure at start, exit code 1."""


class _NoPassword(Exception):
    pass


def load_keystore(ctx: ssl.SSLContext, path: str, password: str | None, shown: str | None = None) -> None:
    """``ctx.load_cert_chain`` that never prompts: OpenSSL asks for an encrypted key's pass
    phrase on the terminal when no password is given (and fails with Errno 22 without one), so
    the password always goes through a callback, which refuses when ssl.key.password is unset.
    Each failure is a KeystoreError naming the file (``shown``) and the fix."""
    shown = shown or path
    asked = []

    def passphrase():
        asked.append(True)
        if password is None:
            raise _NoPassword
        return password

    try:
        ctx.load_cert_chain(path, password=passphrase)
    except _NoPassword:
        raise KeystoreError(f"the private key in the TLS keystore {shown} is encrypted and ssl.key.password "
                            f"is not set; set ssl.key.password to its pass phrase") from None
    except OSError as exc:
        if isinstance(exc, ssl.SSLError):
            raise KeystoreError(_pem_problem(path, shown, exc, asked and password is not None)) from None
        raise KeystoreError(f"cannot read the TLS keystore {shown}: {exc.strerror or exc}") from None


def _pem_problem(path: str, shown: str, exc: ssl.SSLError, decrypted: bool) -> str:
    if exc.reason == "KEY_VALUES_MISMATCH":
        return (f"the private key in the TLS keystore {shown} does not belong to its first certificate; "
                f"put the certificate chain (the broker's certificate first) and its own key in the file")
    if decrypted:
        return (f"ssl.key.password does not decrypt the private key in the TLS keystore {shown}; "
                f"set ssl.key.password to the key's pass phrase")
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError:
        text = b""
    missing = [what for what, marker in (("certificate", b"-----BEGIN CERTIFICATE-----"),
                                         ("private key", b"PRIVATE KEY-----")) if marker not in text]
    if missing:
        return (f"the TLS keystore {shown} has no {' and no '.join(missing)}; ssl.keystore.location needs the "
                f"certificate chain and the private key in one PEM file")
    return f"the TLS keystore {shown} is not a usable PEM certificate chain and private key ({exc.reason or exc})"


def listener_setting(config, listener: str | None, key: str):
    """``listener.name.<listener>.<key>`` when set, else ``<key>`` (Kafka's per-listener override)."""
    if listener:
        v = config.get(f"listener.name.{listener.lower()}.{key}")
        if v not in (None, ""):
            return v
    return config.get(key)


def server_context(config, listener: str | None = None) -> ssl.SSLContext:
    """The server context of one TLS listener; TlsConfigError when the settings are unusable."""
    get = lambda key: listener_setting(config, listener, key)  # noqa: E731
    ks_type = str(get("ssl.keystore.type") or "PEM").upper()
    location, chain, key = get("ssl.keystore.location"), get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    if not location and not chain:
        raise TlsConfigError(f"listener {listener or ''}: TLS needs ssl.keystore.location (a PEM file with the "
                             f"certificate chain and private key; ssl.keystore.type=PEM)")
    if location and ks_type != "PEM":
        raise TlsConfigError(f"ssl.keystore.type={ks_type} is not supported; kwire reads PEM keystores "
                             f"(set ssl.keystore.type=PEM, e.g. `openssl pkcs12 -in ks.p12 -nodes > ks.pem`)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p for p in (get("ssl.enabled.protocols") or ["TLSv1.2", "TLSv1.3"]) if p]
    versions = sorted(_PROTOCOLS[p] for p in enabled if p in _PROTOCOLS)
    if not versions:
        raise TlsConfigError(f"ssl.enabled.protocols={','.join(enabled)}: kwire serves TLSv1.2 and TLSv1.3 only")
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    password = get("ssl.key.password") or get("ssl.keystore.password") or None
    if location:
        load_keystore(ctx, location, password)
    else:
        _load_inline(ctx, str(chain), str(key or ""), password)
    trust = get("ssl.truststore.location")
    trust_pem = get("ssl.truststore.certificates")
    try:
        if trust:
            ctx.load_verify_locations(cafile=trust)
        elif trust_pem:
            ctx.load_verify_locations(cadata=str(trust_pem))
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"cannot load the TLS truststore {trust or 'ssl.truststore.certificates'}: {exc}") \
            from None
    auth = str(get("ssl.client.auth") or "none").lower()
    if auth not in ("required", "requested", "none"):
        raise TlsConfigError(f"ssl.client.auth={auth}: write required, requested or none")
    if auth != "none" and not (trust or trust_pem):
        raise TlsConfigError(f"ssl.client.auth={auth} needs ssl.truststore.location (the CA that signs "
                             f"client certificates)")
    ctx.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}[auth]
    return _finish(ctx, get)


def client_context(config, listener: str | None = None) -> ssl.SSLContext:
    """The context kwire's own outgoing connections (to another broker's inter-broker listener
    or to a controller listener named ``listener``) use: the peer is verified against
    ``ssl.truststore.location`` / ``ssl.truststore.certificates`` (the system's CAs when neither
    is set), its host name too unless ``ssl.endpoint.identification.algorithm`` is empty (as
    Kafka's clients), and the keystore, when set, is presented for mutual TLS (the principal
    the other side sees is its subject). TlsConfigError when the settings are unusable."""
    get = lambda key: listener_setting(config, listener, key)  # noqa: E731
    where = f"listener {listener}: " if listener else ""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    enabled = [p for p in (get("ssl.enabled.protocols") or ["TLSv1.2", "TLSv1.3"]) if p]
    versions = sorted(_PROTOCOLS[p] for p in enabled if p in _PROTOCOLS)
    if not versions:
        raise TlsConfigError(f"ssl.enabled.protocols={','.join(enabled)}: kwire speaks TLSv1.2 and TLSv1.3 only")
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    trust, trust_pem = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if trust:
            ctx.load_verify_locations(cafile=trust)
        elif trust_pem:
            ctx.load_verify_locations(cadata=str(trust_pem))
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"{where}cannot load the TLS truststore {trust or 'ssl.truststore.certificates'}: "
                             f"{exc}") from None
    algorithm = config.get(f"listener.name.{listener.lower()}.ssl.endpoint.identification.algorithm") \
        if listener else None
    if algorithm is None:    # an empty per-listener value turns the check off there, as in Kafka
        algorithm = config.get("ssl.endpoint.identification.algorithm")
    ctx.check_hostname = str(algorithm or "").lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    location, chain, key = get("ssl.keystore.location"), get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    ks_type = str(get("ssl.keystore.type") or "PEM").upper()
    if location and ks_type != "PEM":
        raise TlsConfigError(f"ssl.keystore.type={ks_type} is not supported; kwire reads PEM keystores "
                             f"(set ssl.keystore.type=PEM)")
    password = get("ssl.key.password") or get("ssl.keystore.password") or None
    try:
        if location:
            load_keystore(ctx, location, password)
        elif chain:
            _load_inline(ctx, str(chain), str(key or ""), password)
    except KeystoreError as exc:
        raise KeystoreError(f"{where}{exc}") from None
    return _finish(ctx, get)


def _finish(ctx: ssl.SSLContext, get) -> ssl.SSLContext:
    """What server and client contexts share: ssl.cipher.suites, no TLS compression."""
    ciphers = [c for c in (get("ssl.cipher.suites") or []) if c]
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError as exc:
            raise TlsConfigError(f"ssl.cipher.suites: {exc}") from None
    ctx.options |= ssl.OP_NO_COMPRESSION
    return ctx


def _load_inline(ctx: ssl.SSLContext, chain: str, key: str, password) -> None:
    """ssl.keystore.certificate.chain / ssl.keystore.key given inline (the stdlib reads files only)."""
    fd, path = tempfile.mkstemp(prefix="kwire-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(chain.strip() + "\n" + key.strip() + "\n")
        load_keystore(ctx, path, password, shown="ssl.keystore.certificate.chain / ssl.keystore.key")
    finally:
        os.unlink(path)


_RFC2253_KEYS = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
                 "countryName": "C", "stateOrProvinceName": "ST", "localityName": "L",
                 "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def certificate_principal(peercert: dict | None) -> str | None:
    """``User:<subject, RFC 2253>`` of ``SSLObject.getpeercert()``, or None (no certificate)."""
    if not peercert:
        return None
    rdns = []
    for rdn in reversed(peercert.get("subject", ())):
        rdns.append("+".join(f"{_RFC2253_KEYS.get(k, k)}={_escape(v)}" for k, v in rdn))
    return user(",".join(rdns)) if rdns else None
