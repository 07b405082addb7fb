"""GroupEdge follows leadership of __consumer_offsets on an in-process broker: a fake leader
change (a PartitionChangeRecord committed through the broker's own quorum) unloads a
partition's groups and, once leadership comes back, reloads them from the local log,
including what another leader wrote and replicated meanwhile; COORDINATOR_LOAD_IN_PROGRESS
while loading; the writer answers only once the high watermark passed the write (acks=all)."""
from __future__ import annotations

import threading
import time

import pytest
import trio

from kwire.codec.apis import api
from kwire.codec.records import build_batch
from kwire.errors import ErrorCode
from kwire.groups import records as GR
from kwire.groups.records import OFFSETS_TOPIC, partition_for
from kwire.log.validator import REPLICATION
from kwire.metadata import records as R
from kwire.testing.broker import Broker
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

E = ErrorCode
PARTITIONS = 3
OTHER_NODE = 99   # a leader that is not registered: the image knows of no such broker


def group_on(partition: int, prefix: str) -> str:
    i = 0
    while partition_for(f"{prefix}{i}", PARTITIONS) != partition:
        i += 1
    return f"{prefix}{i}"


G = group_on(1, "moving-")    # its partition changes leader
H = group_on(2, "staying-")   # its partition stays here


@pytest.fixture
def kw():
    b = Broker(overrides={"offsets.topic.num.partitions": PARTITIONS, "group.initial.rebalance.delay.ms": 0,
                          "offsets.commit.timeout.ms": 800}).start()
    try:
        b.create_topic("t", 2)
        assert find_coordinator(b, G) == (E.NONE, b.broker.node_id)   # creates __consumer_offsets, as Kafka
        yield b
    finally:
        b.cleanup()


# --- the broker's side (on its Trio thread) ---------------------------------------------------
def on_loop(b: Broker, fn, *args):
    return trio.from_thread.run_sync(fn, *args, trio_token=b._trio_token)


def move_leader(b: Broker, partition: int, leader: int) -> None:
    async def change():
        kb = b.broker
        t = kb.image.topics[OFFSETS_TOPIC]
        await kb.submit_metadata([(R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(
            topic_id=t.topic_id, partition_id=partition, leader=leader))])
    trio.from_thread.run(change, trio_token=b._trio_token)


def replicate_commit(b: Broker, group: str, offset: int) -> None:
    """What the other leader wrote (a commit of ``group``), fetched into the local log as a
    follower does: the leader's batch at the leader's offset."""
    def append():
        kb = b.broker
        plog = kb.replica_manager.local_log(OFFSETS_TOPIC, partition_for(group, PARTITIONS))
        key = GR.offset_key(group, "t", 0)
        value = GR.offset_value(GR.OffsetValue(offset, -1, "from the other leader", 0, -1))
        batch = build_batch([(key, value, None, kb.clock.now_ms())], base_offset=plog.log_end_offset,
                            partition_leader_epoch=kb.image.topics[OFFSETS_TOPIC].partitions[1].leader_epoch)
        plog.append(batch, now_ms=kb.clock.now_ms(), origin=REPLICATION, leader_epoch=None)
    on_loop(b, append)


# --- the client's side -----------------------------------------------------------------------
def commit(b: Broker, group: str, offset: int, partition: int = 0) -> int:
    Req = api("OffsetCommit").request
    with b.client() as c:
        r = c.request("OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                      group_instance_id=None, topics=[Req.struct("OffsetCommitRequestTopic")(
                          name="t", partitions=[Req.struct("OffsetCommitRequestPartition")(
                              partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
                              committed_metadata=None)])])
    return r.topics[0].partitions[0].error_code


def fetch(b: Broker, group: str, partition: int = 0) -> tuple[int, int]:
    """(error, committed offset) of ``group`` for t-<partition>."""
    Req = api("OffsetFetch").request
    with b.client() as c:
        r = c.request("OffsetFetch", 7, group_id=group, require_stable=False, topics=[
            Req.struct("OffsetFetchRequestTopic")(name="t", partition_indexes=[partition])])
    if r.error_code:
        return r.error_code, -1
    return r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].committed_offset


def find_coordinator(b: Broker, group: str) -> tuple[int, int]:
    with b.client() as c:
        r = c.request("FindCoordinator", 3, key=group, key_type=0)
    return r.error_code, r.node_id


def list_groups(b: Broker) -> tuple[int, list[str]]:
    with b.client() as c:
        r = c.request("ListGroups", 4, states_filter=[])
    return r.error_code, sorted(g.group_id for g in r.groups)


# --- leadership ------------------------------------------------------------------------------
def test_resign_unloads_and_becoming_leader_reloads_from_the_log(kw):
    assert commit(kw, G, 42) == E.NONE and commit(kw, H, 7) == E.NONE
    coord = kw.broker.groups
    assert coord.owns(1) and G in coord.groups

    move_leader(kw, 1, OTHER_NODE)
    assert not coord.owns(1) and not coord.is_loading(1)
    assert G not in coord.groups and H in coord.groups   # only that partition's groups
    assert coord.coordinator_error(G) == E.NOT_COORDINATOR
    assert find_coordinator(kw, G)[0] == E.COORDINATOR_NOT_AVAILABLE   # its leader is not live
    assert fetch(kw, G)[0] == E.COORDINATOR_NOT_AVAILABLE
    assert commit(kw, G, 50) == E.COORDINATOR_NOT_AVAILABLE
    assert fetch(kw, H) == (E.NONE, 7)   # the other partitions carry on
    # the other leader takes a commit and this node, its follower, replicates it
    replicate_commit(kw, G, 77)

    move_leader(kw, 1, kw.broker.node_id)
    wait_until(lambda: coord.owns(1), 10)
    assert fetch(kw, G) == (E.NONE, 77)
    assert find_coordinator(kw, G) == (E.NONE, kw.broker.node_id)
    assert commit(kw, G, 78) == E.NONE and fetch(kw, G) == (E.NONE, 78)


def test_load_in_progress_until_the_partition_is_read(kw):
    assert commit(kw, G, 5) == E.NONE
    edge = kw.broker.group_edge
    gate = threading.Event()
    reads = []

    async def held_read(data):
        reads.append(data.size)
        await trio.to_thread.run_sync(gate.wait)
        return await trio.to_thread.run_sync(bytes, data)

    edge.runtime._read = held_read
    move_leader(kw, 1, OTHER_NODE)
    move_leader(kw, 1, kw.broker.node_id)
    try:
        wait_until(lambda: reads, 10)
        assert fetch(kw, G)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
        assert commit(kw, G, 6) == E.COORDINATOR_LOAD_IN_PROGRESS
        with kw.client() as c:
            hb = c.request("Heartbeat", 4, group_id=G, generation_id=1, member_id="m", group_instance_id=None)
            sync = c.request("SyncGroup", 5, group_id=G, generation_id=1, member_id="m", group_instance_id=None,
                             protocol_type="consumer", protocol_name="range", assignments=[])
        assert hb.error_code == E.NONE   # Kafka answers heartbeats blindly while loading
        assert sync.error_code == E.REBALANCE_IN_PROGRESS   # and a sync with "rejoin here"
        err, groups = list_groups(kw)
        assert err == E.COORDINATOR_LOAD_IN_PROGRESS and G not in groups
        assert fetch(kw, H)[0] == E.NONE   # other partitions are served meanwhile
    finally:
        gate.set()
    wait_until(lambda: kw.broker.groups.owns(1), 10)
    assert fetch(kw, G) == (E.NONE, 5)
    assert list_groups(kw) == (E.NONE, [G])


def test_resign_while_loading_abandons_the_load(kw):
    assert commit(kw, G, 5) == E.NONE
    edge = kw.broker.group_edge
    gate = threading.Event()
    reads = []

    async def held_read(data):
        reads.append(data.size)
        await trio.to_thread.run_sync(gate.wait)
        return await trio.to_thread.run_sync(bytes, data)

    edge.runtime._read = held_read
    move_leader(kw, 1, OTHER_NODE)
    move_leader(kw, 1, kw.broker.node_id)
    wait_until(lambda: reads, 10)
    move_leader(kw, 1, OTHER_NODE)   # resigned again before the read finished
    gate.set()
    time.sleep(0.3)
    coord = kw.broker.groups
    assert not coord.owns(1) and not coord.is_loading(1) and G not in coord.groups


def test_startup_loads_only_the_partitions_led_here(kw):
    assert commit(kw, G, 3) == E.NONE and commit(kw, H, 4) == E.NONE
    move_leader(kw, 1, OTHER_NODE)
    kw.restart()
    coord = kw.broker.groups
    assert coord.owned_partitions == {0, 2}
    assert G not in coord.groups and fetch(kw, H) == (E.NONE, 4)
    move_leader(kw, 1, kw.broker.node_id)
    wait_until(lambda: coord.owns(1), 10)
    assert fetch(kw, G) == (E.NONE, 3)


# --- the writer waits for replication ---------------------------------------------------------
class HeldReplication:
    """The replication of __consumer_offsets, held by the test: the high watermark stays
    behind the appended batches until ``release``; the acks=all verdict is the replica
    manager's unless the test sets ``verdict`` (kept while it would be NONE)."""

    def __init__(self, b: Broker):
        self.b = b
        self.rm = rm = b.broker.replica_manager
        self.verdict = E.NONE
        self.asked: list[tuple] = []
        self.appended: list[tuple] = []   # the held partitions and their logs
        self.holding = True
        real_hw, real_check = rm._maybe_increment_high_watermark, rm._acks_all_error
        self._real_hw = real_hw

        def hw(tp, plog):
            if self.holding and tp[0] == OFFSETS_TOPIC:
                self.appended.append((tp, plog))
            else:
                real_hw(tp, plog)

        def check(topic, partition, offset, leader_epoch):
            self.asked.append((topic, partition, offset, leader_epoch))
            err = real_check(topic, partition, offset, leader_epoch)
            return self.verdict if err == E.NONE else err

        rm._maybe_increment_high_watermark = hw
        rm._acks_all_error = check

    @property
    def events(self):
        return self.appended

    def release(self):
        def run():
            self.holding = False
            for tp, plog in self.appended:
                self._real_hw(tp, plog)
        on_loop(self.b, run)

    def close(self):
        del self.rm._maybe_increment_high_watermark, self.rm._acks_all_error


def commit_in_background(b: Broker, group: str, offset: int):
    out = []
    t = threading.Thread(target=lambda: out.append(commit(b, group, offset)))
    t.start()
    return t, out


def test_commit_answers_once_the_high_watermark_passes_it(kw):
    held = HeldReplication(kw)
    try:
        t, out = commit_in_background(kw, G, 11)
        wait_until(lambda: held.events, 10)
        time.sleep(0.2)
        assert out == [] and t.is_alive()   # appended, not replicated: no answer yet
        assert fetch(kw, G) == (E.NONE, -1)
        held.release()
        t.join(10)
        assert out == [E.NONE] and fetch(kw, G) == (E.NONE, 11)
        # asked about the whole batch (high watermark past its last offset), in the epoch it
        # was appended in
        plog = kw.broker.replica_manager.local_log(OFFSETS_TOPIC, 1)
        epoch = kw.broker.image.topics[OFFSETS_TOPIC].partitions[1].leader_epoch
        assert held.asked == [(OFFSETS_TOPIC, 1, plog.log_end_offset, epoch)]
    finally:
        held.close()


def test_commit_the_isr_could_not_take_is_refused(kw):
    held = HeldReplication(kw)
    held.verdict = E.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    try:
        t, out = commit_in_background(kw, G, 12)
        wait_until(lambda: held.events, 10)
        held.release()
        t.join(10)
        assert out == [E.COORDINATOR_NOT_AVAILABLE]   # Kafka's mapping of the append error
        assert fetch(kw, G) == (E.NONE, -1)
    finally:
        held.close()


def test_commit_not_replicated_in_time_times_out(kw):
    held = HeldReplication(kw)
    try:
        start = time.monotonic()
        assert commit(kw, G, 13) == E.COORDINATOR_NOT_AVAILABLE   # REQUEST_TIMED_OUT, mapped
        assert time.monotonic() - start >= 0.7   # offsets.commit.timeout.ms=800
        assert fetch(kw, G) == (E.NONE, -1)
    finally:
        held.close()


def test_resign_answers_a_commit_waiting_for_replication(kw):
    held = HeldReplication(kw)
    try:
        t, out = commit_in_background(kw, G, 14)
        wait_until(lambda: held.events, 10)
        move_leader(kw, 1, OTHER_NODE)
        t.join(10)
        assert out == [E.NOT_COORDINATOR]
        held.release()   # a late acknowledgement changes nothing
    finally:
        held.close()
    move_leader(kw, 1, kw.broker.node_id)
    wait_until(lambda: kw.broker.groups.owns(1), 10)
    assert fetch(kw, G) == (E.NONE, 14)   # in the log though never acknowledged: a new leader loads it


def test_a_failed_load_leaves_the_partition_unserved_and_the_broker_running(kw):
    assert commit(kw, G, 5) == E.NONE
    edge = kw.broker.group_edge
    coord = kw.broker.groups
    failed = []

    async def failing_read(data):
        failed.append(data.size)
        raise OSError(5, "Input/output error")

    edge.runtime._read = failing_read
    move_leader(kw, 1, OTHER_NODE)
    move_leader(kw, 1, kw.broker.node_id)
    wait_until(lambda: failed and not coord.is_loading(1), 10)
    assert not coord.owns(1)
    assert fetch(kw, G)[0] == E.NOT_COORDINATOR   # clients look for the coordinator again
    assert fetch(kw, H)[0] == E.NONE              # the broker and other partitions carry on
    del edge.runtime._read
    move_leader(kw, 1, OTHER_NODE)
    move_leader(kw, 1, kw.broker.node_id)
    wait_until(lambda: coord.owns(1), 10)
    assert fetch(kw, G) == (E.NONE, 5)


def test_a_partition_without_its_log_here_is_not_served_empty(kw):
    """Serving it empty would answer OffsetFetch with no offsets: consumers would reset."""
    assert commit(kw, G, 8) == E.NONE
    rm = kw.broker.replica_manager
    real = rm.local_log
    rm.local_log = lambda topic, p: None if (topic, p) == (OFFSETS_TOPIC, 1) else real(topic, p)
    try:
        move_leader(kw, 1, OTHER_NODE)
        move_leader(kw, 1, kw.broker.node_id)
        coord = kw.broker.groups
        wait_until(lambda: not coord.is_loading(1), 10)
        assert not coord.owns(1) and fetch(kw, G)[0] == E.NOT_COORDINATOR
        assert fetch(kw, H)[0] == E.NONE
    finally:
        del rm.local_log
