"""Producing and consuming: codecs, keys and partitions, ordering."""
import pytest

from compat_tests.clients import Rec
from compat_tests.helpers import text_value

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume(client, helper, topic, codec):
    """Records produced with compression.type=<codec> (none, gzip, snappy, lz4, zstd; KIP-110 for zstd)
    are acknowledged (acks=all) with consecutive offsets from 0 and consumed back unchanged, in order
    (Kafka docs: compression.type; protocol guide, Produce and Fetch with record batches v2)."""
    helper.create_topic(topic, 1)
    records = [Rec(value=text_value(i, 20 + 37 * (i % 9)), key=f"key-{i}".encode()) for i in range(60)]
    acked = client.produce(topic, records, codec)
    offsets = [a.offset for a in acked if a.offset is not None]
    if offsets:
        assert offsets == list(range(60))
    got = client.consume(topic, [0], "beginning", count=60)
    assert [g.offset for g in got] == list(range(60))
    assert [g.value for g in got] == [r.value for r in records]
    assert [g.key for g in got] == [r.key for r in records]


def test_same_key_same_partition(client, helper, topic):
    """With the client's default partitioner, every record with the same non-null key lands in the same
    partition of a multi-partition topic (Kafka docs: producer partitioner; the broker stores each
    record in the partition it was produced to)."""
    helper.create_topic(topic, 4)
    keys = [f"user-{k}".encode() for k in range(8)]
    records = [Rec(value=f"{i}".encode(), key=keys[i % 8]) for i in range(48)]
    acked = client.produce(topic, records)
    got = client.consume(topic, [0, 1, 2, 3], "beginning", count=48)
    assert len(got) == 48
    where: dict[bytes, set[int]] = {}
    for g in got:
        where.setdefault(g.key, set()).add(g.partition)
    assert set(where) == set(keys)
    assert all(len(parts) == 1 for parts in where.values()), where
    by_value = {g.value: g.partition for g in got}
    for r, a in zip(records, acked):
        if a.partition is not None:
            assert by_value[r.value] == a.partition


def test_per_partition_order(client, helper, topic):
    """Within one partition, records are stored and delivered in the order they were produced, with
    strictly increasing offsets (Kafka docs, Design: "messages sent by a producer to a particular topic
    partition will be appended in the order they are sent")."""
    helper.create_topic(topic, 3)
    records = [Rec(value=f"p{i % 3}-seq{i // 3:03d}".encode(), partition=i % 3) for i in range(45)]
    client.produce(topic, records)
    got = client.consume(topic, [0, 1, 2], "beginning", count=45)
    assert len(got) == 45
    for p in range(3):
        mine = [g for g in got if g.partition == p]
        assert [g.value for g in mine] == [f"p{p}-seq{s:03d}".encode() for s in range(15)]
        assert [g.offset for g in mine] == list(range(15))
