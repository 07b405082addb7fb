"""One Kafka connection with no I/O, in the shape of h11's: bytes in, events out.

Server side (:class:`KafkaConnection`, the client and controller listeners)::

    conn.receive_data(data)        # what the socket gave (b"" once the peer closed)
    ev = conn.next_request()       # Request | Reply | Close | NEED_DATA
    parts = conn.send_response(req, body)     # bytes and file regions to write, in order
    parts = conn.send_error(req, code)        # an error answer in the response's shape, or None

``next_request`` owns what lies between the bytes and a handler: framing and the frame size
limit (socket.request.max.bytes), header decoding, which API versions are served, the
ApiVersions answer to a version we do not know (Kafka's: UNSUPPORTED_VERSION encoded as v0,
with our ranges, so the client retries with one we serve), and the error -> close policy: a
frame that cannot be served (too large, malformed, an unknown API key, a version nobody
serves) becomes one :class:`Close` event with the reason to log, after which the connection
yields nothing more. ``max_queued`` (queued.max.requests) bounds the complete frames split out
ahead of the reader; the edge reads more only once they are answered (backpressure).

Client side (:class:`KafkaClientConnection`: the test wire client and the Raft peer
connections): ``send_request(api, version, body)`` -> bytes, then ``receive_data`` and
``next_response()`` -> :class:`Response` | NEED_DATA, matched to its request by correlation id.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kwire.codec import frame as FR
from kwire.codec.apis import Api
from kwire.codec.error_response import error_response, has_error_code
from kwire.codec.frame import NEED_DATA, FrameDecoder, Request, RequestHeader
from kwire.emulation import table_of
from kwire.errors import CodecError, ErrorCode, UnknownApiKey, UnsupportedVersion
from kwire.security.principal import ANONYMOUS

__all__ = ["NEED_DATA", "CLOSED", "KafkaConnection", "KafkaClientConnection", "Request", "Reply", "Close", "RawToken",
           "Response",
           "ProtocolError"]


@dataclass(slots=True)
class Reply:
    """An answer the connection makes itself, without a handler (ApiVersions of an unknown version)."""
    header: RequestHeader
    parts: list
    size: int


@dataclass(slots=True)
class RawToken:
    """A size-prefixed SASL token with no Kafka header (after SaslHandshake v0)."""
    data: bytes


@dataclass(slots=True)
class Close:
    """The peer sent what cannot be served: close the connection, logging ``reason``."""
    reason: str
    header: RequestHeader | None = None


class _Closed:
    def __repr__(self) -> str:
        return "CLOSED"


CLOSED = _Closed()  # the peer closed its side and every complete frame was taken


class ProtocolError(Exception):
    """The remote side broke the protocol (client side: a response that cannot be read)."""


def _api_versions_fallback(correlation_id: int, versions=None) -> list:
    """An ApiVersions of a version we do not know, answered as v0 with UNSUPPORTED_VERSION and,
    as Kafka does since 2.4 (KIP-511, ApiVersionsRequest.getErrorResponse), only ApiVersions'
    own range: the client retries at the newest version it shares with us."""
    api = FR.APIS[FR.API_VERSIONS_KEY]
    table = versions if versions is not None else table_of(None)
    lo, hi = table.advertised[FR.API_VERSIONS_KEY]
    entry = api.response.struct("ApiVersion")(api_key=FR.API_VERSIONS_KEY, min_version=lo, max_version=hi)
    body = api.response.cls(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[entry])
    return FR.encode_response(api, 0, correlation_id, body)


class KafkaConnection:
    """The server side of one connection. ``serves(api_key, version)`` says which requests a
    handler exists for (None: every version our schemas know); ``versions`` (a
    kwire.emulation.ApiVersionTable) gives the ApiVersions range an ApiVersions of an unknown
    version is answered with (None: the default emulated release's)."""

    __slots__ = ("peer", "requests", "reading_since", "principal", "listener", "sasl", "close_after_response",
                 "raw_tokens", "_decoder", "_serves", "_versions", "_closed", "_eof", "__weakref__")

    def __init__(self, max_frame_size: int = FR.DEFAULT_MAX_FRAME, *, max_queued: int | None = None,
                 serves: Callable[[int, int], bool] | None = None, peer: str = "?", versions=None):
        self.peer = peer
        self.requests = 0  # requests taken so far
        self.reading_since: float | None = None  # set by the edge's read loop (kwire.net.pump)
        self.principal = ANONYMOUS   # who is on the other end (kwire.security.principal); set by TLS / SASL
        self.listener: str | None = None   # the listener name it came in on (PLAINTEXT, SASL_SSL ...)
        self.sasl = None   # kwire.security.sasl.SaslAuthenticator on a SASL listener
        self.close_after_response: str | None = None   # set by a handler: close (with this reason) once answered
        self.raw_tokens = False   # after SaslHandshake v0: frames are bare SASL tokens (RawToken), not requests
        self._decoder = FrameDecoder(max_frame_size, max_queued)
        self._serves = serves
        self._versions = versions
        self._closed: Close | None = None
        self._eof = False

    @property
    def max_frame_size(self) -> int:
        """The largest frame taken from the peer (a larger size prefix closes the connection)."""
        return self._decoder.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, size: int) -> None:
        self._decoder.max_frame_size = size

    # ------------------------------------------------------------------ input
    def receive_data(self, data) -> None:
        """Bytes from the peer; ``b""`` means the peer closed its side."""
        if not data:
            self._eof = True
            return
        if self._closed is not None:
            return
        try:
            self._decoder.feed(data)
        except CodecError as exc:  # a bad size prefix with no good frame before it
            self._closed = Close(str(exc))

    @property
    def partial(self) -> bool:
        """Part of a request has arrived and waits for the rest."""
        return self._decoder.partial

    @property
    def queued(self) -> int:
        """Complete requests received and not taken yet."""
        return self._decoder.ready

    @property
    def they_closed(self) -> bool:
        return self._eof

    def next_request(self):
        """The next event: a :class:`Request` (``.size`` = frame bytes), a :class:`Reply` to
        send as it is, a :class:`Close`, NEED_DATA, or CLOSED once the peer has closed."""
        if self._closed is not None:
            return self._closed
        try:
            frame = self._decoder.next_frame()
        except CodecError as exc:
            self._closed = Close(str(exc))
            return self._closed
        if frame is NEED_DATA:
            return CLOSED if self._eof else NEED_DATA
        if self.raw_tokens:
            return RawToken(bytes(frame))
        self.requests += 1
        try:
            req = FR.decode_request(frame)
        except UnsupportedVersion as exc:
            hdr = exc.header  # type: ignore[attr-defined]
            if exc.api_key == FR.API_VERSIONS_KEY:
                return Reply(hdr, _api_versions_fallback(hdr.correlation_id, self._versions), len(frame))
            return self._close(f"unsupported version {exc.version} of api key {exc.api_key} "
                               f"(client {hdr.client_id!r})", hdr)
        except UnknownApiKey as exc:
            return self._close(f"unknown api key {exc.api_key}", getattr(exc, "header", None))
        except CodecError as exc:
            hdr = getattr(exc, "header", None)
            try:
                key, version, _ = FR.peek_header(frame)
                what = f"{FR.APIS[key].name} v{version}"
            except (CodecError, KeyError):
                what = "request"
            return self._close(f"malformed {what}: {exc}", hdr)
        except Exception as exc:  # noqa: BLE001 - a decoder bug is this connection's problem only
            hdr = getattr(exc, "header", None)
            return self._close(f"undecodable request ({type(exc).__name__}: {exc})", hdr)
        hdr = req.header
        if self._serves is not None and not self._serves(hdr.api_key, hdr.api_version):
            if hdr.api_key == FR.API_VERSIONS_KEY:
                return Reply(hdr, _api_versions_fallback(hdr.correlation_id, self._versions), len(frame))
            return self._close(f"no handler for {req.api.name} v{hdr.api_version}", hdr)
        return req

    def _close(self, reason: str, header: RequestHeader | None = None) -> Close:
        self._closed = Close(reason, header)
        return self._closed

    # ------------------------------------------------------------------ output
    @staticmethod
    def send_response(req: Request, body) -> list:
        """The response frame for ``req`` as parts (bytes, and records values that may be file
        regions), to be written in order."""
        hdr = req.header
        return FR.encode_response(req.api, hdr.api_version, hdr.correlation_id, body)

    @staticmethod
    def send_error(req: Request, code: int = ErrorCode.UNKNOWN_SERVER_ERROR) -> list | None:
        """An answer to ``req`` with ``code`` in the response's own shape (the top-level error
        code, and one per topic / partition / resource the request named), or None when the
        response has no error code to carry it (then the connection must close)."""
        hdr = req.header
        if not has_error_code(req.api, hdr.api_version):
            return None
        body = error_response(req.api, hdr.api_version, req.body, int(code))
        return FR.encode_response(req.api, hdr.api_version, hdr.correlation_id, body)


# ---------------------------------------------------------------------------- client side
@dataclass(slots=True)
class Response:
    correlation_id: int
    api: Api
    version: int
    body: Any


class KafkaClientConnection:
    """The client side of one connection: requests out, responses (in any order) back."""

    __slots__ = ("client_id", "reading_since", "_decoder", "_pending", "_corr")

    def __init__(self, client_id: str | None = "kwire", max_frame_size: int = FR.DEFAULT_MAX_FRAME):
        self.client_id = client_id
        self.reading_since: float | None = None
        self._decoder = FrameDecoder(max_frame_size)
        self._pending: dict[int, tuple[Api, int]] = {}
        self._corr = 0

    def send_request(self, api: Api, version: int, body, correlation_id: int | None = None) -> tuple[int, bytes]:
        """(correlation id, bytes to write)."""
        if correlation_id is None:
            self._corr = (self._corr + 1) & 0x7FFFFFFF
            correlation_id = self._corr
        self._pending[correlation_id] = (api, version)
        return correlation_id, FR.encode_request(api, version, correlation_id, body, self.client_id)

    @property
    def partial(self) -> bool:
        return self._decoder.partial

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def receive_data(self, data) -> None:
        if not data:
            raise ProtocolError(f"connection closed with {len(self._pending)} requests unanswered")
        try:
            self._decoder.feed(data)
        except CodecError as exc:
            raise ProtocolError(str(exc)) from exc

    def next_frame(self):
        """A raw response frame (no size prefix), or NEED_DATA (hand-made requests)."""
        try:
            return self._decoder.next_frame()
        except CodecError as exc:
            raise ProtocolError(str(exc)) from exc

    def next_response(self):
        """The next :class:`Response`, or NEED_DATA. A response to no request we sent is a
        protocol error."""
        frame = self.next_frame()
        if frame is NEED_DATA:
            return NEED_DATA
        if len(frame) < 4:
            raise ProtocolError(f"response frame of {len(frame)} bytes")
        corr = FR.P.INT32.unpack_from(frame, 0)[0]
        sent = self._pending.pop(corr, None)
        if sent is None:
            raise ProtocolError(f"response with correlation id {corr} answers no request in flight")
        api, version = sent
        try:
            _, body = FR.decode_response(api, version, frame)
        except CodecError as exc:
            raise ProtocolError(f"malformed {api.name} v{version} response: {exc}") from exc
        return Response(corr, api, version, body)
