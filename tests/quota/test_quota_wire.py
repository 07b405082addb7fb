"""Throttling on the wire: the broker mutes a throttled connection (a request pipelined behind
a throttled Produce is not even read until the throttle time has passed), an old Produce
version gets its answer held back instead, request_percentage throttles any API, and a
quota altered through one node of a three-node cluster is enforced on every node."""
from __future__ import annotations

import time

import pytest

from kwire.codec.apis import api
from kwire.codec.records import build_batch
from kwire.testing import Broker
from kwire.testing.client import WireClient

from .test_quota_clients import alter

pytestmark = pytest.mark.slow


def _produce_body(topic: str, nbytes: int):
    R = api("Produce").request
    now = int(time.time() * 1000)
    pd = R.struct("PartitionProduceData")(index=0, records=build_batch([(None, b"x" * nbytes, [], now)]))
    return R.cls(transactional_id=None, acks=1, timeout_ms=5000,
                 topic_data=[R.struct("TopicProduceData")(name=topic, partition_data=[pd])])


def _pipelined(c: WireClient, first: tuple, second: tuple):
    """Send two requests in one write; (first body, second body, seconds between the answers)."""
    (a1, v1, b1), (a2, v2, b2) = first, second
    _, d1 = c.conn.send_request(api(a1), v1, b1)
    _, d2 = c.conn.send_request(api(a2), v2, b2)
    c.sock.sendall(d1 + d2)
    r1 = c._next(c.conn.next_response)
    t1 = time.monotonic()
    r2 = c._next(c.conn.next_response)
    return r1.body, r2.body, time.monotonic() - t1


def test_throttled_connection_is_muted(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "d"), overrides={"quota.window.num": 2})
    b.start()
    try:
        with WireClient(b.bootstrap_servers, client_id="muted") as c:
            c.create_topic("m")
            assert alter(b, {"client-id": "muted"}, {"producer_byte_rate": 10000}) == [(0, None)]
            meta = api("Metadata").request.cls(topics=None, allow_auto_topic_creation=False)
            # 25 KB against 10 KB/s over a 1 s span: (25 - 10) / 10 * 1 s = ~1.5 s
            p, m, gap = _pipelined(c, ("Produce", 8, _produce_body("m", 25000)), ("Metadata", 8, meta))
            assert p.responses[0].partition_responses[0].error_code == 0
            assert 1200 <= p.throttle_time_ms <= 1800, p.throttle_time_ms
            assert gap >= p.throttle_time_ms / 1000 * 0.95, gap   # the Metadata waited for the mute
            assert m.throttle_time_ms == 0
            # another connection of another client is not held
            with WireClient(b.bootstrap_servers, client_id="free") as other:
                t0 = time.monotonic()
                other.request("Metadata", 8, topics=None, allow_auto_topic_creation=False)
                assert time.monotonic() - t0 < 1.0   # not held for the other's 1.5 s
        with WireClient(b.bootstrap_servers, client_id="muted-old") as c:
            assert alter(b, {"client-id": "muted-old"}, {"producer_byte_rate": 10000}) == [(0, None)]
            # Produce v5: the client does not throttle itself, so the answer itself waits
            _, d = c.conn.send_request(api("Produce"), 5, _produce_body("m", 25000))
            t0 = time.monotonic()
            c.sock.sendall(d)
            r = c._next(c.conn.next_response).body
            assert r.throttle_time_ms > 1000 and time.monotonic() - t0 >= r.throttle_time_ms / 1000 * 0.95
    finally:
        b.stop()


def test_request_percentage_throttles_other_apis(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "d"), overrides={"quota.window.num": 2})
    b.start()
    try:
        # 0.005 % of a thread: 50 us of handler time per second; a few Metadata requests exceed it
        assert alter(b, {"user": "ANONYMOUS", "client-id": "chatty"}, {"request_percentage": 0.005}) == [(0, None)]
        with WireClient(b.bootstrap_servers, client_id="chatty") as c:
            throttles = []
            for _ in range(50):
                r = c.request("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
                throttles.append(r.throttle_time_ms)
                if r.throttle_time_ms:
                    break
            assert throttles[-1] > 0, throttles
        # ApiVersions is exempt (a new connection: the one above is muted now)
        with WireClient(b.bootstrap_servers, client_id="chatty") as c:
            r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
            assert r.error_code == 0 and r.throttle_time_ms == 0
        with WireClient(b.bootstrap_servers, client_id="quiet") as c:   # another client id: no quota
            for _ in range(20):
                assert c.request("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                                 include_topic_authorized_operations=False).throttle_time_ms == 0
    finally:
        b.stop()
