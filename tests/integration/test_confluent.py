"""confluent-kafka (librdkafka) against a running kwire."""
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

pytestmark = pytest.mark.slow

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def produce(bootstrap, topic, records, **conf):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", **conf})
    acked = []

    def cb(err, msg):
        assert err is None, err
        acked.append((msg.partition(), msg.offset(), msg.key()))

    for r in records:
        p.produce(topic, on_delivery=cb, **r)
    assert p.flush(30) == 0
    return acked


def consume(bootstrap, topic, n, partitions=1, timeout=30, **conf):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, **conf})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None or m.error().code() == KafkaError._PARTITION_EOF, m.error()
        if m.error() is None:
            out.append(m)
    c.close()
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_codec(bootstrap, topic, codec):
    records = [{"key": f"k{i}".encode(), "value": (f"v{i}-" * (i % 50)).encode(),
                "headers": [("h", f"{i}".encode()), ("empty", b"")]} for i in range(500)]
    acked = produce(bootstrap, topic, records, **{"compression.type": codec})
    assert sorted(o for _, o, _ in acked) == list(range(500))
    got = consume(bootstrap, topic, 500)
    assert [m.value() for m in got] == [r["value"] for r in records]
    assert [m.key() for m in got] == [r["key"] for r in records]
    assert got[7].headers() == [("h", b"7"), ("empty", b"")]


def test_null_versus_empty_and_timestamps(bootstrap, topic):
    ts = 1_600_000_000_123
    produce(bootstrap, topic, [{"value": None, "key": b""}, {"value": b"", "key": None, "timestamp": ts}])
    got = consume(bootstrap, topic, 2)
    assert got[0].value() is None and got[0].key() == b""
    assert got[1].value() == b"" and got[1].key() is None
    assert got[1].timestamp() == (1, ts)  # CreateTime preserved


def test_log_append_time(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"message.timestamp.type": "LogAppendTime"})])[topic].result(10)
    before = int(time.time() * 1000)
    produce(bootstrap, topic, [{"value": b"x", "timestamp": 1000}])
    (m,) = consume(bootstrap, topic, 1)
    kind, ts = m.timestamp()
    assert kind == 2 and ts >= before - 1000


def test_large_record_and_too_large(bootstrap, topic):
    big = bytes(range(256)) * 4096  # 1 MiB: above Kafka's default max.message.bytes with overhead
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": "2000000"})])[topic].result(10)
    produce(bootstrap, topic, [{"value": big}], **{"message.max.bytes": 2_000_000})
    (m,) = consume(bootstrap, topic, 1, **{"fetch.max.bytes": 10_000_000})
    assert m.value() == big
    p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 3_000_000})
    errs = []
    p.produce(topic, value=b"x" * 2_000_000, on_delivery=lambda e, m: errs.append(e))
    p.flush(30)
    assert errs and errs[0] is not None and errs[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_many_partitions_and_keys(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 16, 1)])[topic].result(10)
    records = [{"key": f"key{i % 40}".encode(), "value": f"{i}".encode()} for i in range(2000)]
    acked = produce(bootstrap, topic, records)
    by_key = {}
    for p, _, key in acked:
        by_key.setdefault(key, set()).add(p)
    assert len(by_key) == 40
    assert all(len(s) == 1 for s in by_key.values())  # same key, same partition
    got = consume(bootstrap, topic, 2000, partitions=16)
    assert len(got) == 2000


def test_offsets_for_times(bootstrap, topic):
    base = 1_700_000_000_000
    produce(bootstrap, topic, [{"value": f"{i}".encode(), "timestamp": base + i * 1000} for i in range(10)])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x"})
    res = c.offsets_for_times([TopicPartition(topic, 0, base + 4500)], 10)
    assert res[0].offset == 5
    res = c.offsets_for_times([TopicPartition(topic, 0, base + 99_000)], 10)
    assert res[0].offset == -1
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), 10)
    assert (lo, hi) == (0, 10)
    c.close()


def test_admin_operations(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "3600000"})])[topic].result(10)
    f = admin.create_topics([NewTopic(topic, 2, 1)])[topic]
    with pytest.raises(Exception) as ei:
        f.result(10)
    assert ei.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(10)
    md = admin.list_topics(topic, timeout=10)
    assert len(md.topics[topic].partitions) == 5
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["retention.ms"].value == "3600000"
    assert cfg["segment.bytes"].value == "1073741824" and cfg["segment.bytes"].is_default
    res2 = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "7200000"})
    admin.alter_configs([res2])[res2].result(10)
    assert admin.describe_configs([res])[res].result(10)["retention.ms"].value == "7200000"
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    res3 = ConfigResource(ConfigResource.Type.TOPIC, topic,
                          incremental_configs=[ConfigEntry("cleanup.policy", "compact",
                                                           incremental_operation=AlterConfigOpType.APPEND)])
    admin.incremental_alter_configs([res3])[res3].result(10)
    assert admin.describe_configs([res])[res].result(10)["cleanup.policy"].value == "delete,compact"
    bres = ConfigResource(ConfigResource.Type.BROKER, "1")
    bcfg = admin.describe_configs([bres])[bres].result(10)
    assert bcfg["num.partitions"].value is not None
    # the topic is compacted now: records need keys (Kafka refuses keyless ones: INVALID_RECORD)
    produce(bootstrap, topic, [{"key": b"k", "value": b"x", "partition": 0}] * 10)
    from confluent_kafka import TopicPartition as TP
    r = admin.delete_records([TP(topic, 0, 4)])
    (fut,) = r.values()
    assert fut.result(10).low_watermark == 4
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x"})
    assert c.get_watermark_offsets(TP(topic, 0), 10) == (4, 10)
    c.close()
    desc = admin.describe_cluster(request_timeout=10).result(10)
    assert desc.cluster_id and len(desc.nodes) == 1
    admin.delete_topics([topic])[topic].result(10)
    assert topic not in admin.list_topics(timeout=10).topics


def test_read_committed_and_out_of_range(bootstrap, topic):
    produce(bootstrap, topic, [{"value": f"{i}".encode()} for i in range(20)])
    got = consume(bootstrap, topic, 20, **{"isolation.level": "read_committed"})
    assert [m.value() for m in got] == [f"{i}".encode() for i in range(20)]
    # an offset past the end resets by auto.offset.reset (the broker answered OFFSET_OUT_OF_RANGE)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"oor-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 1000)])
    first = None
    deadline = time.monotonic() + 20
    while first is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            first = m
    c.close()
    assert first is not None and first.offset() == 0
