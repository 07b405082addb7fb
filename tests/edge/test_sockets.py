"""The edge over real loopback sockets: a handler that raises while stock clients work,
slowloris half-frames, connection floods past max.connections, EMFILE at accept."""
from __future__ import annotations

import logging
import os
import resource
import select
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import shutil
import threading
import time
import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.handlers import REGISTRY, Handler, load_all
from kwire.testing import Broker
from kwire.testing.broker import free_port, wait_for_port
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

load_all()
MT = api("Metadata").request.struct("MetadataRequestTopic")


def api_versions_latency(client: WireClient, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
        out.append(time.perf_counter() - t0)
        assert r.error_code == 0
    return out


def closed_by_peer(socks: list[socket.socket], timeout: float) -> list[bool]:
    """For each socket: did the other end close it within ``timeout`` seconds?"""
    open_ = {s.fileno(): s for s in socks}
    closed = set()
    deadline = time.monotonic() + timeout
    while open_ and time.monotonic() < deadline:
        ready, _, _ = select.select(list(open_), [], [], max(0.0, deadline - time.monotonic()))
        for fd in ready:
            try:
                eof = open_[fd].recv(4096) == b""
            except ConnectionError:
                eof = True
            if eof:
                closed.add(fd)
                del open_[fd]
    return [s.fileno() in closed for s in socks]


# ------------------------------------------------------------------------- error boundary
def test_raising_handlers_while_confluent_kafka_produces_and_consumes(monkeypatch):
    """Metadata, Produce and Fetch raise for one client id; confluent-kafka (other client ids)
    produces and consumes throughout, and the bad client gets UNKNOWN_SERVER_ERROR in shape."""
    ck = pytest.importorskip("confluent_kafka")
    with Broker(overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        topic = b.create_topic(f"t-{uuid.uuid4().hex[:8]}", partitions=2)
        raised = []
        for name in ("Metadata", "Produce", "Fetch"):
            a = api(name)
            h = REGISTRY[a.key]

            def make(orig):
                async def maybe_boom(ctx, req):
                    if ctx.client_id == "bad":
                        raised.append(ctx.api.name)
                        raise RuntimeError(f"injected bug in {ctx.api.name}")
                    return await orig(ctx, req)
                return maybe_boom
            monkeypatch.setitem(REGISTRY, a.key, Handler(h.api, h.min_version, h.max_version, make(h.fn)))

        stop = threading.Event()
        bad_answers: list = []
        errors: list = []

        def bad_client():
            try:
                with WireClient(b.bootstrap_servers, client_id="bad") as c:
                    while not stop.is_set():
                        r = c.request("Metadata", 12, topics=[MT(name=topic)], allow_auto_topic_creation=False)
                        bad_answers.append([t.error_code for t in r.topics])
                        try:
                            c.produce(topic, [b"x"], partition=1)
                        except Exception as exc:  # noqa: BLE001
                            bad_answers.append(getattr(exc, "code", repr(exc)))
                        time.sleep(0.01)
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        t = threading.Thread(target=bad_client)
        t.start()
        try:
            n = 2000
            p = ck.Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 5, "client.id": "good"})
            for i in range(n):
                p.produce(topic, value=b"v%d" % i, partition=i % 2)
                if i % 100 == 0:
                    p.poll(0)
                    time.sleep(0.01)
            assert p.flush(30) == 0
            c = ck.Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g-" + topic,
                             "auto.offset.reset": "earliest", "client.id": "good"})
            c.subscribe([topic])
            got = set()
            deadline = time.monotonic() + 60
            while len(got) < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.add(m.value())
            c.close()
            assert len(got) == n
        finally:
            stop.set()
            t.join(10)
        assert not errors, errors
        assert bad_answers and all(a == [-1] or a == ErrorCode.UNKNOWN_SERVER_ERROR for a in bad_answers), \
            bad_answers[:10]
        assert {"Metadata", "Produce"} <= set(raised)
        assert b.running


# ------------------------------------------------------------------------- slowloris, floods
def test_slowloris_half_frames_are_dropped_after_request_timeout_and_do_not_slow_others(caplog):
    with Broker(overrides={"request.timeout.ms": 2000}) as b, WireClient(b.bootstrap_servers) as good:
        before = api_versions_latency(good, 50)
        socks = []
        try:
            for i in range(300):
                s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
                s.sendall(struct.pack(">i", 100) + b"\x00\x03")  # 2 bytes of a 100-byte frame
                socks.append(s)
            during = api_versions_latency(good, 200)
            assert statistics.median(during) < max(0.02, 10 * statistics.median(before)), (before, during)
            t0 = time.monotonic()
            assert all(closed_by_peer(socks, 15))
            assert time.monotonic() - t0 < 12
        finally:
            for s in socks:
                s.close()
        wait_until(lambda: len(b.server.connections) == 1, message="half-frame connections gone")
        assert api_versions_latency(good, 5)


def test_flood_beyond_max_connections_is_refused_at_once(caplog):
    with Broker(overrides={"max.connections": 40}) as b, WireClient(b.bootstrap_servers) as good:
        socks = []
        with caplog.at_level(logging.INFO, logger="kwire.server"):
            try:
                for i in range(300):
                    socks.append(socket.create_connection(("127.0.0.1", b.port), timeout=5))
                during = api_versions_latency(good, 200)
                assert statistics.median(during) < 0.02 and max(during) < 1.0, during
                assert sum(closed_by_peer(socks, 2)) == 300 - 39  # the good client holds one of the 40
                assert len(b.server.connections) == 40
            finally:
                for s in socks:
                    s.close()
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refusing connection from")]
        assert len(lines) == 300 - 39 and all("max.connections" in m for m in lines)
        wait_until(lambda: len(b.server.connections) == 1)
        with WireClient(b.bootstrap_servers) as late:
            assert api_versions_latency(late, 3)


def test_per_ip_limit_and_overrides_over_loopback_addresses():
    with Broker(host="127.0.0.1", overrides={"max.connections.per.ip": 3,
                                              "max.connections.per.ip.overrides": "127.0.0.2:5"}) as b:
        def connect(src):
            s = socket.socket()
            s.bind((src, 0))
            s.connect(("127.0.0.1", b.port))
            return s
        socks = []
        try:
            ones = [connect("127.0.0.1") for _ in range(4)]
            twos = [connect("127.0.0.2") for _ in range(6)]
            socks = ones + twos
            assert sum(closed_by_peer(ones, 1)) == 1  # which one is up to the accept order
            assert sum(closed_by_peer(twos, 1)) == 1
        finally:
            for s in socks:
                s.close()


# ------------------------------------------------------------------------- EMFILE at accept
def test_accept_emfile_neither_spins_nor_kills_the_listener():
    port = free_port()
    data = tempfile.mkdtemp(prefix="kwire-emfile-")
    limit = 160
    err = tempfile.TemporaryFile()

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    proc = subprocess.Popen([sys.executable, "-m", "kwire", "serve", "--listen", f"127.0.0.1:{port}",
                             "--data-dir", data, "--log-level", "WARNING"],
                            preexec_fn=low_limit, stdout=subprocess.DEVNULL, stderr=err)
    socks = []
    try:
        wait_for_port("127.0.0.1", port, timeout=30, proc=proc)
        used = len(os.listdir(f"/proc/{proc.pid}/fd"))
        for _ in range(limit - used + 40):  # past the limit: the kernel queues them, accept fails
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(0.5)

        def cpu() -> float:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        c0 = cpu()
        time.sleep(2.0)
        assert cpu() - c0 < 0.5, "the accept loop spins on EMFILE"
        assert proc.poll() is None
        for s in socks:
            s.close()
        socks = []
        wait_until(lambda: len(os.listdir(f"/proc/{proc.pid}/fd")) < limit - 20, timeout=20)
        with WireClient(f"127.0.0.1:{port}") as c:
            assert api_versions_latency(c, 3)
        err.seek(0)
        assert b"EMFILE" in err.read()  # it did run out, and said so
    finally:
        err.close()
        for s in socks:
            s.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def _server_side_socket(port: int, client_addr: tuple) -> socket.socket:
    """A duplicate of this process's socket that serves ``client_addr`` on ``port`` (the broker
    runs in this process: Broker's thread mode); the caller closes it."""
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if s.family in (socket.AF_INET, socket.AF_INET6) and s.type == socket.SOCK_STREAM \
                    and s.getsockname()[1] == port and s.getpeername() == client_addr:
                return s
        except OSError:
            pass
        s.close()
    raise AssertionError(f"no socket of this process serves {client_addr} on port {port}")


def _server_side_buffers(port: int, client_addr: tuple) -> tuple[int, int]:
    """SO_SNDBUF and SO_RCVBUF of the broker's socket that serves ``client_addr`` on ``port``."""
    with _server_side_socket(port, client_addr) as s:
        return s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)


@pytest.mark.parametrize("send, receive", [(65536, 32768), (-1, -1), (None, None)])
def test_socket_buffer_sizes_are_set_on_accepted_client_sockets(send, receive):
    """socket.send.buffer.bytes / socket.receive.buffer.bytes become SO_SNDBUF / SO_RCVBUF of each
    accepted client socket, as Kafka's SocketServer sets them (Linux reports twice the size asked
    for: its bookkeeping share); -1, kwire's default for both (None: not set), leaves the OS's own,
    growing sizes."""
    overrides = {} if send is None else {"socket.send.buffer.bytes": send, "socket.receive.buffer.bytes": receive}
    with Broker(overrides=overrides) as b, WireClient(b.bootstrap_servers) as c:
        r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
        assert r.error_code == 0
        snd, rcv = _server_side_buffers(b.port, c.sock.getsockname())
        if send is not None and send > 0:
            assert (snd, rcv) == (2 * send, 2 * receive)
        else:
            # the kernel's defaults (net.ipv4.tcp_wmem / tcp_rmem), not a size of Kafka's
            assert snd not in (2 * 65536, 2 * 102400) and rcv not in (2 * 32768, 2 * 102400)


def _server_side_congestion_control(port: int, client_addr: tuple) -> str:
    with _server_side_socket(port, client_addr) as s:
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()


def test_a_loopback_client_is_served_with_reno():
    """A client on this host's loopback is sent to with Reno whatever the host's default (BBR
    paces with a timer, all cost on loopback: kwire.net.LOOPBACK_CONGESTION_CONTROL); the
    kernel's default is what a socket had before (checked on one of the test's own)."""
    with socket.socket() as probe:
        default = probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    assert default   # the kernel names its default (reno, cubic, bbr, ...)
    with Broker() as b, WireClient(b.bootstrap_servers) as c:
        r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
        assert r.error_code == 0
        assert _server_side_congestion_control(b.port, c.sock.getsockname()) == "reno"
