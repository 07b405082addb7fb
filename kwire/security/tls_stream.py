"""A TLS stream over ``ssl.SSLObject`` and memory BIOs, for kwire's one-task-per-
connection edge (reads and writes of one connection never overlap: the read loop hands each
request to its handler and writes the answer before reading again).

Why not ``trio.SSLStream``: its ``receive_some`` returns at most one TLS record (16 KiB), so a
1 MiB Produce took ~64 trips through the read loop. Here one ``receive_some`` decrypts
everything the socket gave at once (up to ``max_bytes``), and ``send_all`` encrypts a whole
response part in one write.
"""
from __future__ import annotations

import os
import ssl

import trio

__all__ = ["TlsStream"]

_READ = 256 * 1024


class TlsStream(trio.abc.Stream):
    def __init__(self, transport: trio.abc.Stream, context: ssl.SSLContext, *, server_side: bool = True,
                 server_hostname: str | None = None):
        self.transport_stream = transport
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._in, self._out, server_side=server_side,
                                     server_hostname=None if server_side else server_hostname)
        self._eof = False

    # ------------------------------------------------------------------ plumbing
    async def _flush(self) -> None:
        data = self._out.read()
        if data:
            await self.transport_stream.send_all(data)

    async def _fill(self) -> bool:
        data = await self.transport_stream.receive_some(_READ)
        if not data:
            self._in.write_eof()
            return False
        self._in.write(data)
        return True

    async def do_handshake(self) -> None:
        while True:
            try:
                self._obj.do_handshake()
                await self._flush()        # the server's last flight (and TLS 1.3 session tickets)
                return
            except ssl.SSLWantReadError:
                await self._flush()
                if not await self._fill():
                    raise trio.BrokenResourceError("peer closed during the TLS handshake") from None
            except ssl.SSLError as exc:
                try:
                    await self._flush()    # the alert, if any
                except trio.BrokenResourceError:
                    pass
                raise trio.BrokenResourceError(str(exc)) from exc

    def getpeercert(self):
        return self._obj.getpeercert()

    def version(self) -> str | None:
        return self._obj.version()

    # ------------------------------------------------------------------ Stream
    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        want = max_bytes or _READ
        while True:
            chunks: list[bytes] = []
            size = 0
            try:
                while size < want:
                    chunk = self._obj.read(want - size)
                    if not chunk:          # CPython's SSLObject.read: b"" after the peer's close_notify
                        self._eof = True
                        break
                    chunks.append(chunk)
                    size += len(chunk)
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLZeroReturnError:
                self._eof = True
            except ssl.SSLError as exc:
                raise trio.BrokenResourceError(str(exc)) from exc
            if self._out.pending:          # e.g. a TLS 1.3 KeyUpdate answer
                await self._flush()
            if chunks:
                await trio.lowlevel.checkpoint()
                return b"".join(chunks) if len(chunks) > 1 else chunks[0]
            if self._eof:
                await trio.lowlevel.checkpoint()
                return b""
            if not await self._fill():
                self._eof = True

    async def send_all(self, data) -> None:
        view = memoryview(data)
        try:
            for i in range(0, len(view), _READ):
                self._obj.write(view[i:i + _READ])
        except ssl.SSLError as exc:
            raise trio.BrokenResourceError(str(exc)) from exc
        await self._flush()

    async def wait_send_all_might_not_block(self) -> None:
        await self.transport_stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Our close_notify (a peer may wait for it: asyncio's SSL transport waits up to 30 s),
        written without waiting (the server closes connections with trio.aclose_forcefully),
        then the TCP close."""
        try:
            self._obj.unwrap()
        except (ssl.SSLError, ValueError):
            pass                           # SSLWantReadError: the peer's close_notify not (yet) read
        alert = self._out.read()
        sock = getattr(self.transport_stream, "socket", None)
        if alert and sock is not None:
            try:
                os.write(sock.fileno(), alert)   # a few dozen bytes into a non-blocking socket: best effort
            except OSError:
                pass
        await self.transport_stream.aclose()
