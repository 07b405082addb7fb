"""A tiny blocking Kafka client on kwire's own codec, for raw protocol tests."""
import socket
import struct

from kwire.codec import frame as FR
from kwire.codec.apis import api


class WireClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.corr = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by broker")
            buf += chunk
        return bytes(buf)

    def request(self, api_name: str, version: int, **fields):
        a = api(api_name)
        self.corr += 1
        body = a.request.cls(**fields)
        self.send_raw(FR.encode_request(a, version, self.corr, body))
        corr, resp = FR.decode_response(a, version, self.recv_frame())
        assert corr == self.corr
        return resp

    def close(self):
        self.sock.close()
