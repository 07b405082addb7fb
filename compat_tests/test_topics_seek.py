"""Topic auto-creation and consumer positioning (seek to offset, beginning, end, timestamp)."""
import pytest

from compat_tests.clients import KafkaOpError, Rec
from compat_tests.targets import TargetUnavailable
from compat_tests.helpers import wait_until


def test_auto_create_on(client, helper, topic):
    """With auto.create.topics.enable=true (Kafka's default), producing to a topic that does not exist
    creates it with num.partitions partitions and the record is stored (Kafka docs: broker config
    auto.create.topics.enable)."""
    assert topic not in helper.list_topics()
    client.produce(topic, [Rec(value=b"created on first use")])
    assert topic in helper.list_topics()
    partitions = helper.partition_count(topic)
    assert partitions >= 1
    got = client.consume(topic, list(range(partitions)), "beginning", count=1)
    assert [g.value for g in got] == [b"created on first use"]


def test_auto_create_off(client, target, topic):
    """With auto.create.topics.enable=false, producing to an unknown topic fails, the topic is not created,
    and Metadata for it answers UNKNOWN_TOPIC_OR_PARTITION (error 3)."""
    try:
        bootstrap = target.no_auto_create_bootstrap()
    except TargetUnavailable as exc:
        pytest.skip(str(exc))
    from compat_tests.clients.confluent import ConfluentClient

    off = type(client)(bootstrap)
    off_helper = ConfluentClient(bootstrap)
    try:
        with pytest.raises(KafkaOpError):
            off.produce(topic, [Rec(value=b"nowhere")], timeout=1)
        with pytest.raises(KafkaOpError) as ei:
            off_helper.partition_count(topic)
        assert ei.value.name == "UNKNOWN_TOPIC_OR_PARTITION"
        assert topic not in off_helper.list_topics()
    finally:
        off.close()


def _ten(helper, topic, base):
    helper.create_topic(topic, 1)
    helper.produce(topic, [Rec(value=f"v{i}".encode(), timestamp=base + i * 1000) for i in range(10)])


BASE = 1_700_000_000_000


def test_seek_to_offset(client, helper, topic):
    """A consumer positioned at offset N receives the records from offset N on, in order (Fetch from
    fetch_offset; KafkaConsumer.seek)."""
    _ten(helper, topic, BASE)
    got = client.consume(topic, [0], 6, count=4)
    assert [(g.offset, g.value) for g in got] == [(i, f"v{i}".encode()) for i in range(6, 10)]


def test_seek_to_beginning(client, helper, topic):
    """Seeking to the beginning positions at the log start offset (ListOffsets timestamp -2, EARLIEST),
    which moves forward after DeleteRecords."""
    _ten(helper, topic, BASE)
    got = client.consume(topic, [0], "beginning", count=10)
    assert [g.offset for g in got] == list(range(10))
    assert helper.delete_records(topic, 0, 3) == 3
    got = client.consume(topic, [0], "beginning", count=7)
    assert [g.offset for g in got] == list(range(3, 10))


def test_seek_to_end(client, helper, topic):
    """Seeking to the end positions at the high watermark (ListOffsets timestamp -1, LATEST): the consumer
    then receives only records produced afterwards."""
    _ten(helper, topic, BASE)
    produced = []

    def produce_more():
        helper.produce(topic, [Rec(value=f"new{i}".encode()) for i in range(3)])
        produced.append(True)

    got = client.consume(topic, [0], "end", count=3, on_positioned=produce_more)
    assert produced
    assert [(g.offset, g.value) for g in got] == [(10 + i, f"new{i}".encode()) for i in range(3)]


def test_seek_to_timestamp(client, helper, topic):
    """ListOffsets by timestamp returns the earliest offset whose timestamp is >= the target (KIP-79,
    offsetsForTimes), none past the last record, and a consumer seeked there reads from that offset."""
    _ten(helper, topic, BASE)
    assert client.offset_for_time(topic, 0, BASE + 4000) == 4
    assert client.offset_for_time(topic, 0, BASE + 4500) == 5
    assert client.offset_for_time(topic, 0, 0) == 0
    assert client.offset_for_time(topic, 0, BASE + 99_000) is None
    got = client.consume(topic, [0], ("timestamp", BASE + 6500), count=3)
    assert [g.offset for g in got] == [7, 8, 9]
    assert [g.timestamp for g in got] == [BASE + 7000, BASE + 8000, BASE + 9000]
