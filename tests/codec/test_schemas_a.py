"""Schemas of the data-path, admin, SASL and producer-id APIs checked against kafka-python.

For each API, a realistic request and response is encoded at every version of our range (it is
cheap), both with our codec and with kafka-python's own protocol classes (built from Kafka's
JSON); the bytes must match, each side must decode the other's bytes to the same field values,
and our decoding of our encoding must round-trip. Which fields exist at a version is taken from
kafka-python's schema, not ours, and every one of them must exist in our schema.
"""
import uuid

import pytest
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.admin.configs import (AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest,
                                          DescribeConfigsResponse, IncrementalAlterConfigsRequest,
                                          IncrementalAlterConfigsResponse)
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                                         CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
                                         DeleteTopicsRequest, DeleteTopicsResponse)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import (ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
                                             OffsetForLeaderEpochResponse)
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

from kwire.codec.apis import APIS

U1, U2 = uuid.UUID("5f0c7f4e-2b8a-4d57-9d0e-1f6a8c3b2a11"), uuid.UUID("0b7d1c2e-9a44-4e0f-8c1d-7e2f3a4b5c6d")
RECS = bytes(range(61)) + b"payload" * 9  # opaque to the codec: a batch-sized blob
LEADER = {"leader_id": 2, "leader_epoch": 7}
NODES = [{"node_id": 2, "host": "broker-2.local", "port": 9092, "rack": None},
         {"node_id": 3, "host": "127.0.0.3", "port": 9093, "rack": "rack-b"}]

# api key -> (kafka-python request, response, our range, request values, response values).
# Values cover every field of every version in range; tagged fields hold non-default values.
CASES = {
    0: (ProduceRequest, ProduceResponse, (0, 13),
        {"transactional_id": "txn-1", "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": "orders", "topic_id": U1, "partition_data": [{"index": 0, "records": RECS},
                                                                  {"index": 3, "records": None}]},
            {"name": "audit", "topic_id": U2, "partition_data": []}]},
        {"responses": [{"name": "orders", "topic_id": U1, "partition_responses": [
            {"index": 0, "error_code": 0, "base_offset": 1234, "log_append_time_ms": 1700000000123,
             "log_start_offset": 10, "error_message": "INVALID_RECORD", "current_leader": LEADER,
             "record_errors": [{"batch_index": 2, "batch_index_error_message": "bad key"},
                               {"batch_index": 5, "batch_index_error_message": None}]}]}],
         "throttle_time_ms": 5, "node_endpoints": NODES}),
    1: (FetchRequest, FetchResponse, (0, 18),
        {"cluster_id": "kw-cluster", "replica_id": -1, "replica_state": {"replica_id": 1, "replica_epoch": 4},
         "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800, "isolation_level": 1, "session_id": 0,
         "session_epoch": -1, "rack_id": "rack-a",
         "topics": [{"topic": "orders", "topic_id": U1, "partitions": [
             {"partition": 0, "current_leader_epoch": 3, "fetch_offset": 100, "last_fetched_epoch": 2,
              "log_start_offset": 0, "partition_max_bytes": 1048576, "replica_directory_id": U2,
              "high_watermark": 90}]}],
         "forgotten_topics_data": [{"topic": "old", "topic_id": U2, "partitions": [1, 2]}]},
        {"throttle_time_ms": 0, "error_code": 0, "session_id": 12, "node_endpoints": NODES,
         "responses": [{"topic": "orders", "topic_id": U1, "partitions": [
             {"partition_index": 0, "error_code": 0, "high_watermark": 200, "last_stable_offset": 190,
              "log_start_offset": 0, "diverging_epoch": {"epoch": 3, "end_offset": 150}, "current_leader": LEADER,
              "snapshot_id": {"end_offset": 100, "epoch": 2}, "preferred_read_replica": 2, "records": RECS,
              "aborted_transactions": [{"producer_id": 9, "first_offset": 120}]},
             {"partition_index": 1, "error_code": 6, "high_watermark": -1, "last_stable_offset": -1,
              "log_start_offset": -1, "diverging_epoch": {"epoch": 1, "end_offset": 0}, "current_leader": LEADER,
              "snapshot_id": {"end_offset": 0, "epoch": 0}, "preferred_read_replica": -1, "records": None,
              "aborted_transactions": None}]}]}),
    2: (ListOffsetsRequest, ListOffsetsResponse, (0, 11),
        {"replica_id": -1, "isolation_level": 1, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "current_leader_epoch": 4, "timestamp": -2, "max_num_offsets": 1},
            {"partition_index": 1, "current_leader_epoch": -1, "timestamp": 1700000000000, "max_num_offsets": 3}]}],
         "timeout_ms": 30000},
        {"throttle_time_ms": 0, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 42, "leader_epoch": 4,
             "old_style_offsets": [42, 0]},
            {"partition_index": 1, "error_code": 75, "timestamp": -1, "offset": -1, "leader_epoch": -1,
             "old_style_offsets": []}]}]}),
    19: (CreateTopicsRequest, CreateTopicsResponse, (0, 7),
         {"timeout_ms": 30000, "validate_only": False, "topics": [
             {"name": "orders", "num_partitions": 3, "replication_factor": 1, "assignments": [],
              "configs": [{"name": "cleanup.policy", "value": "compact"}, {"name": "retention.ms", "value": None}]},
             {"name": "manual", "num_partitions": -1, "replication_factor": -1, "configs": [],
              "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}]}]},
         {"throttle_time_ms": 0, "topics": [
             {"name": "orders", "topic_id": U1, "error_code": 0, "error_message": None, "topic_config_error_code": 29,
              "num_partitions": 3, "replication_factor": 1, "configs": [
                  {"name": "cleanup.policy", "value": "compact", "read_only": False, "config_source": 1,
                   "is_sensitive": False}]},
             {"name": "manual", "topic_id": U2, "error_code": 36, "error_message": "Topic 'manual' already exists.",
              "topic_config_error_code": 36, "num_partitions": -1, "replication_factor": -1, "configs": None}]}),
    20: (DeleteTopicsRequest, DeleteTopicsResponse, (0, 6),
         {"topics": [{"name": "orders", "topic_id": U1}, {"name": None, "topic_id": U2}],
          "topic_names": ["orders", "old"], "timeout_ms": 15000},
         {"throttle_time_ms": 3, "responses": [
             {"name": "orders", "topic_id": U1, "error_code": 0, "error_message": None},
             {"name": "old", "topic_id": U2, "error_code": 3, "error_message": "This server does not host it."}]}),
    21: (DeleteRecordsRequest, DeleteRecordsResponse, (0, 2),
         {"timeout_ms": 30000, "topics": [{"name": "orders", "partitions": [
             {"partition_index": 0, "offset": 100}, {"partition_index": 1, "offset": -1}]}]},
         {"throttle_time_ms": 0, "topics": [{"name": "orders", "partitions": [
             {"partition_index": 0, "low_watermark": 100, "error_code": 0},
             {"partition_index": 1, "low_watermark": -1, "error_code": 1}]}]}),
    22: (InitProducerIdRequest, InitProducerIdResponse, (0, 5),
         {"transactional_id": "txn-1", "transaction_timeout_ms": 60000, "producer_id": 4000, "producer_epoch": 2},
         {"throttle_time_ms": 0, "error_code": 0, "producer_id": 4000, "producer_epoch": 3}),
    23: (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, (0, 4),
         {"replica_id": -1, "topics": [{"topic": "orders", "partitions": [
             {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 4},
             {"partition": 2, "current_leader_epoch": -1, "leader_epoch": 0}]}]},
         {"throttle_time_ms": 0, "topics": [{"topic": "orders", "partitions": [
             {"error_code": 0, "partition": 0, "leader_epoch": 4, "end_offset": 1234},
             {"error_code": 74, "partition": 2, "leader_epoch": -1, "end_offset": -1}]}]}),
    17: (SaslHandshakeRequest, SaslHandshakeResponse, (0, 1),
         {"mechanism": "SCRAM-SHA-256"}, {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}),
    36: (SaslAuthenticateRequest, SaslAuthenticateResponse, (0, 2),
         {"auth_bytes": b"\x00alice\x00alice-secret"},
         {"error_code": 58, "error_message": "Authentication failed", "auth_bytes": b"",
          "session_lifetime_ms": 3600000}),
    32: (DescribeConfigsRequest, DescribeConfigsResponse, (0, 4),
         {"include_synonyms": True, "include_documentation": True, "resources": [
             {"resource_type": 2, "resource_name": "orders", "configuration_keys": ["retention.ms"]},
             {"resource_type": 4, "resource_name": "1", "configuration_keys": None}]},
         {"throttle_time_ms": 0, "results": [{"error_code": 0, "error_message": None, "resource_type": 2,
                                              "resource_name": "orders", "configs": [
             {"name": "retention.ms", "value": "604800000", "read_only": False, "config_source": 5,
              "is_default": True, "is_sensitive": False, "config_type": 5, "documentation": "How long to keep.",
              "synonyms": [{"name": "log.retention.ms", "value": None, "source": 5}]},
             {"name": "ssl.key.password", "value": None, "read_only": True, "config_source": 4,
              "is_default": False, "is_sensitive": True, "synonyms": [], "config_type": 9,
              "documentation": None}]}]}),
    33: (AlterConfigsRequest, AlterConfigsResponse, (0, 2),
         {"validate_only": False, "resources": [{"resource_type": 2, "resource_name": "orders", "configs": [
             {"name": "retention.ms", "value": "1000"}, {"name": "cleanup.policy", "value": None}]}]},
         {"throttle_time_ms": 0, "responses": [
             {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders"},
             {"error_code": 40, "error_message": "Invalid config", "resource_type": 4, "resource_name": "1"}]}),
    44: (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, (0, 1),
         {"validate_only": True, "resources": [{"resource_type": 2, "resource_name": "orders", "configs": [
             {"name": "retention.ms", "config_operation": 0, "value": "1000"},
             {"name": "cleanup.policy", "config_operation": 1, "value": None}]}]},
         {"throttle_time_ms": 7, "responses": [
             {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders"}]}),
    60: (DescribeClusterRequest, DescribeClusterResponse, (0, 2),
         {"include_cluster_authorized_operations": True, "endpoint_type": 1, "include_fenced_brokers": True},
         {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1,
          "cluster_id": "kw-Q2x9c0lFQ7uJ1Z3k", "controller_id": 1, "cluster_authorized_operations": 0b1011111000,
          "brokers": [{"broker_id": 1, "host": "localhost", "port": 9092, "rack": None, "is_fenced": False},
                      {"broker_id": 2, "host": "127.0.0.2", "port": 9093, "rack": "r2", "is_fenced": True}]}),
}

# kafka-python renames one field and reads it as a set of bit positions.
KP_NAMES = {"cluster_authorized_operations": "authorized_operations"}


def bits(n):
    return {i for i in range(32) if n >> i & 1}


def params():
    for key, (_, _, (lo, hi), _, _) in CASES.items():
        for kind in ("request", "response"):
            for v in range(lo, hi + 1):
                yield pytest.param(key, kind, v, id=f"{APIS[key].name}-{kind}-v{v}")


def expected_at(kf, v, data):
    """The given values of exactly the fields that kafka-python's schema has at version v."""
    out = {}
    for kp_name, f in kf.fields.items():
        if not f.for_version_q(v):
            continue
        name = next((ours for ours, kp in KP_NAMES.items() if kp == kp_name), kp_name)
        assert name in data, f"test data lacks {name}"
        val = data[name]
        if val is not None and f.is_struct_array():
            val = [expected_at(f, v, x) for x in val]
        elif val is not None and f.is_struct():
            val = expected_at(f, v, val)
        out[name] = val
    return out


def build_ours(msg, name, fields, data):
    by_name = {f.name: f for f in fields}
    assert set(data) <= set(by_name), f"{name} lacks {set(data) - set(by_name)}"
    kw = {}
    for key, val in data.items():
        f = by_name[key]
        if val is not None and f.is_struct:
            val = ([build_ours(msg, f.elem, f.fields, x) for x in val] if f.is_array
                   else build_ours(msg, f.elem, f.fields, val))
        kw[key] = val
    return msg.struct(name)(**kw)


def build_kp(kf, data, cls):
    kw = {}
    for key, val in data.items():
        kp_name = KP_NAMES.get(key, key)
        f = kf.fields[kp_name]
        if val is not None and f.is_struct_array():
            val = [build_kp(f, x, f.array_of.data_class) for x in val]
        elif val is not None and f.is_struct():
            val = build_kp(f, val, f.data_class)
        elif kp_name != key:
            val = bits(val)
        kw[kp_name] = val
    return cls(**kw)


def from_kp(d):
    """kafka-python's to_dict() in our names and value forms."""
    if isinstance(d, list):
        return [from_kp(x) for x in d]
    if not isinstance(d, dict):
        return d
    out = {}
    for k, val in d.items():
        ours = next((o for o, kp in KP_NAMES.items() if kp == k), k)
        out[ours] = sum(1 << b for b in val) if ours != k else from_kp(val)
    return out


def project(obj, exp):
    """Our decoded object reduced to the fields (and nesting) of exp."""
    if isinstance(exp, dict):
        return {k: project(getattr(obj, k), e) for k, e in exp.items()}
    if isinstance(exp, list) and isinstance(obj, list) and len(obj) == len(exp):
        return [project(o, e) for o, e in zip(obj, exp)]
    return obj


@pytest.mark.parametrize("key,kind,v", list(params()))
def test_against_kafka_python(key, kind, v):
    kp_req, kp_resp, _, req_data, resp_data = CASES[key]
    kp_cls, data = (kp_req, req_data) if kind == "request" else (kp_resp, resp_data)
    msg = getattr(APIS[key], kind)
    exp = expected_at(kp_cls._struct, v, data)

    ours = build_ours(msg, msg.name, msg.fields, exp)
    our_bytes = msg.encode(ours, v)
    kp_bytes = bytes(build_kp(kp_cls._struct, exp, kp_cls[v]).encode(version=v))
    assert our_bytes == kp_bytes

    assert from_kp(kp_cls.decode(our_bytes, version=v).to_dict(json=False)) == exp  # theirs reads ours
    assert project(msg.decode(kp_bytes, v), exp) == exp  # ours reads theirs
    assert msg.decode(our_bytes, v) == ours  # and ours round-trips


@pytest.mark.parametrize("key", sorted(CASES))
def test_version_ranges(key):
    kp_req, kp_resp, (lo, hi) = CASES[key][:3]
    api = APIS[key]
    for msg, kp_cls in ((api.request, kp_req), (api.response, kp_resp)):
        assert (msg.valid.lo, msg.valid.hi) == (lo, hi)
        assert [msg.is_flexible(v) for v in range(lo, hi + 1)] == [kp_cls.flexible_version_q(v)
                                                                   for v in range(lo, hi + 1)]
        assert msg.api_key == key
        with pytest.raises(Exception):
            msg.encoder(hi + 1)


def test_produce_v10_tagged_defaults_are_left_out():
    """A partition response whose current leader holds its default adds no tagged field."""
    resp = APIS[0].response
    Part, Topic = resp.struct("PartitionProduceResponse"), resp.struct("TopicProduceResponse")
    with_leader = resp(responses=[Topic(name="t", partition_responses=[Part(current_leader=resp.struct(
        "LeaderIdAndEpoch")(leader_id=1, leader_epoch=0))])])
    without = resp(responses=[Topic(name="t", partition_responses=[Part()])])
    a, b = resp.encode(with_leader, 10), resp.encode(without, 10)
    assert len(a) - len(b) == 1 + 1 + 9  # tag, size, two int32 and the struct's own empty tag buffer
    assert resp.decode(b, 10).responses[0].partition_responses[0].current_leader.leader_id == -1


def test_fetch_large_records_stay_a_separate_part():
    """Fetch responses hand big record sets on as their own part (zero-copy), at old and flexible versions."""
    resp = APIS[1].response
    big = memoryview(bytearray(b"r" * (64 * 1024)))
    Part, Topic = resp.struct("PartitionData"), resp.struct("FetchableTopicResponse")
    obj = resp(responses=[Topic(topic="orders", topic_id=U1, partitions=[Part(records=big)])])
    for v in (4, 12, 16):
        parts = resp.encode_parts(obj, v)
        assert any(p is big for p in parts)
        assert bytes(resp.decode(resp.encode(obj, v), v).responses[0].partitions[0].records) == bytes(big)
