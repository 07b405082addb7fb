"""What the controller listener asks of each inbound connection, with no I/O: SASL first on a
SASL_* controller listener, then the authorizer (when one is on).

Kafka's controllers serve SaslHandshake (v1) and SaslAuthenticate before anything else on a
SASL listener, and require CLUSTER_ACTION on the cluster for the quorum's and the brokers'
requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, AlterPartition,
BrokerHeartbeat, forwarded metadata ...) and DESCRIBE on the cluster for DescribeQuorum. The
principal is the SASL user, the client certificate's subject on mutual TLS, else
``User:ANONYMOUS``: name the nodes' principal in ``super.users``.

``ControllerConnection.check(api_key, version, body, now_ms)`` says what to do with one
request: answer it here (the SASL exchange), serve it, or close the connection (the reason is
one line naming the principal). SaslHandshake v0 (bare tokens) is not served here: kwire's and
Kafka's brokers speak v1 to controllers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kwire.codec.apis import APIS, api
from kwire.errors import ErrorCode
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME
from kwire.security.operations import AclOperation as Op
from kwire.security.principal import ANONYMOUS

__all__ = ["ControllerConnection", "Verdict", "SERVE"]

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS, DESCRIBE_QUORUM = 17, 36, 18, 55


@dataclass(frozen=True)
class Verdict:
    answer: Any = None          # a response body to send (the SASL exchange)
    close: str | None = None    # close the connection (after the answer, if any): why


SERVE = Verdict()


class ControllerConnection:
    """One inbound connection of the controller listener."""

    def __init__(self, listener_security=None, authorizer=None, principal: str = ANONYMOUS, host: str = ""):
        sasl = getattr(listener_security, "sasl", None)
        self.sasl = None
        if sasl is not None:
            from kwire.security.sasl import SaslAuthenticator  # noqa: PLC0415 - start-up time: SASL listeners only
            self.sasl = SaslAuthenticator(sasl)
        self.authorizer = authorizer
        self.principal = principal
        self.host = host

    def check(self, api_key: int, version: int, body, now_ms: int = 0) -> Verdict:
        if api_key == SASL_HANDSHAKE:
            return self._handshake(version, body)
        if api_key == SASL_AUTHENTICATE:
            return self._authenticate(body, now_ms)
        sasl = self.sasl
        if sasl is not None and (not sasl.complete or sasl.session_expires_ms is not None):
            if not sasl.allowed(api_key, now_ms):
                return Verdict(close=("a request after the SASL session expired (connections.max.reauth.ms)"
                                      if sasl.complete else f"api key {api_key} before SASL authentication"))
        if self.authorizer is None:
            return SERVE

        op = Op.DESCRIBE if api_key in (DESCRIBE_QUORUM, API_VERSIONS) else Op.CLUSTER_ACTION
        request = APIS[api_key].name if api_key in APIS else "Unknown"
        if self.authorizer.authorize(self.principal, self.host, op, CLUSTER, CLUSTER_NAME, request):
            return SERVE
        return Verdict(close=f"{self.principal} may not {op.name} on the cluster (api key {api_key}); "
                             f"name the nodes' principal in super.users")

    def _handshake(self, version: int, body) -> Verdict:
        Resp = api("SaslHandshake").response.cls
        auth = self.sasl
        if auth is None or auth.state != "handshake" and not (auth.complete and auth.config.reauth_ms):
            return Verdict(Resp(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[]),
                           "SaslHandshake not expected now")
        if version < 1:
            auth.state = "failed"
            return Verdict(Resp(error_code=ErrorCode.UNSUPPORTED_VERSION, mechanisms=list(auth.config.mechanisms)),
                           "SaslHandshake v0 is not served on the controller listener")
        mechanism = body.mechanism or ""
        if not auth.handshake(mechanism, version):
            return Verdict(Resp(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                mechanisms=list(auth.config.mechanisms)),
                           f"SASL mechanism {mechanism!r} is not enabled (enabled: {','.join(auth.config.mechanisms)})")
        return Verdict(Resp(error_code=0, mechanisms=list(auth.config.mechanisms)))

    def _authenticate(self, body, now_ms: int) -> Verdict:
        from kwire.security.sasl import SaslAuthenticationFailed  # noqa: PLC0415 - start-up time: SASL listeners only

        Resp = api("SaslAuthenticate").response.cls
        auth = self.sasl
        if auth is None or auth.state != "authenticate":
            return Verdict(Resp(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message="SaslAuthenticate is not "
                                "expected now", auth_bytes=b"", session_lifetime_ms=0),
                           "SaslAuthenticate not expected now")
        try:
            out = auth.authenticate(bytes(body.auth_bytes or b""), now_ms)
        except SaslAuthenticationFailed as exc:
            return Verdict(Resp(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc),
                                auth_bytes=b"", session_lifetime_ms=0),
                           f"SASL {auth.mechanism} authentication failed: {exc}")
        if auth.complete:
            self.principal = auth.principal
        return Verdict(Resp(error_code=0, error_message=None, auth_bytes=out,
                            session_lifetime_ms=auth.session_lifetime_ms))
