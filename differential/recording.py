"""A recording proxy: a stock client talks to a broker through it, and every request frame (with the
answer to it, matched by correlation id) is kept in order, per connection.

    with RecordingProxy("127.0.0.1", 9092) as proxy:
        Producer({"bootstrap.servers": proxy.bootstrap}) ...
    proxy.exchanges   # [Exchange(connection, request frame, response frame | None)]

The proxy rewrites nothing. Clients learn broker addresses from Metadata and FindCoordinator, so the
proxy answers those itself pointing back at itself: it rewrites host and port in those two
responses (and only those) so the client keeps talking through it."""
from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass

from kwire.codec.apis import APIS
from kwire.codec.frame import decode_response, encode_response, join_parts, peek_header
from kwire.testing.broker import free_port

METADATA, FIND_COORDINATOR = 3, 10


@dataclass
class Exchange:
    connection: int
    request: bytes                 # the frame without its size prefix
    response: bytes | None = None  # likewise (None: no answer, e.g. acks=0)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    size = struct.unpack(">i", head)[0]
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(1 << 20, size - len(body)))
        if not chunk:
            return None
        body += chunk
    return bytes(body)


class RecordingProxy:
    def __init__(self, upstream_host: str, upstream_port: int, host: str = "127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.host = host
        self.port = free_port(host)
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._n = 0

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "RecordingProxy":
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((self.host, self.port))
        self._listener.listen(64)
        self._spawn(self._accept)
        return self

    def _spawn(self, fn, *args) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, upstream]
                self._n += 1
                conn = self._n
            pending: dict[int, tuple[Exchange, int, int]] = {}
            self._spawn(self._requests, conn, client, upstream, pending)
            self._spawn(self._responses, client, upstream, pending)

    def _requests(self, conn: int, client: socket.socket, upstream: socket.socket, pending: dict) -> None:
        try:
            while (frame := _read_frame(client)) is not None:
                key, version, corr = peek_header(frame)
                ex = Exchange(conn, frame)
                with self._lock:
                    self.exchanges.append(ex)
                    pending[corr] = (ex, key, version)
                upstream.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            pass
        finally:
            self._shut(client, upstream)

    def _responses(self, client: socket.socket, upstream: socket.socket, pending: dict) -> None:
        try:
            while (frame := _read_frame(upstream)) is not None:
                corr = struct.unpack_from(">i", frame, 0)[0]
                with self._lock:
                    ex, key, version = pending.pop(corr, (None, None, None))
                if ex is not None:
                    ex.response = frame
                    if key in (METADATA, FIND_COORDINATOR):
                        frame = self._point_here(key, version, frame)
                client.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            pass
        finally:
            self._shut(client, upstream)

    def _point_here(self, key: int, version: int, frame: bytes) -> bytes:
        """Host and port of every broker the answer names -> this proxy (one upstream broker)."""
        a = APIS[key]
        corr, body = decode_response(a, version, frame)
        for item in [*getattr(body, "brokers", []), *getattr(body, "coordinators", []), body]:
            if getattr(item, "port", -1) not in (-1, None) and hasattr(item, "host"):
                item.host, item.port = self.host, self.port
        return join_parts(encode_response(a, version, corr, body))[4:]

    @staticmethod
    def _shut(*socks: socket.socket) -> None:
        for s in socks:
            try:
                s.close()
            except OSError:
                pass

    def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._shut(self._listener)
        with self._lock:
            self._shut(*self._sockets)
        for t in self._threads:
            t.join(2)

    def __enter__(self) -> "RecordingProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
