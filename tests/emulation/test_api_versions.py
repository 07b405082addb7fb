"""Kafka-version emulation (kwire.emulation): ApiVersions answers and request gating per
emulated release, and what version-sniffing clients infer from them."""
from __future__ import annotations

import socket
import struct

import pytest
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS, infer_broker_version_from_api_versions

from kwire.codec import frame as FR
from kwire.codec.apis import api
from kwire.config import BrokerConfig
from kwire.configdef import ConfigError
from kwire.emulation import (DEFAULT_KAFKA_VERSION, KAFKA_API_VERSIONS, KAFKA_VERSIONS, missing, served_ranges,
                             table_for, table_of)
from kwire.errors import ErrorCode
from kwire.testing import Broker

# What a kwire broker emulating each release is inferred to be by kafka-python's check_version:
# exactly that release (it tells 4.1 by Produce v13, topic ids, and 4.2 by ListOffsets v11).
INFERRED = {"3.9": (3, 9), "4.0": (4, 0), "4.1": (4, 1), "4.2": (4, 2), "4.3": (4, 3)}
# ZooKeeper-era inter-broker APIs a 3.9 ZooKeeper broker answered (kafka-python recorded one) and a
# KRaft broker does not; and the KRaft broker's own APIs the ZooKeeper broker lacked.
_ZK_ONLY = {4, 5, 6, 7, 56, 58, 67}
_KRAFT_ONLY = {55, 64, 74, 75}


def test_default_and_unknown_version():
    assert table_of(None).kafka_version == DEFAULT_KAFKA_VERSION == BrokerConfig().get("kwire.emulate.kafka.version")
    with pytest.raises(ConfigError) as ei:
        BrokerConfig({"kwire.emulate.kafka.version": "2.8"})
    msg = str(ei.value)
    assert "\n" not in msg and "kwire.emulate.kafka.version" in msg and "3.9, 4.0, 4.1, 4.2, 4.3" in msg


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_table_agrees_with_the_brokers_kafka_python_recorded(version):
    """Our table against real brokers' ApiVersions answers (kafka.protocol.broker_version_data)."""
    recorded = dict(BROKER_API_VERSIONS[tuple(int(x) for x in version.split("."))])
    ours = dict(KAFKA_API_VERSIONS[version])
    if version == "3.9":   # kafka-python's 3.9 answer came from a ZooKeeper-mode broker
        recorded = {k: r for k, r in recorded.items() if k not in _ZK_ONLY}
        ours = {k: r for k, r in ours.items() if k not in _KRAFT_ONLY}
    else:                  # Kafka 4 accepts Produce v3+ and advertises it from v0
        ours[0] = (0, ours[0][1])
    assert ours == recorded


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_advertised_never_claims_more_than_served_or_the_release(version):
    t = table_for(version)
    served = served_ranges()
    for key, (lo, hi) in t.accepted.items():
        rlo, rhi = KAFKA_API_VERSIONS[version][key]
        assert rlo <= lo <= hi <= rhi and served[key][0] <= lo and hi <= served[key][1]
    assert set(t.advertised) == set(t.accepted)
    assert t.advertised[0] == (0, t.accepted[0][1])
    # an API kwire serves none of is missing, never advertised
    for key, (_, got) in missing(version, served).items():
        assert (got is None) == (key not in t.advertised)


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_kafka_python_infers_from_the_table(version):
    assert infer_broker_version_from_api_versions(table_for(version).advertised) == INFERRED[version]


# ---------------------------------------------------------------------------- on the wire
@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def emulating(request):
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": request.param}) as b:
        yield request.param, b.bootstrap_servers


def _connect(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def _recv_frame(s) -> bytes | None:
    head = b""
    while len(head) < 4:
        got = s.recv(4 - len(head))
        if not got:
            return None
        head += got
    n = struct.unpack(">i", head)[0]
    body = b""
    while len(body) < n:
        got = s.recv(n - len(body))
        if not got:
            return None
        body += got
    return body


def _advertised_at_default_transaction_version(version: str) -> dict:
    """The release's ranges as a broker with transaction.version unset advertises them: level 2
    under 4.x (the release's own ranges, as a new Kafka 4 cluster); under 3.x level 1, where
    Produce, EndTxn and TxnOffsetCommit stop before transaction version 2 (v11, v4, v4)."""
    from kwire.handlers.api_versions import TV1_MAX_VERSIONS

    table = table_for(version).advertised
    if version.startswith("4."):
        return dict(table)
    return {k: (lo, min(hi, TV1_MAX_VERSIONS.get(k, hi))) for k, (lo, hi) in table.items()}


@pytest.mark.slow
def test_api_versions_answer_per_release(emulating):
    version, bootstrap = emulating
    a = api("ApiVersions")
    with _connect(bootstrap) as s:
        for v in (0, 3):
            s.sendall(FR.encode_request(a, v, 7, a.request.cls(client_software_name="t", client_software_version="1")))
            _, resp = FR.decode_response(a, v, _recv_frame(s))
            assert resp.error_code == 0
            got = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            assert got == _advertised_at_default_transaction_version(version)
        # an unknown ApiVersions version: UNSUPPORTED_VERSION as v0, with this release's ranges
        body = struct.pack(">hhi", 18, 9, 77) + struct.pack(">h", 1) + b"x" + b"\x00" + b"\x00\x00\x00"
        s.sendall(struct.pack(">i", len(body)) + body)
        _, resp = FR.decode_response(a, 0, _recv_frame(s))
        assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
        # as Kafka (KIP-511): only ApiVersions' own range, for the client's retry
        assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == \
            [(18, *table_for(version).advertised[18])]


@pytest.mark.slow
def test_kafka_python_check_version_infers_the_release(emulating):
    from kafka import KafkaAdminClient

    version, bootstrap = emulating
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        assert admin._client.check_version() == INFERRED[version]
    finally:
        admin.close()


@pytest.mark.slow
@pytest.mark.parametrize("api_name, v, kafka4_from", [("JoinGroup", 1, "4.0"), ("DescribeConfigs", 0, "4.0")])
def test_removed_versions_refused_the_kafka4_way(emulating, api_name, v, kafka4_from):
    """Under 4.x a request at a version Kafka 4 removed closes the connection (Kafka's
    InvalidRequestException in the socket server); under 3.9 it is answered."""
    version, bootstrap = emulating
    a = api(api_name)
    fields = {"JoinGroup": dict(group_id="g-emu", session_timeout_ms=6000, member_id="", protocol_type="consumer",
                                protocols=[]),
              "DescribeConfigs": dict(resources=[])}[api_name]
    refused = not table_for(version).serves(a.key, v)
    assert refused == (KAFKA_VERSIONS.index(version) >= KAFKA_VERSIONS.index(kafka4_from)
                       and not (api_name == "JoinGroup" and version >= "4.1"))
    with _connect(bootstrap) as s:
        s.sendall(FR.encode_request(a, v, 9, a.request.cls(**fields)))
        frame = _recv_frame(s)
        if refused:
            assert frame is None
        else:
            corr, _ = FR.decode_response(a, v, frame)
            assert corr == 9


def test_default_is_the_newest_release_served_in_full():
    """In full: every API of the release that kwire serves at all, across the release's range."""
    served = served_ranges()
    full = [v for v in KAFKA_VERSIONS if all(got is None for _, got in missing(v, served).values())]
    assert full and full[-1] == DEFAULT_KAFKA_VERSION


def test_docs_are_current():
    import pathlib

    from kwire.emulation import render

    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "emulation.md"
    assert doc.read_text().strip() == render().strip(), "run make docs (python -m kwire.emulation > docs/emulation.md)"


@pytest.mark.slow
def test_transaction_version_2_is_kafka_4s():
    """transaction.version=2 (KIP-890 part 2) came with Kafka 4.0: a broker emulating 3.9 neither
    finalizes the feature nor advertises Produce v12 / EndTxn v5 / TxnOffsetCommit v5."""
    for version, want in (("3.9", (11, 4, 4, [])), ("4.0", (12, 5, 5, [("transaction.version", 2, 2)]))):
        with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": version, "transaction.version": 2}) as b:
            with b.client() as c:
                r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
        maxes = {k.api_key: k.max_version for k in r.api_keys}
        got = [(f.name, f.min_version_level, f.max_version_level) for f in r.finalized_features]
        assert (maxes[0], maxes[26], maxes[28], got) == want
