"""Log compaction through a running broker: the cleaner thread compacts a cleanup.policy=compact
topic (and one switched to compact with IncrementalAlterConfigs); confluent-kafka and
kafka-python read it from the beginning (the latest value of every key, deleted keys gone
after delete.retention.ms) and from an offset inside a removed range (the next record); a
Produce without a key gets INVALID_RECORD; the metrics show the passes."""
from __future__ import annotations

import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kwire.codec.apis import api
from kwire.testing import Broker
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

KEYS = [f"user-{i}".encode() for i in range(8)]


@pytest.fixture(scope="module")
def broker():
    overrides = {"log.cleaner.backoff.ms": 50, "metrics.listen": "127.0.0.1:0",
                 "log.retention.check.interval.ms": 200}
    with Broker(mode="thread", overrides=overrides) as b:
        yield b


def _fill(b, topic, rounds=30):
    """Updates of every key, then deletes of two; returns {key: latest value or None}."""
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0})
    model = {}
    for r in range(rounds):
        for k in KEYS:
            v = f"{k.decode()}-v{r}".encode() * 4
            p.produce(topic, key=k, value=v, partition=0)
            model[k] = v
        p.flush(10)
    for k in KEYS[:2]:
        p.produce(topic, key=k, value=None, partition=0)
        model[k] = None
    for i in range(20):   # a tail that rolls the tombstones out of the active segment
        p.produce(topic, key=b"tail-%d" % (i % 2), value=b"t" * 40, partition=0)
        model[b"tail-%d" % (i % 2)] = b"t" * 40
    p.flush(10)
    return model


def _read_confluent(b, topic, start=0, group=None):
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": group or uuid.uuid4().hex,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    out = []
    try:
        c.assign([TopicPartition(topic, 0, start)])
        while True:
            m = c.poll(10)
            assert m is not None, "no end of partition within 10 s"
            if m.error():
                if m.error().code() == -191:   # _PARTITION_EOF
                    break
                raise AssertionError(m.error())
            out.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    return out


def _wait_compacted(b, topic, written):
    lg = b.broker.logs.get(topic, 0)
    wait_until(lambda: b.server.cleaner.checkpoints.get((topic, 0), 0) >= lg.segments[-1].base_offset
               and len(lg) > 0 and b.server.cleaner.passes > 0, timeout=20, message="the cleaner compacts the topic")
    return lg


def _check_latest(rs, model, deleted_gone: bool):
    offsets = [o for o, _, _ in rs]
    assert offsets == sorted(set(offsets))
    last = {}
    for _, k, v in rs:
        last[k] = v
    for k, v in model.items():
        if v is None:
            assert last.get(k, None) is None          # a tombstone or nothing: never an old value
            if deleted_gone:
                assert k not in last
        else:
            assert last[k] == v


def test_compacted_topic_read_from_start_and_middle(broker):
    b = broker
    topic = "compacted-" + uuid.uuid4().hex[:6]
    b.create_topic(topic, 1, {"cleanup.policy": "compact", "internal.segment.bytes": 2048,
                              "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "300"})
    model = _fill(b, topic)
    total = sum(1 for _ in model) and b.broker.logs.get(topic, 0).log_end_offset
    _wait_compacted(b, topic, total)
    rs = _read_confluent(b, topic)
    assert len(rs) < total / 3, f"{len(rs)} of {total} records left"
    _check_latest(rs, model, deleted_gone=False)
    # more writes make the log dirty again: the first pass that finds the tombstones below the
    # active segment gives them a delete horizon (now + delete.retention.ms); a pass after it
    # removes them
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    lg = b.broker.logs.get(topic, 0)

    def more_writes_and_check():
        for i in range(40):
            p.produce(topic, key=b"tail-%d" % (i % 2), value=b"u" * 40, partition=0)
            model[b"tail-%d" % (i % 2)] = b"u" * 40
        p.flush(10)
        time.sleep(0.3)
        return not [k for k in _read_log_keys(lg) if k in KEYS[:2]]

    wait_until(more_writes_and_check, timeout=30, message="tombstones go after delete.retention.ms")
    rs = _read_confluent(b, topic)
    _check_latest(rs, model, deleted_gone=True)
    # seeks into a removed range: the next record (librdkafka and kafka-python)
    offsets = [o for o, _, _ in rs]
    gap = next(o + 1 for o, n in zip(offsets, offsets[1:]) if n > o + 1)
    nxt = next(o for o in offsets if o >= gap)
    assert _read_confluent(b, topic, start=gap)[0][0] == nxt
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    kc = KafkaConsumer(bootstrap_servers=b.bootstrap_servers, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        tp = KTP(topic, 0)
        kc.assign([tp])
        kc.seek(tp, gap)
        first = next(iter(kc))
        assert first.offset == nxt
        kc.seek_to_beginning(tp)
        got = []
        for m in kc:      # up to consumer_timeout_ms for each record: stops at the last one expected
            got.append((m.offset, m.key, m.value))
            if len(got) == len(rs):
                break
        assert got == rs
        # and nothing after it (instead of waiting out consumer_timeout_ms once more)
        assert [r for recs in kc.poll(timeout_ms=1000).values() for r in recs] == []
    finally:
        kc.close()


def _read_log_keys(lg):
    from kwire.codec.records import iter_batches

    keys = []
    off = lg.log_start_offset
    while off < lg.log_end_offset:
        data = bytes(lg.read(off, 1 << 20))
        if not data:
            break
        for bt in iter_batches(data):
            keys += [r.key for r in bt.records()]
            off = bt.next_offset
    return keys


def test_alter_to_compact_and_null_key_refused(broker):
    b = broker
    topic = "altered-" + uuid.uuid4().hex[:6]
    b.create_topic(topic, 1, {"internal.segment.bytes": 2048, "min.cleanable.dirty.ratio": "0.01"})
    model = _fill(b, topic, rounds=10)
    lg = b.broker.logs.get(topic, 0)
    before = lg.size_in_bytes
    assert b.server.cleaner.checkpoints.get((topic, 0)) is None
    with b.client() as c:
        R = api("IncrementalAlterConfigs").request
        res = R.struct("AlterConfigsResource")(resource_type=2, resource_name=topic, configs=[
            R.struct("AlterableConfig")(name="cleanup.policy", config_operation=0, value="compact")])
        assert c.request("IncrementalAlterConfigs", 0, resources=[res], validate_only=False).responses[0].error_code == 0
    _wait_compacted(b, topic, lg.log_end_offset)
    assert lg.size_in_bytes < before
    # DescribeLogDirs (kafka-python's admin client) gives the size after cleaning: the files'
    assert _described_size(b, topic) == _disk_size(lg) == lg.size_in_bytes
    _check_latest(_read_confluent(b, topic), model, deleted_gone=False)
    # a compacted topic needs keys
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "retries": 0})
    errors = []
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert errors and errors[0] is not None and errors[0].name() == "INVALID_RECORD"
    # the passes are visible in the metrics
    body = urllib.request.urlopen(f"http://127.0.0.1:{b.server.metrics_port}/metrics", timeout=10).read().decode()
    passes = [ln for ln in body.splitlines() if ln.startswith("kwire_log_cleaner_passes_total")]
    assert passes and float(passes[0].split()[-1]) >= 1
    assert "kafka_log_logcleaner_max_clean_time_secs" in body
    assert "kafka_log_logcleanermanager_max_dirty_percent" in body


def _disk_size(lg):
    import glob
    import os

    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(lg.dir, "*.log")))


def _described_size(b, topic):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers, request_timeout_ms=10000)
    try:
        [per_broker] = admin.describe_log_dirs({topic: [0]})
    finally:
        admin.close()
    [d] = per_broker["log_dirs"]
    [t] = d["topics"]
    [p] = t["partitions"]
    return p["partition_size"]


def test_compact_delete_both_apply(broker):
    """cleanup.policy=compact,delete: the cleaner compacts the topic and retention.ms deletes
    its old segments too (Kafka applies both)."""
    b = broker
    topic = "compdel-" + uuid.uuid4().hex[:6]
    b.create_topic(topic, 1, {"cleanup.policy": "compact,delete", "internal.segment.bytes": 2048,
                              "min.cleanable.dirty.ratio": "0.01", "retention.ms": "600000"})
    model = _fill(b, topic)
    lg = _wait_compacted(b, topic, b.broker.logs.get(topic, 0).log_end_offset)
    assert lg.log_start_offset == 0
    rs = _read_confluent(b, topic)
    _check_latest(rs, model, deleted_gone=False)
    assert len(rs) < lg.log_end_offset / 3
    compacted_size = _described_size(b, topic)
    assert compacted_size == _disk_size(lg)
    # then retention (retention.ms lowered with IncrementalAlterConfigs): every segment but
    # the active one is older than retention.ms and goes
    with b.client() as c:
        R = api("IncrementalAlterConfigs").request
        res = R.struct("AlterConfigsResource")(resource_type=2, resource_name=topic, configs=[
            R.struct("AlterableConfig")(name="retention.ms", config_operation=0, value="1")])
        assert c.request("IncrementalAlterConfigs", 0, resources=[res], validate_only=False).responses[0].error_code == 0
    wait_until(lambda: lg.log_start_offset >= lg.segments[-1].base_offset > 0, timeout=20,
               message="retention.ms deletes the compacted topic's old segments")
    assert _described_size(b, topic) == _disk_size(lg) < compacted_size


def test_consumer_offsets_compacted_and_reloaded(tmp_path):
    """__consumer_offsets is compact (as Kafka creates it): the cleaner compacts it, and after
    a restart the group coordinator reloads the latest commit of every partition from the
    compacted log (gaps and emptied batches included)."""
    from kwire.groups.records import OFFSETS_TOPIC

    overrides = {"log.cleaner.backoff.ms": 50, "offsets.topic.segment.bytes": 1024,
                 "log.cleaner.min.cleanable.ratio": 0.01,   # the broker default of min.cleanable.dirty.ratio
                 "offsets.topic.num.partitions": 1, "group.initial.rebalance.delay.ms": 0}
    with Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=overrides) as b:
        b.create_topic("events", 2)
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
        try:
            for n in range(1, 41):
                c.commit(offsets=[TopicPartition("events", 0, n), TopicPartition("events", 1, 100 + n)],
                         asynchronous=False)
        finally:
            c.close()
        lg = b.broker.logs.get(OFFSETS_TOPIC, 0)
        wait_until(lambda: b.server.cleaner.checkpoints.get((OFFSETS_TOPIC, 0), 0) >= lg.segments[-1].base_offset
                   and len(_read_log_keys(lg)) < 40, timeout=20, message="the cleaner compacts __consumer_offsets")
        b.restart()
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
        try:
            got = c.committed([TopicPartition("events", 0), TopicPartition("events", 1)], timeout=10)
            assert [tp.offset for tp in got] == [40, 140]
        finally:
            c.close()
