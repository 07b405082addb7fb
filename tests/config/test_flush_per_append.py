"""log.flush.per.append (kwire's key) reaches every partition log: an append through the broker
is fdatasynced before it is acknowledged, whether the key is static or set at run time."""
from __future__ import annotations

import os
import uuid

import pytest

from kwire.codec.apis import api
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


@pytest.fixture
def fdatasyncs(monkeypatch):
    """The paths fdatasync was called on (the broker runs in this process, thread mode)."""
    calls: list[str] = []
    real = os.fdatasync

    def spy(fd):
        try:
            calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            calls.append("?")
        return real(fd)

    monkeypatch.setattr(os, "fdatasync", spy)
    return calls


def _appends_synced(calls, topic):
    return [p for p in calls if f"/{topic}-0/" in p and p.endswith(".log")]


def test_static_flush_per_append_fdatasyncs_each_append(fdatasyncs):
    with Broker(mode="thread", overrides={"log.flush.per.append": "true"}) as b, \
            WireClient(b.bootstrap_servers) as c:
        topic = f"sync-{uuid.uuid4().hex[:6]}"
        c.create_topic(topic, 1)
        assert b.broker.logs.config_for(topic).fsync_per_append is True
        before = len(_appends_synced(fdatasyncs, topic))
        for i in range(3):
            c.produce(topic, [(None, f"v{i}".encode())])
        assert len(_appends_synced(fdatasyncs, topic)) - before >= 3


def test_default_does_not_sync_and_dynamic_switch_does(fdatasyncs):
    with Broker(mode="thread") as b, WireClient(b.bootstrap_servers) as c:
        topic = f"nosync-{uuid.uuid4().hex[:6]}"
        c.create_topic(topic, 1)
        c.produce(topic, [(None, b"a")])
        c.produce(topic, [(None, b"b")])
        assert _appends_synced(fdatasyncs, topic) == []
        a = api("IncrementalAlterConfigs")
        R, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
        resp = c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[R(
            resource_type=4, resource_name="", configs=[C(name="log.flush.per.append", config_operation=0,
                                                          value="true")])])
        assert resp.responses[0].error_code == 0
        assert b.broker.logs.config_for(topic).fsync_per_append is True
        c.produce(topic, [(None, b"c")])
        assert len(_appends_synced(fdatasyncs, topic)) >= 1


def test_coordinator_writes_are_fdatasynced_too(monkeypatch):
    """The group and transaction coordinators write through the same append path as Produce
    (ReplicaManager.append): their __consumer_offsets and __transaction_state appends are
    fdatasynced before they count, as a Produce's are."""
    from kwire.log.partition_log import PartitionLog
    from kwire.testing.wait import wait_until

    synced: list[str] = []
    real = PartitionLog.datasync

    def spy(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(PartitionLog, "datasync", staticmethod(spy))
    with Broker(mode="thread", overrides={"log.flush.per.append": "true", "offsets.topic.num.partitions": 1,
                                          "transaction.state.log.num.partitions": 1}) as b, \
            WireClient(b.bootstrap_servers) as c:
        topic = f"coord-{uuid.uuid4().hex[:6]}"
        c.create_topic(topic, 1)
        for key_type, key in ((0, "g"), (1, "tx")):   # the coordinators' topics are made on first use
            wait_until(lambda: c.request("FindCoordinator", 4, key_type=key_type, coordinator_keys=[key])
                       .coordinators[0].error_code == 0, 10)
        Req = api("OffsetCommit").request
        assert wait_until(lambda: c.request(
            "OffsetCommit", 8, group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[Req.struct("OffsetCommitRequestTopic")(name=topic, partitions=[
                Req.struct("OffsetCommitRequestPartition")(partition_index=0, committed_offset=1,
                                                           committed_leader_epoch=-1, committed_metadata=None)])],
        ).topics[0].partitions[0].error_code == 0, 10)
        assert [p for p in synced if "/__consumer_offsets-0/" in p and p.endswith(".log")]
        assert wait_until(lambda: c.request("InitProducerId", 4, transactional_id="tx", transaction_timeout_ms=60000,
                                            producer_id=-1, producer_epoch=-1).error_code == 0, 10)
        assert [p for p in synced if "/__transaction_state-0/" in p and p.endswith(".log")]
