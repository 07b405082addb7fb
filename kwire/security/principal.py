"""Principals as Kafka writes them (``KafkaPrincipal.toString``): ``User:alice``.

Every connection has one: ``User:ANONYMOUS`` on PLAINTEXT and on TLS without a client
certificate, ``User:<certificate subject>`` (``User:CN=alice,O=acme``) on TLS with one,
``User:<SASL authorization id>`` once SASL authentication succeeds. Handlers read it as
``ctx.principal`` (kwire.handlers.RequestContext), which reads the connection's.
"""
from __future__ import annotations

USER_TYPE = "User"
ANONYMOUS = "User:ANONYMOUS"

__all__ = ["USER_TYPE", "ANONYMOUS", "user"]


def user(name: str) -> str:
    """The principal of a user name (``alice`` -> ``User:alice``)."""
    return f"{USER_TYPE}:{name}"
