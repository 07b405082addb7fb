"""SASL on the client side, with no I/O: what kwire's brokers send when they authenticate to
another broker's inter-broker listener or to a controller listener (Kafka's
SaslClientAuthenticator with PlainSaslClient / ScramSaslClient).

PLAIN (RFC 4616) is one message, ``NUL username NUL password`` (no authorization id, as
Kafka's client). SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) follow Kafka's client:
no channel binding (gs2 header ``n,,``), the user name written as a SCRAM ``saslname``
(``=2C`` / ``=3D``), a random client nonce, the server's nonce must start with it, fewer
than 4096 iterations is refused, and the server's final signature is checked (a server
that does not know the password cannot pretend it does).

Credentials come from the listener's JAAS config as Kafka's login modules take them:
``... required username="broker" password="broker-secret";`` (:func:`jaas_options`).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from kwire.security.jaas import login_module

__all__ = ["SaslClientFailed", "PlainClient", "ScramClient", "jaas_options", "client_for"]

_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MIN_ITERATIONS = 4096     # Kafka's ScramMechanism.minIterations


class SaslClientFailed(Exception):
    """The server's answer does not check out, or it refused us (one line)."""


def jaas_options(text: str | None) -> dict[str, str]:
    """The options (``username``, ``password``, ``user_NAME`` ...) of a JAAS login module entry,
    read as Kafka's JaasConfig (kwire.security.jaas.JaasError when Kafka would refuse the text)."""
    return dict(login_module(text).options) if text else {}


class PlainClient:
    """RFC 4616: one message; the server's empty answer completes it."""

    def __init__(self, username: str, password: str):
        self.mechanism = "PLAIN"
        self._token = b"\x00" + username.encode() + b"\x00" + password.encode()
        self.complete = False
        self._sent = False

    def first_message(self) -> bytes:
        self._sent = True
        return self._token

    def evaluate(self, challenge: bytes) -> bytes | None:
        """The server answered: nothing more to send (None)."""
        if not self._sent:
            raise SaslClientFailed("SASL/PLAIN: answer before the first message")
        self.complete = True
        return None


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    """RFC 5802 client: ``first_message()``; ``evaluate(server-first)`` -> client-final;
    ``evaluate(server-final)`` -> None once the server's signature checks out."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        if mechanism not in _HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._h = _HASHES[mechanism]
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)   # printable, no ','
        self._client_first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._state = "first"
        self.complete = False

    def first_message(self) -> bytes:
        if self._state != "first":
            raise SaslClientFailed("SCRAM: the first message was sent already")
        self._state = "server-first"
        return ("n,," + self._client_first_bare).encode()

    def evaluate(self, challenge: bytes) -> bytes | None:
        try:
            text = bytes(challenge).decode()
        except UnicodeDecodeError:
            raise SaslClientFailed("SCRAM: the server's message is not UTF-8") from None
        if self._state == "server-first":
            return self._client_final(text)
        if self._state == "server-final":
            self._check_server_final(text)
            return None
        raise SaslClientFailed(f"SCRAM: unexpected server message in state {self._state}")

    def _client_final(self, server_first: str) -> bytes:
        attrs = _attributes(server_first)
        if "e" in attrs:
            raise SaslClientFailed(f"SCRAM: the server refused: {attrs['e']}")
        nonce, salt_b64, iterations = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if not nonce or salt_b64 is None or iterations is None:
            raise SaslClientFailed("SCRAM: invalid server first message")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslClientFailed("SCRAM: the server nonce does not extend the client nonce")
        if not iterations.isdigit() or int(iterations) < MIN_ITERATIONS:
            raise SaslClientFailed(f"SCRAM: requested iterations {iterations} is less than the minimum "
                                   f"{MIN_ITERATIONS} for {self.mechanism}")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except ValueError:
            raise SaslClientFailed("SCRAM: the salt is not base64") from None
        h = self._h
        salted = hashlib.pbkdf2_hmac(h().name, self._password.encode(), salt, int(iterations))
        client_key = hmac.new(salted, b"Client Key", h).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        signature = hmac.new(h(client_key).digest(), auth_message, h).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = hmac.new(hmac.new(salted, b"Server Key", h).digest(), auth_message, h).digest()
        self._state = "server-final"
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _check_server_final(self, text: str) -> None:
        attrs = _attributes(text)
        if "e" in attrs:
            raise SaslClientFailed(f"SCRAM: the server refused: {attrs['e']}")
        try:
            got = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            got = b""
        if not got or not hmac.compare_digest(got, self._server_signature):
            raise SaslClientFailed("SCRAM: invalid server signature (the server does not know the password)")
        self._state = "done"
        self.complete = True


def _attributes(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split(","):
        k, sep, v = item.partition("=")
        if not sep or len(k) != 1:
            raise SaslClientFailed("SCRAM: invalid server message")
        out.setdefault(k, v)
    return out


def client_for(mechanism: str, username: str, password: str) -> PlainClient | ScramClient:
    """The client of ``mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."""
    if mechanism == "PLAIN":
        return PlainClient(username, password)
    return ScramClient(mechanism, username, password)
