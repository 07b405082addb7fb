"""The 4.1-4.3 versions that name topics by id (KIP-516 / KIP-848) or add a field, on the wire:
Produce v13, Fetch v18, OffsetCommit v10, OffsetFetch v10 (UNKNOWN_TOPIC_ID for an id the
broker does not know), ListOffsets v11 (-6 earliest pending upload: -1 without tiered storage)."""
from __future__ import annotations

import time
import uuid

import pytest

from kwire.codec.apis import api
from kwire.codec.records import build_batch, iter_batches
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker():
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "4.3",
                                          "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def _s(api_name, kind, struct):
    a = api(api_name)
    return (a.request if kind == "request" else a.response).struct(struct)


def _topic(broker, partitions=2):
    name = f"ids-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, partitions)
    with WireClient(broker.bootstrap_servers) as c:
        T = _s("Metadata", "request", "MetadataRequestTopic")
        r = c.request("Metadata", 12, topics=[T(name=name)], allow_auto_topic_creation=False,
                      include_topic_authorized_operations=False)
    return name, r.topics[0].topic_id


def test_produce_v13_and_fetch_v18_by_topic_id(broker):
    name, tid = _topic(broker)
    TD, PD = _s("Produce", "request", "TopicProduceData"), _s("Produce", "request", "PartitionProduceData")
    batch = build_batch([(None, b"v%d" % i, [], int(time.time() * 1000)) for i in range(3)])
    unknown = uuid.uuid4()
    with WireClient(broker.bootstrap_servers) as c:
        r = c.request("Produce", 13, transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
            TD(topic_id=tid, partition_data=[PD(index=1, records=batch)]),
            TD(topic_id=unknown, partition_data=[PD(index=0, records=batch)])])
        got = {t.topic_id: [(p.index, p.error_code, p.base_offset) for p in t.partition_responses]
               for t in r.responses}
        assert got == {tid: [(1, 0, 0)], unknown: [(0, ErrorCode.UNKNOWN_TOPIC_ID, -1)]}
        FT, FP = _s("Fetch", "request", "FetchTopic"), _s("Fetch", "request", "FetchPartition")
        r = c.request("Fetch", 18, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                      session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                          FT(topic_id=tid, partitions=[FP(partition=1, fetch_offset=0, partition_max_bytes=1 << 20,
                                                          current_leader_epoch=-1, last_fetched_epoch=-1,
                                                          log_start_offset=-1, high_watermark=-1)]),
                          FT(topic_id=unknown, partitions=[FP(partition=0, fetch_offset=0,
                                                              partition_max_bytes=1 << 20)])])
        by_id = {t.topic_id: t.partitions[0] for t in r.responses}
        assert by_id[unknown].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        p = by_id[tid]
        assert p.error_code == 0 and p.high_watermark == 3
        assert [r.value for b in iter_batches(bytes(p.records)) for r in b.records()] == [b"v0", b"v1", b"v2"]


def test_list_offsets_v11_earliest_pending_upload(broker):
    name, _ = _topic(broker, 1)
    T, P = _s("ListOffsets", "request", "ListOffsetsTopic"), _s("ListOffsets", "request", "ListOffsetsPartition")
    with WireClient(broker.bootstrap_servers) as c:
        for v, want in ((11, (0, -1, -1)), (10, (ErrorCode.UNSUPPORTED_VERSION, -1, -1))):
            r = c.request("ListOffsets", v, replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
                T(name=name, partitions=[P(partition_index=0, timestamp=-6, current_leader_epoch=-1)])])
            p = r.topics[0].partitions[0]
            assert (p.error_code, p.offset, p.timestamp) == want
        r = c.request("ListOffsets", 11, replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
            T(name=name, partitions=[P(partition_index=0, timestamp=-1, current_leader_epoch=-1)])])
        assert r.topics[0].partitions[0].error_code == 0 and r.topics[0].partitions[0].offset == 0


def test_offset_commit_and_fetch_v10_by_topic_id(broker):
    name, tid = _topic(broker)
    group, unknown = f"g-{uuid.uuid4().hex[:8]}", uuid.uuid4()
    CT, CP = _s("OffsetCommit", "request", "OffsetCommitRequestTopic"), \
        _s("OffsetCommit", "request", "OffsetCommitRequestPartition")
    FG, FT = _s("OffsetFetch", "request", "OffsetFetchRequestGroup"), \
        _s("OffsetFetch", "request", "OffsetFetchRequestTopics")
    with WireClient(broker.bootstrap_servers) as c:
        for _ in range(50):
            fc = c.request("FindCoordinator", 4, key_type=0, coordinator_keys=[group])
            if fc.coordinators[0].error_code == 0:
                break
            time.sleep(0.1)
        r = c.request("OffsetCommit", 10, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                      group_instance_id=None, topics=[
                          CT(topic_id=tid, partitions=[CP(partition_index=1, committed_offset=42,
                                                          committed_metadata="m")]),
                          CT(topic_id=unknown, partitions=[CP(partition_index=0, committed_offset=1,
                                                              committed_metadata=None)])])
        got = {t.topic_id: [(p.partition_index, p.error_code) for p in t.partitions] for t in r.topics}
        assert got == {tid: [(1, 0)], unknown: [(0, ErrorCode.UNKNOWN_TOPIC_ID)]}
        r = c.request("OffsetFetch", 10, require_stable=False, groups=[FG(group_id=group, topics=[
            FT(topic_id=tid, partition_indexes=[1]), FT(topic_id=unknown, partition_indexes=[0])])])
        g = r.groups[0]
        got = {t.topic_id: [(p.partition_index, p.error_code, p.committed_offset) for p in t.partitions]
               for t in g.topics}
        assert g.error_code == 0 and got == {tid: [(1, 0, 42)], unknown: [(0, ErrorCode.UNKNOWN_TOPIC_ID, -1)]}
        r = c.request("OffsetFetch", 10, require_stable=False, groups=[FG(group_id=group, topics=None)])
        assert [(t.topic_id, [p.committed_offset for p in t.partitions]) for t in r.groups[0].topics] == [(tid, [42])]
        r = c.request("OffsetFetch", 9, require_stable=False, groups=[FG(group_id=group, topics=None)])
        assert [(t.name, [p.committed_offset for p in t.partitions]) for t in r.groups[0].topics] == [(name, [42])]
