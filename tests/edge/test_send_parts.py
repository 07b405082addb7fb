"""kwire.net.send_parts: a response's header and a small file region leave in one write (one
segment, one wake-up of the client: the end-to-end latency of a tailing consumer), a region
larger than COALESCE_LIMIT goes out with sendfile (zero copy), and bytes arrive in order."""
from __future__ import annotations

import os
import socket

import trio

from kwire import net
from kwire.log.regions import FileRegion


def _run(parts, monkeypatch):
    """Send ``parts`` over a socket pair; (bytes received, send calls, sendfile calls)."""
    sends, sendfiles = [], []
    real_sendfile = os.sendfile

    def counting_sendfile(out, fd, offset, count):
        sendfiles.append(count)
        return real_sendfile(out, fd, offset, count)

    monkeypatch.setattr(net.os, "sendfile", counting_sendfile)
    real_write = os.write
    fds = []

    def counting_write(fd, data):   # send_parts writes a plain TCP stream's descriptor itself
        n = real_write(fd, data)
        if fd in fds:
            sends.append(n)
        return n

    monkeypatch.setattr(net.os, "write", counting_write)

    async def main():
        a, b = socket.socketpair()
        fds.append(a.fileno())
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(a))
        got = bytearray()
        total = sum(len(p) for p in parts)
        async with trio.open_nursery() as n:
            n.start_soon(net.send_parts, stream, parts)
            b.setblocking(False)
            while len(got) < total:
                await trio.lowlevel.wait_readable(b)
                got += b.recv(1 << 20)
        await stream.aclose()
        b.close()
        return bytes(got)

    return trio.run(main), sends, sendfiles


def _file(tmp_path, data: bytes):
    p = tmp_path / "seg.log"
    p.write_bytes(data)
    return open(p, "rb")


def test_small_region_joins_the_header_in_one_write(tmp_path, monkeypatch):
    body = os.urandom(5000)
    with _file(tmp_path, b"z" * 100 + body) as f:
        parts = [b"header", FileRegion(f.fileno(), 100, len(body)), b"tail"]
        got, sends, sendfiles = _run(parts, monkeypatch)
    assert got == b"header" + body + b"tail"
    assert sends == [len(got)] and sendfiles == []


def test_large_region_is_sent_from_the_file(tmp_path, monkeypatch):
    body = os.urandom(net.COALESCE_LIMIT + 1)
    with _file(tmp_path, body) as f:
        parts = [b"header", FileRegion(f.fileno(), 0, len(body)), b"tail"]
        got, sends, sendfiles = _run(parts, monkeypatch)
    assert got == b"header" + body + b"tail"
    assert sum(sendfiles) >= len(body) and sends == [6, 4]


def test_many_small_regions_keep_each_write_bounded(tmp_path, monkeypatch):
    chunk = 60 * 1024
    body = os.urandom(chunk * 9)
    with _file(tmp_path, body) as f:
        parts = [b"h"] + [FileRegion(f.fileno(), i * chunk, chunk) for i in range(9)]
        got, sends, sendfiles = _run(parts, monkeypatch)
    assert got == b"h" + body and sendfiles == []
    assert max(sends) <= net.WRITE_LIMIT and len(sends) > 1


def test_a_closed_peer_is_a_broken_resource():
    """Written to the descriptor, a peer that has gone is trio.BrokenResourceError, as from
    SocketStream.send_all (the connection's error boundary catches that)."""
    async def main():
        a, b = socket.socketpair()
        b.close()
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(a))
        try:
            await net.send_parts(stream, [b"x" * 100_000, b"y" * 100_000])
        except trio.BrokenResourceError:
            return True
        finally:
            await stream.aclose()
        return False

    assert trio.run(main)


class _Steps(trio.abc.Instrument):
    """Counts the steps (runs between two schedule points) of the tasks named ``name``."""

    def __init__(self, name: str):
        self.name, self.steps = name, 0

    def before_task_step(self, task) -> None:
        if task.name == self.name:
            self.steps += 1


def test_an_answer_is_one_schedule_point_when_the_socket_has_room(tmp_path):
    """Header, a sendfile'd region and a tail leave back to back with one schedule point at the
    end (two task steps), not one after each write: each turn of the event loop is the one core's
    time (a 1 MiB Fetch answer had taken ~8 turns). When the socket is full, the wait for room is
    the schedule point, and the bytes still arrive whole and in order."""
    body = os.urandom(net.COALESCE_LIMIT * 4)
    with _file(tmp_path, body) as f:
        parts = [b"header", FileRegion(f.fileno(), 0, len(body)), b"tail"]

        async def send(stream):
            await net.send_parts(stream, parts)

        async def main(room: bool):
            a, b = socket.socketpair()
            if room:
                a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
                b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(a))
            steps = _Steps("sender")
            trio.lowlevel.add_instrument(steps)
            got = bytearray()
            async with trio.open_nursery() as n:
                n.start_soon(send, stream, name="sender")
                if room:
                    await trio.sleep(0.05)   # the answer leaves before anything reads it
                b.setblocking(False)
                while len(got) < len(body) + 10:
                    await trio.lowlevel.wait_readable(b)
                    got += b.recv(1 << 20)
            trio.lowlevel.remove_instrument(steps)
            await stream.aclose()
            b.close()
            return bytes(got), steps.steps

        got, steps = trio.run(main, True)
        assert got == b"header" + body + b"tail" and steps == 2
        got, steps = trio.run(main, False)
        assert got == b"header" + body + b"tail" and steps >= 2
