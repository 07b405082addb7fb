"""The Trio side of a Kafka connection, written once for every listener and peer link:
socket options, the peer's name, the read loop that feeds a sans-I/O connection
(kwire.connection) and hands out its events, and writing response parts (file regions go out
with ``os.sendfile`` where the stream has a socket, as plain bytes where it has none, e.g. a
``trio.testing`` memory stream).
"""
from __future__ import annotations

import os
import socket
from typing import Any, Awaitable, Callable

import trio

from kwire.codec.frame import NEED_DATA

RECV_SIZE = 256 * 1024
COALESCE_LIMIT = 64 * 1024   # parts up to this size are copied into one write
WRITE_LIMIT = 256 * 1024     # ... of at most this size

__all__ = ["RECV_SIZE", "PeerAuthenticationFailed", "set_socket_options", "peer_name", "pump", "send_parts"]


class PeerAuthenticationFailed(ConnectionError):
    """The TLS handshake or the SASL exchange with a peer failed (one line naming the peer).
    Raised by the peer links (kwire.security.peers); here, below every layer that connects to
    peers (kwire.raft.transport, kwire.replication.fetcher), so that none of them needs to
    import the security layer to tell a refused login from a refused connection."""


def set_socket_options(stream, send_buffer: int = -1, receive_buffer: int = -1) -> None:
    """TCP_NODELAY on a socket stream (small responses go out at once, no Nagle delay); with
    ``send_buffer`` / ``receive_buffer`` > 0 also SO_SNDBUF / SO_RCVBUF, as Kafka's SocketServer
    sets socket.send.buffer.bytes / socket.receive.buffer.bytes on each accepted socket (-1: the
    OS's own sizing, which grows the buffers with the traffic).

    Both are -1 in kwire by default (Kafka's are 102400). The send buffer matters to a consumer:
    fixed at 100 KiB, a 1 MiB Fetch answer leaves in ~5-8 sendfile steps, each a wake-up of the
    one event loop when the socket has room again (the Java consumer reads with a 64 KiB receive
    buffer); with the OS's growing buffer the answer leaves in one sendfile and the kernel feeds
    the client on its own. Java's ConsumerPerformance read 10 KB records at 62-68k records/s
    against 52-54k, and librdkafka at 134-141k against 105-114k, broker CPU 0.27-0.38 s/GB
    against 0.40-0.60 (bench/README.md, session 18). Session 16 had measured the opposite for
    librdkafka on a faster machine (138k-162k with the OS's buffer, 157k-197k with 100 KiB); here
    the send path of then read 119k-142k with the OS's buffer as well. The
    receive buffer: fixed at 100 KiB, a 1 MB Produce request arrives in ~10 windows, each a
    wake-up of the loop, and librdkafka's 10 KB produce fell from ~140k to ~115k records/s
    (docs/differences.md)."""
    sock = getattr(stream, "socket", None)
    if sock is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if send_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        if receive_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    except OSError:
        pass
    if _TCP_CONGESTION is not None and _is_loopback(sock):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, _TCP_CONGESTION, LOOPBACK_CONGESTION_CONTROL)
        except OSError:   # a kernel without it: the host's default stands
            pass


# A connection within this host sends with Reno (which every kernel allows any process),
# whatever the host's default. Where that default is BBR, the kernel paces what a socket sends with
# a timer (tcp_pacing_check: an hrtimer per burst, a VM exit each on a virtual machine), and on
# loopback, where the link is a memory copy, the pacing is all cost: librdkafka read 1 GB of 10 KB
# records from kwire in one of two modes, 130k-155k records/s at ~0.25 s of broker CPU per GB or
# 95k-117k at ~0.6 (the extra all system time under sendfile), the mode held for the connection;
# with Reno 6 runs of 6 read 149k-163k at 0.24-0.28 (bench/README.md, session 18). Not for a
# connection from another host, where the operator's choice stands.
LOOPBACK_CONGESTION_CONTROL = b"reno"
_TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", None)   # Linux only


def _is_loopback(sock) -> bool:
    """Whether the peer of a TCP socket is on this host's loopback (127.0.0.0/8, ::1, or an
    IPv4-mapped 127.x)."""
    try:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
            return False
        host = sock.getpeername()[0]
    except OSError:
        return False
    if host.startswith("::ffff:"):
        host = host[7:]
    return host.startswith("127.") or host == "::1"


def peer_name(stream) -> str:
    """``host:port`` of the other end, or "?" (a stream with no socket, or one already gone)."""
    sock = getattr(stream, "socket", None)
    if sock is None:
        return "?"
    try:
        addr = sock.getpeername()
    except OSError:
        return "?"
    if isinstance(addr, tuple):
        host = addr[0]
        return f"[{host}]:{addr[1]}" if ":" in host else f"{host}:{addr[1]}"
    return str(addr) or "?"


async def pump(stream, conn, next_event: Callable[[], Any], on_event: Callable[[Any], Awaitable[Any]], *,
               recv_size: int = RECV_SIZE) -> None:
    """The one read loop: take ``next_event()`` until it says NEED_DATA, then read from
    ``stream`` into ``conn.receive_data``. Each event goes to ``on_event``; a true result ends
    the loop. Nothing is read while an event is being handled, so a peer that sends faster
    than it is answered is held back by TCP (backpressure).

    ``conn.reading_since`` is the Trio time since which the loop has waited for the peer
    without being given a whole request (reset by every chunk received: progress), or None
    while an event is being handled; a watchdog (KafkaServer's) times connections out by it,
    so the read itself carries no deadline of its own."""
    current_time = trio.current_time
    # A plain TCP stream is read here from its descriptor: trio.SocketStream.receive_some keeps
    # a chain of ~8 coroutines, context managers and a caught BlockingIOError with its traceback
    # alive for as long as it waits, ~1.6 KiB of every idle connection's ~7.4 KiB (issue 32:
    # 5,000 connections). The same steps as trio's own socket read: a cancellation point,
    # the non-blocking read first (a busy connection never waits for the poller), then
    # wait_readable; OSError becomes BrokenResourceError as in SocketStream. TLS and
    # in-memory streams go through receive_some.
    fd = stream.socket.fileno() if type(stream) is trio.SocketStream else -1
    while True:
        ev = next_event()
        if ev is not NEED_DATA:
            conn.reading_since = None
            if await on_event(ev):
                return
            continue
        if conn.reading_since is None:
            conn.reading_since = current_time()
        if fd < 0:
            data = await stream.receive_some(recv_size)
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
            waited = False
            while True:
                try:
                    data = os.read(fd, recv_size)
                    break
                except BlockingIOError:
                    pass
                except OSError as exc:
                    raise trio.BrokenResourceError(f"reading from the peer failed: {exc}") from exc
                await trio.lowlevel.wait_readable(fd)
                waited = True
            if not waited:   # wait_readable was this read's schedule point; else one here
                await trio.lowlevel.cancel_shielded_checkpoint()
        conn.reading_since = None  # progress: the wait starts again from here
        conn.receive_data(data)


async def send_parts(stream, parts: list) -> None:
    """Write response parts in order: byte parts and small file regions coalesced into one
    write, larger records values that live in files sent from the file (sendfile).

    A small region is read (one pread from the page cache) into the write instead of being
    sent on its own: a response of a few KiB (a tailing consumer's Fetch of one batch) then
    leaves in one send, one TCP segment and one wake-up of the client, where header, then
    sendfile took two of each; the second cost ~0.2-0.4 ms on a loaded 2-core machine, in
    the end-to-end latency of every record (bench vs-kafka's end-to-end rows). Regions
    larger than COALESCE_LIMIT keep sendfile's zero copy, as Kafka's FileRecords.writeTo.

    On a plain TCP stream the whole answer is one Trio operation: a cancellation point first,
    the writes and sendfiles back to back on the descriptor (waiting for the poller only when
    the socket is full), and one schedule point at the end unless a wait already was one. A
    schedule point between the header and the records, and after each partial sendfile, had
    made a 1 MiB Fetch answer ~6 turns of the event loop (strace: 8 epoll_wait a Fetch), each
    turn tens of microseconds of the one core kwire has; Kafka's network thread writes a
    response's header and transferTo()s its records in one pass the same way."""
    fd = stream.socket.fileno() if type(stream) is trio.SocketStream else -1
    if fd < 0:
        await _send_parts_stream(stream, parts)
        return
    await trio.lowlevel.checkpoint_if_cancelled()
    waited = False
    for item in _coalesced(parts):
        if isinstance(item, (bytes, bytearray, memoryview)):
            waited |= await _write_fd(fd, item)
        else:
            waited |= await _sendfile_fd(fd, _fileno(item.file), item.position, item.length)
    if not waited:
        await trio.lowlevel.cancel_shielded_checkpoint()


def _coalesced(parts: list):
    """``parts`` as send_parts writes them, in order: bytes to write (byte parts and regions of
    up to COALESCE_LIMIT joined, at most WRITE_LIMIT at a time; a larger byte part alone), and
    the file regions of each larger records value, to be sent from their files. Each bytearray
    yielded is the caller's once yielded (written before the next item is asked for)."""
    pending = bytearray()
    for p in parts:
        if isinstance(p, (bytes, bytearray, memoryview)):
            if len(p) <= COALESCE_LIMIT:
                pending += p
                continue
            if pending:
                yield pending
                pending = bytearray()
            yield p
        elif len(p) <= COALESCE_LIMIT:
            if len(pending) + len(p) > WRITE_LIMIT:   # many small regions: a bounded buffer
                yield pending
                pending = bytearray()
            pending += bytes(p)
        else:
            if pending:
                yield pending
                pending = bytearray()
            for r in getattr(p, "regions", None) or (p,):
                yield r if getattr(r, "file", None) is not None else bytes(r)
    if pending:
        yield pending


def _fileno(f) -> int:
    return f if isinstance(f, int) else f.fileno()


async def _write_fd(fd: int, data) -> bool:
    """Write all of ``data`` to the non-blocking socket ``fd``, waiting for the poller only when
    it is full; True if it waited (a schedule point). OSError becomes BrokenResourceError, as in
    trio's SocketStream. One writer per connection: the pump answers one request at a time."""
    waited = False
    with memoryview(data) as view:
        sent, n = 0, len(view)
        while sent < n:
            try:
                sent += os.write(fd, view[sent:] if sent else view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(fd)
                waited = True
            except OSError as exc:
                raise trio.BrokenResourceError(f"writing to the peer failed: {exc}") from exc
    return waited


async def _sendfile_fd(out: int, fd: int, offset: int, count: int) -> bool:
    """sendfile ``count`` bytes of file ``fd`` from ``offset`` to the socket ``out``, waiting
    for the poller only when the socket is full; True if it waited."""
    waited = False
    while count > 0:
        try:
            sent = os.sendfile(out, fd, offset, count)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(out)
            waited = True
            continue
        except OSError as exc:
            raise trio.BrokenResourceError(f"sendfile to the peer failed: {exc}") from exc
        if sent == 0:
            raise trio.BrokenResourceError("sendfile: file ended before the region did")
        offset += sent
        count -= sent
    return waited


async def _send_parts_stream(stream, parts: list) -> None:
    """send_parts on a stream without a descriptor of its own (TLS, in-memory): the same
    pieces through ``stream.send_all``, file regions read and written as bytes."""
    for item in _coalesced(parts):
        if isinstance(item, (bytes, bytearray, memoryview)):
            await stream.send_all(item)
        else:
            await _send_file_bytes(stream, _fileno(item.file), item.position, item.length)


async def _send_file_bytes(stream, fd: int, offset: int, count: int) -> None:
    """The no-socket path: read the region and write it as bytes."""
    while count > 0:
        chunk = os.pread(fd, min(count, 1 << 20), offset)
        if not chunk:
            raise trio.BrokenResourceError("file ended before the region did")
        await stream.send_all(chunk)
        offset += len(chunk)
        count -= len(chunk)
