"""The share persister's state load (kwire.share.state_store.ShareStateStore.ensure_loaded)
under concurrency, driven deterministically in one Trio run with a slow ReadShareGroupState
(the share coordinator on another broker): issue #32's race, where two members opening
share sessions together on a new share group were handed the same records, because the
second load to finish dropped the share partition the first fetch had acquired from."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import trio
import trio.testing

from kwire.errors import ErrorCode as E
from kwire.share.manager import SharePartitionManager, ShareSettings
from kwire.share.state_store import ShareStateStore

GROUP = "g"
TID = uuid.uuid4()


def _store(leader_epoch: int = 5):
    part = SimpleNamespace(leader=1, leader_epoch=leader_epoch)
    image = SimpleNamespace(topics={}, topics_by_id={TID: SimpleNamespace(partitions={0: part})})
    broker = SimpleNamespace(node_id=1, image=image)
    mgr = SharePartitionManager(lambda _g: ShareSettings(auto_offset_reset="earliest"))
    store = ShareStateStore(broker, mgr)
    reads: list[trio.Event] = []   # the reads in flight, each answered when its event is set
    answers: list = []             # what the reads answer, in order (default: no state)

    async def slow_read(group_id, topic_id, partition, leader_epoch):
        go = trio.Event()
        reads.append(go)
        await go.wait()
        return answers.pop(0) if answers else (E.NONE, None, 0)

    store.read_state = slow_read
    return store, mgr, reads, answers


async def _fetch(store, mgr, member: str, got: dict, recheck: bool = True) -> None:
    """What a ShareFetch does: load the state, then acquire (no await in between)."""
    await store.ensure_loaded(GROUP, [(TID, 0)], recheck=recheck)
    sp = mgr.get_or_create(GROUP, TID, 0, 0, 10)
    got[member] = [(a.first_offset, a.last_offset) for a in sp.acquire(member, range(10), 10, now=0)]


async def _answer_reads(reads: list, done) -> int:
    """Answer the reads one at a time, each once every task is blocked; how many there were."""
    n = 0
    while not done():
        await trio.testing.wait_all_tasks_blocked()
        if done():
            break
        assert reads, "a fetch waits with no read in flight"
        reads.pop(0).set()
        n += 1
    return n


def test_two_sessions_opening_on_a_slow_state_load_get_different_records():
    store, mgr, reads, _ = _store()
    got: dict = {}
    loads = []

    async def main():
        async with trio.open_nursery() as n:
            n.start_soon(_fetch, store, mgr, "a", got)
            n.start_soon(_fetch, store, mgr, "b", got)
            loads.append(await _answer_reads(reads, lambda: len(got) == 2))

    trio.run(main)
    first, second = sorted(got.values(), key=len, reverse=True)
    assert (first, second) == ([(0, 9)], [])   # never the same record to two members
    assert mgr.get(GROUP, TID, 0).in_flight() == 10
    assert loads == [1]   # one load for both


def test_a_session_opening_later_reads_again_and_keeps_what_is_acquired():
    store, mgr, reads, answers = _store()
    got: dict = {}

    async def main():
        async with trio.open_nursery() as n:
            n.start_soon(_fetch, store, mgr, "a", got)
            await _answer_reads(reads, lambda: "a" in got)
            # b opens its session afterwards: the state is read again (a newer state epoch
            # would start over), the same epoch keeps a's records
            n.start_soon(_fetch, store, mgr, "b", got)
            await _answer_reads(reads, lambda: "b" in got)

    trio.run(main)
    assert got == {"a": [(0, 9)], "b": []}


def test_a_fence_from_an_older_state_epoch_keeps_the_share_partition_read_since():
    store, mgr, reads, answers = _store()
    got: dict = {}
    answers.append((E.NONE, (3, ()), 2))   # the state at state epoch 2, start offset 3

    async def main():
        async with trio.open_nursery() as n:
            n.start_soon(_fetch, store, mgr, "a", got)
            await _answer_reads(reads, lambda: "a" in got)

    trio.run(main)
    assert got == {"a": [(3, 9)]}
    store.fence((GROUP, TID, 0), 1)   # a write sent at state epoch 1 answered FENCED_STATE_EPOCH
    assert mgr.get(GROUP, TID, 0).in_flight() == 7 and store.ready(GROUP, TID, 0)
    store.fence((GROUP, TID, 0), 2)   # at the current one: dropped, read again
    assert mgr.get(GROUP, TID, 0) is None and not store.ready(GROUP, TID, 0)
