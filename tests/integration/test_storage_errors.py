"""Storage errors: an I/O error (injected, or a real full file system) takes the log dir
offline the way Kafka's LogDirFailureChannel does: KAFKA_STORAGE_ERROR for its partitions,
the broker keeps answering everything else (here it has a second, healthy log dir: a broker
whose every log dir failed shuts down, tests/integration/test_jbod.py), no acknowledged
record is lost, and a restart on a healthy disk recovers."""
from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import KafkaWireError, WireClient

from .test_validation_wire import list_offsets, produce_raw

pytestmark = pytest.mark.slow


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class FailingDisk:
    """Makes ``os.<name>`` raise ``OSError(err)`` for files whose path contains ``needle``
    (the log's own calls only; everything else in the process is untouched)."""

    def __init__(self, monkeypatch, needle: str):
        self.monkeypatch = monkeypatch
        self.needle = needle
        self.hits = 0

    def fail(self, name: str, err: int) -> None:
        real = getattr(os, name)

        def failing(fd, *args, **kwargs):
            if self.needle in _fd_path(fd):
                self.hits += 1
                raise OSError(err, os.strerror(err))
            return real(fd, *args, **kwargs)

        self.monkeypatch.setattr(os, name, failing)

    def heal(self) -> None:
        self.monkeypatch.undo()


def metadata_ok(c: WireClient, topic: str) -> None:
    T = api("Metadata").request.struct("MetadataRequestTopic")
    resp = c.request("Metadata", 9, topics=[T(name=topic)], allow_auto_topic_creation=False)
    assert resp.topics[0].error_code == 0 and resp.brokers


def fetch_error(c: WireClient, topic: str, offset: int = 0) -> int:
    Rq = api("Fetch").request
    ft = Rq.struct("FetchTopic")(topic=topic, partitions=[Rq.struct("FetchPartition")(
        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])
    resp = c.request("Fetch", 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=8 << 20,
                     isolation_level=0, session_id=0, session_epoch=-1, topics=[ft], forgotten_topics_data=[],
                     rack_id="")
    return resp.responses[0].partitions[0].error_code


def delete_records_error(c: WireClient, topic: str, offset: int) -> int:
    Rq = api("DeleteRecords").request
    t = Rq.struct("DeleteRecordsTopic")(name=topic, partitions=[
        Rq.struct("DeleteRecordsPartition")(partition_index=0, offset=offset)])
    resp = c.request("DeleteRecords", 2, topics=[t], timeout_ms=5000)
    return resp.topics[0].partitions[0].error_code


def _values(records) -> list[bytes]:
    return [bytes(r.value) for r in records]


@pytest.fixture
def broker(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), log_dirs=[str(tmp_path / "spare")],
               overrides={"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 2})
    b.start()
    yield b
    b.stop()


@pytest.mark.parametrize("call,err", [("pwritev", errno.ENOSPC), ("pwritev", errno.EIO),
                                      ("pwritev", errno.EROFS)])
def test_append_error_takes_log_dir_offline(broker, monkeypatch, caplog, call, err):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    other = f"o-{uuid.uuid4().hex[:8]}"
    with broker.client() as c:
        c.create_topic(topic)
        c.create_topic(other)
        acked = [f"r{i}" for i in range(20)]
        for i in range(0, 20, 5):
            c.produce(topic, acked[i:i + 5])
        c.produce(other, ["x"])
        logs = broker.broker.logs
        failed, healthy = logs.log_dir_of(topic, 0), logs.log_dir_of(other, 0)
        assert failed != healthy   # two dirs, one partition each (the fewest first)
        disk = FailingDisk(monkeypatch, topic)
        disk.fail(call, err)
        with caplog.at_level(logging.ERROR, logger="kwire.log"):
            with pytest.raises(KafkaWireError) as e:
                c.produce(topic, ["lost"])
            assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
            # every partition of the dir is offline now, each request says so; the other dir serves
            with pytest.raises(KafkaWireError) as e:
                c.produce(topic, ["lost again"])
            assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
            assert produce_raw(c, other, _batch(["y"])).error_code == ErrorCode.NONE
        offline = [r for r in caplog.records if "is offline" in r.getMessage()]
        assert len(offline) == 1 and failed in offline[0].getMessage()
        assert os.strerror(err) in offline[0].getMessage()
        assert fetch_error(c, topic) == ErrorCode.KAFKA_STORAGE_ERROR
        assert list_offsets(c, topic, -1)[0] == ErrorCode.KAFKA_STORAGE_ERROR
        assert list_offsets(c, topic, 0)[0] == ErrorCode.KAFKA_STORAGE_ERROR
        assert delete_records_error(c, topic, 1) == ErrorCode.KAFKA_STORAGE_ERROR
        # the broker serves everything else
        metadata_ok(c, topic)
        assert c.request("ApiVersions", 3, client_software_name="t", client_software_version="1").error_code == 0
        c.create_topic(f"new-{uuid.uuid4().hex[:6]}")  # metadata lives in its own log
    with broker.client() as c2:  # and new connections
        metadata_ok(c2, other)
    disk.heal()
    broker.restart()  # the disk is healthy again
    with broker.client() as c:
        assert _values(c.consume(topic, 20)) == [v.encode() for v in acked]
        assert c.produce(topic, ["after"]) == [20]
        assert _values(c.consume(other, 2)) == [b"x", b"y"]


def _batch(values):
    import time

    from kwire.codec.records import build_batch
    now = int(time.time() * 1000)
    return build_batch([(None, v.encode(), [], now) for v in values])


def test_read_error_answers_storage_error(broker, monkeypatch):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    with broker.client() as c:
        c.create_topic(topic)
        c.produce(topic, ["a", "b"])
        c.produce(topic, ["c"])
        disk = FailingDisk(monkeypatch, topic)
        disk.fail("pread", errno.EIO)
        assert fetch_error(c, topic, offset=2) == ErrorCode.KAFKA_STORAGE_ERROR
        assert disk.hits
        with pytest.raises(KafkaWireError) as e:
            c.produce(topic, ["d"])
        assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        metadata_ok(c, topic)
    disk.heal()
    broker.restart()
    with broker.client() as c:
        assert _values(c.consume(topic, 3)) == [b"a", b"b", b"c"]


def test_fsync_per_append_failure_is_not_acknowledged(tmp_path, monkeypatch):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    with Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides={"log.flush.per.append": True}) as b:
        with b.client() as c:
            c.create_topic(topic)
            assert b.broker.logs.get(topic, 0).config.fsync_per_append
            synced = []
            real = os.fdatasync

            def counting(fd):
                synced.append(_fd_path(fd))
                return real(fd)

            monkeypatch.setattr(os, "fdatasync", counting)
            assert c.produce(topic, ["a"]) == [0]
            assert any(p.endswith(".log") and topic in p for p in synced)  # before the answer
            monkeypatch.undo()
            disk = FailingDisk(monkeypatch, topic)
            disk.fail("fdatasync", errno.EIO)
            with pytest.raises(KafkaWireError) as e:
                c.produce(topic, ["b"])
            assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
            metadata_ok(c, topic)
            disk.heal()
        b.restart()
        with b.client() as c:
            assert _values(c.consume(topic, 1)) == [b"a"]


def _can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.mark.skipif(not _can_mount(), reason="needs root to mount a small tmpfs")
def test_real_full_disk(tmp_path):
    """A log dir on a 2 MiB tmpfs fills up: ENOSPC answers KAFKA_STORAGE_ERROR for its
    partitions, the broker keeps serving from its other (healthy) log dir, and the dirs
    copied to a healthy disk hold every acknowledged record."""
    mnt = tempfile.mkdtemp(prefix="kwire-full-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], capture_output=True)
    if r.returncode != 0:
        os.rmdir(mnt)
        pytest.skip(f"mount refused: {r.stderr.decode().strip()}")
    topic = "fill"
    acked: list[bytes] = []
    try:
        data = os.path.join(mnt, "data")
        first = str(tmp_path / "first")   # the metadata log and the other topic: a healthy disk
        with Broker(mode="thread", data_dir=first, log_dirs=[data],
                    overrides={"offsets.topic.num.partitions": 1}) as b:
            with b.client() as c:
                c.create_topic("pad")      # in the first dir: the next partition goes to the other
                c.create_topic(topic)
                assert b.broker.logs.log_dir_of(topic, 0) == os.path.abspath(data)
                code = 0
                for i in range(400):
                    values = [f"{i}-{j}-".encode() + b"x" * 1000 for j in range(10)]
                    try:
                        c.produce(topic, values)
                    except KafkaWireError as exc:
                        code = exc.code
                        break
                    acked.extend(values)
                assert code == ErrorCode.KAFKA_STORAGE_ERROR and acked
                metadata_ok(c, topic)
                assert fetch_error(c, topic) == ErrorCode.KAFKA_STORAGE_ERROR
                assert c.produce("pad", ["still served"]) == [0]
            healthy = str(tmp_path / "healthy")
            b.stop()
            shutil.copytree(data, healthy)
        with Broker(mode="thread", data_dir=first, log_dirs=[healthy]) as b2:
            got = b2.consume(topic, len(acked), timeout=20)
            assert [bytes(r.value) for r in got] == acked
            assert b2.produce(topic, ["more"]) == [len(acked)]
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)
        os.rmdir(mnt)


def test_roll_and_flush_errors(broker, monkeypatch):
    """A segment roll that cannot create its files, and a flush (flush.messages=1) that
    cannot fdatasync, both take the dir offline; what was acknowledged survives."""
    rolling = f"r-{uuid.uuid4().hex[:8]}"
    flushing = f"f-{uuid.uuid4().hex[:8]}"
    with broker.client() as c:
        c.create_topic(rolling, config={"internal.segment.bytes": 2000})
        c.create_topic(flushing, config={"flush.messages": 1})
        acked = [b"%d" % i + b"x" * 300 for i in range(4)]
        for v in acked:
            c.produce(rolling, [v])  # ~370 B each: no roll yet
        c.produce(flushing, ["kept"])
        real_open = os.open

        def no_new_files(path, flags, *args, **kwargs):
            if rolling in str(path) and flags & os.O_CREAT:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", no_new_files)
        code = 0
        for i in range(10):  # until the active segment is full and the log rolls
            try:
                c.produce(rolling, [b"y" * 300])
            except KafkaWireError as exc:
                code = exc.code
                break
            acked.append(b"y" * 300)
        assert code == ErrorCode.KAFKA_STORAGE_ERROR
        metadata_ok(c, rolling)
    monkeypatch.undo()
    broker.restart()
    with broker.client() as c:
        assert _values(c.consume(rolling, len(acked))) == acked
        FailingDisk(monkeypatch, flushing).fail("fdatasync", errno.EIO)
        with pytest.raises(KafkaWireError) as e:
            c.produce(flushing, ["not acknowledged"])
        assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    broker.restart()
    with broker.client() as c:
        assert _values(c.consume(flushing, 1)) == [b"kept"]
