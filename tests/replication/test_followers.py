"""Replication between replica managers, without sockets: three brokers' replica managers
over one metadata image, the followers' fetches handed to the leader's ``read_for_follower``
and its answers applied with kwire.replication.follower, as the Trio fetcher does.

High watermark = the smallest log end offset in the ISR; acks=all waiters and
min.insync.replicas; ISR expansion asked for once a follower catches up, shrink after
replica.lag.time.max.ms; a new leader in a new epoch; a follower with records the new
leader lacks truncates to the divergence point; one that fell behind the leader's log start
starts over there.
"""
from __future__ import annotations

import uuid

import pytest

from kwire.metadata.delta import replay
from kwire.codec.records import build_batch, iter_batches
from kwire.errors import ErrorCode, KafkaError
from kwire.log.config import LogConfig
from kwire.log.manager import LogManager
from kwire.log.validator import CLIENT, REPLICATION
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.replication import ReplicaManager
from kwire.replication import follower as F

NOW = 1_700_000_000_000
T = "t"


class Nodes:
    def __init__(self, tmp_path, n: int = 3, *, min_isr: int = 1):
        self.image = MetadataImage()
        self.now = NOW
        self.logs = {}
        self.rms = {}
        self.isr_requests: list[tuple[int, list[int]]] = []
        for i in range(1, n + 1):
            self.logs[i] = LogManager(str(tmp_path / f"n{i}"), LogConfig(min_insync_replicas=min_isr))
            rm = self.rms[i] = ReplicaManager(i, self.logs[i], lambda: self.image,
                                              producer_id_expiration_ms=lambda: 86_400_000, now_ms=lambda: self.now)
            rm.on_isr_change = lambda part, isr, i=i: self.isr_requests.append((i, isr))
        for i in range(1, n + 1):   # registered, unfenced: may join ISRs
            self.image = replay(self.image, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
                broker_id=i, incarnation_id=uuid.uuid4(), broker_epoch=1, end_points=[], rack=None, fenced=False))])
        self.tid = uuid.uuid4()
        self.image = replay(self.image, [(R.TOPIC, R.TOPIC.cls(name=T, topic_id=self.tid))])

    def partition(self, replicas, isr=None, leader=None, epoch=0, pepoch=0) -> None:
        isr = list(replicas) if isr is None else isr
        leader = replicas[0] if leader is None else leader
        self.image = replay(self.image, [(R.PARTITION, R.PARTITION.cls(
            partition_id=0, topic_id=self.tid, replicas=list(replicas), isr=isr, leader=leader,
            leader_epoch=epoch, partition_epoch=pepoch))])
        for rm in self.rms.values():
            rm.apply_partition(T, 0)

    def change(self, *, leader=-2, isr=None) -> None:
        self.image = replay(self.image, [(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=self.tid,
                                                                     leader=leader, isr=isr))])
        for rm in self.rms.values():
            rm.apply_partition(T, 0)

    def produce(self, node: int, *values: bytes, acks: int = 1):
        batch = build_batch([(None, v, [], self.now) for v in values])
        return self.rms[node].append(T, 0, bytearray(batch), self.now, origin=CLIENT, acks=acks).result()

    def fetch(self, follower: int, leader: int, max_bytes: int = 1 << 20) -> None:
        """One replica fetch round trip from ``follower`` to ``leader``."""
        part = self.rms[follower].partitions[(T, 0)]
        pos = F.fetch_position(part)
        res = self.rms[leader].read_for_follower(T, 0, follower, pos.fetch_offset, pos.last_fetched_epoch, max_bytes,
                                                 current_leader_epoch=pos.current_leader_epoch)
        if res.error == ErrorCode.OFFSET_OUT_OF_RANGE:
            F.out_of_range(part, res.log_start_offset, res.high_watermark)
        elif res.error:
            raise KafkaError("fetch refused", res.error)
        elif res.diverging_epoch >= 0 or res.diverging_end_offset >= 0:
            F.truncate(part, F.truncation_offset(part, res.diverging_epoch, res.diverging_end_offset), "test")
        else:
            F.append_as_follower(self.rms[follower], part, bytes(res.records) if res.size else b"",
                                 res.high_watermark, res.log_start_offset, self.now)

    def plog(self, node: int):
        return self.logs[node].get(T, 0)

    def values(self, node: int) -> list[bytes]:
        plog = self.plog(node)
        data = bytes(plog.read(plog.log_start_offset, 1 << 30, max_offset=plog.log_end_offset))
        return [bytes(r.value) for b in iter_batches(data) for r in b.records()]

    def close(self):
        for lm in self.logs.values():
            lm.close()


@pytest.fixture
def nodes(tmp_path):
    n = Nodes(tmp_path)
    yield n
    n.close()


def test_high_watermark_is_the_smallest_log_end_offset_in_the_isr(nodes):
    nodes.partition([1, 2, 3])
    nodes.produce(1, b"a", b"b")
    lead = nodes.plog(1)
    assert (lead.log_end_offset, lead.high_watermark) == (2, 0)   # followers have not fetched
    nodes.fetch(2, 1)
    nodes.fetch(2, 1)            # the second fetch says 2 has both records
    assert lead.high_watermark == 0   # 3 has not fetched in this epoch
    nodes.fetch(3, 1)
    assert lead.high_watermark == 0   # 3's fetch from 0 says nothing of what it got
    nodes.fetch(3, 1)
    assert lead.high_watermark == 2
    assert nodes.values(2) == nodes.values(3) == [b"a", b"b"]
    # a follower learns the high watermark on its next fetch
    nodes.fetch(2, 1)
    assert nodes.plog(2).high_watermark == 2


def test_followers_keep_the_leaders_offsets_and_epochs(nodes):
    nodes.partition([1, 2], epoch=3)
    for i in range(5):
        nodes.produce(1, b"x%d" % i)
    nodes.fetch(2, 1, max_bytes=1)   # one batch at a time (the first always whole)
    nodes.fetch(2, 1, max_bytes=1)
    assert nodes.plog(2).log_end_offset == 2
    nodes.fetch(2, 1)
    assert nodes.plog(2).log_end_offset == 5
    assert nodes.plog(2).leader_epoch_cache.entries() == nodes.plog(1).leader_epoch_cache.entries() == [(3, 0)]
    assert nodes.values(2) == [b"x%d" % i for i in range(5)]


def test_acks_all_waits_for_the_isr_and_min_insync_replicas(tmp_path):
    n = Nodes(tmp_path, min_isr=2)
    try:
        n.partition([1, 2, 3], isr=[1])
        with pytest.raises(KafkaError) as ei:
            n.produce(1, b"a", acks=-1)
        assert ei.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert n.plog(1).log_end_offset == 0          # nothing written
        n.produce(1, b"a", acks=1)                    # acks=1 does not care
        n.change(isr=[1, 2])
        res = n.produce(1, b"b", acks=-1)
        ev = res.replicated
        assert not res.completed and ev is not None and not ev.is_set()
        n.fetch(2, 1)
        n.fetch(2, 1)
        assert ev.is_set()
        assert res.complete() == ErrorCode.NONE
        # the ISR shrinks below min.insync.replicas after the append: written, not enough copies
        res = n.produce(1, b"c", acks=-1)
        n.change(isr=[1])
        assert res.replicated.is_set()
        assert res.complete() == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    finally:
        n.close()


def test_leadership_moving_completes_acks_all_waiters_with_not_leader(nodes):
    nodes.partition([1, 2, 3])
    res = nodes.produce(1, b"a", acks=-1)
    nodes.change(leader=2, isr=[2, 3])
    assert res.replicated.is_set()
    assert res.complete() == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(KafkaError) as ei:
        nodes.produce(1, b"b")
    assert ei.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_isr_expands_once_a_follower_catches_up_and_shrinks_after_the_lag(nodes):
    nodes.partition([1, 2, 3], isr=[1, 2])
    for i in range(3):
        nodes.produce(1, b"v%d" % i)
    # a fenced broker may not join (the controller would answer INELIGIBLE_REPLICA)
    nodes.image = replay(nodes.image, [(R.FENCE_BROKER, R.FENCE_BROKER.cls(id=3, epoch=1))])
    nodes.fetch(3, 1)
    nodes.fetch(3, 1)
    assert nodes.isr_requests == []
    nodes.image = replay(nodes.image, [(R.UNFENCE_BROKER, R.UNFENCE_BROKER.cls(id=3, epoch=1))])
    nodes.fetch(3, 1)     # eligible again and caught up: it may join
    assert nodes.isr_requests == [(1, [1, 2, 3])]
    nodes.isr_requests.clear()
    nodes.rms[1].partitions[(T, 0)].pending_isr = None
    # a replica that starts over from 0 is not caught up at first
    nodes.plog(3).truncate_to(0)
    nodes.fetch(2, 1)
    nodes.fetch(2, 1)
    assert nodes.plog(1).high_watermark == 3
    assert nodes.isr_requests == []
    nodes.fetch(3, 1)     # 3 fetched from 0: not caught up to the high watermark yet
    assert nodes.isr_requests == []
    nodes.fetch(3, 1)     # now at 3 = the high watermark: it may join
    assert nodes.isr_requests == [(1, [1, 2, 3])]
    nodes.isr_requests.clear()
    rm = nodes.rms[1]
    part = rm.partitions[(T, 0)]
    part.pending_isr = None
    nodes.change(isr=[1, 2, 3])
    # 3 stops fetching; more records; after replica.lag.time.max.ms it is out of sync
    nodes.produce(1, b"late")
    nodes.fetch(2, 1)
    nodes.now += 10_000
    assert rm.isr_shrinks(30_000) == []
    nodes.now += 25_000
    nodes.fetch(2, 1)     # 2 keeps up
    assert [(p.index, isr) for p, isr in rm.isr_shrinks(30_000)] == [(0, [1, 2])]


def test_the_isr_a_leader_asks_for_is_in_ascending_order(nodes):
    """Kafka's Partition.prepareIsrExpand / prepareIsrShrink build the ISR as a Scala HashSet of
    ints (ascending for broker ids this small); after a reassignment the controller keeps that
    order, and kafka-topics --describe shows it (tests/ecosystem/test_kafka_tools_three.py)."""
    nodes.partition([3, 1, 2], isr=[3, 2], leader=3)
    nodes.produce(3, b"v")
    nodes.fetch(1, 3)     # at the high watermark (0: 2 has not fetched yet), so in sync
    assert nodes.isr_requests == [(3, [1, 2, 3])]
    rm = nodes.rms[3]
    rm.partitions[(T, 0)].pending_isr = None
    nodes.change(isr=[3, 2, 1])
    nodes.produce(3, b"late")
    nodes.fetch(1, 3)
    nodes.now += 35_000
    nodes.fetch(1, 3)     # 1 keeps up, 2 is out of sync
    assert [isr for _, isr in rm.isr_shrinks(30_000)] == [[1, 3]]


def test_a_new_leader_and_a_diverged_follower_truncate_to_where_the_logs_agree(nodes):
    nodes.partition([1, 2, 3])
    nodes.produce(1, b"a", b"b")
    for f in (2, 3):
        nodes.fetch(f, 1)
        nodes.fetch(f, 1)
    # 1 writes more that nobody fetches, then loses leadership to 2 (epoch 1)
    nodes.produce(1, b"lost1")
    nodes.produce(1, b"lost2")
    assert nodes.plog(1).log_end_offset == 4
    nodes.change(leader=2, isr=[2, 3])
    nodes.produce(2, b"c")
    nodes.fetch(3, 2)
    # 1 follows 2 now: its epoch-0 tail beyond 2 is not on the leader: truncated, then refilled
    nodes.fetch(1, 2)
    assert nodes.plog(1).log_end_offset == 2
    nodes.fetch(1, 2)
    nodes.fetch(3, 2)
    nodes.fetch(1, 2)
    assert nodes.values(1) == nodes.values(2) == nodes.values(3) == [b"a", b"b", b"c"]
    assert nodes.plog(1).leader_epoch_cache.entries() == nodes.plog(2).leader_epoch_cache.entries() == [(0, 0), (1, 2)]
    assert nodes.plog(2).high_watermark == 3


def test_a_follower_behind_the_leaders_log_start_starts_over_there(nodes):
    nodes.partition([1, 2], isr=[1])
    for i in range(10):
        nodes.produce(1, b"v%d" % i)
    lead = nodes.plog(1)
    lead.update_high_watermark(10)    # the ISR is the leader alone
    lead.delete_records(6)
    nodes.fetch(2, 1)                 # from 0: out of range, below the leader's log start
    f = nodes.plog(2)
    assert (f.log_start_offset, f.log_end_offset) == (6, 6)
    nodes.fetch(2, 1)
    assert nodes.values(2) == [b"v%d" % i for i in range(6, 10)]


def test_only_replicas_fetch_and_stale_epochs_are_fenced(nodes):
    nodes.partition([1, 2])
    rm = nodes.rms[1]
    assert rm.read_for_follower(T, 0, 3, 0, -1, 100).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert rm.read_for_follower(T, 0, 2, 0, -1, 100, current_leader_epoch=5).error == ErrorCode.UNKNOWN_LEADER_EPOCH
    nodes.change(leader=1)     # a new epoch (1)
    assert rm.read_for_follower(T, 0, 2, 0, -1, 100, current_leader_epoch=0).error == ErrorCode.FENCED_LEADER_EPOCH
    assert nodes.rms[2].read_for_follower(T, 0, 1, 0, -1, 100).error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_new_leader_answers_offset_not_available_until_its_high_watermark_reaches_its_epoch(nodes):
    nodes.partition([1, 2, 3])
    nodes.produce(1, b"a", b"b")
    nodes.fetch(2, 1)          # 2 has both records, but its high watermark is still 0
    nodes.change(leader=2, isr=[2, 3])
    rm = nodes.rms[2]
    assert rm.fetch_offset_for_timestamp(T, 0, -1)[0] == ErrorCode.OFFSET_NOT_AVAILABLE
    nodes.fetch(3, 2)
    nodes.fetch(3, 2)          # 3 caught up with the new leader: the high watermark reaches 2
    assert rm.fetch_offset_for_timestamp(T, 0, -1)[:2] == (0, 2)


def test_a_follower_ahead_of_its_leader_in_an_epoch_the_leader_never_saw_comes_back_in_range(nodes):
    """A follower whose log runs past its leader's end with a later epoch than any the leader
    knows (a leader elected without that tail): the leader cannot name a divergence, answers
    OFFSET_OUT_OF_RANGE, and the follower goes back to the leader's high watermark."""
    nodes.partition([1, 2], epoch=0)
    nodes.produce(1, b"a", b"b")
    nodes.fetch(2, 1)
    nodes.fetch(2, 1)
    nodes.fetch(2, 1)   # 2 knows the high watermark, 2
    # 2 appends in epoch 3 as if it had led meanwhile (records 1 never got)
    f = nodes.plog(2)
    extra = bytearray(build_batch([(None, b"ghost", [], NOW)]))
    extra[0:8] = (2).to_bytes(8, "big")
    extra[12:16] = (3).to_bytes(4, "big")
    f.append(bytes(extra), now_ms=NOW, origin=REPLICATION)
    assert f.log_end_offset == 3 and f.latest_epoch == 3
    nodes.fetch(2, 1)           # out of range: back to the leader's high watermark
    assert f.log_end_offset == 2
    nodes.produce(1, b"c")
    nodes.fetch(2, 1)
    assert nodes.values(2) == nodes.values(1) == [b"a", b"b", b"c"]
