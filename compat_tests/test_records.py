"""What a record carries: headers, null versus empty, timestamps, size limits."""
import time

from compat_tests.clients import KafkaOpError, Rec
from compat_tests.helpers import random_text

import pytest


def test_headers(client, helper, topic):
    """Record headers (KIP-82) are kept as an ordered list of (key, value) pairs: duplicate keys,
    empty values and non-ASCII keys come back exactly as produced."""
    helper.create_topic(topic, 1)
    h1 = [("trace", b"abc"), ("trace", b"def"), ("empty", b""), ("clé-ключ", b"v")]
    h2 = [("only", b"one")]
    records = [Rec(value=b"first", headers=h1), Rec(value=b"second", headers=h2), Rec(value=b"third")]
    client.produce(topic, records)
    got = client.consume(topic, [0], "beginning", count=3)
    assert [g.value for g in got] == [b"first", b"second", b"third"]
    assert got[0].headers == h1
    assert got[1].headers == h2
    assert got[2].headers == []


def test_null_versus_empty(client, helper, topic):
    """A null key or value is distinct from an empty one and both survive the round trip (record
    format v2: length -1 means null; Kafka docs, Implementation > Record); a null value is a tombstone."""
    helper.create_topic(topic, 1)
    records = [Rec(key=None, value=b"x"), Rec(key=b"", value=b"x"), Rec(key=b"k", value=None), Rec(key=b"k", value=b"")]
    client.produce(topic, records)
    got = client.consume(topic, [0], "beginning", count=4)
    assert [(g.key, g.value) for g in got] == [(None, b"x"), (b"", b"x"), (b"k", None), (b"k", b"")]


def test_create_time(client, helper, topic):
    """With message.timestamp.type=CreateTime (the default), the broker keeps the timestamp the producer
    set and reports it as CreateTime (KIP-32)."""
    if not client.can_set_timestamp:
        pytest.skip(f"{client.name} cannot set a record's timestamp")
    helper.create_topic(topic, 1)
    now = int(time.time() * 1000)
    stamps = [now - 86_400_000, 1_500_000_000_000, now - 1]
    client.produce(topic, [Rec(value=f"{i}".encode(), timestamp=ts) for i, ts in enumerate(stamps)])
    got = client.consume(topic, [0], "beginning", count=3)
    assert [g.timestamp for g in got] == stamps
    assert {g.timestamp_type for g in got} == {"CreateTime"}


def test_log_append_time(client, helper, topic):
    """With message.timestamp.type=LogAppendTime, the broker overwrites the producer's timestamp with its
    own clock at append time and reports the type as LogAppendTime (KIP-32)."""
    helper.create_topic(topic, 1, {"message.timestamp.type": "LogAppendTime"})
    ts = 1_000_000 if client.can_set_timestamp else None
    before = int(time.time() * 1000)
    client.produce(topic, [Rec(value=b"a", timestamp=ts), Rec(value=b"b", timestamp=ts)])
    after = int(time.time() * 1000)
    got = client.consume(topic, [0], "beginning", count=2)
    assert [g.value for g in got] == [b"a", b"b"]
    assert {g.timestamp_type for g in got} == {"LogAppendTime"}
    for g in got:
        assert before - 1000 <= g.timestamp <= after + 1000


def test_large_record(client, helper, topic):
    """A 1.2 MB record is accepted by a topic whose max.message.bytes allows it, and a consumer with the
    default max.partition.fetch.bytes (1 MiB) still receives it whole: the broker returns the first
    batch even when it is larger than the fetch limits (KIP-74)."""
    helper.create_topic(topic, 1, {"max.message.bytes": "2000000"})
    big = random_text(1_200_000)
    client.produce(topic, [Rec(value=big, key=b"big"), Rec(value=b"small")], max_request_size=3_000_000)
    got = client.consume(topic, [0], "beginning", count=2)
    assert len(got) == 2 and got[0].value == big and got[1].value == b"small"


def test_message_too_large(client, helper, topic):
    """A record batch larger than the topic's max.message.bytes is rejected with MESSAGE_TOO_LARGE
    (error 10) and nothing is appended; smaller records still go through (Kafka docs: max.message.bytes)."""
    helper.create_topic(topic, 1, {"max.message.bytes": "100000"})
    with pytest.raises(KafkaOpError) as ei:
        client.produce(topic, [Rec(value=random_text(150_000))], max_request_size=1_000_000, timeout=10)
    assert ei.value.name == "MESSAGE_TOO_LARGE", ei.value
    client.produce(topic, [Rec(value=b"fits")])
    assert helper.watermarks(topic, 0) == (0, 1)
    got = client.consume(topic, [0], "beginning", count=1)
    assert [g.value for g in got] == [b"fits"]
