"""The server edge with kwire's own wire client: ordering, correlation ids, fallbacks."""
import socket
import struct

import pytest

from kwire.codec import frame as FR
from kwire.codec.apis import api
from kwire.errors import ErrorCode

from .kafka_wire import WireClient

pytestmark = pytest.mark.slow


def test_api_versions_lists_served_apis(bootstrap):
    c = WireClient(bootstrap)
    for v in range(5):
        r = c.request("ApiVersions", v, client_software_name="t", client_software_version="1")
        assert r.error_code == 0
        keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
        assert keys[0] == (0, 13)  # Produce advertised from v0 (v12+: transaction version 2, a 4.x default)
        assert keys[3] == (0, 13)
        assert keys[1] == (4, 18)   # the default emulation (Kafka 4.x) refuses Fetch v0-3 (KIP-896)
    c.close()


@pytest.mark.parametrize("name,version", [("", ""), ("bad name!", "1.0"), ("kafka-python", "-"), ("a", "1.")])
def test_api_versions_refuses_invalid_client_software_as_kafka(bootstrap, name, version):
    c = WireClient(bootstrap)
    r = c.request("ApiVersions", 3, client_software_name=name, client_software_version=version)
    assert (r.error_code, r.api_keys) == (ErrorCode.INVALID_REQUEST, [])
    # v0-2 carry no software name: nothing to check
    assert c.request("ApiVersions", 2).error_code == 0
    c.close()


def test_api_versions_unknown_version_answers_v0_with_ranges(bootstrap):
    c = WireClient(bootstrap)
    # ApiVersions v9 (unknown): header v2 layout, empty body
    body = struct.pack(">hhi", 18, 9, 77) + struct.pack(">h", 1) + b"x" + b"\x00" + b"\x00\x00\x00"
    c.send_raw(struct.pack(">i", len(body)) + body)
    frame = c.recv_frame()
    corr, resp = FR.decode_response(api("ApiVersions"), 0, frame)
    assert corr == 77
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any(k.api_key == 18 and k.max_version == 4 for k in resp.api_keys)
    c.close()


def test_pipelined_requests_answered_in_order(bootstrap):
    c = WireClient(bootstrap)
    a = api("ApiVersions")
    m = api("Metadata")
    data = b""
    for i in range(50):
        if i % 2:
            data += FR.encode_request(a, 3, 1000 + i, a.request.cls(client_software_name="x", client_software_version="1"))
        else:
            data += FR.encode_request(m, 12, 1000 + i, m.request.cls(topics=[]))
    c.send_raw(data)
    for i in range(50):
        frame = c.recv_frame()
        corr = struct.unpack_from(">i", frame)[0]
        assert corr == 1000 + i
    c.close()


def test_metadata_auto_create_and_versions(bootstrap, topic):
    c = WireClient(bootstrap)
    T = api("Metadata").request.struct("MetadataRequestTopic")
    r = c.request("Metadata", 12, topics=[T(name=topic)], allow_auto_topic_creation=True)
    assert r.topics[0].error_code == 0 and r.topics[0].name == topic
    assert len(r.topics[0].partitions) == 1
    assert r.brokers and r.cluster_id
    for v in range(13):
        r = c.request("Metadata", v, topics=[T(name=topic)])
        assert r.topics[0].name == topic and r.topics[0].error_code == 0
    r = c.request("Metadata", 12, topics=[T(name="nope-" + topic)], allow_auto_topic_creation=False)
    assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    r = c.request("Metadata", 12, topics=[T(name="bad topic!")], allow_auto_topic_creation=True)
    assert r.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    c.close()


def test_unknown_api_key_closes_only_that_connection(bootstrap):
    bad = WireClient(bootstrap)
    good = WireClient(bootstrap)
    body = struct.pack(">hhi", 9999, 0, 1) + struct.pack(">h", -1)
    bad.send_raw(struct.pack(">i", len(body)) + body)
    with pytest.raises((ConnectionError, OSError)):
        bad.recv_frame()
    r = good.request("ApiVersions", 3, client_software_name="g", client_software_version="1")
    assert r.error_code == 0
    good.close()
