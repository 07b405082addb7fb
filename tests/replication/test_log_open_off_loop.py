"""Nothing heavy on the Trio loop (issue 31): a log a metadata delta makes this node open (a
partition created elsewhere, a directory found again) is opened and recovered in a worker
thread (ReplicaPublisher -> ReplicaManager.begin_open / finish_open), one open per partition
at a time, and the coordinators' loads of that partition wait for it (the ordering is
explicit: CoordinatorRuntime._load awaits ReplicaManager.wait_log_open). Deterministic: the
open is held in its thread by a gate, and the test looks at the state while it is held."""
from __future__ import annotations

import os
import threading
import uuid
from types import SimpleNamespace as NS

import pytest
import trio
import trio.testing

from kwire.broker_metadata import ReplicaPublisher
from kwire.codec.records import build_batch
from kwire.coordinator.runtime import ACTIVE, CoordinatorRuntime
from kwire.errors import ErrorCode, KafkaError
from kwire.log.manager import LogManager, partition_dir_name
from kwire.log.partition_log import PartitionLog
from kwire.metadata import records as R
from kwire.metadata.delta import MetadataDelta
from kwire.metadata.image import MetadataImage
from kwire.replication import ReplicaManager

from tests.coordinator.test_coordinator_runtime import FakeShard, read_at_once

ME, OTHER = 1, 2
NOW = 1_700_000_000_000


class Node:
    """This node's replica manager over a real LogManager, its replica publisher, and the
    metadata image the test commits to."""

    def __init__(self, data_dir: str, nursery):
        self.node_id = ME
        self.image = MetadataImage()
        self.logs = LogManager(data_dir)
        self.replica_manager = ReplicaManager(ME, self.logs, lambda: self.image,
                                              producer_id_expiration_ms=lambda: 86_400_000)
        self.fetching: set = set()
        self.replica_fetchers = NS(remove=self.fetching.discard, update=lambda part: self.fetching.add(
            (part.topic, part.index)))
        self._nursery = nursery
        self.publisher = ReplicaPublisher(self)
        self.publisher.live = True
        self.ids: dict[str, uuid.UUID] = {}

    def commit(self, recs) -> None:
        """A committed batch: the new image, then the publisher (as Broker._publish)."""
        delta = MetadataDelta(self.image).replay_all(recs)
        self.image = delta.apply()
        self.publisher.on_metadata_update(delta, self.image)

    def create(self, name: str, leader: int, *, epoch: int = 0) -> None:
        tid = self.ids[name] = uuid.uuid4()
        self.commit([(R.TOPIC, R.TOPIC.cls(name=name, topic_id=tid)),
                     (R.PARTITION, R.PARTITION.cls(partition_id=0, topic_id=tid, replicas=[ME, OTHER],
                                                   isr=[ME, OTHER], leader=leader, leader_epoch=epoch,
                                                   partition_epoch=0))])

    def change(self, name: str, **kw) -> None:
        self.commit([(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=0, topic_id=self.ids[name], **kw))])

    def delete(self, name: str) -> None:
        self.commit([(R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=self.ids[name]))])


class Gate:
    """Holds LogManager.open_planned in its worker thread until ``release``; records the
    threads the opens ran in."""

    def __init__(self, monkeypatch):
        self.release_event = threading.Event()
        self.threads: list[int] = []
        self.entered = threading.Semaphore(0)
        orig = LogManager.open_planned

        def held(logs, plan):
            self.threads.append(threading.get_ident())
            self.entered.release()
            assert self.release_event.wait(10), "the test never released the open"
            return orig(logs, plan)
        monkeypatch.setattr(LogManager, "open_planned", held)

    def release(self) -> None:
        self.release_event.set()


async def in_thread(gate: Gate, n: int = 1) -> None:
    """Until ``n`` opens are held in their threads (the gate's semaphore, read off the loop)."""
    for _ in range(n):
        assert await trio.to_thread.run_sync(gate.entered.acquire, True, 10)


def leader_error(rm, topic: str) -> ErrorCode:
    try:
        rm.leader_log(topic, 0)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


def test_a_new_partitions_log_opens_in_a_worker_thread_then_takes_up_its_role(tmp_path, monkeypatch):
    gate = Gate(monkeypatch)

    async def main():
        loop = threading.get_ident()
        async with trio.open_nursery() as n:
            node = Node(str(tmp_path), n)
            rm = node.replica_manager
            node.create("t", ME, epoch=3)
            await in_thread(gate)
            assert rm.log_opening("t", 0) and node.logs.get("t", 0) is None
            # the image says it is led here; not taken up yet: retriable, not UNKNOWN_TOPIC
            assert leader_error(rm, "t") == ErrorCode.NOT_LEADER_OR_FOLLOWER
            # deltas naming it meanwhile start no second open: the open's end applies the
            # image as it is then (led here again, two leader epochs later)
            node.change("t", leader=OTHER)
            node.change("t", leader=ME)
            assert rm.log_opening("t", 0)
            assert node.image.topics["t"].partitions[0].leader_epoch == 5
            gate.release()
            await rm.wait_log_open("t", 0)
            assert gate.threads and loop not in gate.threads and len(gate.threads) == 1
            assert not rm.log_opening("t", 0)
            assert leader_error(rm, "t") == ErrorCode.NONE
            assert rm.partitions[("t", 0)].leader_epoch == 5 and node.fetching == set()
            res = rm.append("t", 0, bytearray(build_batch([(b"k", b"v", None, NOW)])), NOW, acks=1)
            assert res.error is None and res.base_offset == 0
            n.cancel_scope.cancel()
        node.logs.close()

    trio.run(main)


def test_a_follower_starts_fetching_only_once_its_log_is_open(tmp_path, monkeypatch):
    gate = Gate(monkeypatch)

    async def main():
        async with trio.open_nursery() as n:
            node = Node(str(tmp_path), n)
            node.create("f", OTHER)
            await in_thread(gate)
            assert node.fetching == set()
            gate.release()
            await node.publisher.wait_opens("f")
            assert node.fetching == {("f", 0)}
            assert not node.replica_manager.partitions[("f", 0)].is_leader
            n.cancel_scope.cancel()
        node.logs.close()

    trio.run(main)


def test_a_topic_deleted_while_its_log_opens_leaves_no_log_behind(tmp_path, monkeypatch):
    gate = Gate(monkeypatch)

    async def main():
        async with trio.open_nursery() as n:
            node = Node(str(tmp_path), n)
            rm = node.replica_manager
            node.create("d", ME)
            await in_thread(gate)
            node.delete("d")
            gate.release()
            await rm.wait_log_open("d", 0)
            await trio.testing.wait_all_tasks_blocked()
            assert node.logs.get("d", 0) is None and ("d", 0) not in rm.partitions
            assert not any(e.name.startswith("d-0") for e in os.scandir(tmp_path))
            # a topic of the same name made again opens its own, fresh log
            node.create("d", ME)
            await in_thread(gate)
            await rm.wait_log_open("d", 0)
            assert node.logs.get("d", 0) is not None and leader_error(rm, "d") == ErrorCode.NONE
            n.cancel_scope.cancel()
        node.logs.close()

    trio.run(main)


def test_a_failed_open_marks_the_partition_offline_and_the_next_delta_tries_again(tmp_path, monkeypatch):
    fail = [True]
    orig = LogManager.open_planned

    def open_planned(logs, plan):
        if fail[0]:
            raise OSError(13, "Permission denied")
        return orig(logs, plan)
    monkeypatch.setattr(LogManager, "open_planned", open_planned)

    async def main():
        async with trio.open_nursery() as n:
            node = Node(str(tmp_path), n)
            rm = node.replica_manager
            node.create("o", ME)
            await node.publisher.wait_opens()
            await trio.testing.wait_all_tasks_blocked()
            assert rm.log_offline("o", 0) and leader_error(rm, "o") == ErrorCode.KAFKA_STORAGE_ERROR
            fail[0] = False
            node.change("o", isr=[ME])
            await node.publisher.wait_opens()
            assert not rm.log_offline("o", 0) and leader_error(rm, "o") == ErrorCode.NONE
            n.cancel_scope.cancel()
        node.logs.close()

    trio.run(main)


@pytest.mark.parametrize("unload_while_opening", [False, True])
def test_a_coordinator_load_waits_for_the_log_it_reads_to_open(tmp_path, monkeypatch, unload_while_opening):
    """The partition's directory holds records (found again: the open recovers them); the
    coordinator publisher schedules the load while the log is opening. Before the ordering
    was explicit, such a load found no log and failed the partition (NOT_COORDINATOR)."""
    topic = "__test_state"
    d = tmp_path / partition_dir_name(topic, 0)
    plog = PartitionLog.open(str(d), topic=topic, partition=0, now_ms=NOW)
    for k in (b"a", b"b", b"c"):
        plog.append(bytearray(build_batch([(k, b"v", None, NOW)])), now_ms=NOW)
    plog.close()
    gate = Gate(monkeypatch)

    async def main():
        async with trio.open_nursery() as n:
            node = Node(str(tmp_path), n)
            node.logs.logs.pop((topic, 0)).close()   # not open at start: found again below
            node.config = NS(get={"load.buffer": 1 << 20, "write.timeout": 5000}.__getitem__)
            node.clock = NS(now_ms=lambda: NOW, monotonic_ms=lambda: 0)
            rt = CoordinatorRuntime(node, topic, name="tests", load_buffer_key="load.buffer",
                                    write_timeout_key="write.timeout")
            rt.shard = FakeShard()
            rt._read = read_at_once
            node.create(topic, ME, epoch=2)
            await in_thread(gate)
            assert rt.schedule_load(0, 2)   # what CoordinatorPublisher does after ReplicaPublisher
            await trio.testing.wait_all_tasks_blocked()
            assert rt.error(0) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            if unload_while_opening:
                assert rt.schedule_unload(0)
            gate.release()
            await node.replica_manager.wait_log_open(topic, 0)
            await trio.testing.wait_all_tasks_blocked()
            if unload_while_opening:
                assert 0 not in rt.contexts
                assert rt.shard.events == [("begin", 0, 2), ("unload", 0)]
            else:
                assert rt.contexts[0].state == ACTIVE and rt.error(0) is None
                assert rt.shard.events == [("begin", 0, 2), ("complete", 0, 2, (b"a", b"b", b"c"))]
            n.cancel_scope.cancel()
        node.logs.close()

    trio.run(main)

