"""SASL on the server side, with no I/O: mechanisms PLAIN (RFC 4616) and SCRAM-SHA-256 /
SCRAM-SHA-512 (RFC 5802 / RFC 7677), and the per-connection state machine Kafka's
SaslServerAuthenticator runs (ApiVersions and SaslHandshake first, then SaslAuthenticate
until the mechanism is done; nothing else before that).

PLAIN users come from the config in Kafka's JAAS shape: ``user_NAME="password"`` entries of
``listener.name.<listener>.<mechanism>.sasl.jaas.config`` or ``sasl.jaas.config`` (PLAIN's
``PlainLoginModule``).

SCRAM credentials, as in Kafka, live in the metadata quorum (UserScramCredentialRecord,
managed with AlterUserScramCredentials / kwire configs --entity-type users;
kwire.security.scram_credentials), so every node serves the same ones and they survive a
restart. Kafka has no other source; kwire, for convenience (test brokers, the harness's
``users=``), also derives a SCRAM credential from each JAAS password at start (salt random,
4096 iterations). The rule: for a (user, mechanism) the quorum's credential wins; the
JAAS-derived one serves only users the quorum holds no credential of that mechanism for
(so deleting a quorum credential of a user that is also declared in the JAAS config falls
back to the JAAS password). DescribeUserScramCredentials lists the quorum's credentials only.

SCRAM follows Kafka's rules: no channel binding (gs2 header ``n,,`` or ``y,,``), an
authorization id, when given, must be the user name, the server nonce is appended to the
client's, the ``tokenauth`` extension (delegation tokens) is refused, user names are the
SCRAM ``saslname`` (``=2C`` for a comma, ``=3D`` for an equals sign).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Mapping

from kwire.security.jaas import PLAIN_MODULE, JaasError, LoginModule, login_module
from kwire.security.principal import user as user_principal
from kwire.security.scram_credentials import SCRAM_MIN_ITERATIONS, ScramCredential, credential_from_salted_password

__all__ = ["SaslConfigError", "SaslAuthenticationFailed", "SaslServerConfig", "ScramCredential", "server_config",
           "parse_jaas_users", "scram_credential", "salted_password", "PlainServer", "ScramServer", "SaslAuthenticator",
           "MECHANISMS", "SCRAM_MIN_ITERATIONS"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}


class SaslConfigError(ValueError):
    """SASL settings the broker cannot use (one line naming the key)."""


class SaslAuthenticationFailed(Exception):
    """Wrong credentials or a broken exchange: answer SASL_AUTHENTICATION_FAILED, then close."""


# ---------------------------------------------------------------------------- config
def parse_jaas_users(text: str | None) -> dict[str, str]:
    """``user_NAME="password"`` options of a JAAS login module entry -> {NAME: password}; the
    text is read as Kafka's JaasConfig (kwire.security.jaas: JaasError when Kafka would refuse it)."""
    if not text:
        return {}
    return _users(login_module(str(text)))


def _users(module: LoginModule) -> dict[str, str]:
    return {k[5:]: v for k, v in module.options.items() if k.startswith("user_") and len(k) > 5}


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's SaltedPassword: PBKDF2 of the password (what a client sends in AlterUserScramCredentials)."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism]().name, password.encode(), salt, iterations)


def scram_credential(mechanism: str, password: str, *, salt: bytes | None = None,
                     iterations: int = SCRAM_MIN_ITERATIONS) -> ScramCredential:
    """RFC 5802's SaltedPassword, StoredKey and ServerKey of ``password``."""
    salt = salt if salt is not None else os.urandom(16)
    return credential_from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                           iterations)


@dataclass
class SaslServerConfig:
    mechanisms: list[str]
    plain_users: dict[str, str] = field(default_factory=dict)
    scram: dict[str, dict[str, ScramCredential]] = field(default_factory=dict)   # mechanism -> user -> credential
    max_receive_size: int = 524288     # sasl.server.max.receive.size
    reauth_ms: int = 0                 # connections.max.reauth.ms (KIP-368); 0: sessions never expire


def _setting(config, listener: str | None, key: str):
    return _setting_at(config, listener, key)[0]


def _setting_at(config, listener: str | None, key: str):
    """(value, the key it was found under): the listener's prefixed key first."""
    if listener:
        full = f"listener.name.{listener.lower()}.{key}"
        v = config.get(full)
        if v not in (None, ""):
            return v, full
    return config.get(key), key


def _jaas_module(config, listener: str | None, key: str) -> tuple[LoginModule | None, str]:
    """(the login module of a sasl.jaas.config key, the key it came from); SaslConfigError
    naming the key when Kafka's JaasConfig / JaasContext would refuse the value."""
    text, full = _setting_at(config, listener, key)
    if text in (None, ""):
        return None, full
    try:
        return login_module(str(text)), full
    except JaasError as exc:
        raise SaslConfigError(f"{full}: {exc}") from None


def server_config(config, listener: str | None = None) -> SaslServerConfig:
    """The SASL settings of one listener; SaslConfigError when kwire cannot serve them."""
    key = "sasl.enabled.mechanisms"
    prefixed = config.get(f"listener.name.{listener.lower()}.{key}") if listener else None
    if prefixed:
        raw = prefixed
    elif config.is_static(key):
        raw = config.get(key)
    else:
        raw = list(MECHANISMS)   # Kafka's default is GSSAPI, which kwire does not serve: all of ours instead
    mechs = [m.strip().upper() for m in (raw.split(",") if isinstance(raw, str) else raw) if m.strip()]
    bad = [m for m in mechs if m not in MECHANISMS]
    if bad or not mechs:
        raise SaslConfigError(f"sasl.enabled.mechanisms={','.join(mechs)}: kwire serves "
                              + ", ".join(MECHANISMS) + (f" (not {', '.join(bad)})" if bad else ""))
    default_module, default_key = _jaas_module(config, listener, "sasl.jaas.config")
    plain_module, plain_key = _jaas_module(config, listener, "plain.sasl.jaas.config")
    if plain_module is None:
        plain_module, plain_key = default_module, default_key
    if "PLAIN" in mechs and plain_module is not None and plain_module.class_name != PLAIN_MODULE:
        # Kafka starts, but its PLAIN callback handler reads user_NAME only from PlainLoginModule
        # entries: every PLAIN login would fail. Said at start instead.
        raise SaslConfigError(f"{plain_key}: {plain_module.class_name} does not serve PLAIN (PLAIN's users are "
                              f"the user_NAME options of {PLAIN_MODULE}); write that class, or leave PLAIN out of "
                              f"sasl.enabled.mechanisms")
    plain_users = (_users(plain_module) if plain_module is not None else {}) \
        or (_users(default_module) if default_module is not None else {})
    out = SaslServerConfig(mechs, max_receive_size=int(config.get("sasl.server.max.receive.size") or 524288),
                           reauth_ms=int(_setting(config, listener, "connections.max.reauth.ms") or 0))
    if "PLAIN" in mechs:
        out.plain_users = plain_users
    for m in mechs:
        if m.startswith("SCRAM"):
            module, _ = _jaas_module(config, listener, f"{m.lower()}.sasl.jaas.config")
            users = (_users(module) if module is not None else {}) or plain_users
            out.scram[m] = {u: scram_credential(m, p) for u, p in users.items()}
    if not plain_users and not out.scram:    # SCRAM users may come from the quorum (AlterUserScramCredentials)
        raise SaslConfigError(f"listener {listener or ''}: no SASL users; declare them in sasl.jaas.config, e.g. "
                              f'org.apache.kafka.common.security.plain.PlainLoginModule required '
                              f'user_alice="alice-secret";')
    return out


# ---------------------------------------------------------------------------- mechanisms
class PlainServer:
    """RFC 4616: one message ``authzid NUL authcid NUL passwd``."""

    def __init__(self, users: dict[str, str]):
        self._users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslAuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, username, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        if not username:
            raise SaslAuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationFailed("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationFailed("Authentication failed: Client requested an authorization id that "
                                           "is different from username")
        self.complete = True
        self.authorization_id = username
        return b""


def _saslname(text: str) -> str:
    """SCRAM saslname -> user name (``=2C`` -> ``,``, ``=3D`` -> ``=``); anything else after ``=`` is invalid."""
    if re.search(r"=(?!2C|3D)", text):
        raise SaslAuthenticationFailed("Invalid SCRAM user name")
    return text.replace("=2C", ",").replace("=3D", "=")


def _attributes(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split(","):
        k, sep, v = item.partition("=")
        if not sep or len(k) != 1 or k in out:
            raise SaslAuthenticationFailed(f"Invalid SCRAM message")
        out[k] = v
    return out


class ScramServer:
    """RFC 5802 server: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, credentials: Mapping[str, ScramCredential], nonce: str | None = None):
        self.mechanism = mechanism
        self._h = _HASHES[mechanism]
        self._credentials = credentials
        self._nonce = nonce
        self._state = "first"
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed("Invalid SCRAM message: not UTF-8") from None
        if self._state == "first":
            return self._first(text)
        if self._state == "final":
            return self._final(text)
        raise SaslAuthenticationFailed("Unexpected SCRAM message after the exchange completed")

    def _first(self, text: str) -> bytes:
        # gs2-header: cbind-flag "," [authzid] ","
        flag, sep, rest = text.partition(",")
        authz, sep2, bare = rest.partition(",")
        if not sep or not sep2 or flag not in ("n", "y"):
            raise SaslAuthenticationFailed("Invalid SCRAM client first message (channel binding is not supported)")
        if authz and not authz.startswith("a="):
            raise SaslAuthenticationFailed("Invalid SCRAM client first message")
        attrs = _attributes(bare)
        if "m" in attrs:
            raise SaslAuthenticationFailed("Invalid SCRAM client first message: mandatory extension")
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise SaslAuthenticationFailed("Invalid SCRAM client first message")
        extensions = {k: v for k, v in attrs.items() if k not in ("n", "r")}
        if extensions:
            raise SaslAuthenticationFailed("Authentication failed: SCRAM extensions (delegation tokens) are not "
                                           "supported")
        username = _saslname(attrs["n"])
        if authz and _saslname(authz[2:]) != username:
            raise SaslAuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                           "different from username")
        cred = self._credentials.get(username)
        if cred is None:
            raise SaslAuthenticationFailed("Authentication failed: Invalid user credentials")
        self._user, self._cred = username, cred
        self._gs2 = f"{flag},{authz},"
        self._client_first_bare = bare
        self._full_nonce = attrs["r"] + (self._nonce or secrets.token_urlsafe(24))
        self._server_first = (f"r={self._full_nonce},s={base64.b64encode(cred.salt).decode()},"
                              f"i={cred.iterations}")
        self._state = "final"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise SaslAuthenticationFailed("Invalid SCRAM client final message: no proof")
        attrs = _attributes(without_proof)
        # Kafka's rule (ScramSaslServer): the final nonce must END with the server-first nonce.
        # Older librdkafka (e.g. Debian's kcat) sends its own nonce twice in front of it.
        if not attrs.get("r", "").endswith(self._full_nonce):
            raise SaslAuthenticationFailed("Invalid SCRAM client final message: the nonce does not match")
        try:
            cbind = base64.b64decode(attrs.get("c", ""), validate=True)
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError:
            raise SaslAuthenticationFailed("Invalid SCRAM client final message: bad base64") from None
        if cbind != self._gs2.encode():
            raise SaslAuthenticationFailed("Invalid SCRAM client final message: channel binding does not match")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        h = self._h
        signature = hmac.new(self._cred.stored_key, auth_message, h).digest()
        if len(proof) != len(signature):
            raise SaslAuthenticationFailed("Authentication failed: Invalid user credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(h(client_key).digest(), self._cred.stored_key):
            raise SaslAuthenticationFailed("Authentication failed: Invalid user credentials")
        self._state = "done"
        self.complete = True
        self.authorization_id = self._user
        server_signature = hmac.new(self._cred.server_key, auth_message, h).digest()
        return b"v=" + base64.b64encode(server_signature)


# ---------------------------------------------------------------------------- connection state
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class SaslAuthenticator:
    """One connection's SASL state (Kafka's SaslServerAuthenticator): ``handshake`` then
    ``authenticate`` until ``complete``; ``allowed(api_key, now_ms)`` says what may be sent now.

    With ``connections.max.reauth.ms`` (KIP-368) a session lasts that long from its
    authentication (``session_lifetime_ms`` tells the client); the client re-authenticates on
    the same connection with SaslHandshake + SaslAuthenticate, as the same principal and with
    the same mechanism; once expired, any other request ends the connection."""

    def __init__(self, config: SaslServerConfig, stored=None):
        self.config = config
        # () -> the quorum's ScramCredentialStore (the current image's; None: JAAS-derived only)
        self._stored = stored
        self.state = "handshake"    # handshake -> authenticate -> complete (-> authenticate: re-auth) | failed
        self.mechanism: str | None = None
        self.handshake_version: int | None = None
        self.principal: str | None = None
        self.session_expires_ms: int | None = None
        self.authentications = 0     # completed exchanges on this connection (re-authentications counted)
        self._server: PlainServer | ScramServer | None = None

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    @property
    def reauthenticating(self) -> bool:
        return self.principal is not None and self.state == "authenticate"

    def expired(self, now_ms: int) -> bool:
        return self.session_expires_ms is not None and now_ms >= self.session_expires_ms

    def allowed(self, api_key: int, now_ms: int = 0) -> bool:
        if self.state == "handshake":
            return api_key in (API_VERSIONS, SASL_HANDSHAKE)
        if self.state == "authenticate":
            return api_key == SASL_AUTHENTICATE
        if self.state == "complete":
            return not self.expired(now_ms) or api_key == SASL_HANDSHAKE
        return False

    def handshake(self, mechanism: str, version: int) -> bool:
        """True when ``mechanism`` is enabled (the exchange starts); False: answer
        UNSUPPORTED_SASL_MECHANISM with ``config.mechanisms`` and close. In state complete
        this starts a re-authentication (allowed only with connections.max.reauth.ms)."""
        if self.state == "complete":
            if not self.config.reauth_ms or mechanism != self.mechanism:
                self.state = "failed"
                return False
        elif self.state != "handshake" or mechanism not in self.config.mechanisms:
            self.state = "failed"
            return False
        self.mechanism, self.handshake_version = mechanism, version
        if mechanism == "PLAIN":
            self._server = PlainServer(self.config.plain_users)
        else:
            store = self._stored() if self._stored is not None else None
            quorum = store.by_mechanism.get(mechanism, {}) if store is not None else {}
            # the quorum's credential wins; the JAAS-derived one serves users the quorum does not know
            self._server = ScramServer(mechanism, ChainMap(quorum, self.config.scram.get(mechanism, {})))
        self.state = "authenticate"
        return True

    def authenticate(self, token: bytes, now_ms: int = 0) -> bytes:
        """The server's answer to one client token; SaslAuthenticationFailed ends the exchange."""
        if self.state != "authenticate" or self._server is None:
            raise SaslAuthenticationFailed("Unexpected SASL token")
        if len(token) > self.config.max_receive_size:
            self.state = "failed"
            raise SaslAuthenticationFailed(f"SASL token of {len(token)} bytes is larger than "
                                           f"sasl.server.max.receive.size ({self.config.max_receive_size})")
        try:
            out = self._server.evaluate(bytes(token))
        except SaslAuthenticationFailed:
            self.state = "failed"
            raise
        if self._server.complete:
            principal = user_principal(self._server.authorization_id)
            if self.principal is not None and principal != self.principal:
                self.state = "failed"
                raise SaslAuthenticationFailed("Cannot change principals during re-authentication from "
                                               f"{self.principal}: {principal}")
            self.state = "complete"
            self.authentications += 1
            self.principal = principal
            self.session_expires_ms = now_ms + self.config.reauth_ms if self.config.reauth_ms else None
        return out

    @property
    def session_lifetime_ms(self) -> int:
        return self.config.reauth_ms if self.complete else 0
