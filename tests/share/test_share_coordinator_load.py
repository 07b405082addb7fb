"""The share coordinator's load of a ``__share_group_state`` partition off the event loop
(kwire.share.coordinator: Kafka's CoordinatorRuntime / CoordinatorLoaderImpl): the file
regions of the whole log taken at once, read and decoded in a worker thread, one load per
state partition at a time, requests for it waiting meanwhile, leadership checked again
before the states are installed; and DeleteShareGroupState written as one batch per state
partition. Driven deterministically in one Trio run over a real PartitionLog (the decode
gated by a threading.Event, the test proceeding on ``wait_all_tasks_blocked``); the
replica manager is a fake that appends to that log and counts the appends."""
from __future__ import annotations

import threading
import uuid
from types import SimpleNamespace

import trio
import trio.testing

from kwire.codec.records import build_batch
from kwire.errors import ErrorCode as E
from kwire.log.config import LogConfig
from kwire.log.partition_log import PartitionLog
from kwire.share import coordinator as C
from kwire.share import records as SR
from kwire.share.partition import StateBatch

NOW = 1_700_000_000_000
GROUP = "g"
TID = uuid.UUID("6f5c4b4e-1b5f-4d7e-9b1a-0c2d3e4f5a6b")
N_STATE_PARTITIONS = 2


def _keys_in(sp_idx: int, n: int) -> list[tuple[str, uuid.UUID, int]]:
    """``n`` share partition keys of GROUP/TID whose state partition is ``sp_idx``."""
    out, p = [], 0
    while len(out) < n:
        if SR.state_partition(GROUP, TID, p, N_STATE_PARTITIONS) == sp_idx:
            out.append((GROUP, TID, p))
        p += 1
    return out


def _state(key, start: int, snapshot_epoch: int = 0) -> SR.ShareState:
    return SR.ShareState(*key, snapshot_epoch, 0, 3, start, NOW, NOW, (StateBatch(start, start + 4, 0, 1),))


class FakeReplicaManager:
    """Appends to the real logs, replicated at once (acks=all met); counts the appends."""

    def __init__(self, logs: dict[int, PartitionLog]):
        self.logs = logs
        self.appends: list[tuple[int, int]] = []   # (state partition, records in the batch)

    def local_log(self, topic, p):
        assert topic == SR.STATE_TOPIC
        return self.logs.get(p)

    async def wait_log_open(self, topic, p):
        pass

    def append(self, topic, p, batch, now, acks):
        res = self.logs[p].append(batch, now_ms=now)
        self.appends.append((p, res.last_offset - res.base_offset + 1))
        return Replicated(res)


class Replicated:
    """An append outcome (kwire.replication.replica_manager.AppendOutcome) replicated at once."""

    error = None
    completed = True
    code = E.NONE

    def __init__(self, res):
        self.base_offset, self.last_offset = res.base_offset, res.last_offset

    async def wait(self, timeout_ms):
        return self.code


def _coordinator(tmp_path, records_by_sp: dict[int, list[SR.ShareState]], segment_bytes: int = 4096):
    logs = {}
    for sp in range(N_STATE_PARTITIONS):
        plog = PartitionLog.open(str(tmp_path / f"{SR.STATE_TOPIC}-{sp}"),
                                 LogConfig(cleanup_policy=("compact",), segment_bytes=segment_bytes), now_ms=NOW)
        states = records_by_sp.get(sp, [])
        for i in range(0, len(states), 10):   # ten records a batch, many segments
            recs = [(SR.key(SR.SNAPSHOT, s.group_id, s.topic_id, s.partition), SR.snapshot_value(s), None, NOW)
                    for s in states[i:i + 10]]
            plog.append(bytearray(build_batch(recs)), now_ms=NOW)
        logs[sp] = plog
    parts = {sp: SimpleNamespace(leader=1, leader_epoch=7) for sp in range(N_STATE_PARTITIONS)}
    image = SimpleNamespace(topics={SR.STATE_TOPIC: SimpleNamespace(partitions=parts)})
    config = {"share.coordinator.load.buffer.size": 1000, "share.coordinator.write.timeout.ms": 5000}
    broker = SimpleNamespace(node_id=1, image=image, replica_manager=FakeReplicaManager(logs),
                             config=SimpleNamespace(get=config.__getitem__),
                             clock=SimpleNamespace(now_ms=lambda: NOW))
    return C.ShareCoordinator(broker), broker, logs


class GatedDecode:
    """``decode_states`` that waits (in its worker thread) until released; counts its calls."""

    def __init__(self, monkeypatch):
        self.calls = 0
        self.gate = threading.Event()
        self.entered = threading.Semaphore(0)   # released by each call, once in its thread
        real = C.decode_states

        def decode(regions, chunk):
            self.calls += 1
            self.entered.release()
            self.gate.wait(30)
            return real(regions, chunk)

        monkeypatch.setattr(C, "decode_states", decode)

    async def wait_entered(self) -> None:
        """Until a call has reached its worker thread (that thread, not the loop, waits)."""
        await trio.to_thread.run_sync(self.entered.acquire)


def test_a_big_state_partition_loads_off_the_loop_and_its_requests_wait(tmp_path, monkeypatch):
    keys = _keys_in(0, 300)
    # each key written twice: the load keeps the last snapshot of each
    written = [_state(k, 10) for k in keys] + [_state(k, 100 + i, 1) for i, k in enumerate(keys)]
    other = _keys_in(1, 1)[0]
    coord, _, logs = _coordinator(tmp_path, {0: written, 1: [_state(other, 42)]})
    assert len(logs[0].segments) > 3
    gated = GatedDecode(monkeypatch)
    got: dict = {}
    ticks = 0

    async def read(name, key):
        got[name] = await coord.read(*key, leader_epoch=3)

    async def ticker(stop: trio.Event):
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await trio.sleep(0)

    async def main():
        nonlocal ticks
        async with trio.open_nursery() as n:
            n.start_soon(read, "first", keys[0])
            await gated.wait_entered()
            n.start_soon(read, "second", keys[-1])   # same state partition: waits for that load
            await trio.testing.wait_all_tasks_blocked()
            assert gated.calls == 1 and got == {}   # one load, in its thread; nobody answered yet
            assert 0 in coord.loading
            # the loop goes on meanwhile: a task runs, another state partition's request answers
            stop = trio.Event()
            n.start_soon(ticker, stop)
            for _ in range(5):
                await trio.sleep(0)
            stop.set()
            assert ticks >= 3 and got == {}
            gated.gate.set()   # sp 1's load passes the gate too
            await read("other", other)
            assert got["other"][0] == E.NONE and got["other"][1].start_offset == 42

    try:
        trio.run(main)
    finally:
        gated.gate.set()
    assert gated.calls == 2   # sp 0 once (the second request waited for it), sp 1 once
    assert got["first"][0] == E.NONE and got["first"][1].start_offset == 100
    assert got["second"][0] == E.NONE and got["second"][1].start_offset == 100 + len(keys) - 1
    assert coord.loaded == {0: 7, 1: 7} and not coord.loading
    assert sum(1 for k in coord.states if SR.state_partition(*k, N_STATE_PARTITIONS) == 0) == len(keys)


def test_leadership_moving_during_a_load_is_checked_before_installing(tmp_path, monkeypatch):
    key = _keys_in(0, 1)[0]
    coord, broker, _ = _coordinator(tmp_path, {0: [_state(key, 5)]})
    gated = GatedDecode(monkeypatch)
    part = broker.image.topics[SR.STATE_TOPIC].partitions[0]
    got: dict = {}

    async def read(name):
        got[name] = await coord.read(*key, leader_epoch=3)

    async def main():
        async with trio.open_nursery() as n:
            n.start_soon(read, "a")
            await gated.wait_entered()
            part.leader_epoch = 8   # re-elected here while loading: loaded again at epoch 8
            gated.gate.set()
        assert gated.calls == 2 and got["a"][1].start_offset == 5 and coord.loaded[0] == 8
        gated.gate.clear()
        part.leader_epoch = 9
        async with trio.open_nursery() as n:
            n.start_soon(read, "b")
            await gated.wait_entered()
            part.leader = 2   # moved to another broker while loading: not installed
            gated.gate.set()
        assert got["b"] == (E.NOT_COORDINATOR, None) and coord.loaded[0] == 8

    try:
        trio.run(main)
    finally:
        gated.gate.set()


def test_decoding_in_chunks_smaller_than_a_batch_reads_every_record(tmp_path):
    keys = _keys_in(0, 50)
    written = [_state(k, i) for i, k in enumerate(keys)]
    _, _, logs = _coordinator(tmp_path, {0: written}, segment_bytes=1 << 20)
    data = logs[0].read_range(0, logs[0].log_end_offset)
    whole = C.decode_states(data.regions, 1 << 20)
    assert C.decode_states(data.regions, 7) == whole   # a batch cut into many chunks
    assert whole == {(s.group_id, s.topic_id, s.partition): s for s in written}
    # the range stops at ``end``: whole batches below it only
    first_batch = C.decode_states(logs[0].read_range(0, 10).regions, 64)
    assert len(first_batch) == 10


def test_delete_share_group_state_of_n_partitions_is_one_append_per_state_partition(tmp_path):
    in0, in1 = _keys_in(0, 6), _keys_in(1, 2)
    coord, broker, _ = _coordinator(tmp_path, {0: [_state(k, 10) for k in in0], 1: [_state(in1[0], 10)]})
    rm = broker.replica_manager

    async def main():
        return await coord.delete_many(GROUP, [(tid, p) for _, tid, p in in0 + in1])

    out = trio.run(main)
    assert set(out.values()) == {E.NONE} and len(out) == len(in0) + len(in1)
    # one batch of six records on state partition 0, one record on 1 (in1[1] had no state)
    assert sorted(rm.appends) == [(0, 6), (1, 1)]
    for k in in0 + in1[:1]:
        st = coord.states[k]
        assert (st.start_offset, st.state_epoch, st.batches) == (-1, 1, ())
    # and what the log holds reads back the same after a reload
    coord2 = C.ShareCoordinator(broker)

    async def reread():
        return [await coord2.read(*k, leader_epoch=-1) for k in in0]

    assert all(err == E.NONE and st.start_offset == -1 and st.state_epoch == 1 for err, st in trio.run(reread))


def test_regions_taken_before_a_cleaner_swap_still_read_after_it(tmp_path):
    """The load takes the regions of the whole log at once, then reads them in a thread: a
    compaction swapping the segments in between (kwire.log.cleaner_swap renames and unlinks
    the old files) changes nothing for it, each region holding its file open."""
    keys = _keys_in(0, 40)
    written = [_state(k, 1) for k in keys] + [_state(k, 2, 1) for k in keys]   # every key twice
    _, _, logs = _coordinator(tmp_path, {0: written}, segment_bytes=2048)
    plog = logs[0]
    plog.update_high_watermark(plog.log_end_offset)   # replicated: cleanable below the active segment
    before = [(s.base_offset, s.size) for s in plog.segments]
    data = plog.read_range(plog.log_start_offset, plog.log_end_offset)
    from kwire.log.cleaner_manager import clean_now  # noqa: PLC0415 - only this test cleans
    assert clean_now(plog, NOW) is not None
    assert [(s.base_offset, s.size) for s in plog.segments] != before   # swapped and smaller
    want = {(s.group_id, s.topic_id, s.partition): s for s in written[len(keys):]}
    assert C.decode_states(data.regions, 500) == want
    after = plog.read_range(plog.log_start_offset, plog.log_end_offset)
    assert C.decode_states(after.regions, 500) == want and after.size < data.size
