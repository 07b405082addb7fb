"""How this node reaches the other nodes: the inter-broker listener (replica fetches,
transaction markers, AddPartitionsToTxn checks) and the controller listener (Raft, metadata
forwarding, AlterPartition, heartbeats), as Kafka names them.

- ``inter.broker.listener.name`` (or ``security.inter.broker.protocol``: the listener of that
  name; Kafka refuses both at once) names one of this broker's listeners; a broker connects
  to that listener of its peer, at the address the peer registered for it (its
  RegisterBrokerRecord endpoints). Unset: the listener named PLAINTEXT, as Kafka's default
  ``security.inter.broker.protocol=PLAINTEXT``; a node alone (no peers) may name none.
- ``controller.listener.names``: the first name is the controller listener; its protocol comes
  from ``listener.security.protocol.map`` (a name missing there is PLAINTEXT when the map is
  not set explicitly, as in Kafka's KRaft mode). Unset (``--controller-listen``): PLAINTEXT.

On an SSL / SASL_SSL link the connection does the TLS handshake with the listener's settings
(``listener.name.<l>.ssl.*`` else ``ssl.*``: the peer checked against the truststore and, with
``ssl.endpoint.identification.algorithm=https``, its host name; the keystore presented for
mutual TLS); on a SASL_* link it then authenticates with ``sasl.mechanism.inter.broker.protocol``
/ ``sasl.mechanism.controller.protocol`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and the
``username`` / ``password`` of the listener's JAAS config
(``listener.name.<l>.<mechanism>.sasl.jaas.config``, else ``listener.name.<l>.sasl.jaas.config``,
else ``sasl.jaas.config``), as Kafka's brokers do. The principal the peer sees is that user
(or the certificate's subject on SSL): put it in ``super.users`` when an authorizer is on.

Left out: re-authentication on the client side (KIP-368): when the peer limits sessions
(``connections.max.reauth.ms``) it closes the connection at the end of one and kwire connects
and authenticates again.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass, field

import trio

from kwire.codec.apis import api
from kwire.codec.frame import NEED_DATA
from kwire.connection import KafkaClientConnection
from kwire.errors import ErrorCode, StartupError
from kwire.listeners import DEFAULT_PROTOCOL_MAP, ClientListener, Endpoint, parse_protocol_map
from kwire.net import PeerAuthenticationFailed, set_socket_options   # PeerAuthenticationFailed: see there
from kwire.security.edge import for_listener
from kwire.value import Value

__all__ = ["PeerConfigError", "PeerAuthenticationFailed", "PeerLink", "PeerSecurity", "plan_peers",
           "PLAINTEXT_LINK", "MECHANISMS"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class PeerConfigError(ValueError):
    """Inter-broker or controller settings kwire cannot use (one line naming the key)."""


@dataclass(frozen=True)
class PeerLink:
    """How this node opens connections to one kind of peer listener."""
    role: str                           # "inter-broker" | "controller"
    listener: str | None = None         # the listener's name (None: the first one a broker registered)
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None        # SASL mechanism on SASL_* links
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def secured(self) -> bool:
        return self.protocol != "PLAINTEXT"

    def describe(self) -> str:
        what = self.protocol + (f"/{self.mechanism} as {self.username}" if self.mechanism else "")
        return f"listener {self.listener} ({what})" if self.listener else what

    def address(self, broker) -> tuple[str, int] | None:
        """(host, port) of this link's listener on a registered broker (a BrokerImage), or
        None when the broker registered no listener of that name."""
        endpoints = getattr(broker, "endpoints", None) or {}
        if self.listener is None or not endpoints:
            return (broker.host, broker.port) if broker.port else None
        ep = endpoints.get(self.listener)
        return (ep[0], ep[1]) if ep is not None and ep[1] else None

    async def connect(self, host: str, port: int, *, timeout: float, client_id: str = "kwire"):
        """A stream to ``host:port`` ready for Kafka requests: connected, TLS done, SASL
        authenticated. OSError when the connect fails, PeerAuthenticationFailed when the
        handshake or the authentication does, trio.TooSlowError after ``timeout`` seconds."""
        with trio.fail_after(timeout):
            stream = await trio.open_tcp_stream(host, port)
        try:
            set_socket_options(stream)
            with trio.fail_after(timeout):
                if self.ssl_context is not None:
                    stream = await self._tls(stream, host, port)
                if self.mechanism is not None:
                    await self._sasl(stream, host, port, client_id)
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        return stream

    async def _tls(self, stream, host: str, port: int):
        from kwire.security.tls_stream import TlsStream  # noqa: PLC0415 - start-up time: TLS links only

        tls = TlsStream(stream, self.ssl_context, server_side=False, server_hostname=host)
        try:
            await tls.do_handshake()
        except trio.BrokenResourceError as exc:
            cause = exc.__cause__ or exc
            if not isinstance(cause, ssl.SSLError):   # the peer went away: a connection failure, not a refusal
                raise ConnectionError(f"TLS handshake with {host}:{port} interrupted: {cause}") from None
            raise PeerAuthenticationFailed(f"TLS handshake with {self.role} {self.describe()} at {host}:{port} "
                                           f"failed: {getattr(cause, 'reason', None) or cause}") from None
        return tls

    async def _sasl(self, stream, host: str, port: int, client_id: str) -> None:
        from kwire.security.sasl_client import SaslClientFailed, client_for  # noqa: PLC0415 - start-up time: SASL links only

        where = f"{self.role} {self.describe()} at {host}:{port}"
        conn = KafkaClientConnection(client_id=client_id)
        hs = api("SaslHandshake")
        try:
            r = await _round_trip(stream, conn, hs, 1, hs.request.cls(mechanism=self.mechanism))
        except trio.BrokenResourceError as exc:
            if isinstance(exc.__cause__, ssl.SSLError):    # a TLS alert: the peer refused our certificate
                raise PeerAuthenticationFailed(f"{where}: TLS refused: {exc}") from None
            raise
        if r.error_code:
            raise PeerAuthenticationFailed(f"{where}: SASL mechanism {self.mechanism} is not enabled there "
                                           f"({ErrorCode(r.error_code).name}; enabled: "
                                           f"{','.join(r.mechanisms or []) or 'none'})")
        client = client_for(self.mechanism, self.username or "", self.password or "")
        token = client.first_message()
        auth = api("SaslAuthenticate")
        while True:
            r = await _round_trip(stream, conn, auth, 2, auth.request.cls(auth_bytes=token))
            if r.error_code:
                raise PeerAuthenticationFailed(f"{where}: SASL {self.mechanism} authentication failed: "
                                               f"{r.error_message or ErrorCode(r.error_code).name}")
            try:
                token = client.evaluate(bytes(r.auth_bytes or b""))
            except SaslClientFailed as exc:
                raise PeerAuthenticationFailed(f"{where}: {exc}") from None
            if client.complete:
                return
            if token is None:
                raise PeerAuthenticationFailed(f"{where}: SASL {self.mechanism} exchange ended early")


async def _round_trip(stream, conn, a, version: int, body):
    _, data = conn.send_request(a, version, body)
    await stream.send_all(data)
    while (resp := conn.next_response()) is NEED_DATA:
        data = await stream.receive_some(1 << 16)
        if not data:
            raise trio.BrokenResourceError("the peer closed the connection")
        conn.receive_data(data)
    return resp.body


PLAINTEXT_LINK = PeerLink("inter-broker")


class PeerSecurity(Value):   # frozen (kwire.value: no generated code at import)
    """This node's links to the others and the security of its own controller listener."""
    inter_broker: PeerLink = PLAINTEXT_LINK
    controller: PeerLink = PeerLink("controller")
    controller_listener: object = None    # kwire.security.edge.ListenerSecurity of the controller listener, or None


# ---------------------------------------------------------------------------- planning
def _protocol_map(config) -> tuple[dict[str, str], bool]:
    explicit = config.is_static("listener.security.protocol.map")
    out = dict(DEFAULT_PROTOCOL_MAP)
    out.update(parse_protocol_map(config.get("listener.security.protocol.map") or ""))
    return out, explicit


def inter_broker_listener_name(config, listeners: list[ClientListener], *, alone: bool) -> str | None:
    """The inter-broker listener's name, checked as Kafka's KafkaConfig does; None for a node
    alone whose listeners name none (it never connects to another broker)."""
    name_set = config.is_static("inter.broker.listener.name") and config.get("inter.broker.listener.name")
    proto_set = config.is_static("security.inter.broker.protocol")
    names = [cl.name for cl in listeners]
    if name_set and proto_set:
        raise PeerConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should "
                              "be set (inter.broker.listener.name names the listener, and with it its protocol)")
    if name_set:
        name, key = str(config.get("inter.broker.listener.name")).strip().upper(), "inter.broker.listener.name"
    else:
        name, key = str(config.get("security.inter.broker.protocol") or "PLAINTEXT").upper(), \
            "security.inter.broker.protocol"
    controllers = {n.upper() for n in (config.get("controller.listener.names") or [])}
    if name in controllers:
        raise PeerConfigError(f"controller.listener.names must not contain the inter-broker listener {name} "
                              f"(set by {key}); brokers and controllers use different listeners")
    if name in names:
        return name
    if not name_set and not proto_set and alone:
        return None
    raise PeerConfigError(f"{key}={name}: the inter-broker listener must be one of this broker's listeners; "
                          f"the valid options based on the listeners are {','.join(names)}"
                          + ("" if name_set else " (set inter.broker.listener.name)"))


def controller_listener(config) -> tuple[str | None, str]:
    """(name, security protocol) of the controller listener (None, PLAINTEXT without
    ``controller.listener.names``)."""
    names = [n.strip().upper() for n in (config.get("controller.listener.names") or []) if n.strip()]
    if not names:
        return None, "PLAINTEXT"
    proto_map, explicit = _protocol_map(config)
    proto = proto_map.get(names[0])
    if proto is None:
        if explicit:
            raise PeerConfigError(f"controller listener {names[0]} (controller.listener.names) has no security "
                                  f"protocol in listener.security.protocol.map (add {names[0]}:PLAINTEXT, or "
                                  f"{names[0]}:SSL ...)")
        proto = "PLAINTEXT"
    if proto not in MECHANISM_PROTOCOLS:
        raise PeerConfigError(f"controller listener {names[0]}: {proto} is not a security protocol kwire serves "
                              f"(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)")
    return names[0], proto


MECHANISM_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _jaas(config, listener: str, mechanism: str) -> tuple[str | None, str]:
    """(JAAS config text, the key it came from) for the SASL client of ``listener``."""
    for key in (f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config",
                f"listener.name.{listener.lower()}.sasl.jaas.config", "sasl.jaas.config"):
        v = config.get(key)
        if v:
            return str(v), key
    return None, f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"


def _link(config, role: str, listener: str | None, protocol: str, mechanism_key: str,
          served_here: bool = True) -> PeerLink:
    if listener is None or protocol == "PLAINTEXT":
        return PeerLink(role, listener, protocol)
    # start-up time: the TLS and SASL modules load only for a link that uses them
    from kwire.security.sasl import SaslConfigError, server_config  # noqa: PLC0415 - start-up time: TLS/SASL links only
    from kwire.security.jaas import JaasError  # noqa: PLC0415 - start-up time: TLS/SASL links only
    from kwire.security.sasl_client import jaas_options  # noqa: PLC0415 - start-up time: SASL links only
    from kwire.security.tls import TlsConfigError, client_context  # noqa: PLC0415 - start-up time: TLS/SASL links only
    ctx = None
    if protocol in ("SSL", "SASL_SSL"):
        try:
            ctx = client_context(config, listener)
        except TlsConfigError as exc:
            raise PeerConfigError(f"{role} listener {listener} ({protocol}): {exc}") from None
    if protocol == "SSL":
        return PeerLink(role, listener, protocol, ctx)
    mechanism = str(config.get(mechanism_key) or "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise PeerConfigError(f"{mechanism_key}={mechanism}: kwire's nodes authenticate to each other with "
                              f"{', '.join(MECHANISMS)}; set {mechanism_key} (the {role} listener {listener} is "
                              f"{protocol})")
    enabled = [mechanism]
    if served_here:    # this node serves the listener too: its peers use the same mechanism
        try:
            enabled = server_config(config, listener).mechanisms
        except SaslConfigError as exc:
            raise PeerConfigError(f"{role} listener {listener} ({protocol}): {exc}") from None
    if mechanism not in enabled:
        raise PeerConfigError(f"{mechanism_key}={mechanism} must be included in sasl.enabled.mechanisms of the "
                              f"{role} listener {listener} (enabled: {','.join(enabled)})")
    text, key = _jaas(config, listener, mechanism)
    try:
        opts = jaas_options(text)
    except JaasError as exc:
        raise PeerConfigError(f"{key}: {exc}") from None
    if not opts.get("username") or "password" not in opts:
        raise PeerConfigError(f"the {role} listener {listener} ({protocol}) needs the credentials this node "
                              f"authenticates with: username=\"...\" password=\"...\" in {key}")
    return PeerLink(role, listener, protocol, ctx, mechanism, opts["username"], opts["password"])


def plan_peers(config, listeners: list[ClientListener], controller_address: tuple[str, int] | None = None, *,
               alone: bool = True) -> PeerSecurity:
    """The links of a node whose client listeners are ``listeners``; ``controller_address``
    is its own controller listener (None: it has none); ``alone``: a quorum of one (no other
    node to reach). PeerConfigError (one line) when the settings do not hold together."""
    ib_name = inter_broker_listener_name(config, listeners, alone=alone)
    ib_proto = next((cl.protocol for cl in listeners if cl.name == ib_name), "PLAINTEXT")
    inter_broker = _link(config, "inter-broker", ib_name, ib_proto, "sasl.mechanism.inter.broker.protocol")
    ctl_name, ctl_proto = controller_listener(config)
    controller = _link(config, "controller", ctl_name, ctl_proto, "sasl.mechanism.controller.protocol",
                       served_here=controller_address is not None) \
        if not alone else PeerLink("controller", ctl_name, ctl_proto)
    served = None
    if controller_address is not None and ctl_name is not None and ctl_proto != "PLAINTEXT" and not alone:
        try:
            served = for_listener(config, ClientListener(Endpoint(ctl_name, *controller_address), ctl_proto))
        except StartupError as exc:
            raise PeerConfigError(str(exc)) from None
    return PeerSecurity(inter_broker, controller, served)
