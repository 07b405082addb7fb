"""Admin APIs: topics, partitions, configs, DeleteRecords."""
import pytest

from compat_tests.clients import KafkaOpError, Rec
from compat_tests.helpers import needs, wait_until


def test_admin_topics(client, topic):
    """CreateTopics creates a topic with the requested partitions (visible in Metadata), a second create
    fails with TOPIC_ALREADY_EXISTS (36); DeleteTopics removes it, and deleting it again fails with
    UNKNOWN_TOPIC_OR_PARTITION (3) (KIP-4 admin requests)."""
    needs(client, "admin")
    client.create_topic(topic, 3, {"retention.ms": "3600000"})
    wait_until(lambda: topic in client.list_topics(), message="the topic in Metadata")
    assert client.partition_count(topic) == 3
    with pytest.raises(KafkaOpError) as ei:
        client.create_topic(topic, 3)
    assert ei.value.name == "TOPIC_ALREADY_EXISTS"
    client.delete_topic(topic)
    wait_until(lambda: topic not in client.list_topics(), message="the topic gone from Metadata")
    with pytest.raises(KafkaOpError) as ei:
        client.delete_topic(topic)
    assert ei.value.name == "UNKNOWN_TOPIC_OR_PARTITION"


def test_admin_partitions(client, helper, topic):
    """CreatePartitions raises a topic's partition count (KIP-195); the new partitions take records; asking
    for fewer partitions than the topic has fails with INVALID_PARTITIONS (37)."""
    needs(client, "admin")
    client.create_topic(topic, 2)
    # Kafka answers CreateTopics once the controller committed the topic; a broker serves it (Metadata,
    # DescribeConfigs ...) once its metadata image has it, a moment later: wait as clients must
    wait_until(lambda: topic in client.list_topics(), message="the topic in Metadata")
    client.create_partitions(topic, 5)
    wait_until(lambda: client.partition_count(topic) == 5, message="5 partitions in Metadata")
    with pytest.raises(KafkaOpError) as ei:
        client.create_partitions(topic, 3)
    assert ei.value.name == "INVALID_PARTITIONS"
    helper.produce(topic, [Rec(value=b"in the new partition", partition=4)])
    assert helper.watermarks(topic, 4) == (0, 1)


def test_admin_configs(client, topic):
    """DescribeConfigs returns a topic's configs, the ones set at creation with their value; altering a
    config (IncrementalAlterConfigs, KIP-339, or AlterConfigs) changes what DescribeConfigs returns; an
    invalid value is refused with INVALID_CONFIG (40)."""
    needs(client, "admin")
    client.create_topic(topic, 1, {"retention.ms": "3600000"})
    wait_until(lambda: topic in client.list_topics(), message="the topic in Metadata")   # see admin_partitions
    cfg = client.describe_configs(topic)
    assert cfg["retention.ms"] == "3600000"
    assert cfg["cleanup.policy"] == "delete"
    assert "max.message.bytes" in cfg
    client.alter_configs(topic, {"retention.ms": "7200000", "max.message.bytes": "500000"})
    # Kafka answers once the controller committed the change; the broker describes it once its metadata
    # image has it, a moment later (kwire at once): wait for it, then both values must be there
    def altered():
        c = client.describe_configs(topic)
        return c if c["retention.ms"] == "7200000" else None

    cfg = wait_until(altered, message="the altered retention.ms in DescribeConfigs")
    assert cfg["max.message.bytes"] == "500000"
    with pytest.raises(KafkaOpError) as ei:
        client.alter_configs(topic, {"message.timestamp.type": "NotATimestampType"})
    assert ei.value.name == "INVALID_CONFIG"


def test_delete_records(client, helper, topic):
    """DeleteRecords moves a partition's log start offset (low watermark) to the given offset (KIP-107):
    ListOffsets EARLIEST returns it and consumers from the beginning start there."""
    needs(client, "admin")
    helper.create_topic(topic, 1)
    helper.produce(topic, [Rec(value=f"v{i}".encode()) for i in range(10)])
    assert client.delete_records(topic, 0, 4) == 4
    assert client.watermarks(topic, 0) == (4, 10)
    got = helper.consume(topic, [0], "beginning", count=6)
    assert [g.offset for g in got] == list(range(4, 10))
