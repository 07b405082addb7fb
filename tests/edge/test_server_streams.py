"""The client listener's connection handling over Trio memory streams, on a MockClock: no
sockets, no real time. Error boundary, idle and stall timeouts, backpressure, connection
limits, the request log."""
from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from kwire.codec import frame as FR
from kwire.codec.apis import api
from kwire.codec.records import iter_batches
from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import REGISTRY, Handler, load_all

from .streams import Client, closed_by_server, open_server

load_all()
METADATA = api("Metadata")
T = METADATA.request.struct("MetadataRequestTopic")


def run(fn, *args):
    # Virtual time jumps once every task has been blocked for 20 ms of real time, not at
    # once: the broker does disk work in worker threads (Raft fsync, log creation), and
    # MockClock cannot see a thread at work, so a zero threshold would fire the timeouts
    # that wait for it.
    trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0.02))


def patch_handler(monkeypatch, name: str, fn):
    a = api(name)
    h = REGISTRY[a.key]
    monkeypatch.setitem(REGISTRY, a.key, Handler(h.api, h.min_version, h.max_version, fn))


def test_produce_and_fetch_with_file_regions_over_a_stream_without_socket(tmp_path):
    async def main():
        async with open_server(tmp_path) as h:
            c = Client(h.connect())
            await c.create_topic("t")
            resp = await c.produce("t", [b"a", b"bb", b"ccc"])
            assert resp.responses[0].partition_responses[0].error_code == 0
            resp = await c.fetch("t")
            p = resp.responses[0].partitions[0]
            assert p.error_code == 0 and p.high_watermark == 3
            values = [r.value for b in iter_batches(bytes(p.records)) for r in b.records()]
            assert values == [b"a", b"bb", b"ccc"]
    run(main)


def test_a_raising_handler_is_answered_with_unknown_server_error_in_shape(tmp_path, monkeypatch, caplog):
    async def boom(ctx, req):
        raise RuntimeError("handler bug")

    async def main():
        async with open_server(tmp_path) as h:
            patch_handler(monkeypatch, "Metadata", boom)
            c = Client(h.connect(peer="10.1.1.1:1234"))
            other = Client(h.connect(peer="10.1.1.2:1234"))
            resp = await c.request("Metadata", 12, topics=[T(name="x"), T(name="y")],
                                   allow_auto_topic_creation=False)
            assert [(t.name, t.error_code) for t in resp.topics] == [("x", -1), ("y", -1)]
            # the same connection and another one keep being served
            r = await c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
            assert r.error_code == 0
            r = await other.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
            assert r.error_code == 0
            assert len(h.server.connections) == 2
    with caplog.at_level(logging.ERROR, logger="kwire.server"):
        run(main)
    lines = [r for r in caplog.records if "handler bug" in (r.exc_text or "") or r.exc_info]
    assert len(lines) == 1
    msg = lines[0].getMessage()
    assert "Metadata v12" in msg and "10.1.1.1:1234" in msg and "correlation id 1" in msg
    assert "'streams-test'" in msg


def test_a_kafka_error_from_a_handler_answers_its_own_code(tmp_path, monkeypatch):
    async def not_ready(ctx, req):
        raise KafkaError("coordinator loading", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)

    async def main():
        async with open_server(tmp_path) as h:
            patch_handler(monkeypatch, "FindCoordinator", not_ready)
            c = Client(h.connect())
            r = await c.request("FindCoordinator", 3, key="g", key_type=0)
            assert r.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    run(main)


def test_failed_acks0_produce_and_responses_without_error_codes_close(tmp_path, monkeypatch):
    async def boom(ctx, req):
        raise OSError(5, "Input/output error")

    async def main():
        async with open_server(tmp_path) as h:
            patch_handler(monkeypatch, "Produce", boom)
            c = Client(h.connect())
            await c.create_topic("t")
            a = api("Produce")
            R = a.request
            pd = R.struct("PartitionProduceData")(index=0, records=None)
            _, data = c.conn.send_request(a, 9, R.cls(transactional_id=None, acks=0, timeout_ms=100, topic_data=[
                R.struct("TopicProduceData")(name="t", partition_data=[pd])]))
            await c.stream.send_all(data)
            assert await closed_by_server(c.stream)

            monkeypatch.setattr("kwire.server.has_error_code", lambda api, v: False)
            patch_handler(monkeypatch, "Metadata", boom)
            c2 = Client(h.connect())
            _, data = c2.conn.send_request(METADATA, 12, METADATA.request.cls(topics=[]))
            await c2.stream.send_all(data)
            assert await closed_by_server(c2.stream)
            c3 = Client(h.connect())
            r = await c3.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
            assert r.error_code == 0
    run(main)


def test_idle_connections_are_closed_after_connections_max_idle_ms(tmp_path):
    async def main():
        async with open_server(tmp_path, **{"connections.max.idle.ms": 10_000}) as h:
            busy, idle = Client(h.connect()), Client(h.connect())
            t0 = trio.current_time()
            closed_at = []

            async def watch():
                assert await closed_by_server(idle.stream)
                closed_at.append(trio.current_time() - t0)

            h.nursery.start_soon(watch)
            for _ in range(5):  # a request every 6 s keeps a connection open
                await trio.sleep(6)
                assert (await busy.request("ApiVersions", 3, client_software_name="t",
                                           client_software_version="1")).error_code == 0
            assert len(closed_at) == 1 and 10 <= closed_at[0] <= 11  # the watchdog looks every second
            assert len(h.server.connections) == 1
    run(main)


def test_a_stalled_half_request_is_dropped_but_a_slow_moving_one_is_not(tmp_path):
    async def main():
        # request.timeout.ms of 3 s rather than the default 30 s: every virtual second costs
        # real time here (the autojump threshold), and the rule is the same at any scale
        async with open_server(tmp_path, **{"request.timeout.ms": 3_000}) as h:
            frame = FR.encode_request(METADATA, 12, 9, METADATA.request.cls(topics=[]))
            stalled = h.connect()
            slow = Client(h.connect())
            await stalled.send_all(frame[:6])
            t0 = trio.current_time()
            async with trio.open_nursery() as n:
                async def watch():
                    assert await closed_by_server(stalled)
                    assert 3 <= trio.current_time() - t0 <= 3.4  # the watchdog looks every 0.3 s
                n.start_soon(watch)
                slow.conn.send_request(METADATA, 12, METADATA.request.cls(topics=[]), correlation_id=9)
                for i in range(len(frame)):  # one byte every 2 s (48 s in all): slow, but moving
                    await slow.stream.send_all(frame[i:i + 1])
                    await trio.sleep(2)
                resp = await slow.response(9)
                assert resp.brokers
    run(main)


def test_no_reading_while_a_request_is_being_handled(tmp_path, monkeypatch):
    """Backpressure: the server reads nothing from a peer until its requests are answered."""
    release = trio.Event()
    original = REGISTRY[METADATA.key].fn

    async def slow_metadata(ctx, req):
        await release.wait()
        return await original(ctx, req)

    async def main():
        async with open_server(tmp_path, **{"queued.max.requests": 2}) as h:
            patch_handler(monkeypatch, "Metadata", slow_metadata)
            c = Client(h.connect(lockstep=True))
            corr, data = c.conn.send_request(METADATA, 12, METADATA.request.cls(topics=[]))
            await c.stream.send_all(data)
            await trio.sleep(1)  # the handler is waiting now
            _, more = c.conn.send_request(METADATA, 12, METADATA.request.cls(topics=[]))
            with trio.move_on_after(60) as cs:
                await c.stream.send_all(more)  # lockstep: completes only when the server reads
            assert cs.cancelled_caught
            release.set()
            assert (await c.response(corr)).brokers
    run(main)


def test_connection_limits_per_ip_with_overrides_and_in_total(tmp_path, caplog):
    async def main():
        async with open_server(tmp_path, **{"max.connections.per.ip": 2, "max.connections": 6,
                                            "max.connections.per.ip.overrides": "10.0.0.9:3"}) as h:
            t0 = trio.current_time()

            async def connect(peer):
                s = h.connect(peer=peer)
                await trio.sleep(0.01)  # admitted (or refused) before the next one arrives
                return s

            kept = [await connect(f"10.0.0.1:{i}") for i in range(2)]
            refused = await connect("10.0.0.1:3")
            assert await closed_by_server(refused)
            kept += [await connect(f"10.0.0.9:{i}") for i in range(3)] + [await connect("10.0.0.7:0")]
            refused = [await connect("10.0.0.9:99"), await connect("10.0.0.7:1")]  # per ip, then in total
            for s in refused:
                assert await closed_by_server(s)
            assert trio.current_time() - t0 < 1
            assert len(h.server.connections) == 6
            for s in kept:
                r = await Client(s).request("ApiVersions", 3, client_software_name="t", client_software_version="1")
                assert r.error_code == 0
            await kept[0].aclose()
            await trio.sleep(1)
            late = Client(h.connect(peer="10.0.0.7:2"))  # room again
            assert (await late.request("ApiVersions", 3, client_software_name="t",
                                       client_software_version="1")).error_code == 0
    with caplog.at_level(logging.INFO, logger="kwire.server"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refusing connection")]
    assert len(lines) == 3
    assert "10.0.0.1:3" in lines[0] and "maximum of 2" in lines[0]
    assert "10.0.0.9:99" in lines[1] and "maximum of 3" in lines[1]
    assert "10.0.0.7:1" in lines[2] and "max.connections" in lines[2]


def test_one_debug_line_per_request_on_kwire_requests(tmp_path, caplog):
    async def main():
        async with open_server(tmp_path) as h:
            c = Client(h.connect(peer="10.2.3.4:555"))
            await c.request("Metadata", 12, topics=[T(name="nope"), T(name="nope2")], allow_auto_topic_creation=False)
            await c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    with caplog.at_level(logging.DEBUG, logger="kwire.requests"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if r.name == "kwire.requests"]
    assert len(lines) == 2
    md, av = lines
    for part in ("Metadata v12", "correlation_id=1", "client_id='streams-test'", "peer=10.2.3.4:555",
                 "size=", "took=", "errors=UNKNOWN_TOPIC_OR_PARTITIONx2"):
        assert part in md
    assert av.startswith("ApiVersions v3") and "correlation_id=2" in av and "errors=none" in av


def test_request_log_costs_nothing_when_off(tmp_path, monkeypatch, caplog):
    def no(*a, **kw):
        raise AssertionError("request log work done while the logger is off")

    monkeypatch.setattr("kwire.server.error_codes", no)
    monkeypatch.setattr("kwire.server.KafkaServer._log_request", staticmethod(no))

    async def main():
        async with open_server(tmp_path) as h:
            c = Client(h.connect())
            r = await c.request("Metadata", 12, topics=[T(name="nope")], allow_auto_topic_creation=False)
            assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with caplog.at_level(logging.INFO, logger="kwire.requests"):
        run(main)


@pytest.mark.parametrize("version", [0, 4])
def test_api_versions_fallback_is_logged_too(tmp_path, caplog, version):
    import struct

    async def main():
        async with open_server(tmp_path) as h:
            s = h.connect()
            body = struct.pack(">hhi", 18, 9, 77) + struct.pack(">h", 1) + b"x" + b"\x00" + b"\x00\x00\x00"
            await s.send_all(struct.pack(">i", len(body)) + body)
            data = await s.receive_some(1 << 16)
            assert struct.unpack_from(">i", data, 4)[0] == 77
    with caplog.at_level(logging.DEBUG, logger="kwire.requests"):
        run(main)
    assert any("ApiVersions v9" in r.getMessage() and "UNSUPPORTED_VERSION" in r.getMessage()
               for r in caplog.records)


def test_failures_outside_handlers_end_only_their_connection(tmp_path, monkeypatch, caplog):
    """An answer that cannot be encoded, or a write that fails in an unexpected way, closes
    that connection with a log line; the broker's nursery and other connections go on."""
    import kwire.server as S

    def bad_encode(req, body):
        raise TypeError("cannot encode")

    async def bad_write(stream, parts):
        raise ValueError("unexpected failure while writing")

    async def main():
        async with open_server(tmp_path) as h:
            good = Client(h.connect(peer="10.0.0.1:1"))
            for peer, target, replacement in [("10.0.0.2:1", S.KafkaConnection, ("send_response", staticmethod(bad_encode))),
                                              ("10.0.0.3:1", S, ("send_parts", bad_write))]:
                victim = Client(h.connect(peer=peer))
                with monkeypatch.context() as m:
                    m.setattr(target, *replacement)
                    _, data = victim.conn.send_request(METADATA, 12, METADATA.request.cls(topics=[]))
                    await victim.stream.send_all(data)
                    assert await closed_by_server(victim.stream)
                r = await good.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
                assert r.error_code == 0
            assert len(h.server.connections) == 1
    with caplog.at_level(logging.WARNING, logger="kwire.server"):
        run(main)
    msgs = [r.getMessage() for r in caplog.records]
    assert any("so did its error answer" in m and "10.0.0.2:1" in m for m in msgs)
    assert any("after an unexpected error" in m and "10.0.0.3:1" in m for m in msgs)
