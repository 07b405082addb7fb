"""The log at the broker's edge: a partition whose files cannot be made fails its CreateTopics /
CreatePartitions (KAFKA_STORAGE_ERROR, as Kafka's LogManager) and leaves metadata and disk as
they were; a slow disk (fsync, fdatasync, unlink of 0.5 s each) under a retention pass, a
flush and a topic creation does not stall other clients' round trips."""
from __future__ import annotations

import errno
import os
import threading
import time
import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import KafkaWireError

pytestmark = pytest.mark.slow

SLOW_S = 0.5


@pytest.fixture(scope="module")
def broker():
    with Broker(mode="thread") as b:
        yield b


def _fail_mkdir_of(monkeypatch, suffix: str) -> None:
    real = os.mkdir

    def mkdir(path, *a, **kw):
        if str(path).endswith(suffix):
            raise OSError(errno.EMFILE, "Too many open files")
        return real(path, *a, **kw)

    monkeypatch.setattr(os, "mkdir", mkdir)


def _dirs(b: Broker, topic: str) -> list[str]:
    return sorted(d for d in os.listdir(b.data_dir) if d.rsplit("-", 1)[0] == topic)


def _create(c, name: str, partitions: int):
    R = api("CreateTopics").request
    t = R.struct("CreatableTopic")(name=name, num_partitions=partitions, replication_factor=1, configs=[])
    return c.request("CreateTopics", 5, topics=[t], timeout_ms=30000, validate_only=False).topics[0]


def test_create_topics_fails_whole_when_a_partition_cannot_be_made(broker, monkeypatch):
    name = f"t-{uuid.uuid4().hex[:8]}"
    _fail_mkdir_of(monkeypatch, f"/{name}-37")
    with broker.client() as c:
        r = _create(c, name, 100)
        assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert f"Error while creating log for {name}-37" in r.error_message
        assert "Too many open files" in r.error_message
        with pytest.raises(KafkaWireError) as exc:
            c.partitions(name)
        assert exc.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _dirs(broker, name) == []           # nothing made is left behind
        monkeypatch.undo()
        assert _create(c, name, 100).error_code == 0  # the same request works once it can
        assert c.partitions(name) == list(range(100))
        assert c.produce(name, [b"x"], partition=99) == [0]
        assert len(_dirs(broker, name)) == 100


def test_create_partitions_fails_and_keeps_the_topic_as_it_was(broker, monkeypatch):
    name = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 2)
    _fail_mkdir_of(monkeypatch, f"/{name}-5")
    R = api("CreatePartitions").request
    with broker.client() as c:
        t = R.struct("CreatePartitionsTopic")(name=name, count=10, assignments=None)
        r = c.request("CreatePartitions", 1, topics=[t], timeout_ms=30000, validate_only=False).results[0]
        assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert c.partitions(name) == [0, 1]
        assert _dirs(broker, name) == [f"{name}-0", f"{name}-1"]
        monkeypatch.undo()
        r = c.request("CreatePartitions", 1, topics=[t], timeout_ms=30000, validate_only=False).results[0]
        assert r.error_code == 0
        assert c.partitions(name) == list(range(10))


def _slow_disk(monkeypatch, *names: str) -> dict[str, int]:
    """Make the ``os`` functions ``names`` take SLOW_S each (unlink: of segment files only);
    returns the count of slow calls per name."""
    calls = {n: 0 for n in names}
    for fn in names:
        real = getattr(os, fn)

        def slow(*a, _real=real, _fn=fn, **kw):
            if _fn != "unlink" or str(a[0]).endswith(".log"):
                calls[_fn] += 1
                time.sleep(SLOW_S)
            return _real(*a, **kw)

        monkeypatch.setattr(os, fn, slow)
    return calls


def _round_trips_while(b, work, finished, limit_s: float = 8.0) -> tuple[float, int]:
    """Run ``work`` in a thread and time Metadata + Produce round trips of another client
    until ``finished()`` (at most ``limit_s``): (the worst round trip, how many)."""
    other = threading.Thread(target=work)
    worst, rounds = 0.0, 0
    with b.client() as c:
        start = time.monotonic()
        other.start()
        while time.monotonic() - start < limit_s and not finished():
            t0 = time.monotonic()
            c.partitions("fast")
            c.produce("fast", [b"ping"])
            worst = max(worst, time.monotonic() - t0)
            rounds += 1
    other.join(60)
    return worst, rounds


def _set_retention_ms(c, topic: str, ms: int) -> int:
    R = api("IncrementalAlterConfigs").request
    res = R.struct("AlterConfigsResource")(resource_type=2, resource_name=topic, configs=[
        R.struct("AlterableConfig")(name="retention.ms", config_operation=0, value=str(ms))])
    return c.request("IncrementalAlterConfigs", 0, resources=[res], validate_only=False).responses[0].error_code


def test_slow_disk_does_not_stall_other_clients(monkeypatch):
    """Retention deletes segments and flushes rolled ones, and config and topic changes
    commit through Raft, while every fsync/fdatasync (and unlink of a segment) takes 0.5 s;
    another client's Metadata and Produce round trips stay well under that."""
    with Broker(mode="thread", overrides={"log.retention.check.interval.ms": 200}) as b:
        b.create_topic("fast", 1)
        b.create_topic("slow", 1, {"internal.segment.bytes": 1000})
        with b.client() as c:
            for i in range(4):
                c.produce("slow", [b"v" * 900])          # one segment per batch (rolls)
        time.sleep(0.5)   # the passes meanwhile flush the rolled segments (at full speed)
        calls = _slow_disk(monkeypatch, "fsync", "fdatasync", "unlink")
        done = {}

        def admin():   # Raft commits (log fsyncs) in the background; then retention can delete
            # the rolled segment's flush first: retention may otherwise delete the segment before
            # the flush pass reaches it (nothing left to fdatasync), a race of the test's own making
            deadline = time.monotonic() + 5
            while not calls["fdatasync"] and time.monotonic() < deadline:
                time.sleep(0.01)
            t0 = time.monotonic()
            with b.client(60) as c2:
                done["alter"] = _set_retention_ms(c2, "slow", 1)
                done["create"] = _create(c2, "made-while-slow", 3).error_code
            done["s"] = time.monotonic() - t0

        with b.client() as c:
            c.produce("slow", [b"v" * 900])              # a roll: a flush for the next pass
        worst, rounds = _round_trips_while(b, admin, lambda: calls["unlink"] and calls["fdatasync"] and "s" in done)
        monkeypatch.undo()
        # a round trip that waited for one slow call takes at least SLOW_S; anything shorter did not
        # (0.28 s was seen on a machine at load 8, so the bound is not SLOW_S / 2)
        assert worst < 0.9 * SLOW_S, f"a round trip took {worst:.3f} s while the disk was slow"
        assert calls["unlink"] >= 1 and calls["fdatasync"] >= 1, calls   # the slow work ran meanwhile
        assert done.get("alter") == 0 and done.get("create") == 0
        assert done["s"] >= 2 * SLOW_S                   # the commits did wait for their fsyncs
        with b.client() as c:
            R = api("ListOffsets").request
            lso = c.request("ListOffsets", 1, replica_id=-1, topics=[R.struct("ListOffsetsTopic")(
                name="slow", partitions=[R.struct("ListOffsetsPartition")(partition_index=0, timestamp=-2)])]
            ).topics[0].partitions[0].offset
        assert lso > 0                                   # retention deleted segments meanwhile
        assert rounds > 20


def test_a_led_partition_that_cannot_be_opened_as_records_apply_is_offline(broker, monkeypatch):
    """The path of a partition whose records another node committed (in a cluster, or a
    replay): opening its log fails here, so this node answers KAFKA_STORAGE_ERROR for it,
    applies the rest of the records (the other partitions, the topic's configs) and serves
    them."""
    name = f"t-{uuid.uuid4().hex[:8]}"

    async def not_made_here(topic, partitions):   # as if the creating node were another one
        return []

    monkeypatch.setattr(broker.broker, "_make_logs", not_made_here)
    _fail_mkdir_of(monkeypatch, f"/{name}-1")
    broker.create_topic(name, 3, {"retention.ms": 12345})
    with broker.client() as c:
        assert c.partitions(name) == [0, 1, 2]
        with pytest.raises(KafkaWireError) as exc:
            c.produce(name, [b"x"], partition=1)
        assert exc.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert c.produce(name, [b"x"], partition=2) == [0]
    assert broker.broker.logs.get(name, 2).config.retention_ms == 12345   # the CONFIG record applied
    assert _dirs(broker, name) == [f"{name}-0", f"{name}-2"]


def test_deleted_topic_files_go_off_the_event_loop(broker, monkeypatch):
    """DeleteTopics renames the partition directories aside at once (the topic is gone) and
    removes them in a worker thread: a slow removal does not stall other clients."""
    import shutil

    from kwire.testing.wait import wait_until

    name = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 4)
    broker.create_topic(f"{name}-other", 1)
    with broker.client() as c:
        for p in range(4):
            c.produce(name, [b"x" * 100], partition=p)
    real = shutil.rmtree
    removing = []

    def slow_rmtree(path, *a, **kw):
        if name in str(path):
            removing.append(path)
            time.sleep(1.0)
        return real(path, *a, **kw)

    monkeypatch.setattr(shutil, "rmtree", slow_rmtree)
    broker.delete_topic(name)
    assert _dirs(broker, name) == []     # renamed aside as the record applied
    worst = 0.0
    with broker.client() as c:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            t1 = time.monotonic()
            c.produce(f"{name}-other", [b"ping"])
            worst = max(worst, time.monotonic() - t1)
    assert removing and worst < 0.25
    wait_until(lambda: not [d for d in os.listdir(broker.data_dir) if d.startswith(f"{name}-") and
                            d.endswith("-delete")], timeout=20, message="the -delete directories are removed")


def test_delete_records_on_a_slow_disk_does_not_stall_other_clients(monkeypatch):
    """DeleteRecords unlinks whole segments and rewrites the log-start-offset checkpoint in a
    worker thread: with every fsync and segment unlink taking 0.5 s, another client's round
    trips stay fast, and the DeleteRecords answer comes once its disk work is done."""
    with Broker(mode="thread") as b:
        b.create_topic("fast", 1)
        b.create_topic("trim", 1, {"internal.segment.bytes": 1000})
        with b.client() as c:
            for _ in range(5):
                c.produce("trim", [b"v" * 900])           # one segment per batch
        calls = _slow_disk(monkeypatch, "fsync", "unlink")
        done = {}

        def trim():
            t0 = time.monotonic()
            R = api("DeleteRecords").request
            with b.client(60) as c2:
                r = c2.request("DeleteRecords", 2, timeout_ms=30000, topics=[R.struct("DeleteRecordsTopic")(
                    name="trim", partitions=[R.struct("DeleteRecordsPartition")(partition_index=0, offset=4)])])
            done["result"] = r.topics[0].partitions[0]
            done["s"] = time.monotonic() - t0

        worst, rounds = _round_trips_while(b, trim, lambda: "s" in done)
        monkeypatch.undo()
        assert done["result"].error_code == 0 and done["result"].low_watermark == 4
        assert calls["unlink"] >= 1 and calls["fsync"] >= 1, calls
        assert done["s"] >= SLOW_S                       # the answer waited for the disk work
        assert worst < 0.9 * SLOW_S, f"a round trip took {worst:.3f} s while DeleteRecords ran"
        assert rounds > 5
        assert [r.value for r in b.consume("trim", 1, offset=4)] == [b"v" * 900]
