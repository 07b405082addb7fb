"""The Trio edge: accept loop, one task per connection, requests handled and answered in
order (Kafka handles one request per connection at a time), errors turned into Kafka
error codes or a clean close with a log line naming the peer and the reason.
"""
from __future__ import annotations

import errno
import logging
import os
import socket
from typing import Any

import trio

from kwire.codec import frame as FR
from kwire.codec.frame import NEED_DATA, FrameDecoder
from kwire.groups.edge import start_groups
from kwire.errors import CodecError, ErrorCode, FrameTooLarge, KafkaError, UnknownApiKey, UnsupportedVersion
from kwire.handlers import REGISTRY, RequestContext, load_all

log = logging.getLogger("kwire.server")

RECV_SIZE = 256 * 1024
COALESCE_LIMIT = 64 * 1024


class Connection:
    __slots__ = ("stream", "peer", "server", "closed", "requests")

    def __init__(self, stream, peer: str, server: "KafkaServer"):
        self.stream = stream
        self.peer = peer
        self.server = server
        self.closed = False
        self.requests = 0


class KafkaServer:
    """Serves the Kafka protocol for one Broker on one or more listeners."""

    def __init__(self, broker):
        self.broker = broker
        load_all()
        self.max_frame = int(broker.config.get("socket.request.max.bytes"))
        self.connections: set[Connection] = set()
        self.listeners: list[trio.SocketListener] = []
        self.nursery = None
        self.in_flight = 0  # requests being handled right now, across connections
        self._idle: trio.Event | None = None
        self._accepting = trio.CancelScope()
        self.fault_hook = None  # testing: fault injection (kwire.testing)

    # ---------------------------------------------------------------- lifecycle
    async def start_background(self, nursery) -> None:
        """Background duties: retention checks, group timeouts (as they land)."""
        nursery.start_soon(self._retention_loop)
        self.groups_edge = await start_groups(self.broker, nursery)  # replay before serving

    async def _retention_loop(self) -> None:
        """Retention, flush of rolled segments and checkpoints: decided here on the loop,
        the unlinks, fsyncs and file writes in a worker thread (a slow disk must not stall
        the connections), their effect (recovery points) applied back here."""
        interval = int(self.broker.config.get("log.retention.check.interval.ms")) / 1000
        while True:
            await trio.sleep(interval)
            try:
                work = self.broker.logs.plan_retention(self.broker.clock.now_ms())
                await trio.to_thread.run_sync(work.run)
                work.commit()
            except Exception:  # noqa: BLE001 - a failed pass must not stop the broker
                log.exception("retention pass failed")

    async def accept(self, listeners, handler_nursery) -> None:
        """Accept connections until drain(); connection tasks live in ``handler_nursery``."""
        with self._accepting:
            await trio.serve_listeners(self._handle, listeners, handler_nursery=handler_nursery)

    async def drain(self, grace_s: float = 5.0) -> None:
        """Graceful shutdown: stop accepting, then let in-flight requests finish (at most
        ``grace_s``: a long-poll fetch or a pending JoinGroup is cut after that)."""
        self._accepting.cancel()
        with trio.move_on_after(grace_s):
            while self.in_flight:
                self._idle = trio.Event()
                await self._idle.wait()
        log.info("stopped accepting; %d requests still in flight at shutdown", self.in_flight)

    # ---------------------------------------------------------------- connections
    async def _handle(self, stream: trio.SocketStream) -> None:
        try:
            peer_addr = stream.socket.getpeername()
            peer = f"{peer_addr[0]}:{peer_addr[1]}"
        except OSError:
            peer = "?"
        try:
            stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        conn = Connection(stream, peer, self)
        self.connections.add(conn)
        log.debug("connection from %s", peer)
        decoder = FrameDecoder(self.max_frame)
        try:
            while True:
                data = await stream.receive_some(RECV_SIZE)
                if not data:
                    log.debug("connection from %s closed by peer after %d requests", peer, conn.requests)
                    return
                decoder.feed(data)
                while True:
                    frame = decoder.next_frame()
                    if frame is NEED_DATA:
                        break
                    conn.requests += 1
                    self.in_flight += 1
                    try:
                        await self._process(conn, frame)
                    finally:
                        self.in_flight -= 1
                        if not self.in_flight and self._idle is not None:
                            self._idle.set()
                    if conn.closed:
                        return
        except FrameTooLarge as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except CodecError as exc:
            log.warning("closing connection from %s: malformed frame: %s", peer, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError) as exc:
            log.debug("connection from %s lost: %s", peer, exc)
        except _CloseConnection as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        finally:
            self.connections.discard(conn)
            conn.closed = True
            await trio.aclose_forcefully(stream)

    async def _process(self, conn: Connection, frame: bytes) -> None:
        try:
            req = FR.decode_request(frame)
        except UnsupportedVersion as exc:
            hdr = exc.header  # type: ignore[attr-defined]
            if exc.api_key == FR.API_VERSIONS_KEY:
                await self._send(conn, self._api_versions_fallback(hdr.correlation_id))
                return
            raise _CloseConnection(f"unsupported version {exc.version} of api key {exc.api_key} "
                                   f"(client {hdr.client_id!r})") from None
        except UnknownApiKey as exc:
            raise _CloseConnection(f"unknown api key {exc.api_key}") from None
        except CodecError as exc:
            hdr = getattr(exc, "header", None)
            what = f"api key {hdr.api_key} v{hdr.api_version}" if hdr else "request"
            raise _CloseConnection(f"malformed {what}: {exc}") from None
        handler = REGISTRY.get(req.api.key)
        hdr = req.header
        if handler is None or not handler.min_version <= hdr.api_version <= handler.max_version:
            if req.api.key == FR.API_VERSIONS_KEY:
                await self._send(conn, self._api_versions_fallback(hdr.correlation_id))
                return
            raise _CloseConnection(f"no handler for {req.api.name} v{hdr.api_version}")
        ctx = RequestContext(self.broker, hdr, req.api, conn.peer, conn)
        if self.fault_hook is not None:
            injected = await self.fault_hook(ctx, req.body)
            if injected is not None:
                if injected == "drop":
                    raise _CloseConnection("fault injection: dropped")
                await self._send(conn, FR.encode_response(req.api, hdr.api_version, hdr.correlation_id, injected))
                return
        try:
            resp = await handler.fn(ctx, req.body)
        except KafkaError as exc:
            raise _CloseConnection(f"{req.api.name} v{hdr.api_version} failed: {exc}") from None
        if resp is None:
            return
        if isinstance(resp, str) and resp == "drop":  # test switch: the work was done, but the answer is lost
            raise _CloseConnection("fault injection: dropped after handling")
        parts = FR.encode_response(req.api, hdr.api_version, hdr.correlation_id, resp)
        await self._send(conn, parts)

    def _api_versions_fallback(self, correlation_id: int) -> list:
        """UNSUPPORTED_VERSION answer to an ApiVersions request of a version we do not know,
        encoded as v0 with our ranges, so the client can retry with one we do."""
        from kwire.handlers.api_versions import api_version_entries
        api = FR.APIS[FR.API_VERSIONS_KEY]
        body = api.response.cls(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_version_entries(api))
        return FR.encode_response(api, 0, correlation_id, body)

    # ---------------------------------------------------------------- sending
    async def _send(self, conn: Connection, parts: list) -> None:
        stream = conn.stream
        pending = bytearray()
        for p in parts:
            if isinstance(p, (bytes, bytearray, memoryview)):
                if len(p) <= COALESCE_LIMIT:
                    pending += p
                    continue
                if pending:
                    await stream.send_all(pending)
                    pending = bytearray()
                await stream.send_all(p)
            else:
                if pending:
                    await stream.send_all(pending)
                    pending = bytearray()
                await self._send_region(stream, p)
        if pending:
            await stream.send_all(pending)

    async def _send_region(self, stream: trio.SocketStream, region: Any) -> None:
        """Send a records value that is not in memory: file regions go out with sendfile."""
        regions = getattr(region, "regions", None)
        if regions is None:
            regions = [region]
        for r in regions:
            f = getattr(r, "file", None)
            if f is None:
                await stream.send_all(bytes(r))
                continue
            fd = f if isinstance(f, int) else f.fileno()
            await _sendfile(stream, fd, r.position, r.length)


class _CloseConnection(Exception):
    pass


async def _sendfile(stream: trio.SocketStream, fd: int, offset: int, count: int) -> None:
    sock = stream.socket
    out = sock.fileno()
    # Trio owns the socket; send under its send lock semantics by using wait_writable.
    while count > 0:
        try:
            sent = os.sendfile(out, fd, offset, count)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                await trio.lowlevel.wait_writable(sock)
                continue
            raise trio.BrokenResourceError(str(exc)) from exc
        if sent == 0:
            raise trio.BrokenResourceError("sendfile: file ended before the region did")
        offset += sent
        count -= sent
        await trio.lowlevel.checkpoint()
