"""The replica manager's leader checks as clients see them: Fetch (v9+) and ListOffsets (v4+)
carry current_leader_epoch; -1 and the partition's epoch are served, an older one is
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (Kafka's Partition.checkCurrentLeaderEpoch).
A Fetch long poll is answered as soon as a produce moves the high watermark."""
from __future__ import annotations

import threading
import time

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


def _fetch(c: WireClient, topic: str, epoch: int, *, offset: int = 0, max_wait_ms: int = 0):
    R = api("Fetch").request
    FT, FP = R.struct("FetchTopic"), R.struct("FetchPartition")
    ft = FT(topic=topic, partitions=[FP(partition=0, current_leader_epoch=epoch, fetch_offset=offset,
                                        partition_max_bytes=1 << 20)])
    resp = c.request("Fetch", 12, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                     isolation_level=0, session_id=0, session_epoch=-1, topics=[ft], forgotten_topics_data=[],
                     rack_id="")
    return resp.responses[0].partitions[0]


def _list_offsets(c: WireClient, topic: str, epoch: int, timestamp: int = -1):
    R = api("ListOffsets").request
    LT, LP = R.struct("ListOffsetsTopic"), R.struct("ListOffsetsPartition")
    resp = c.request("ListOffsets", 7, replica_id=-1, isolation_level=0, topics=[
        LT(name=topic, partitions=[LP(partition_index=0, current_leader_epoch=epoch, timestamp=timestamp)])])
    return resp.topics[0].partitions[0]


def test_current_leader_epoch_in_fetch_and_list_offsets():
    with Broker() as b, WireClient(b.bootstrap_servers) as c:
        c.create_topic("epochs")
        c.produce("epochs", [b"a", b"b"])
        meta = c.request("Metadata", 9, topics=[api("Metadata").request.struct("MetadataRequestTopic")(name="epochs")],
                         allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        epoch = meta.topics[0].partitions[0].leader_epoch
        assert epoch >= 0

        for e in (-1, epoch):
            p = _fetch(c, "epochs", e)
            assert (p.error_code, p.high_watermark) == (0, 2)
            # as Kafka: the leader hint (KIP-951) comes only with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH
            assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (-1, -1)
            r = _list_offsets(c, "epochs", e)
            assert (r.error_code, r.offset, r.leader_epoch) == (0, 2, epoch)
        p = _fetch(c, "epochs", epoch + 1)
        assert (p.error_code, p.high_watermark) == (ErrorCode.UNKNOWN_LEADER_EPOCH, -1)
        assert _list_offsets(c, "epochs", epoch + 1).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        if epoch > 0:
            assert _fetch(c, "epochs", epoch - 1).error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert _list_offsets(c, "epochs", -1, timestamp=-2).offset == 0
        p = _fetch(c, "epochs", -1, offset=100)   # as Kafka: an error partition tells no offsets
        assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset) == \
            (ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1)
        assert _fetch(c, "nope", -1).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_long_poll_is_answered_when_a_produce_moves_the_high_watermark():
    with Broker() as b, WireClient(b.bootstrap_servers) as c, WireClient(b.bootstrap_servers) as producer:
        c.create_topic("poll")
        timer = threading.Timer(0.5, lambda: producer.produce("poll", [b"x"]))
        start = time.monotonic()
        timer.start()
        try:
            p = _fetch(c, "poll", -1, max_wait_ms=20_000)
        finally:
            timer.join()
        took = time.monotonic() - start
        assert (p.error_code, p.high_watermark) == (0, 1) and len(p.records) > 0
        assert took < 10     # woken by the append, long before max_wait_ms


def test_an_incremental_fetch_session_keeps_its_epochs_when_partitions_are_resent():
    """The session's epoch advances by one per request, whatever leader epochs the partitions
    carry (the session keeps each partition's current_leader_epoch for the requests that
    leave it out)."""
    R = api("Fetch").request
    FT, FP = R.struct("FetchTopic"), R.struct("FetchPartition")

    def fetch(c, session_id, epoch, parts):
        topics = [FT(topic="sess", partitions=[FP(partition=0, current_leader_epoch=e, fetch_offset=o,
                                                  partition_max_bytes=1 << 20) for o, e in parts])] if parts else []
        return c.request("Fetch", 12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                         isolation_level=0, session_id=session_id, session_epoch=epoch, topics=topics,
                         forgotten_topics_data=[], rack_id="")

    with Broker() as b, WireClient(b.bootstrap_servers) as c:
        c.create_topic("sess")
        c.produce("sess", [b"a", b"b"])
        first = fetch(c, 0, 0, [(0, -1)])
        assert first.error_code == 0 and first.session_id
        sid = first.session_id
        r = fetch(c, sid, 1, [(2, 0)])       # re-sent with a new position and leader epoch 0
        assert r.error_code == 0
        r = fetch(c, sid, 2, [])             # nothing changed: an empty incremental answer
        assert (r.error_code, r.responses) == (0, [])
        c.produce("sess", [b"c"])
        r = fetch(c, sid, 3, [])
        assert r.error_code == 0
        p = r.responses[0].partitions[0]
        assert (p.error_code, p.high_watermark) == (0, 3)
        r = fetch(c, sid, 4, [(3, 7)])       # a leader epoch newer than the partition's
        assert r.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert fetch(c, sid, 4, []).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
