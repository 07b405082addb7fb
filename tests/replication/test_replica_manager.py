"""The replica manager alone: a LogManager in a temp dir and a metadata image built from
records, no broker, no sockets. Appends and the high watermark, waiters woken by an append
and by a topic deletion, the leader and leader-epoch checks with Kafka's error codes,
offline partitions."""
from __future__ import annotations

import os
import uuid

import pytest
import trio
import trio.testing

from kwire.metadata.delta import replay
from kwire.codec.records import build_batch
from kwire.errors import ErrorCode, KafkaError
from kwire.log.manager import LogManager
from kwire.log.validator import CLIENT
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.replication import ReplicaManager

NOW = 1_700_000_000_000
ME = 1


class Cluster:
    """A metadata image (as committed records leave it) and this node's replica manager."""

    def __init__(self, data_dir: str):
        self.image = MetadataImage()
        self.logs = LogManager(data_dir)
        self.rm = ReplicaManager(ME, self.logs, lambda: self.image, producer_id_expiration_ms=lambda: 86_400_000)
        self.ids: dict[str, uuid.UUID] = {}

    def topic(self, name: str, leaders: list[int], *, leader_epoch: int = 0, isr=None) -> None:
        tid = self.ids[name] = uuid.uuid4()
        self.image = replay(self.image, [(R.TOPIC, R.TOPIC.cls(name=name, topic_id=tid))])
        for p, leader in enumerate(leaders):
            replicas = [leader] if isr is None else list(isr)
            self.image = replay(self.image, [(R.PARTITION, R.PARTITION.cls(
                partition_id=p, topic_id=tid, replicas=replicas, isr=replicas, leader=leader,
                leader_epoch=leader_epoch, partition_epoch=0))])
            if leader == ME:
                self.rm.apply_partition(name, p)

    def delete(self, name: str) -> None:
        t = self.image.topics[name]
        parts = list(t.partitions)
        self.image = replay(self.image, [(R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=t.topic_id))])
        for p in parts:
            self.logs.delete_partition(name, p)
            self.rm.partition_deleted(name, p)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(str(tmp_path))
    yield c
    c.logs.close()


def batch(n: int = 3) -> bytearray:
    return bytearray(build_batch([(b"k%d" % i, b"v%d" % i, None, NOW + i) for i in range(n)]))


def codes(fn):
    try:
        fn()
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


# ---------------------------------------------------------------------------- append and HW
def test_append_moves_the_high_watermark_to_the_log_end_offset(cluster):
    cluster.topic("t", [ME], leader_epoch=4)
    rm = cluster.rm
    assert rm.high_watermark("t", 0) == 0
    res = rm.append("t", 0, batch(3), NOW, origin=CLIENT).result()
    assert (res.base_offset, res.last_offset) == (0, 2)
    assert rm.high_watermark("t", 0) == 3
    res = rm.append("t", 0, batch(2), NOW, origin=CLIENT).result()
    assert res.base_offset == 3 and rm.high_watermark("t", 0) == 5
    # consumers read up to it, and the batches carry the leader epoch of the image
    read = rm.read("t", 0, 0, 1 << 20)
    assert (read.error, read.high_watermark, read.last_stable_offset, read.log_start_offset) == (0, 5, 5, 0)
    assert read.leader_epoch == 4 and read.size > 0
    data = bytes(read.records)
    assert int.from_bytes(data[12:16], "big") == 4       # partitionLeaderEpoch of the first batch
    assert rm.read("t", 0, 5, 1 << 20).size == 0          # at the high watermark: nothing yet
    assert rm.isr("t", 0) == [ME]


def test_a_refused_append_leaves_the_high_watermark(cluster):
    cluster.topic("t", [ME])
    rm = cluster.rm
    rm.append("t", 0, batch(2), NOW).result()
    bad = batch(2)
    bad[-1] ^= 0xFF   # the CRC no longer matches
    assert codes(lambda: rm.append("t", 0, bad, NOW, origin=CLIENT).result()) == ErrorCode.CORRUPT_MESSAGE
    assert rm.high_watermark("t", 0) == 2


def test_list_offsets_answers_from_the_high_watermark(cluster):
    cluster.topic("t", [ME], leader_epoch=2)
    rm = cluster.rm
    rm.append("t", 0, batch(4), NOW).result()
    assert rm.fetch_offset_for_timestamp("t", 0, -1) == (0, 4, -1, 2)      # latest
    assert rm.fetch_offset_for_timestamp("t", 0, -2) == (0, 0, -1, 2)      # earliest
    assert rm.fetch_offset_for_timestamp("t", 0, -5) == (0, -1, -1, -1)    # latest tiered: none, no epoch (as Kafka)
    assert rm.fetch_offset_for_timestamp("t", 0, NOW + 2) == (0, 2, NOW + 2, 2)
    assert rm.fetch_offset_for_timestamp("t", 0, NOW + 99) == (0, -1, -1, -1)
    assert rm.fetch_offset_for_timestamp("t", 0, -3) == (0, 3, NOW + 3, 2)  # max timestamp
    assert rm.fetch_offset_for_timestamp("t", 0, -7)[0] == ErrorCode.INVALID_REQUEST


def test_delete_records_up_to_the_high_watermark(cluster):
    cluster.topic("t", [ME])
    rm = cluster.rm
    rm.append("t", 0, batch(5), NOW).result()
    assert codes(lambda: rm.plan_delete_records("t", 0, 6)) == ErrorCode.OFFSET_OUT_OF_RANGE
    work = rm.plan_delete_records("t", 0, -1)     # -1: the high watermark
    work.run()
    assert rm.finish_delete_records("t", 0, work) == 5
    assert rm.fetch_offset_for_timestamp("t", 0, -2)[1] == 5


# ---------------------------------------------------------------------------- waiters
def test_a_fetch_waiter_wakes_on_an_append_to_any_of_its_partitions(cluster):
    cluster.topic("t", [ME, ME])
    rm = cluster.rm
    ev = rm.watch([("t", 0), ("t", 1)])
    rm.append("t", 0, batch(1), NOW).result()
    assert ev.is_set()
    assert len(rm.fetch_waiters) == 1            # still under t-1 until the fetch unwatches
    rm.unwatch(ev, [("t", 0), ("t", 1)])
    assert len(rm.fetch_waiters) == 0
    ev2 = rm.watch([("t", 1)])
    rm.unwatch(ev2, [("t", 1)])
    rm.append("t", 1, batch(1), NOW).result()
    assert not ev2.is_set()


def test_wait_for_data_returns_on_an_append_and_on_deletion():
    async def main(tmp):
        c = Cluster(tmp)
        c.topic("t", [ME])
        c.topic("gone", [ME])
        woke = []

        async def waiter(tp):
            await c.rm.wait_for_data([tp], trio.current_time() + 60)
            woke.append((tp, trio.current_time()))

        async with trio.open_nursery() as n:
            n.start_soon(waiter, ("t", 0))
            n.start_soon(waiter, ("gone", 0))
            await trio.testing.wait_all_tasks_blocked()
            assert len(c.rm.fetch_waiters) == 2
            await trio.sleep(1)
            c.rm.append("t", 0, batch(1), NOW).result()
            await trio.sleep(1)
            c.delete("gone")
        assert [tp for tp, _ in woke] == [("t", 0), ("gone", 0)]
        assert [round(t) for _, t in woke] == [1, 2]     # woken by the change, not the deadline
        assert len(c.rm.fetch_waiters) == 0
        c.logs.close()

    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(main, tmp, clock=trio.testing.MockClock(autojump_threshold=0))


def test_wait_for_data_ends_at_its_deadline(tmp_path):
    async def main():
        c = Cluster(str(tmp_path))
        c.topic("t", [ME])
        start = trio.current_time()
        await c.rm.wait_for_data([("t", 0)], start + 0.5)
        assert trio.current_time() - start == pytest.approx(0.5)
        assert len(c.rm.fetch_waiters) == 0
        c.logs.close()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_acks_all_waiters_complete_when_the_high_watermark_passes(cluster):
    cluster.topic("t", [ME])
    rm = cluster.rm
    waiters = rm.high_watermark_waiters
    first = waiters.add(("t", 0), 2)
    second = waiters.add(("t", 0), 4)
    rm.append("t", 0, batch(3), NOW).result()
    assert first.is_set() and not second.is_set()
    assert len(waiters) == 1
    rm.append("t", 0, batch(1), NOW).result()
    assert second.is_set() and len(waiters) == 0
    done = rm.append("t", 0, batch(1), NOW, acks=-1)   # one replica: the high watermark is past at once
    assert done.completed and done.replicated is None and done.code == ErrorCode.NONE
    last = waiters.add(("t", 0), 10)
    cluster.delete("t")
    assert last.is_set() and len(rm.high_watermark_waiters) == 0


# ---------------------------------------------------------------------------- leader checks
def test_leader_checks_answer_kafkas_codes(cluster):
    cluster.topic("mine", [ME], leader_epoch=3)
    cluster.topic("theirs", [2])
    rm = cluster.rm
    E = ErrorCode
    assert rm.leader_error("mine", 0) == E.NONE
    assert rm.leader_error("mine", 1) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert rm.leader_error("nope", 0) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert rm.leader_error("theirs", 0) == E.NOT_LEADER_OR_FOLLOWER
    assert codes(lambda: rm.append("theirs", 0, batch(), NOW).result()) == E.NOT_LEADER_OR_FOLLOWER
    assert codes(lambda: rm.append("nope", 0, batch(), NOW).result()) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert rm.read("theirs", 0, 0, 100).error == E.NOT_LEADER_OR_FOLLOWER
    assert rm.fetch_offset_for_timestamp("theirs", 0, -1)[0] == E.NOT_LEADER_OR_FOLLOWER
    assert codes(lambda: rm.plan_delete_records("theirs", 0, 0)) == E.NOT_LEADER_OR_FOLLOWER
    # a request's current leader epoch: -1 is not checked; ours passes; newer / older are refused
    assert rm.leader_error("mine", 0, -1) == E.NONE
    assert rm.leader_error("mine", 0, 3) == E.NONE
    assert rm.leader_error("mine", 0, 4) == E.UNKNOWN_LEADER_EPOCH
    assert rm.leader_error("mine", 0, 2) == E.FENCED_LEADER_EPOCH
    r = rm.read("mine", 0, 0, 100, current_leader_epoch=2)
    assert (r.error, r.high_watermark, r.records) == (E.FENCED_LEADER_EPOCH, -1, b"")
    assert rm.read("mine", 0, 0, 100, current_leader_epoch=7).error == E.UNKNOWN_LEADER_EPOCH
    assert rm.fetch_offset_for_timestamp("mine", 0, -1, current_leader_epoch=2) == (E.FENCED_LEADER_EPOCH, -1, -1, -1)
    assert rm.fetch_offset_for_timestamp("mine", 0, -1, current_leader_epoch=3)[0] == E.NONE
    assert rm.read("mine", 0, 1, 100).error == E.OFFSET_OUT_OF_RANGE     # past the log end offset


def test_a_leader_change_in_the_image_moves_the_checks(cluster):
    cluster.topic("t", [ME])
    rm = cluster.rm
    rm.append("t", 0, batch(1), NOW).result()
    tid = cluster.ids["t"]
    cluster.image = replay(cluster.image, [(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=tid, leader=2))])
    assert rm.leader_error("t", 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER   # before the broker applies it too
    rm.apply_partition("t", 0)
    assert rm.leader_epoch("t", 0) == 1
    assert rm.leader_error("t", 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert rm.read("t", 0, 0, 100).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    cluster.image = replay(cluster.image, [(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=tid, leader=ME))])
    assert rm.leader_error("t", 0, 2) == ErrorCode.NOT_LEADER_OR_FOLLOWER   # not taken up yet
    rm.apply_partition("t", 0)
    assert rm.leader_error("t", 0, 2) == ErrorCode.NONE
    assert rm.leader_error("t", 0, 1) == ErrorCode.FENCED_LEADER_EPOCH
    assert rm.append("t", 0, batch(1), NOW).result().base_offset == 1


# ---------------------------------------------------------------------------- offline
def test_a_partition_whose_log_cannot_be_opened_is_offline(cluster, tmp_path):
    # a plain file where the partition's directory must go: its log cannot be created
    open(os.path.join(str(tmp_path), "blocked-0"), "w").close()
    cluster.topic("blocked", [ME])
    rm = cluster.rm
    assert ("blocked", 0) in rm.offline_partitions
    assert rm.leader_error("blocked", 0) == ErrorCode.KAFKA_STORAGE_ERROR
    assert codes(lambda: rm.append("blocked", 0, batch(), NOW).result()) == ErrorCode.KAFKA_STORAGE_ERROR
    assert rm.read("blocked", 0, 0, 100).error == ErrorCode.KAFKA_STORAGE_ERROR
    assert rm.fetch_offset_for_timestamp("blocked", 0, -1)[0] == ErrorCode.KAFKA_STORAGE_ERROR
    assert rm.high_watermark("blocked", 0) == -1
    cluster.delete("blocked")
    assert not rm.offline_partitions
    assert rm.leader_error("blocked", 0) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_failed_log_dir_takes_its_partitions_offline(cluster):
    cluster.topic("t", [ME])
    rm = cluster.rm
    rm.append("t", 0, batch(2), NOW).result()
    cluster.logs.failure_channel.maybe_add_offline_log_dir(
        os.path.abspath(cluster.logs.data_dir), "test", OSError(5, "Input/output error"))
    assert rm.leader_error("t", 0) == ErrorCode.KAFKA_STORAGE_ERROR
    assert rm.read("t", 0, 0, 100).error == ErrorCode.KAFKA_STORAGE_ERROR
    assert rm.fetch_offset_for_timestamp("t", 0, -1)[0] == ErrorCode.KAFKA_STORAGE_ERROR
    assert codes(lambda: rm.append("t", 0, batch(), NOW).result()) == ErrorCode.KAFKA_STORAGE_ERROR
    assert rm.high_watermark("t", 0) == 2


def test_describe_log_dirs(cluster, tmp_path):
    """DescribeLogDirs' view: every local log (sorted), or those named; sizes are the
    segment files' sizes; an offline dir says so."""
    rm = cluster.rm
    cluster.topic("b", [ME, ME])
    cluster.topic("a", [ME, 2])          # partition 1 is led elsewhere: no log here
    rm.append("b", 1, batch(5), NOW, origin=CLIENT).result()
    rm.append("a", 0, batch(2), NOW, origin=CLIENT).result()
    [(log_dir, offline, rows)] = rm.describe_log_dirs()
    assert log_dir == os.path.abspath(str(tmp_path)) and offline is False
    assert [r[:2] for r in rows] == [("a", 0), ("b", 0), ("b", 1)]

    def on_disk(t, p):
        d = os.path.join(str(tmp_path), f"{t}-{p}")
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))
    for t, p, size, lag, future in rows:
        assert size == on_disk(t, p) and lag == 0 and future is False
    assert rows[1][2] == 0 and rows[2][2] > rows[0][2] > 0
    assert [r[:2] for r in rm.describe_log_dirs({("b", 1), ("a", 1), ("zz", 0)})[0][2]] == [("b", 1)]
    assert rm.describe_log_dirs(set())[0][2] == []
    cluster.logs.failure_channel.maybe_add_offline_log_dir(log_dir, "test", OSError(5, "EIO"))
    assert rm.describe_log_dirs()[0][1] is True
