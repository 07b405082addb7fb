"""DescribeLogDirs against a running kwire: the data dir's absolute path and file system
sizes, each partition's size as its segment files on disk hold it, the topics filter, an
offline dir answering KAFKA_STORAGE_ERROR, and our bytes read by kafka-python's own protocol
classes and admin client."""
from __future__ import annotations

import errno
import glob
import os
import uuid

import pytest
from kafka.protocol.admin.cluster import DescribeLogDirsRequest as KpRequest
from kafka.protocol.admin.cluster import DescribeLogDirsResponse as KpResponse

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import KafkaWireError, WireClient

from .test_storage_errors import FailingDisk

pytestmark = pytest.mark.slow


@pytest.fixture
def broker(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"),
               overrides={"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 2,
                          "kwire.emulate.kafka.version": "4.3"})   # DescribeLogDirs v5 is Kafka 4.3's
    b.start()
    with b.client() as c:   # a group's first FindCoordinator creates __consumer_offsets (an internal topic's logs)
        assert c.request("FindCoordinator", 3, key="g", key_type=0).error_code == 0
    yield b
    b.stop()


def disk_size(data_dir: str, topic: str, partition: int) -> int:
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(data_dir, f"{topic}-{partition}", "*.log")))


def describe(c, version: int, topics: dict[str, list[int]] | None):
    Rq = api("DescribeLogDirs").request
    T = Rq.struct("DescribableLogDirTopic")
    arg = None if topics is None else [T(topic=t, partitions=ps) for t, ps in topics.items()]
    return c.request("DescribeLogDirs", version, topics=arg)


def sizes(result) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions}


def _produce_known(c, topic: str, counts: list[int]) -> None:
    for p, n in enumerate(counts):
        for i in range(0, n, 10):
            c.produce(topic, [f"{topic}-{p}-{j}-" + "x" * (50 + j) for j in range(i, min(n, i + 10))], partition=p)


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_sizes_match_the_files_on_disk(broker, version):
    a, b = f"a-{uuid.uuid4().hex[:6]}", f"b-{uuid.uuid4().hex[:6]}"
    with broker.client() as c:
        c.create_topic(a, partitions=3)
        c.create_topic(b, partitions=2)
        _produce_known(c, a, [0, 25, 70])
        _produce_known(c, b, [5, 40])
        resp = describe(c, version, None)
    assert resp.throttle_time_ms == 0
    if version >= 3:
        assert resp.error_code == 0
    [res] = resp.results
    assert res.error_code == 0
    assert res.log_dir == os.path.abspath(broker.data_dir)
    got = sizes(res)
    want = {(t, p): disk_size(broker.data_dir, t, p) for t, n in ((a, 3), (b, 2)) for p in range(n)}
    for tp, size in want.items():
        assert got[tp] == size, tp
    assert got[(a, 0)] == 0 and got[(a, 2)] > got[(a, 1)] > 0 and got[(b, 1)] > got[(b, 0)] > 0
    # every local log, internal topics included, and nothing that is not on disk
    assert {tp for tp in got if tp[0] == "__consumer_offsets"} == {("__consumer_offsets", 0), ("__consumer_offsets", 1)}
    for (t, p), size in got.items():
        assert os.path.isdir(os.path.join(broker.data_dir, f"{t}-{p}")) and size == disk_size(broker.data_dir, t, p)
    names = [t.name for t in res.topics]
    assert names == sorted(names) and len(set(names)) == len(names)
    for t in res.topics:
        assert [p.partition_index for p in t.partitions] == sorted(p.partition_index for p in t.partitions)
        assert all(p.offset_lag == 0 and p.is_future_key is False for p in t.partitions)
    if version >= 4:
        st = os.statvfs(broker.data_dir)
        assert res.total_bytes == st.f_blocks * st.f_frsize
        assert 0 < res.usable_bytes <= res.total_bytes
        assert abs(res.usable_bytes - st.f_bavail * st.f_frsize) < 64 << 20  # other writers share the disk
    else:
        assert res.total_bytes == -1 and res.usable_bytes == -1   # not on the wire before v4
    if version >= 5:
        assert res.is_cordoned is False


def test_sizes_grow_with_appends(broker):
    t = f"g-{uuid.uuid4().hex[:6]}"
    with broker.client() as c:
        c.create_topic(t)
        before = sizes(describe(c, 4, {t: [0]}).results[0])[(t, 0)]
        c.produce(t, ["y" * 1000])
        after = sizes(describe(c, 4, {t: [0]}).results[0])[(t, 0)]
    assert before == 0 and after > 1000 and after == disk_size(broker.data_dir, t, 0)


def test_topics_filter(broker):
    a, b = f"a-{uuid.uuid4().hex[:6]}", f"b-{uuid.uuid4().hex[:6]}"
    with broker.client() as c:
        c.create_topic(a, partitions=3)
        c.create_topic(b, partitions=2)
        _produce_known(c, a, [3, 4, 5])
        res = describe(c, 4, {a: [0, 2], b: [1], "no-such-topic": [0], f"{b}-x": []}).results[0]
        assert set(sizes(res)) == {(a, 0), (a, 2), (b, 1)}   # unknown names and partitions are left out
        res = describe(c, 4, {a: [7]}).results[0]
        assert res.error_code == 0 and res.topics == []      # a topic with none of its partitions here
        res = describe(c, 4, {}).results[0]
        assert res.error_code == 0 and res.topics == [] and res.total_bytes > 0


def test_offline_log_dir_answers_kafka_storage_error(tmp_path, monkeypatch):
    """The failed dir answers KAFKA_STORAGE_ERROR and nothing else; the broker's other log dir
    (it needs one to keep running: a broker whose every log dir failed shuts down) is described
    as usual."""
    t = f"t-{uuid.uuid4().hex[:8]}"
    data, spare = str(tmp_path / "data"), str(tmp_path / "spare")
    with Broker(mode="thread", data_dir=data, log_dirs=[spare],
                overrides={"kwire.emulate.kafka.version": "4.3"}) as b, b.client() as c:
        c.create_topic(t)
        c.produce(t, ["a", "b"])
        assert [r.error_code for r in describe(c, 4, None).results] == [0, 0]
        assert b.broker.logs.log_dir_of(t, 0) == os.path.abspath(data)
        disk = FailingDisk(monkeypatch, t)
        disk.fail("pwritev", errno.EIO)
        with pytest.raises(KafkaWireError) as e:
            c.produce(t, ["lost"])
        assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        for version in (1, 4, 5):
            resp = describe(c, version, None)
            res, other = resp.results
            assert res.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert res.log_dir == os.path.abspath(data)
            assert res.topics == []
            assert other.error_code == 0 and other.log_dir == os.path.abspath(spare)
            if version >= 4:
                assert res.total_bytes == -1 and res.usable_bytes == -1
                assert other.total_bytes > 0
            if version >= 3:
                assert resp.error_code == 0
        disk.heal()


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_kafka_python_protocol_classes_decode_our_bytes(broker, version):
    """kafka-python encodes the request and decodes our response with its own classes."""
    t = f"k-{uuid.uuid4().hex[:6]}"
    with broker.client() as c:
        c.create_topic(t, partitions=2)
        _produce_known(c, t, [12, 30])
    Topic = KpRequest[version].DescribableLogDirTopic
    req = KpRequest[version](topics=[Topic(topic=t, partitions=[0, 1])])
    req.with_header(correlation_id=77, client_id="logdirs-test")
    with WireClient(broker.bootstrap_servers) as c:
        c.send_raw(req.encode(header=True, framed=True))
        got = KpResponse[version].decode(c.recv_frame(), header=True)
    assert got.header.correlation_id == 77
    [res] = got.results
    assert res.error_code == 0 and res.log_dir == os.path.abspath(broker.data_dir)
    [topic] = res.topics
    assert topic.name == t
    assert {p.partition_index: p.partition_size for p in topic.partitions} == {
        0: disk_size(broker.data_dir, t, 0), 1: disk_size(broker.data_dir, t, 1)}
    if version >= 4:
        assert res.total_bytes > 0 and res.usable_bytes > 0


def test_kafka_python_admin_describe_log_dirs(broker):
    from kafka import KafkaAdminClient

    t = f"adm-{uuid.uuid4().hex[:6]}"
    with broker.client() as c:
        c.create_topic(t, partitions=2)
        _produce_known(c, t, [7, 0])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        everything = admin.describe_log_dirs()
        only = admin.describe_log_dirs({t: [0]})
    finally:
        admin.close()
    [per_broker] = everything
    [d] = per_broker["log_dirs"]
    assert d["error_code"] == 0 and d["log_dir"] == os.path.abspath(broker.data_dir)
    by_name = {x["name"]: x for x in d["topics"]}
    assert {p["partition_index"]: p["partition_size"] for p in by_name[t]["partitions"]} == {
        0: disk_size(broker.data_dir, t, 0), 1: 0}
    [d] = only[0]["log_dirs"]
    assert [(x["name"], [p["partition_index"] for p in x["partitions"]]) for x in d["topics"]] == [(t, [0])]
