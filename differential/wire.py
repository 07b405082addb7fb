"""A blocking client over one socket, on kwire's codec: encode a request, read one response frame
(or learn that the broker closed the connection, or did not answer in time)."""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

from kwire.codec.apis import api as api_by
from kwire.codec.frame import decode_response, encode_request

TIMEOUT = 6.0   # Kafka answers every request of the corpora within a second or two; silence is a result


@dataclass
class Outcome:
    """What one request got: ``kind`` is "response", "closed", "timeout" or "undecodable"."""
    kind: str
    body: Any = None          # the decoded response (a schema struct) when kind == "response"
    correlation_id: int | None = None
    detail: str = ""          # why a frame could not be decoded


class AuthenticationFailed(Exception):
    pass


class Conn:
    """``sasl``: (user, password) to authenticate with SASL/PLAIN first (SaslHandshake v1, then
    SaslAuthenticate v2), as a client on a SASL_PLAINTEXT listener does before any other request."""

    def __init__(self, bootstrap: str, client_id: str = "differential", timeout: float = TIMEOUT,
                 sasl: tuple[str, str] | None = None):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.timeout = timeout
        self.corr = 0
        self.closed = False
        if sasl is not None:
            try:
                self.authenticate(*sasl)
            except BaseException:
                self.close()
                raise

    def authenticate(self, user: str, password: str) -> None:
        out = self.call("SaslHandshake", 1, mechanism="PLAIN")
        if out.kind != "response" or out.body.error_code:
            raise AuthenticationFailed(f"SaslHandshake: {out}")
        token = b"\0" + user.encode() + b"\0" + password.encode()
        out = self.call("SaslAuthenticate", 2, auth_bytes=token)
        if out.kind != "response" or out.body.error_code:
            raise AuthenticationFailed(f"SaslAuthenticate as {user}: {out}")

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            self.closed = True

    def _recv_exact(self, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def read_frame(self, timeout: float | None = None) -> tuple[str, bytes | None]:
        """("frame", body) / ("closed", None) / ("timeout", None)."""
        if self.closed:
            return "closed", None
        self.sock.settimeout(timeout or self.timeout)
        try:
            head = self._recv_exact(4)
            if head is None:
                self.close()
                return "closed", None
            size = struct.unpack(">i", head)[0]
            body = self._recv_exact(size)
        except socket.timeout:
            return "timeout", None
        except (ConnectionResetError, BrokenPipeError):
            self.close()
            return "closed", None
        if body is None:
            self.close()
            return "closed", None
        return "frame", body

    def send_raw(self, data: bytes) -> bool:
        if self.closed:
            return False
        try:
            self.sock.sendall(data)
            return True
        except (ConnectionResetError, BrokenPipeError):
            self.close()
            return False

    def call(self, api_name: str, version: int, body=None, *, expect_response: bool = True,
             timeout: float | None = None, **fields) -> Outcome:
        a = api_by(api_name)
        if body is None:
            body = a.request.cls(**fields)
        self.corr += 1
        corr = self.corr
        if not self.send_raw(encode_request(a, version, corr, body, client_id=self.client_id)):
            return Outcome("closed")
        if not expect_response:
            return Outcome("response")
        kind, frame = self.read_frame(timeout)
        if kind != "frame":
            return Outcome(kind)
        return decode_outcome(a, version, frame)


def decode_outcome(a, version: int, frame: bytes) -> Outcome:
    try:
        corr, resp = decode_response(a, version, frame)
    except Exception as exc:  # noqa: BLE001 - an answer our schema cannot read is itself a result
        corr = struct.unpack_from(">i", frame, 0)[0] if len(frame) >= 4 else None
        return Outcome("undecodable", None, corr, f"{type(exc).__name__}: {exc}")
    return Outcome("response", resp, corr)
