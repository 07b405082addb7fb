"""kwire.connection with no I/O: bytes in (one at a time, h11 style), events out."""
from __future__ import annotations

import struct

import pytest

from kwire.codec import frame as FR
from kwire.codec.apis import api
from kwire.codec.error_response import error_codes, error_response, has_error_code
from kwire.connection import (CLOSED, NEED_DATA, Close, KafkaClientConnection, KafkaConnection, ProtocolError,
                              Reply, Request)
from kwire.errors import ErrorCode
from kwire.handlers import REGISTRY, load_all

API_VERSIONS, METADATA, PRODUCE, FETCH = api("ApiVersions"), api("Metadata"), api("Produce"), api("Fetch")


def _serves(key, v):
    h = load_all().get(key)
    return h is not None and h.min_version <= v <= h.max_version


def events(conn):
    out = []
    while (ev := conn.next_request()) is not NEED_DATA:
        out.append(ev)
        if ev is CLOSED or isinstance(ev, Close):
            break
    return out


def metadata_request(corr: int) -> bytes:
    return FR.encode_request(METADATA, 12, corr, METADATA.request.cls(topics=[]), client_id=f"c{corr}")


def test_one_byte_at_a_time_gives_the_requests_in_order():
    wire = b"".join(metadata_request(i) for i in range(1, 6))
    conn = KafkaConnection(serves=_serves, peer="1.2.3.4:5")
    got = []
    for i in range(len(wire)):
        conn.receive_data(wire[i:i + 1])
        got += events(conn)
        if i < len(wire) - 1:
            assert conn.partial or got
    assert [type(e) for e in got] == [Request] * 5
    assert [e.header.correlation_id for e in got] == [1, 2, 3, 4, 5]
    assert [e.header.client_id for e in got] == [f"c{i}" for i in range(1, 6)]
    assert all(e.size == len(metadata_request(1)) - 4 for e in got)
    assert conn.requests == 5 and not conn.partial
    conn.receive_data(b"")
    assert conn.next_request() is CLOSED


def test_peer_closing_after_the_last_frame_still_yields_it():
    conn = KafkaConnection(serves=_serves)
    conn.receive_data(metadata_request(7))
    conn.receive_data(b"")
    ev = conn.next_request()
    assert isinstance(ev, Request) and ev.header.correlation_id == 7
    assert conn.next_request() is CLOSED


def test_api_versions_of_an_unknown_version_is_answered_as_v0_with_our_ranges():
    body = struct.pack(">hhi", 18, 9, 77) + struct.pack(">h", 1) + b"x" + b"\x00" + b"\x00\x00\x00"
    conn = KafkaConnection(serves=_serves)
    for b in struct.pack(">i", len(body)) + body:
        conn.receive_data(bytes([b]))
    ev = conn.next_request()
    assert isinstance(ev, Reply) and ev.header.correlation_id == 77
    corr, resp = FR.decode_response(API_VERSIONS, 0, FR.join_parts(ev.parts)[4:])
    assert corr == 77 and resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any(k.api_key == 18 for k in resp.api_keys)


def test_api_versions_beyond_what_the_handler_serves_gets_the_same_answer():
    conn = KafkaConnection(serves=lambda k, v: k != 18)
    conn.receive_data(FR.encode_request(API_VERSIONS, 3, 5, API_VERSIONS.request.cls(
        client_software_name="x", client_software_version="1")))
    ev = conn.next_request()
    assert isinstance(ev, Reply) and ev.header.correlation_id == 5


@pytest.mark.parametrize("wire, reason", [
    (struct.pack(">i", 200) + b"\x00" * 8, "exceeds the limit"),
    (struct.pack(">i", -1), "negative frame size"),
    (struct.pack(">ihhih", 10, 9999, 0, 1, -1), "unknown api key 9999"),
    (struct.pack(">ihhih", 10, 3, 99, 1, -1), "unsupported version 99"),
    (struct.pack(">ihhi", 9, 3, 12, 1) + b"\x01", "malformed Metadata v12"),
])
def test_what_cannot_be_served_closes_with_a_reason(wire, reason):
    conn = KafkaConnection(100, serves=_serves)
    for b in wire:
        conn.receive_data(bytes([b]))
    ev = events(conn)[-1]
    assert isinstance(ev, Close) and reason in ev.reason
    conn.receive_data(metadata_request(1))  # nothing more comes out of a closed connection
    assert conn.next_request() is ev


def test_a_bad_frame_after_good_ones_closes_only_once_they_are_taken():
    conn = KafkaConnection(1000, serves=_serves)
    conn.receive_data(metadata_request(1) + metadata_request(2) + struct.pack(">i", 5000))
    evs = events(conn)
    assert [type(e) for e in evs] == [Request, Request, Close]


def test_a_request_with_no_handler_closes():
    conn = KafkaConnection(serves=lambda k, v: k != 3)
    conn.receive_data(metadata_request(1))
    ev = conn.next_request()
    assert isinstance(ev, Close) and "no handler for Metadata v12" in ev.reason


def test_queued_max_requests_bounds_the_frames_split_ahead():
    conn = KafkaConnection(serves=_serves, max_queued=3)
    wire = b"".join(metadata_request(i) for i in range(10))
    conn.receive_data(wire)
    assert conn.queued == 3
    got = []
    while (ev := conn.next_request()) is not NEED_DATA:
        assert conn.queued <= 3
        got.append(ev.header.correlation_id)
    assert got == list(range(10))
    assert not conn.partial


def test_queued_bound_keeps_the_order_of_later_input():
    conn = KafkaConnection(serves=_serves, max_queued=1)
    conn.receive_data(metadata_request(0) + metadata_request(1)[:5])
    conn.receive_data(metadata_request(1)[5:] + metadata_request(2))
    assert [e.header.correlation_id for e in events(conn)] == [0, 1, 2]


def test_send_response_and_send_error_shapes():
    conn = KafkaConnection(serves=_serves)
    R = PRODUCE.request
    body = R.cls(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
        R.struct("TopicProduceData")(name="t", partition_data=[
            R.struct("PartitionProduceData")(index=0, records=None),
            R.struct("PartitionProduceData")(index=3, records=None)])])
    conn.receive_data(FR.encode_request(PRODUCE, 9, 42, body))
    req = conn.next_request()
    parts = conn.send_error(req)
    corr, resp = FR.decode_response(PRODUCE, 9, FR.join_parts(parts)[4:])
    assert corr == 42
    [t] = resp.responses
    assert t.name == "t"
    assert [(p.index, p.error_code) for p in t.partition_responses] == [(0, -1), (3, -1)]
    assert error_codes(PRODUCE, 9, resp) == {-1: 2}


def test_every_served_api_version_has_an_error_answer_that_encodes():
    """The error boundary can answer any request we serve (or knows it must close)."""
    load_all()
    for key, h in REGISTRY.items():
        for v in range(h.min_version, h.max_version + 1):
            req = h.api.request.cls()
            if not has_error_code(h.api, v):
                continue
            body = error_response(h.api, v, req, ErrorCode.UNKNOWN_SERVER_ERROR)
            wire = FR.join_parts(FR.encode_response(h.api, v, 1, body))
            _, back = FR.decode_response(h.api, v, wire[4:])
            assert -1 in error_codes(h.api, v, back) or not error_codes(h.api, v, back), (h.api.name, v)


# ----------------------------------------------------------------------------- client side
def test_client_connection_matches_responses_by_correlation_id_byte_by_byte():
    client = KafkaClientConnection("me")
    c1, req1 = client.send_request(METADATA, 12, METADATA.request.cls(topics=[]))
    c2, req2 = client.send_request(API_VERSIONS, 3, API_VERSIONS.request.cls(
        client_software_name="x", client_software_version="1"))
    server = KafkaConnection(serves=_serves)
    server.receive_data(req1 + req2)
    r1, r2 = events(server)
    assert r1.header.client_id == "me" and (r1.header.correlation_id, r2.header.correlation_id) == (c1, c2)
    # answered out of order
    wire = FR.join_parts(server.send_response(r2, API_VERSIONS.response.cls(error_code=0, api_keys=[])))
    wire += FR.join_parts(server.send_response(r1, METADATA.response.cls(brokers=[], topics=[])))
    got = []
    for b in wire:
        client.receive_data(bytes([b]))
        while (ev := client.next_response()) is not NEED_DATA:
            got.append(ev)
    assert [(g.correlation_id, g.api.name) for g in got] == [(c2, "ApiVersions"), (c1, "Metadata")]
    assert client.in_flight == 0


def test_client_connection_refuses_stray_responses_and_eof():
    client = KafkaClientConnection()
    client.receive_data(struct.pack(">ii", 4, 99))
    with pytest.raises(ProtocolError, match="correlation id 99"):
        client.next_response()
    with pytest.raises(ProtocolError):
        client.receive_data(b"")
