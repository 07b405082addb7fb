"""Share groups survive a broker restart (KIP-932): the share partitions' state written to
__share_group_state as Kafka's ShareSnapshot records and read back at start
(kwire.share.state_store), the membership in __consumer_offsets (kwire.groups.share_records);
and the records' encoding round-trips (kwire.share.records)."""
from __future__ import annotations

import time
import uuid

import pytest

from kwire.share import records as SR
from kwire.share.partition import StateBatch
from kwire.testing import Broker
from kwire.testing.client import WireClient
from tests.share.test_share_wire import _acquired, _fetch, _hb, _setup

ACCEPT, RELEASE, REJECT = 1, 2, 3


def test_records_round_trip_and_partition_choice():
    tid = uuid.UUID("6f5c4b4e-1b5f-4d7e-9b1a-0c2d3e4f5a6b")
    k = SR.key(SR.SNAPSHOT, "g", tid, 3)
    assert SR.decode_key(k) == (SR.SNAPSHOT, "g", tid, 3)
    st = SR.ShareState("g", tid, 3, 1, 0, 5, 10, 100, 200, (StateBatch(10, 12, 0, 2), StateBatch(13, 13, 4, 5)))
    assert SR.decode_snapshot("g", tid, 3, SR.snapshot_value(st)) == st
    # an update replaces what it covers and moves the start
    up = SR.update_value(1, 5, 11, [StateBatch(12, 12, 2, 3)])
    after = SR.apply_update(st, up)
    assert (after.start_offset, after.batches) == (11, (StateBatch(11, 11, 0, 2), StateBatch(12, 12, 2, 3),
                                                        StateBatch(13, 13, 4, 5)))
    # Java's String.hashCode placement (kwire.coordinator.records, tested in tests/groups)
    assert SR.kafka_uuid_string(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert 0 <= SR.state_partition("g", tid, 3, 50) < 50


@pytest.mark.slow
def test_state_survives_restart(tmp_path):
    overrides = {"kwire.emulate.kafka.version": "4.3", "offsets.topic.num.partitions": 1,
                 "share.coordinator.state.topic.num.partitions": 2,
                 "share.coordinator.state.topic.replication.factor": 1}
    with Broker(data_dir=str(tmp_path), overrides=overrides) as b:
        with WireClient(b.bootstrap_servers) as c:
            topic, tid, group = _setup(c, n=5)
            a = str(uuid.uuid4())
            _hb(c, group, a, 0, [topic])
            assert _acquired(_fetch(c, group, a, 0, tid)) == [(0, 4, 1)]
            r = _fetch(c, group, a, 1, tid, acks=[(0, 2, (ACCEPT, REJECT, RELEASE))])
            assert r.responses[0].partitions[0].acknowledge_error_code == 0
            assert _acquired(r) == [(2, 2, 2)]   # the released one, again
            # 2 (delivered twice) and 3, 4 (once) are held when the broker stops
    with Broker(data_dir=str(tmp_path), overrides=overrides) as b:
        sp_table = b.broker.share_partitions.recovered
        assert (group, tid, 0) in sp_table
        with WireClient(b.bootstrap_servers) as c:
            for _ in range(50):   # the coordinator loads its partition
                r = _hb(c, group, a, 1)
                if r.error_code not in (14, 15, 16):   # load in progress / not available / not coordinator
                    break
                time.sleep(0.1)
            # the member, its epoch and assignment came back from __consumer_offsets
            assert (r.error_code, r.member_epoch) == (0, 1)
            d = c.request("ShareGroupDescribe", 1, group_ids=[group], include_authorized_operations=False).groups[0]
            assert [(m.member_id, m.member_epoch, m.subscribed_topic_names) for m in d.members] == [(a, 1, [topic])]
            m = str(uuid.uuid4())
            assert _hb(c, group, m, 0, [topic]).member_epoch == 2
            r = _fetch(c, group, m, 0, tid)
            # the locks did not survive, the delivery counts did; 0 (accepted), 1 (rejected) are done
            assert _acquired(r) == [(2, 2, 3), (3, 4, 2)]
            sp = b.broker.share_partitions.get(group, tid, 0)
            assert sp.start_offset == 2
