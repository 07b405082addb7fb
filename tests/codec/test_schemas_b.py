"""Consumer-group schemas (FindCoordinator .. OffsetDelete) and the consumer embedded protocol,
checked against kafka-python 3.x's own protocol classes in both directions.

For each API a realistic request and response is encoded by us and decoded by kafka-python
(and the reverse) at every version we claim; values are compared field by
field over the fields our schema says exist in that version, and the two encodings must be
byte-identical (none of these messages has tagged fields, so there is one right encoding).
"""
from __future__ import annotations

import struct
import uuid

import pytest
from kafka.protocol.admin import (DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
                                  DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse)
from kafka.protocol.consumer import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
                                     JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
                                     OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
                                     OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse,
                                     SyncGroupRequest, SyncGroupResponse)
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from kwire.codec import consumer_protocol as cp
from kwire.codec.apis import APIS
from kwire.codec.schema import default_value
from kwire.errors import CodecError, EncodeError

NOT_REQUESTED = -(2**31)  # authorized_operations when not asked for
SUB_V1 = bytes.fromhex("0001") + b"\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff\x00\x00\x00\x00"


# --- helpers --------------------------------------------------------------------------------
def ours(msg, cls_name, fields, data):
    """Our object of struct ``cls_name`` built from a dict (nested dicts for structs)."""
    assert set(data) <= {f.name for f in fields}, f"{cls_name}: unknown keys {set(data) - {f.name for f in fields}}"
    kw = {}
    for f in fields:
        if f.name not in data:
            continue
        val = data[f.name]
        if f.is_struct and val is not None:
            val = [ours(msg, f.elem, f.fields, d) for d in val] if f.is_array else ours(msg, f.elem, f.fields, val)
        kw[f.name] = val
    return msg.struct(cls_name)(**kw)


def bits(ops: int) -> set[int] | None:
    return None if ops == NOT_REQUESTED else {i for i in range(32) if ops >> i & 1}


def theirs(kcls, fields, data, v):
    """A kafka-python object of ``kcls`` at version ``v`` built from the same dict."""
    kw = {}
    for f in fields:
        if not f.present(v) or f.name not in data:
            continue
        val = data[f.name]
        if f.is_struct and val is not None:
            sub = getattr(kcls, f.elem)
            val = [theirs(sub, f.fields, d, v) for d in val] if f.is_array else theirs(sub, f.fields, val, v)
        elif f.name == "authorized_operations":
            val = bits(val)  # kafka-python patches this int32 into a set of bit positions
        kw[f.name] = val
    return kcls(version=v, **kw)


def check(got, fields, data, v, path=""):
    """Every field of ``fields`` present at ``v`` equals ``data`` (or the field's default)."""
    for f in fields:
        if not f.present(v):
            continue
        want = data.get(f.name, default_value(f))
        val = getattr(got, f.name)
        where = f"{path}.{f.name} v{v}"
        if f.is_struct and want is not None:
            if f.is_array:
                assert val is not None and len(val) == len(want), where
                for i, (g, w) in enumerate(zip(val, want)):
                    check(g, f.fields, w, v, f"{where}[{i}]")
            else:
                check(val, f.fields, want, v, where)
            continue
        if isinstance(val, set) or (val is None and f.name == "authorized_operations"):
            want = bits(want)
        if isinstance(val, (bytearray, memoryview)):
            val = bytes(val)
        assert val == want, f"{where}: {val!r} != {want!r}"


def versions(msg):
    """Every version we claim (lowest, middle, highest and every boundary between; it is cheap)."""
    return range(msg.valid.lo, msg.valid.hi + 1)


def roundtrip_both_ways(msg, kcls, data, v):
    obj = ours(msg, msg.name, msg.fields, data)
    mine = msg.encode(obj, v)
    check(kcls.decode(mine, version=v), msg.fields, data, v)  # ours -> kafka-python
    kp = bytes(theirs(kcls, msg.fields, data, v).encode(version=v))
    check(msg.decode(kp, v), msg.fields, data, v)  # kafka-python -> ours
    assert mine == kp, f"{msg.name} v{v}: encodings differ"


# --- realistic messages ---------------------------------------------------------------------
SUB = bytes.fromhex("0003") + b"payload"
TID1, TID2 = uuid.UUID("5f0c7f4e-2b8a-4d57-9d0e-1f6a8c3b2a11"), uuid.UUID("0b7d1c2e-9a44-4e0f-8c1d-7e2f3a4b5c6d")
MEMBER_A = "consumer-1-7d0c5a4e-0b6f-4f6e-8a5b-1c3d9e2f4a10"
MEMBER_B = "consumer-2-1f2e3d4c-5b6a-4789-9abc-def012345678"

CASES = {
    "FindCoordinator": (FindCoordinatorRequest, FindCoordinatorResponse,
        {"key": "orders-app", "key_type": 0, "coordinator_keys": ["orders-app", "billing"]},
        {"throttle_time_ms": 5, "error_code": 15, "error_message": "The coordinator is not available.",
         "node_id": 2, "host": "broker-2.local", "port": 9093,
         "coordinators": [{"key": "orders-app", "node_id": 2, "host": "broker-2.local", "port": 9093,
                           "error_code": 0, "error_message": None},
                          {"key": "billing", "node_id": -1, "host": "", "port": -1, "error_code": 15,
                           "error_message": "The coordinator is not available."}]}),
    "JoinGroup": (JoinGroupRequest, JoinGroupResponse,
        {"group_id": "orders-app", "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
         "member_id": MEMBER_A, "group_instance_id": "pod-0", "protocol_type": "consumer",
         "protocols": [{"name": "range", "metadata": SUB}, {"name": "cooperative-sticky", "metadata": SUB_V1}],
         "reason": "rebalance failed due to MemberIdRequiredException"},
        {"throttle_time_ms": 0, "error_code": 0, "generation_id": 7, "protocol_type": "consumer",
         "protocol_name": "range", "leader": MEMBER_A, "skip_assignment": True, "member_id": MEMBER_A,
         "members": [{"member_id": MEMBER_A, "group_instance_id": "pod-0", "metadata": SUB},
                     {"member_id": MEMBER_B, "group_instance_id": None, "metadata": b""}]}),
    "Heartbeat": (HeartbeatRequest, HeartbeatResponse,
        {"group_id": "orders-app", "generation_id": 7, "member_id": MEMBER_A, "group_instance_id": "pod-0"},
        {"throttle_time_ms": 12, "error_code": 27}),
    "LeaveGroup": (LeaveGroupRequest, LeaveGroupResponse,
        {"group_id": "orders-app", "member_id": MEMBER_A,
         "members": [{"member_id": MEMBER_A, "group_instance_id": None, "reason": "the consumer is being closed"},
                     {"member_id": "", "group_instance_id": "pod-1", "reason": None}]},
        {"throttle_time_ms": 0, "error_code": 0,
         "members": [{"member_id": MEMBER_A, "group_instance_id": None, "error_code": 0},
                     {"member_id": MEMBER_B, "group_instance_id": "pod-1", "error_code": 25}]}),
    "SyncGroup": (SyncGroupRequest, SyncGroupResponse,
        {"group_id": "orders-app", "generation_id": 7, "member_id": MEMBER_A, "group_instance_id": None,
         "protocol_type": "consumer", "protocol_name": "range",
         "assignments": [{"member_id": MEMBER_A, "assignment": b"\x00\x00assign-a"},
                         {"member_id": MEMBER_B, "assignment": b""}]},
        {"throttle_time_ms": 3, "error_code": 0, "protocol_type": "consumer", "protocol_name": "range",
         "assignment": b"\x00\x00assign-a"}),
    "DescribeGroups": (DescribeGroupsRequest, DescribeGroupsResponse,
        {"groups": ["orders-app", "billing"], "include_authorized_operations": True},
        {"throttle_time_ms": 0, "groups": [
            {"error_code": 0, "error_message": None, "group_id": "orders-app", "group_state": "Stable", "protocol_type": "consumer",
             "protocol_data": "range", "authorized_operations": 0b11111111000,
             "members": [{"member_id": MEMBER_A, "group_instance_id": "pod-0", "client_id": "consumer-1",
                          "client_host": "/10.0.0.7", "member_metadata": SUB, "member_assignment": b"\x00\x00x"},
                         {"member_id": MEMBER_B, "group_instance_id": None, "client_id": "consumer-2",
                          "client_host": "/10.0.0.8", "member_metadata": b"", "member_assignment": b""}]},
            {"error_code": 69, "error_message": "Group billing not found.", "group_id": "billing", "group_state": "Dead", "protocol_type": "",
             "protocol_data": "", "members": [], "authorized_operations": NOT_REQUESTED}]}),
    "ListGroups": (ListGroupsRequest, ListGroupsResponse,
        {"states_filter": ["Stable", "PreparingRebalance"], "types_filter": ["classic"]},
        {"throttle_time_ms": 0, "error_code": 0,
         "groups": [{"group_id": "orders-app", "protocol_type": "consumer", "group_state": "Stable",
                     "group_type": "classic"},
                    {"group_id": "connect-cluster", "protocol_type": "connect", "group_state": "Empty",
                     "group_type": "classic"}]}),
    "OffsetCommit": (OffsetCommitRequest, OffsetCommitResponse,
        {"group_id": "orders-app", "generation_id_or_member_epoch": 7, "member_id": MEMBER_A,
         "group_instance_id": "pod-0", "retention_time_ms": 86400000,
         "topics": [{"name": "orders", "topic_id": TID1, "partitions": [
             {"partition_index": 0, "committed_offset": 1234567890123, "committed_leader_epoch": 4,
              "committed_metadata": ""},
             {"partition_index": 5, "committed_offset": 0, "committed_leader_epoch": -1,
              "committed_metadata": None}]},
             {"name": "payments", "topic_id": TID2, "partitions": [
                 {"partition_index": 1, "committed_offset": 42, "committed_leader_epoch": 0,
                  "committed_metadata": "checkpoint-42"}]}]},
        {"throttle_time_ms": 0, "topics": [
            {"name": "orders", "topic_id": TID1, "partitions": [{"partition_index": 0, "error_code": 0},
                                              {"partition_index": 5, "error_code": 22}]}]}),
    "OffsetFetch": (OffsetFetchRequest, OffsetFetchResponse,
        {"group_id": "orders-app", "require_stable": True,
         "topics": [{"name": "orders", "partition_indexes": [0, 1, 5]}],
         "groups": [{"group_id": "orders-app", "member_id": MEMBER_A, "member_epoch": 12,
                     "topics": [{"name": "orders", "topic_id": TID1, "partition_indexes": [0, 1, 5]}]},
                    {"group_id": "billing", "member_id": None, "member_epoch": -1, "topics": None}]},
        {"throttle_time_ms": 0, "error_code": 0,
         "topics": [{"name": "orders", "partitions": [
             {"partition_index": 0, "committed_offset": 1234567890123, "committed_leader_epoch": 4,
              "metadata": "", "error_code": 0},
             {"partition_index": 5, "committed_offset": -1, "committed_leader_epoch": -1,
              "metadata": None, "error_code": 0}]}],
         "groups": [{"group_id": "orders-app", "error_code": 0, "topics": [{"name": "orders", "topic_id": TID1,
                                                                           "partitions": [
             {"partition_index": 0, "committed_offset": 99, "committed_leader_epoch": 4,
              "metadata": "m", "error_code": 0},
             {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1,
              "metadata": None, "error_code": 0}]}]},
             {"group_id": "billing", "error_code": 16, "topics": []}]}),
    "DeleteGroups": (DeleteGroupsRequest, DeleteGroupsResponse,
        {"groups_names": ["orders-app", "billing"]},
        {"throttle_time_ms": 0, "results": [{"group_id": "orders-app", "error_code": 0},
                                            {"group_id": "billing", "error_code": 68}]}),
    "OffsetDelete": (OffsetDeleteRequest, OffsetDeleteResponse,
        {"group_id": "orders-app", "topics": [{"name": "orders", "partitions": [{"partition_index": 0},
                                                                               {"partition_index": 3}]}]},
        {"error_code": 0, "throttle_time_ms": 0, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "error_code": 0}, {"partition_index": 3, "error_code": 86}]}]}),
}

def _api(name):
    return next(a for a in APIS.values() if a.name == name)


PARAMS = [pytest.param(name, kind, v, id=f"{name}-{kind}-v{v}")
          for name in CASES for kind in ("request", "response") for v in versions(getattr(_api(name), kind))]


def test_version_ranges_are_the_ones_we_claim():
    want = {10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5),
            8: (0, 10), 9: (0, 10), 42: (0, 2), 47: (0, 0)}
    for key, (lo, hi) in want.items():
        a = APIS[key]
        assert (a.request.valid.lo, a.request.valid.hi) == (lo, hi) == (a.response.valid.lo, a.response.valid.hi)
        assert a.name in CASES


@pytest.mark.parametrize("name, kind, v", PARAMS)
def test_against_kafka_python(name, kind, v):
    kreq, kresp, req, resp = CASES[name]
    api = _api(name)
    if kind == "request":
        roundtrip_both_ways(api.request, kreq, req, v)
    else:
        roundtrip_both_ways(api.response, kresp, resp, v)


# Error answers and "all topics" requests carry nulls; the versions (from Kafka's JSON) are those
# where every null is allowed.
NULLS = [
    ("SyncGroup", "response", [5], {"throttle_time_ms": 0, "error_code": 27, "protocol_type": None,
                                    "protocol_name": None, "assignment": b""}),
    ("JoinGroup", "response", [7, 8, 9], {"error_code": 79, "generation_id": -1, "protocol_type": None,
                                          "protocol_name": None, "leader": "", "member_id": MEMBER_B}),
    ("OffsetFetch", "request", range(2, 8), {"group_id": "orders-app", "topics": None}),
]


@pytest.mark.parametrize("name, kind, data, v", [
    pytest.param(n, k, d, v, id=f"{n}-{k}-v{v}") for n, k, vs, d in NULLS for v in vs])
def test_nulls_against_kafka_python(name, kind, data, v):
    kcls = CASES[name][0 if kind == "request" else 1]
    roundtrip_both_ways(getattr(_api(name), kind), kcls, data, v)


def test_null_where_not_nullable_is_refused():
    req = _api("OffsetFetch").request
    with pytest.raises(EncodeError):
        req.encode(req(group_id="g", topics=None), 1)  # topics became nullable in v2
    with pytest.raises(CodecError):
        req.decode(b"\x00\x01g\xff\xff\xff\xff", 1)
    resp = _api("JoinGroup").response
    with pytest.raises(EncodeError):
        resp.encode(resp(protocol_name=None), 6)  # protocol_name nullable from v7


# --- consumer embedded protocol --------------------------------------------------------------
SUB_DATA = {"topics": ["orders", "payments"], "user_data": b"\x00\x01sticky",
            "owned_partitions": [{"topic": "orders", "partitions": [0, 3]}, {"topic": "payments", "partitions": []}],
            "generation_id": 7, "rack_id": "us-east-1a"}
ASSIGN_DATA = {"assigned_partitions": [{"topic": "orders", "partitions": [0, 1, 2]},
                                       {"topic": "payments", "partitions": [4]}], "user_data": None}


@pytest.mark.parametrize("v", range(4))
@pytest.mark.parametrize("kind", ["subscription", "assignment"])
def test_consumer_protocol_against_kafka_python(kind, v):
    msg, kcls, data = ((cp.SUBSCRIPTION, ConsumerProtocolSubscription, SUB_DATA) if kind == "subscription"
                       else (cp.ASSIGNMENT, ConsumerProtocolAssignment, ASSIGN_DATA))
    enc = cp.encode_subscription if kind == "subscription" else cp.encode_assignment
    dec = cp.decode_subscription if kind == "subscription" else cp.decode_assignment
    mine = enc(ours(msg, msg.name, msg.fields, data), v)
    assert cp.read_version(mine) == v
    check(kcls.decode(mine), msg.fields, data, v)  # kafka-python reads the version prefix itself
    kp = bytes(theirs(kcls, msg.fields, data, v).encode())
    check(dec(kp), msg.fields, data, v)
    assert mine == kp


def test_newer_subscription_version_is_read_as_our_newest():
    sub = ours(cp.SUBSCRIPTION, cp.SUBSCRIPTION.name, cp.SUBSCRIPTION.fields, SUB_DATA)
    body = cp.encode_subscription(sub, 3)[2:]
    future = struct.pack(">h", 7) + body + b"\x00\x00\x00\x2a fields from v7"
    got = cp.decode_subscription(future)
    check(got, cp.SUBSCRIPTION.fields, SUB_DATA, 3)
    check(ConsumerProtocolSubscription.decode(future), cp.SUBSCRIPTION.fields, SUB_DATA, 3)


def test_newer_assignment_version_is_read_as_our_newest():
    a = ours(cp.ASSIGNMENT, cp.ASSIGNMENT.name, cp.ASSIGNMENT.fields, ASSIGN_DATA)
    future = struct.pack(">h", 4) + cp.encode_assignment(a, 3)[2:] + b"\x00\x00\x00\x07"
    assert cp.decode_assignment(future) == a
    check(ConsumerProtocolAssignment.decode(future), cp.ASSIGNMENT.fields, ASSIGN_DATA, 3)


def test_kafka_python_range_assignor_bytes():
    """What kafka-python's consumer really sends (metadata) and reads back (assignment)."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.structs import TopicPartition
    sub = cp.decode_subscription(bytes(RangePartitionAssignor.metadata({"payments", "orders"}).encode()))
    assert sorted(sub.topics) == ["orders", "payments"] and sub.user_data == b""
    TP = cp.AssignmentTopicPartition
    ours_a = cp.Assignment(assigned_partitions=[TP(topic="orders", partitions=[2, 0]), TP(topic="x", partitions=[])],
                           user_data=b"")
    got = ConsumerProtocolAssignment.decode(cp.encode_assignment(ours_a, 0))
    assert set(got.partitions()) == {TopicPartition("orders", 0), TopicPartition("orders", 2)}


def test_bad_consumer_protocol_input_is_refused():
    with pytest.raises(CodecError):
        cp.decode_subscription(b"\x00")  # no room for the version
    with pytest.raises(CodecError):
        cp.decode_subscription(struct.pack(">h", -1) + b"\x00\x00\x00\x00\xff\xff\xff\xff")
    with pytest.raises(CodecError):
        cp.decode_assignment(b"\x00\x00\x00\x00\x00\x02")  # promises 2 topics, has none
    with pytest.raises(EncodeError):
        cp.encode_assignment(cp.Assignment(), 4)


def test_v1_subscription_without_owned_partitions_decodes():
    got = cp.decode_subscription(SUB_V1)
    assert got.topics == ["orders"] and got.user_data is None and got.owned_partitions == []
    assert got.generation_id == -1 and got.rack_id is None
