"""Several log dirs on one broker (Kafka's log.dirs, JBOD, KIP-112 / KIP-858), against a
running kwire with stock clients:

- partitions are spread over the dirs (the dir holding the fewest first), each dir has its own
  meta.properties (with a directory.id) and checkpoints; DescribeLogDirs lists every dir;
- AlterReplicaLogDirs moves a replica to another dir while it is written to, with kafka-python's
  admin client: every record before, during and after the move is read back in order;
- a failed dir takes only its own partitions offline (KAFKA_STORAGE_ERROR), the broker keeps
  serving the others and reports the dir to the controller; when every dir has failed the
  broker shuts down (Kafka halts), and a restart on healthy disks serves all of it again.
"""
from __future__ import annotations

import os
import threading
import time
import uuid

import pytest
from kafka import TopicPartitionReplica
from kafka import errors as Errors
from kafka.admin import KafkaAdminClient

from kwire.errors import ErrorCode, LogDirsFailed
from kwire.log.data_dir import read_properties_file
from kwire.testing import Broker
from kwire.testing.client import KafkaWireError

pytestmark = pytest.mark.slow


@pytest.fixture
def jbod(tmp_path):
    dirs = [str(tmp_path / f"d{i}") for i in range(3)]
    b = Broker(mode="thread", data_dir=dirs[0], log_dirs=dirs[1:],
               overrides={"node.id": 1, "offsets.topic.num.partitions": 1, "group.initial.rebalance.delay.ms": 0})
    b.start()
    yield b, dirs
    b.stop()


def where(c, topic: str) -> dict[int, str]:
    """{partition: log dir} of ``topic`` (DescribeLogDirs; future logs left out)."""
    out = {}
    for r in c.request("DescribeLogDirs", 4, topics=None).results:
        for t in r.topics:
            if t.name == topic:
                for p in t.partitions:
                    if not p.is_future_key:
                        out[p.partition_index] = r.log_dir
    return out


def test_partitions_spread_over_the_dirs_each_with_its_own_files(jbod):
    b, dirs = jbod
    t = f"spread-{uuid.uuid4().hex[:6]}"
    with b.client() as c:
        c.create_topic(t, 6)
        r = c.request("DescribeLogDirs", 4, topics=None)
        assert [x.log_dir for x in r.results] == [os.path.abspath(d) for d in dirs]
        assert all(x.error_code == 0 and x.total_bytes > 0 and x.usable_bytes > 0 for x in r.results)
        placed = where(c, t)
        assert sorted(placed) == list(range(6))
        counts = {d: list(placed.values()).count(os.path.abspath(d)) for d in dirs}
        assert sorted(counts.values()) == [2, 2, 2], counts    # the fewest partitions first
        for p in range(6):
            c.produce(t, [f"v{p}"], partition=p)
    ids = set()
    for d in dirs:
        props = read_properties_file(os.path.join(d, "meta.properties"))
        assert props["node.id"] == "1" and props["cluster.id"]
        ids.add(props["directory.id"])
    assert len(ids) == 3
    b.restart()   # a clean restart: each dir's checkpoints and marker bring its logs back
    for d in dirs:
        assert os.path.exists(os.path.join(d, "recovery-point-offset-checkpoint"))
    with b.client() as c:
        assert where(c, t) == placed
        for p in range(6):
            assert [bytes(r.value) for r in c.consume(t, 1, partition=p)] == [f"v{p}".encode()]


def test_kafka_python_moves_a_replica_between_dirs_while_it_is_written(jbod):
    b, dirs = jbod
    t = f"move-{uuid.uuid4().hex[:6]}"
    with b.client() as c:
        c.create_topic(t, 1)
        src = where(c, t)[0]
        dest = next(os.path.abspath(d) for d in dirs if os.path.abspath(d) != src)
        sent = [f"before-{i}" for i in range(2000)]
        for i in range(0, len(sent), 100):
            c.produce(t, sent[i:i + 100])
    stop = threading.Event()
    during: list[str] = []

    def keep_writing():
        with b.client() as w:
            i = 0
            while not stop.is_set():
                vals = [f"during-{i}-{j}" for j in range(20)]
                w.produce(t, vals)
                during.extend(vals)
                i += 1
    writer = threading.Thread(target=keep_writing)
    writer.start()
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers, request_timeout_ms=10000)
    try:
        got = admin.alter_replica_log_dirs({TopicPartitionReplica(t, 0, 1): dest})
        assert list(got.values()) == [Errors.NoError]
        deadline = time.monotonic() + 20
        while True:
            placed = _kafka_python_dirs(admin, t)
            if placed == {0: dest}:
                break
            assert time.monotonic() < deadline, placed
            time.sleep(0.05)
    finally:
        stop.set()
        writer.join(10)
        admin.close()
    assert not os.path.exists(os.path.join(src, f"{t}-0"))
    assert os.path.isdir(os.path.join(dest, f"{t}-0"))
    with b.client() as c:
        c.produce(t, ["after"])
        want = [v.encode() for v in sent + during + ["after"]]
        assert [bytes(r.value) for r in c.consume(t, len(want))] == want
    b.restart()
    with b.client() as c:
        assert where(c, t) == {0: dest}
        assert [bytes(r.value) for r in c.consume(t, len(want))] == want


def _kafka_python_dirs(admin, topic: str) -> dict[int, str]:
    """{partition: log dir} of ``topic`` as kafka-python's describe_log_dirs reads it."""
    out = {}
    for broker in admin.describe_log_dirs():
        for r in broker["log_dirs"]:
            for t in r["topics"]:
                if t["name"] == topic:
                    for p in t["partitions"]:
                        if not p["is_future_key"]:
                            out[p["partition_index"]] = r["log_dir"]
    return out


def test_a_failed_dir_takes_only_its_partitions_offline(jbod):
    b, dirs = jbod
    t = f"half-{uuid.uuid4().hex[:6]}"
    with b.client() as c:
        c.create_topic(t, 3)
        placed = where(c, t)
        for p in range(3):
            c.produce(t, [f"v{p}"], partition=p)
        bad = placed[0]
        b.broker.logs.failure_channel.maybe_add_offline_log_dir(bad, "test", OSError(5, "Input/output error"))
        with pytest.raises(KafkaWireError) as e:
            c.produce(t, ["lost"], partition=0)
        assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        for p in (1, 2):   # the other dirs serve on
            assert c.produce(t, [f"w{p}"], partition=p) == [1]
        r = {x.log_dir: x.error_code for x in c.request("DescribeLogDirs", 4, topics=None).results}
        assert r == {os.path.abspath(d): (ErrorCode.KAFKA_STORAGE_ERROR if os.path.abspath(d) == bad else 0)
                     for d in dirs}
        new = f"new-{uuid.uuid4().hex[:6]}"      # new partitions go to the online dirs
        c.create_topic(new, 4)
        assert bad not in where(c, new).values() and len(where(c, new)) == 4
    assert b.running


def test_every_dir_failed_shuts_the_broker_down(jbod):
    b, dirs = jbod
    t = f"all-{uuid.uuid4().hex[:6]}"
    with b.client() as c:
        c.create_topic(t, 3)
        for p in range(3):
            c.produce(t, [f"v{p}"], partition=p)
    channel = b.broker.logs.failure_channel
    for d in dirs[:2]:
        channel.maybe_add_offline_log_dir(os.path.abspath(d), "test", OSError(28, "No space left on device"))
    time.sleep(0.3)
    assert b.running                 # one dir left: still serving
    channel.maybe_add_offline_log_dir(os.path.abspath(dirs[2]), "test", OSError(28, "No space left on device"))
    b._thread.join(10)
    assert not b.running
    assert isinstance(b._error, LogDirsFailed) or any(isinstance(e, LogDirsFailed) for e in _leaves(b._error))
    b._thread = None
    b.start()                         # healthy disks again: every acknowledged record is there
    with b.client() as c:
        for p in range(3):
            deadline = time.monotonic() + 10
            while True:   # the controller elects the replica again once it has started
                try:
                    got = c.consume(t, 1, partition=p)
                    break
                except KafkaWireError as exc:
                    assert exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and time.monotonic() < deadline
                    time.sleep(0.05)
            assert [bytes(r.value) for r in got] == [f"v{p}".encode()]


def _leaves(exc):
    if isinstance(exc, BaseExceptionGroup):
        return [x for e in exc.exceptions for x in _leaves(e)]
    return [exc]


def test_a_move_keeps_the_log_start_offset_inside_a_batch_and_the_producer_state(jbod):
    """DeleteRecords left the log start offset inside a batch; an idempotent producer wrote
    it: the moved log starts at the same offset, and a retried batch is still a duplicate."""
    from kwire.codec.apis import api
    from kwire.codec.records import build_batch

    b, dirs = jbod
    t = f"lso-{uuid.uuid4().hex[:6]}"
    with b.client() as c:
        c.create_topic(t, 1)
        now = int(time.time() * 1000)
        batch = build_batch([(None, b"v%d" % i, [], now) for i in range(10)], producer_id=_pid(c),
                            producer_epoch=0, base_sequence=0)
        assert _produce(c, t, batch) == (0, 0)
        Rq = api("DeleteRecords").request
        r = c.request("DeleteRecords", 2, timeout_ms=5000, topics=[Rq.struct("DeleteRecordsTopic")(
            name=t, partitions=[Rq.struct("DeleteRecordsPartition")(partition_index=0, offset=5)])])
        assert r.topics[0].partitions[0].low_watermark == 5
        src = where(c, t)[0]
        dest = next(os.path.abspath(d) for d in dirs if os.path.abspath(d) != src)
        assert _alter(c, dest, t) == 0
        deadline = time.monotonic() + 10
        while where(c, t) != {0: dest}:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        plog = b.broker.logs.get(t, 0)
        assert (plog.log_start_offset, plog.log_end_offset) == (5, 10)
        assert _produce(c, t, batch) == (0, 0)   # the same sequence again: a duplicate, not appended
        assert b.broker.logs.get(t, 0).log_end_offset == 10
        assert [bytes(r.value) for r in c.consume(t, 5, offset=5)] == [b"v%d" % i for i in range(5, 10)]


def _pid(c) -> int:
    r = c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                  producer_epoch=-1)
    assert r.error_code == 0
    return r.producer_id


def _produce(c, topic: str, batch: bytes) -> tuple[int, int]:
    from kwire.codec.apis import api
    Rq = api("Produce").request
    r = c.request("Produce", 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        Rq.struct("TopicProduceData")(name=topic, partition_data=[
            Rq.struct("PartitionProduceData")(index=0, records=batch)])])
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def _alter(c, path: str, topic: str) -> int:
    from kwire.codec.apis import api
    A = api("AlterReplicaLogDirs").request
    r = c.request("AlterReplicaLogDirs", 2, dirs=[A.struct("AlterReplicaLogDir")(
        path=path, topics=[A.struct("AlterReplicaLogDirTopic")(name=topic, partitions=[0])])])
    return r.results[0].partitions[0].error_code
