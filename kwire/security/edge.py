"""What a client listener's security protocol asks of each connection, at the Trio edge.

A :class:`ListenerSecurity` is built once per listener at start (``for_listener``: the TLS
context read from the config; a bad setting is a StartupError naming the key) and handed to
every connection accepted there. ``secure`` runs the TLS handshake of an SSL / SASL_SSL
connection (bounded by a deadline: a peer that never finishes it is dropped) and returns the
stream to serve and the principal of the client certificate, if any.

On TLS connections the records of a Fetch go out through the buffered path of kwire.net
(kwire.security.tls_stream.TlsStream has no ``socket``, so ``os.sendfile`` is never used
there): the bytes must pass through the TLS record layer.
"""
from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass, field
from typing import Any

import trio

from kwire.errors import StartupError, StartupFileError
from kwire.listeners import ClientListener
from kwire.security.principal import ANONYMOUS

log = logging.getLogger("kwire.security")

__all__ = ["ListenerSecurity", "for_listener", "secure", "HandshakeFailed"]


class HandshakeFailed(Exception):
    """The TLS handshake did not complete (the reason is one line)."""


@dataclass
class ListenerSecurity:
    name: str
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: Any = None          # kwire.security.sasl.SaslServerConfig on SASL_* listeners
    extra: dict = field(default_factory=dict)

    @property
    def tls(self) -> bool:
        return self.ssl_context is not None


def for_listener(config, listener: ClientListener) -> ListenerSecurity:
    """The security of one client listener; StartupError when its settings are unusable."""
    sec = ListenerSecurity(listener.name, listener.protocol)
    if listener.tls:
        from kwire.security.tls import (  # noqa: PLC0415 - start-up time: TLS listeners only
            KeystoreError, TlsConfigError, server_context)
        try:
            sec.ssl_context = server_context(config, listener.name)
        except TlsConfigError as exc:
            kind = StartupFileError if isinstance(exc, KeystoreError) else StartupError
            raise kind(f"listener {listener.endpoint} ({listener.protocol}): {exc}") from None
    if listener.sasl:
        from kwire.security.sasl import SaslConfigError, server_config  # noqa: PLC0415 - start-up time: SASL listeners only
        try:
            sec.sasl = server_config(config, listener.name)
        except SaslConfigError as exc:
            raise StartupError(f"listener {listener.endpoint} ({listener.protocol}): {exc}") from None
    return sec


async def secure(stream, sec: ListenerSecurity, timeout_s: float):
    """(stream to serve, principal) of a new connection on ``sec``'s listener."""
    if sec.ssl_context is None:
        return stream, ANONYMOUS
    from kwire.security.tls import certificate_principal  # noqa: PLC0415 - start-up time: TLS listeners only

    from kwire.security.tls_stream import TlsStream  # noqa: PLC0415 - start-up time: TLS listeners only

    tls = TlsStream(stream, sec.ssl_context)
    try:
        with trio.fail_after(timeout_s):
            await tls.do_handshake()
    except trio.TooSlowError:
        raise HandshakeFailed(f"TLS handshake not done after {timeout_s:.1f} s") from None
    except trio.BrokenResourceError as exc:
        cause = exc.__cause__ or exc
        raise HandshakeFailed(f"TLS handshake failed: {cause}") from None
    principal = certificate_principal(tls.getpeercert()) or ANONYMOUS
    return tls, principal
