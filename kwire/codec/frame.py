"""Frames and request/response headers, with no I/O.

``FrameDecoder.feed(data)`` then ``next_frame()`` -> ``bytes`` or ``NEED_DATA`` (the h11 shape).
The size limit (socket.request.max.bytes, default 100 MiB) is enforced when the 4-byte size
prefix arrives, before any of the frame is buffered. ``max_ready`` (queued.max.requests at
the server) bounds how many complete frames are split out ahead of the reader: input past
that stays unparsed until frames are taken.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kwire.codec import primitives as P
from kwire.codec.apis import APIS, Api
from kwire.errors import (FrameError, FrameTooLarge, TruncatedData, UnknownApiKey,
                          UnsupportedVersion)

DEFAULT_MAX_FRAME = 100 * 1024 * 1024
API_VERSIONS_KEY = 18


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA = _NeedData()


class FrameDecoder:
    """Splits a byte stream into length-prefixed frames.

    A frame's body is kept as views of the received chunks and joined once when complete,
    so every byte is copied exactly once, and memory grows only with bytes actually
    received (a lying size prefix reserves nothing).

    Its queues are plain lists, not deques: a deque allocates a 64-slot block (760 bytes)
    when it is made, two per connection, 1.5 KiB of every idle connection's ~8 KiB (issue 32:
    5,000 connections); the ready queue holds at most ``max_ready`` (queued.max.requests)
    frames and usually one, so taking from its front costs nothing that shows.
    """

    __slots__ = ("max_frame_size", "max_ready", "_backlog", "_backlog_bytes", "_prefix", "_need", "_parts", "_have",
                 "_ready", "_ready_bytes", "_error")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME, max_ready: int | None = None):
        self.max_frame_size = max_frame_size
        self.max_ready = max_ready if max_ready and max_ready > 0 else 1 << 62
        self._backlog: list = []  # received, not parsed yet (the ready queue was full)
        self._backlog_bytes = 0
        self._prefix = bytearray()
        self._need = -1  # body size of the frame being collected, -1 while reading the prefix
        self._parts: list = []
        self._have = 0
        self._ready: list = []
        self._ready_bytes = 0
        self._error: Exception | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out (prefixes included)."""
        current = len(self._prefix) if self._need < 0 else 4 + self._have
        return current + self._ready_bytes + self._backlog_bytes

    @property
    def partial(self) -> bool:
        """Part of a frame has arrived (and nothing complete waits to be taken)."""
        return bool(self._prefix) or self._need >= 0 or bool(self._backlog)

    @property
    def ready(self) -> int:
        """Complete frames waiting to be taken."""
        return len(self._ready)

    def feed(self, data) -> None:
        if self._error is not None:
            raise self._error
        if self._backlog:  # keep the byte order: parse after what is already waiting
            mv = memoryview(data)
            self._backlog.append(mv)
            self._backlog_bytes += len(mv)
            return
        self._parse(memoryview(data))

    def _parse(self, mv: memoryview) -> None:
        n = len(mv)
        pos = 0
        while pos < n:
            if len(self._ready) >= self.max_ready:
                rest = mv[pos:]
                self._backlog.insert(0, rest)
                self._backlog_bytes += len(rest)
                return
            if self._need < 0:
                take = min(4 - len(self._prefix), n - pos)
                self._prefix += mv[pos:pos + take]
                pos += take
                if len(self._prefix) < 4:
                    break
                size = P.INT32.unpack_from(self._prefix, 0)[0]
                if size < 0:
                    err: Exception = FrameError(f"negative frame size {size}")
                elif size > self.max_frame_size:
                    err = FrameTooLarge(f"frame of {size} bytes exceeds the limit of {self.max_frame_size}")
                else:
                    self._prefix.clear()
                    self._need = size
                    if size == 0:
                        self._complete()
                    continue
                if not self._ready:
                    raise err
                self._error = err  # raised once the good frames before it are taken
                return
            take = min(self._need - self._have, n - pos)
            self._parts.append(mv[pos:pos + take])
            self._have += take
            pos += take
            if self._have == self._need:
                self._complete()

    def _complete(self) -> None:
        parts = self._parts
        frame = bytes(parts[0]) if len(parts) == 1 else b"".join(parts)
        self._ready.append(frame)
        self._ready_bytes += 4 + len(frame)
        self._parts = []
        self._have = 0
        self._need = -1

    def next_frame(self):
        while self._backlog and len(self._ready) < self.max_ready and self._error is None:
            mv = self._backlog.pop(0)
            self._backlog_bytes -= len(mv)
            self._parse(mv)
        if self._ready:
            frame = self._ready.pop(0)
            self._ready_bytes -= 4 + len(frame)
            return frame
        if self._error is not None:
            raise self._error
        return NEED_DATA


# --- headers ---------------------------------------------------------------------------
@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    header_version: int = 1


@dataclass(slots=True)
class Request:
    header: RequestHeader
    api: Api
    body: Any
    size: int = 0  # bytes of the frame, without its size prefix


def request_header_version(api: Api, version: int) -> int:
    if api.key == 7 and version == 0:  # ControlledShutdown v0 has no client id
        return 0
    return 2 if api.request.is_flexible(version) else 1


def response_header_version(api: Api, version: int) -> int:
    if api.key == API_VERSIONS_KEY:  # ApiVersions responses always use header v0
        return 0
    return 1 if api.response.is_flexible(version) else 0


def peek_header(frame) -> tuple[int, int, int]:
    """api_key, api_version, correlation_id: the fixed prefix every request header has."""
    if len(frame) < 8:
        raise TruncatedData(f"request header needs 8 bytes, frame has {len(frame)}")
    return P.INT16.unpack_from(frame, 0)[0], P.INT16.unpack_from(frame, 2)[0], P.INT32.unpack_from(frame, 4)[0]


def decode_request_header(frame) -> tuple[RequestHeader, Api | None, int]:
    """Decode the header; raises UnknownApiKey / UnsupportedVersion (after reading what it
    can, so the caller may still answer with the correlation id)."""
    api_key, version, corr = peek_header(frame)
    api = APIS.get(api_key)
    if api is None:
        exc = UnknownApiKey(api_key)
        exc.header = RequestHeader(api_key, version, corr, None, 0)
        raise exc
    pos = 8
    if not api.supports(version):
        # The header layout of a version we do not know is a guess: read the client id when
        # it parses (header v1), and hand back what we have.
        hdr = RequestHeader(api_key, version, corr, None, 1)
        try:
            hdr.client_id, _ = P.read_string(frame, pos)
        except Exception:  # noqa: BLE001 - best effort on an unknown layout
            pass
        exc = UnsupportedVersion(api_key, version)
        exc.header = hdr
        raise exc
    hv = request_header_version(api, version)
    client_id = None
    if hv >= 1:
        client_id, pos = P.read_string(frame, pos)  # never compact, even in header v2
    if hv >= 2:
        pos = P.skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, version, corr, client_id, hv), api, pos


def decode_request(frame) -> Request:
    header, api, pos = decode_request_header(frame)
    try:
        # Like Kafka's request parser, bytes after the last known field are ignored
        # (librdkafka 2.x sends some in Metadata v12).
        body = api.request.decode(memoryview(frame)[pos:], header.api_version, exact=False)
    except Exception as exc:
        exc.header = header  # type: ignore[attr-defined]
        raise
    return Request(header, api, body, len(frame))


def encode_response(api: Api, version: int, correlation_id: int, body) -> list:
    """A whole response frame as parts (size prefix, header, body); records values stay
    separate parts so file regions can be sent without copying."""
    b = bytearray(4)
    b += P.INT32.pack(correlation_id)
    if response_header_version(api, version) >= 1:
        b.append(0)
    parts: list = []
    b = api.response.encode_into(body, version, b, parts)
    if b:
        parts.append(b)
    total = sum(len(p) for p in parts) - 4
    first = parts[0]
    P.INT32.pack_into(first, 0, total)
    return parts


def join_parts(parts: list) -> bytes:
    """Materialise parts into bytes (tests, and clients with no zero-copy path)."""
    out = bytearray()
    for p in parts:
        if isinstance(p, (bytes, bytearray, memoryview)):
            out += p
        else:
            out += bytes(p)
    return bytes(out)


# --- the client side (tests, probes, raft RPCs) ----------------------------------------
def encode_request(api: Api, version: int, correlation_id: int, body, client_id: str | None = "kwire") -> bytes:
    b = bytearray(4)
    b += P.INT16.pack(api.key) + P.INT16.pack(version) + P.INT32.pack(correlation_id)
    hv = request_header_version(api, version)
    if hv >= 1:
        P.write_string(b, client_id)
    if hv >= 2:
        b.append(0)
    parts: list = []
    b = api.request.encode_into(body, version, b, parts)
    if b:
        parts.append(b)
    out = join_parts(parts)
    return P.INT32.pack(len(out) - 4) + out[4:]


def decode_response(api: Api, version: int, frame) -> tuple[int, Any]:
    """(correlation_id, body) of a response frame (without its size prefix)."""
    corr = P.INT32.unpack_from(frame, 0)[0]
    pos = 4
    if response_header_version(api, version) >= 1:
        pos = P.skip_tagged_fields(frame, pos)
    return corr, api.response.decode(memoryview(frame)[pos:], version)
