"""SaslHandshake (key 17) v0-1 and SaslAuthenticate (key 36) v0-2, on SASL_PLAINTEXT and
SASL_SSL listeners; the exchange itself is kwire.security.sasl (no I/O).

As Kafka's SaslServerAuthenticator: before authentication only ApiVersions, SaslHandshake and
then SaslAuthenticate are served (anything else closes the connection, kwire.server); an
unsupported mechanism is answered UNSUPPORTED_SASL_MECHANISM with the enabled ones and the
connection closed; wrong credentials are answered SASL_AUTHENTICATION_FAILED with the reason,
and the connection closed. On a listener without SASL, or once authenticated, both are
answered ILLEGAL_SASL_STATE, unless ``connections.max.reauth.ms`` (KIP-368) is set: then
SaslAuthenticate answers ``session_lifetime_ms`` and the client re-authenticates on the same
connection (same mechanism, same principal) before the session expires; after expiry any
other request closes the connection (kwire.server).

After SaslHandshake v0 the tokens come bare (size-prefixed, no Kafka header) and are answered
the same way by kwire.server; a failure there closes the connection, as v0 cannot say why.

Left out: GSSAPI and OAUTHBEARER.
"""
from __future__ import annotations

import logging

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles

log = logging.getLogger("kwire.security")


@handles("SaslHandshake", "0-1")
async def sasl_handshake(ctx: RequestContext, req):
    conn = ctx.connection
    auth = getattr(conn, "sasl", None)
    if auth is None or auth.state not in ("handshake", "complete") \
            or (auth.state == "complete" and not auth.config.reauth_ms):
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    if auth.complete and req.mechanism != auth.mechanism:
        conn.close_after_response = (f"re-authentication with SASL mechanism {req.mechanism!r} instead of "
                                     f"{auth.mechanism!r}")
        auth.state = "failed"
        return ctx.response(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=[auth.mechanism])
    if not auth.handshake(req.mechanism or "", ctx.version):
        conn.close_after_response = (f"SASL mechanism {req.mechanism!r} is not enabled "
                                     f"(enabled: {','.join(auth.config.mechanisms)})")
        return ctx.response(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=list(auth.config.mechanisms))
    if ctx.version == 0:
        conn.raw_tokens = True     # v0: bare size-prefixed tokens follow (kwire.server reads them)
    return ctx.response(error_code=0, mechanisms=list(auth.config.mechanisms))


@handles("SaslAuthenticate", "0-2")
async def sasl_authenticate(ctx: RequestContext, req):
    conn = ctx.connection
    auth = getattr(conn, "sasl", None)
    if auth is None or auth.state != "authenticate":
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                            error_message="SaslAuthenticate is not expected now", auth_bytes=b"",
                            session_lifetime_ms=0)
    from kwire.security.sasl import SaslAuthenticationFailed  # noqa: PLC0415 - start-up time: loaded with SASL

    try:
        out = auth.authenticate(req.auth_bytes or b"", ctx.broker.clock.now_ms())
    except SaslAuthenticationFailed as exc:
        conn.close_after_response = f"SASL {auth.mechanism} authentication failed: {exc}"
        return ctx.response(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc),
                            auth_bytes=b"", session_lifetime_ms=0)
    if auth.complete:
        conn.principal = auth.principal
        log.debug("connection from %s authenticated as %s (%s)", ctx.peer, auth.principal, auth.mechanism)
    return ctx.response(error_code=0, error_message=None, auth_bytes=out, session_lifetime_ms=auth.session_lifetime_ms)
