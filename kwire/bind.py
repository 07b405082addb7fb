"""Binding listeners in two steps, so a port is taken early and answers only when ready.

``bind(host, port)`` resolves the address and binds every socket (an empty host: IPv4 and
IPv6 wildcards, as Kafka binds a host-less listener), so a port in use or a host that does
not resolve stops the start at once with one line naming the address; port 0 resolves to one
port for every family. ``listen(sockets)`` starts accepting: until then a client's connect
is refused (a bound socket that does not listen answers RST), so ``nc -z`` and clients'
bootstrap see the port only once the broker can serve it.
"""
from __future__ import annotations

import errno
import socket as stdsocket

import trio

from kwire.errors import StartupError

__all__ = ["bind", "listen", "describe_address"]

_REASONS = {
    errno.EADDRINUSE: "the address is already in use (another broker or program listens there; stop it or "
                      "choose another port)",
    errno.EADDRNOTAVAIL: "no network interface of this machine has that address (use 127.0.0.1, a local "
                         "address, or an empty host for every interface)",
    errno.EACCES: "permission denied (ports below 1024 need privileges; choose a port above 1024)",
}


def describe_address(host: str | None, port: int) -> str:
    h = host or ""
    return f"[{h}]:{port}" if ":" in h else f"{h}:{port}"


async def bind(host: str | None, port: int, *, what: str = "listener") -> list[trio.socket.SocketType]:
    """Bound (not yet listening) TCP sockets for ``host:port``; StartupError naming the
    address when it cannot be bound."""
    where = describe_address(host, port)
    try:
        addresses = await trio.socket.getaddrinfo(host or None, port, type=stdsocket.SOCK_STREAM,
                                                  flags=stdsocket.AI_PASSIVE)
    except stdsocket.gaierror as exc:
        raise StartupError(f"cannot listen on {where} ({what}): host {host!r} does not resolve "
                           f"({exc.strerror})") from None
    socks: list[trio.socket.SocketType] = []
    seen = set()
    try:
        for family, type_, proto, _, sockaddr in addresses:
            if (family, sockaddr) in seen:
                continue
            seen.add((family, sockaddr))
            try:
                sock = trio.socket.socket(family, type_, proto)
            except OSError as exc:
                if exc.errno == errno.EAFNOSUPPORT:
                    continue
                raise
            socks.append(sock)
            sock.setsockopt(stdsocket.SOL_SOCKET, stdsocket.SO_REUSEADDR, 1)
            if family == stdsocket.AF_INET6:
                sock.setsockopt(stdsocket.IPPROTO_IPV6, stdsocket.IPV6_V6ONLY, 1)
            if port == 0 and len(socks) > 1:   # one port for every family
                sockaddr = (sockaddr[0], socks[0].getsockname()[1], *sockaddr[2:])
            try:
                await sock.bind(sockaddr)
            except OSError as exc:
                if exc.errno == errno.EADDRNOTAVAIL and family == stdsocket.AF_INET6 and not host:
                    socks.pop().close()   # a machine without IPv6: the IPv4 wildcard will do
                    continue
                reason = _REASONS.get(exc.errno, exc.strerror or str(exc))
                raise StartupError(f"cannot listen on {where} ({what}): {reason}") from None
        if not socks:
            raise StartupError(f"cannot listen on {where} ({what}): no usable address")
    except BaseException:
        for s in socks:
            s.close()
        raise
    return socks


def listen(socks: list[trio.socket.SocketType], backlog: int | None = None, *,
           what: str = "listener") -> list[trio.SocketListener]:
    """Start accepting on bound sockets (two sockets with SO_REUSEADDR may both bind a port
    nobody listens on yet: the second to listen is told here)."""
    out = []
    for s in socks:
        try:
            s.listen(backlog if backlog is not None else stdsocket.SOMAXCONN)
        except OSError as exc:
            host, port = s.getsockname()[:2]
            reason = _REASONS.get(exc.errno, exc.strerror or str(exc))
            raise StartupError(f"cannot listen on {describe_address(host, port)} ({what}): {reason}") from None
        out.append(trio.SocketListener(s))
    return out
