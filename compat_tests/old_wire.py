"""A bare connection speaking kafka-python's classic protocol classes (kafka.protocol.old), so a
test sends exactly what an old client sends: the request header v1 (or v2 when flexible) and the
version's own schema, with no version negotiation."""
from __future__ import annotations

import socket
import struct

from kafka.protocol.old.api import ResponseClassRegistry
from kafka.record import MemoryRecords
from kafka.record.legacy_records import LegacyRecordBatchBuilder


class OldWire:
    def __init__(self, bootstrap: str, client_id: str = "old-client", timeout: float = 15.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.client_id = client_id.encode()
        self.corr = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, req, expect_response: bool = True):
        """The decoded response (kafka-python's classic class), or None when the broker closed
        the connection instead of answering."""
        self.corr += 1
        header = struct.pack(">hhih", req.API_KEY, req.API_VERSION, self.corr, len(self.client_id)) + self.client_id
        if getattr(req, "FLEXIBLE_VERSION", False):
            header += b"\x00"
        body = header + bytes(req.encode())
        try:
            self.sock.sendall(struct.pack(">i", len(body)) + body)
        except OSError:
            return None
        if not expect_response:
            return True
        frame = self.recv_frame()
        if frame is None:
            return None
        corr = struct.unpack_from(">i", frame)[0]
        assert corr == self.corr, (corr, self.corr)
        cls = ResponseClassRegistry._response_class_registry[(req.API_KEY, req.API_VERSION)]
        off = 4 + (1 if getattr(cls, "FLEXIBLE_VERSION", False) else 0)
        return cls.decode(frame[off:])

    def recv_frame(self) -> bytes | None:
        head = self._read(4)
        if head is None:
            return None
        return self._read(struct.unpack(">i", head)[0])

    def _read(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            try:
                got = self.sock.recv(n - len(buf))
            except (ConnectionResetError, socket.timeout):
                return None
            if not got:
                return None
            buf += got
        return buf


def legacy_set(magic: int, codec: int, n: int = 3, base_ts: int = 1_700_000_000_000) -> bytes:
    """A producer's message set in format v0/v1, built by kafka-python's legacy record builder:
    n messages (even ones keyed), timestamps base_ts + i in v1."""
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=base_ts + i if magic else None, key=b"k%d" % i if i % 2 == 0 else None,
                 value=b"value-%d" % i * (i + 1))
    return bytes(b.build())


def read_legacy(buf: bytes) -> list:
    """(offset, timestamp, key, value) as kafka-python's consumer reads a message set."""
    mr = MemoryRecords(buf)
    out = []
    while True:
        batch = mr.next_batch()
        if batch is None:
            return out
        out += [(r.offset, r.timestamp, r.key, r.value) for r in batch]


class _Xxh32:
    """kafka-python reads and writes lz4 in message format v0 (Kafka's wrong frame header checksum,
    KAFKA-3160) only with the xxhash package; this stands in for it, digest of the same shape."""

    def __init__(self, data):
        from kwire.codec.legacy_records import _xxh32_short

        self.h = _xxh32_short(bytes(data))

    def digest(self):
        return self.h.to_bytes(4, "big")


def lend_xxhash(monkeypatch) -> None:
    """Let kafka-python handle magic-0 lz4 for one test (``monkeypatch``: pytest's fixture)."""
    import types

    import kafka.codec
    if kafka.codec.xxhash is None:
        monkeypatch.setattr(kafka.codec, "xxhash", types.SimpleNamespace(xxh32=_Xxh32))
