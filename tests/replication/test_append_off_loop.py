"""Nothing heavy on the Trio loop (issue 31): ReplicaManager.append_off_loop, the Produce
handler's append, runs a large compressed batch's validation (decompression included), a
segment roll and a producer snapshot in a worker thread, never on the loop's thread, and
keeps the appends of one partition in arrival order. Deterministic: the threads are
recorded, not timed, and a gate holds the worker to pin the interleaving."""
from __future__ import annotations

import dataclasses
import os
import threading

import trio
import trio.testing

from kwire.codec import compression
from kwire.codec.records import ZSTD, build_batch
from kwire.log.partition_log import PartitionLog
from kwire.log.producer_state import ProducerStateManager
from kwire.log.segment import LogSegment
from kwire.log.validator import CLIENT
from kwire.replication.replica_manager import OFF_LOOP_COMPRESSED_BYTES

from tests.replication.test_replica_manager import ME, NOW, Cluster


def big_zstd_batch(producer_id: int = -1, base_sequence: int = -1) -> bytearray:
    """A zstd batch well past the off-loop size (random bytes do not compress)."""
    n = OFF_LOOP_COMPRESSED_BYTES // 1000 + 20
    records = [(None, os.urandom(1000), None, NOW + i) for i in range(n)]
    b = bytearray(build_batch(records, compression=ZSTD, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                              base_sequence=base_sequence))
    assert len(b) > OFF_LOOP_COMPRESSED_BYTES
    return b


def small_batch(n: int = 2) -> bytearray:
    return bytearray(build_batch([(b"k", b"v%d" % i, None, NOW + i) for i in range(n)]))


def record_threads(monkeypatch, seen: dict) -> None:
    """Wrap the heavy operations to record the thread each runs in."""
    def wrap(owner, name, label, when=lambda *a, **k: True, static=False):
        orig = getattr(owner, name)
        fn = orig.__func__ if static else orig

        def spy(*args, **kwargs):
            if when(*args, **kwargs):
                seen.setdefault(label, []).append(threading.get_ident())
            return fn(*args, **kwargs)
        monkeypatch.setattr(owner, name, classmethod(spy) if static else spy)

    wrap(compression, "decompress", "decompress", when=lambda codec, data, **k: len(data) > 10_000)
    wrap(LogSegment, "create", "roll", static=True)
    wrap(ProducerStateManager, "take_snapshot", "snapshot")


def test_heavy_appends_run_in_worker_threads(tmp_path, monkeypatch):
    c = Cluster(str(tmp_path))
    try:
        c.topic("t", [ME])
        c.topic("s", [ME])
        plog = c.logs.get("t", 0)
        plog.config = dataclasses.replace(plog.config, segment_bytes=150_000)
        seen: dict = {}
        record_threads(monkeypatch, seen)

        async def main():
            loop = threading.get_ident()
            rm = c.rm
            # an idempotent producer's first batch: validation and its first snapshot
            a = await rm.append_off_loop("t", 0, big_zstd_batch(7, 0), NOW, origin=CLIENT)
            assert a.error is None and a.base_offset == 0
            # small and rolls nothing: on the loop, as before
            b = await rm.append_off_loop("t", 0, small_batch(), NOW, origin=CLIENT)
            assert b.error is None and b.base_offset == a.last_offset + 1
            assert seen.get("roll") is None
            # past segment.bytes: the roll (a new segment) and the snapshot it takes
            d = await rm.append_off_loop("t", 0, big_zstd_batch(7, a.last_offset + 1), NOW, origin=CLIENT)
            assert d.error is None and d.base_offset == b.last_offset + 1
            assert len(plog.segments) == 2
            # a new segment's aborted-transaction index is known empty: a read_committed fetch
            # opens no .txnindex file on the loop
            assert plog.segments[-1].txn_index._entries == []
            # a small idempotent batch, the partition's first: its first producer snapshot
            e = await rm.append_off_loop("s", 0, bytearray(build_batch([(None, b"v", None, NOW)], producer_id=8,
                                                                       producer_epoch=0, base_sequence=0)),
                                         NOW, origin=CLIENT)
            assert e.error is None and e.base_offset == 0
            return loop

        loop = trio.run(main)
        assert len(seen["decompress"]) == 2 and len(seen["roll"]) == 1 and len(seen["snapshot"]) == 3, seen
        on_loop = {label: n for label, threads in seen.items() for n in threads if n == loop}
        assert not on_loop, f"ran on the event loop's thread: {sorted(on_loop)}"
        # the same append on the loop (ReplicaManager.append) does decompress there: the spy works
        seen.clear()
        c.rm.append("t", 0, big_zstd_batch(), NOW, origin=CLIENT).result()
        assert seen["decompress"] == [threading.get_ident()]
    finally:
        c.logs.close()


def test_appends_keep_their_order_per_partition(tmp_path, monkeypatch):
    """A small append arriving while a heavy one of the same partition is in its worker
    thread queues behind it (and a third behind that): offsets in arrival order, and the
    validation holds no lock a fetch on the loop would wait for."""
    c = Cluster(str(tmp_path))
    try:
        c.topic("t", [ME])
        c.topic("u", [ME])
        plog = c.logs.get("t", 0)
        gate = threading.Event()
        in_validation = threading.Event()
        orig = PartitionLog.validate

        def gated(self, *args, **kwargs):
            if threading.current_thread() is not threading.main_thread():
                in_validation.set()
                assert gate.wait(30)
            return orig(self, *args, **kwargs)
        monkeypatch.setattr(PartitionLog, "validate", gated)

        async def main():
            rm = c.rm
            out = {}

            async def append(name, topic, records):
                out[name] = await rm.append_off_loop(topic, 0, records, NOW, origin=CLIENT)

            async with trio.open_nursery() as n:
                n.start_soon(append, "heavy", "t", big_zstd_batch())
                await trio.testing.wait_all_tasks_blocked()
                await trio.to_thread.run_sync(in_validation.wait)
                n.start_soon(append, "small", "t", small_batch(2))
                await trio.testing.wait_all_tasks_blocked()
                n.start_soon(append, "small2", "t", small_batch(3))
                await trio.testing.wait_all_tasks_blocked()
                n.start_soon(append, "other", "u", small_batch(1))   # another partition: no wait
                await trio.testing.wait_all_tasks_blocked()
                assert "other" in out and "small" not in out and "small2" not in out
                assert plog.log_end_offset == 0
                # the validation runs outside the log's lock: a fetch on the loop goes on
                assert plog.lock.acquire(blocking=False)
                plog.lock.release()
                gate.set()
            return out

        out = trio.run(main)
        heavy, small, small2 = out["heavy"], out["small"], out["small2"]
        assert heavy.error is None and small.error is None and small2.error is None
        assert heavy.base_offset == 0
        assert small.base_offset == heavy.last_offset + 1
        assert small2.base_offset == small.last_offset + 1
        assert not c.rm._lanes   # a lane lives only while appends are queued
    finally:
        gate.set()
        c.logs.close()


def test_follower_truncation_and_heavy_appends_run_in_worker_threads(tmp_path, monkeypatch):
    """The replica fetcher (kwire.replication.fetcher) applies a leader's answer: a large
    append and a truncation (index and producer-state rebuild) in a worker thread, then
    follows the leader's high watermark on the loop."""
    from types import SimpleNamespace

    from kwire.replication import follower as F
    from kwire.replication import replica_manager
    from kwire.replication.fetcher import ReplicaFetcher, _Fetching

    from tests.replication.test_followers import T, Nodes

    nodes = Nodes(tmp_path, 2)
    try:
        nodes.partition([1, 2])
        monkeypatch.setattr(replica_manager, "OFF_LOOP_BYTES", 100_000)   # less to write, same path
        big = [os.urandom(2000) for _ in range(60)]
        half = len(big) // 2
        nodes.produce(1, *big[:half])   # two batches: each below max.message.bytes
        nodes.produce(1, *big[half:])
        nodes.produce(1, b"tail")
        rm2 = nodes.rms[2]
        part = rm2.partitions[(T, 0)]
        fetcher = ReplicaFetcher(SimpleNamespace(replica_manager=rm2, node_id=2, backoff_s=1.0, quota=None), 1)
        fetcher.partitions[(T, 0)] = _Fetching(part.leader_epoch)
        seen: dict = {}
        for name in ("append", "truncate_to"):
            orig = getattr(PartitionLog, name)

            def spy(self, *args, _orig=orig, _name=name, **kwargs):
                seen.setdefault(_name, []).append(threading.get_ident())
                return _orig(self, *args, **kwargs)
            monkeypatch.setattr(PartitionLog, name, spy)

        def answer(**kw):
            return SimpleNamespace(**{"error_code": 0, "diverging_epoch": None, "records": None,
                                      "high_watermark": -1, "log_start_offset": 0, **kw})

        async def main():
            pos = F.fetch_position(part)
            res = nodes.rms[1].read_for_follower(T, 0, 2, pos.fetch_offset, pos.last_fetched_epoch, 4 << 20)
            assert res.size > replica_manager.OFF_LOOP_BYTES
            await fetcher._apply_partition(part, answer(records=bytes(res.records), high_watermark=3), pos, NOW)
            assert part.log.log_end_offset == len(big) + 1 and part.log.high_watermark == 3
            await fetcher._apply_partition(
                part, answer(diverging_epoch=SimpleNamespace(epoch=0, end_offset=half)), pos, NOW)
            assert part.log.log_end_offset == half   # the second batch and the tail went
            return threading.get_ident()

        loop = trio.run(main)
        assert len(seen["append"]) == 1 and len(seen["truncate_to"]) == 1, seen
        assert loop not in seen["append"] and loop not in seen["truncate_to"]
    finally:
        nodes.close()


def test_partition_deleted_while_its_append_is_in_a_thread(tmp_path, monkeypatch):
    """The topic goes while a heavy append validates in its worker thread: the deletion does
    not wait (no lock is held), and the append is refused as the leader check refuses it."""
    from kwire.errors import ErrorCode

    c = Cluster(str(tmp_path))
    try:
        c.topic("t", [ME])
        gate = threading.Event()
        orig = PartitionLog.validate

        def gated(self, *args, **kwargs):
            assert gate.wait(30)
            return orig(self, *args, **kwargs)
        monkeypatch.setattr(PartitionLog, "validate", gated)

        async def main():
            out = {}

            async def append():
                out["a"] = await c.rm.append_off_loop("t", 0, big_zstd_batch(), NOW, origin=CLIENT)

            async with trio.open_nursery() as n:
                n.start_soon(append)
                await trio.testing.wait_all_tasks_blocked()
                c.delete("t")
                gate.set()
            return out["a"]

        a = trio.run(main)
        assert a.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and a.base_offset == -1
    finally:
        gate.set()
        c.logs.close()
