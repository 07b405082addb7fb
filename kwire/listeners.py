"""Kafka's listener syntax, parsed once (no I/O).

``listeners`` / ``advertised.listeners`` entries are ``NAME://HOST:PORT`` as in Kafka's
SocketServerConfigs: an empty host (``PLAINTEXT://:9092``) binds every interface, an IPv6
host is written in brackets (``PLAINTEXT://[::1]:9092``). On kwire's command line the name may
be left out (``--listen 127.0.0.1:9092`` is ``PLAINTEXT://127.0.0.1:9092``) and so may the host
(``--listen 9092`` / ``--listen :9092``: every interface, as Kafka's empty host).

``controller.quorum.voters`` entries are ``ID@HOST:PORT``. Every error is a
:class:`ListenerError` whose message is one line naming the value and what to write instead.
"""
from __future__ import annotations

import re

from kwire.value import Value

__all__ = ["Endpoint", "ClientListener", "PROTOCOL_IDS", "ListenerError", "parse_endpoint", "parse_listeners", "parse_voters",
           "parse_protocol_map", "DEFAULT_PROTOCOL_MAP"]

DEFAULT_PROTOCOL_MAP = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT",
                        "SASL_SSL": "SASL_SSL"}
_NAME = re.compile(r"[A-Za-z0-9_\-.]+")


class ListenerError(ValueError):
    """A listener, address or voter the broker cannot use (the message is one line)."""


class Endpoint(Value):   # frozen (kwire.value: no generated code at import)
    name: str        # the listener name (PLAINTEXT, CONTROLLER, EXTERNAL ...)
    host: str        # "" = every interface
    port: int

    @property
    def bind_host(self) -> str | None:
        """The host to bind (None: every interface, IPv4 and IPv6, as Kafka's empty host)."""
        return self.host or None

    @property
    def address(self) -> str:
        """HOST:PORT, with brackets around an IPv6 host."""
        return f"{_bracket(self.host)}:{self.port}"

    def __str__(self) -> str:
        return f"{self.name}://{self.address}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _port(text: str, whole: str, what: str) -> int:
    if not text.isdigit():
        raise ListenerError(f"{what} {whole!r}: the port {text!r} is not a number "
                            f"(write HOST:PORT, e.g. 127.0.0.1:9092)")
    port = int(text)
    if port > 65535:
        raise ListenerError(f"{what} {whole!r}: port {port} is out of range (0-65535)")
    return port


def parse_endpoint(text: str, *, what: str = "listener", default_name: str = "PLAINTEXT",
                   require_name: bool = False) -> Endpoint:
    """``NAME://HOST:PORT``, ``HOST:PORT``, ``:PORT``, ``PORT``, ``[v6]:PORT`` -> Endpoint."""
    whole = text
    text = text.strip()
    if not text:
        raise ListenerError(f"{what} is empty (write NAME://HOST:PORT, e.g. PLAINTEXT://127.0.0.1:9092)")
    name = default_name
    if "://" in text:
        name, _, text = text.partition("://")
        if not _NAME.fullmatch(name):
            raise ListenerError(f"{what} {whole!r}: {name!r} is not a listener name (write NAME://HOST:PORT)")
        name = name.upper()
    elif require_name:
        raise ListenerError(f"{what} {whole!r} has no listener name (write NAME://HOST:PORT, "
                            f"e.g. PLAINTEXT://{text})")
    if text.isdigit():                      # a bare port: every interface
        return Endpoint(name, "", _port(text, whole, what))
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ListenerError(f"{what} {whole!r}: write an IPv6 address as [ADDRESS]:PORT")
        return Endpoint(name, host, _port(rest[1:], whole, what))
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ListenerError(f"{what} {whole!r} has no port (write HOST:PORT, e.g. {text}:9092)")
    if ":" in host:
        raise ListenerError(f"{what} {whole!r}: write an IPv6 address in brackets, e.g. [::1]:9092")
    if "/" in host or " " in host:
        raise ListenerError(f"{what} {whole!r}: {host!r} is not a host name")
    return Endpoint(name, host, _port(port, whole, what))


def parse_listeners(values: list[str], *, key: str = "listeners") -> list[Endpoint]:
    """A ``listeners``-style list -> endpoints; names must be unique, as in Kafka."""
    out: list[Endpoint] = []
    for v in values:
        if not v.strip():
            continue
        ep = parse_endpoint(v, what=f"{key} entry")
        if any(e.name == ep.name for e in out):
            raise ListenerError(f"{key}: the listener name {ep.name} appears more than once "
                                f"(each listener needs its own name)")
        out.append(ep)
    return out


def parse_voters(values: list[str] | str) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters`` (``ID@HOST:PORT,...``) -> {id: (host, port)}."""
    items = values.split(",") if isinstance(values, str) else values
    out: dict[int, tuple[str, int]] = {}
    for item in items:
        item = item.strip()
        if not item:
            continue
        nid, at, addr = item.partition("@")
        if not at or not nid.strip().isdigit():
            raise ListenerError(f"controller.quorum.voters entry {item!r} is not ID@HOST:PORT "
                                f"(e.g. 1@127.0.0.1:9093)")
        if "://" in addr:
            raise ListenerError(f"controller.quorum.voters entry {item!r}: write ID@HOST:PORT, "
                                f"without a listener name")
        try:
            ep = parse_endpoint(addr, what="controller.quorum.voters entry")
        except ListenerError:
            ep = None
        if ep is None or not addr.strip() or addr.strip().isdigit():
            raise ListenerError(f"controller.quorum.voters entry {item!r} is not ID@HOST:PORT "
                                f"(e.g. {nid.strip()}@127.0.0.1:9093)")
        if not ep.host:
            raise ListenerError(f"controller.quorum.voters entry {item!r} has no host "
                                f"(write ID@HOST:PORT, e.g. {nid}@127.0.0.1:{ep.port})")
        n = int(nid)
        if n in out:
            raise ListenerError(f"controller.quorum.voters names node {n} twice")
        out[n] = (ep.host, ep.port)
    return out


def parse_protocol_map(text: str) -> dict[str, str]:
    """``listener.security.protocol.map`` (``NAME:PROTOCOL,...``) -> {NAME: PROTOCOL}."""
    out: dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, proto = item.partition(":")
        if not sep:
            raise ListenerError(f"listener.security.protocol.map entry {item!r} is not NAME:PROTOCOL")
        out[name.strip().upper()] = proto.strip().upper()
    return out


# Kafka's SecurityProtocol ids (BrokerEndpoint.security_protocol in RegisterBrokerRecord)
PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def uses_tls(protocol: str) -> bool:
    """SSL and SASL_SSL run over TLS."""
    return protocol in ("SSL", "SASL_SSL")


def uses_sasl(protocol: str) -> bool:
    """SASL_PLAINTEXT and SASL_SSL log in with SASL first."""
    return protocol in ("SASL_PLAINTEXT", "SASL_SSL")


class ClientListener(Value):   # frozen (kwire.value: no generated code at import)
    """One client listener: where it binds, its security protocol, what it advertises."""
    endpoint: Endpoint
    protocol: str = "PLAINTEXT"
    advertised: tuple[str, int] | None = None   # None: the bound address (127.0.0.1 for every interface)

    @property
    def name(self) -> str:
        return self.endpoint.name

    @property
    def tls(self) -> bool:
        return uses_tls(self.protocol)

    @property
    def sasl(self) -> bool:
        return uses_sasl(self.protocol)
