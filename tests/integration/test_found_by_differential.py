"""Answers the differential harness (make differential) found apart from Apache Kafka 4.3, fixed
to Kafka's: each test states what Kafka answered."""
import uuid

import pytest

from kwire.codec.apis import api
from kwire.codec.frame import encode_request
from kwire.codec.records import build_batch
from kwire.errors import ErrorCode

from .kafka_wire import WireClient

pytestmark = pytest.mark.slow

MT = api("Metadata").request.struct("MetadataRequestTopic")


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_by_topic_id_before_v12_is_an_invalid_request(bootstrap, version):
    """Kafka looks topics up by id from v12; at v10-11 it refuses the whole request (kwire failed to
    encode the null name and closed the connection)."""
    c = WireClient(bootstrap)
    tid = uuid.UUID(int=5)
    r = c.request("Metadata", version, topics=[MT(topic_id=tid, name=None)], allow_auto_topic_creation=False)
    assert [(t.error_code, t.name, t.topic_id) for t in r.topics] == [(ErrorCode.INVALID_REQUEST, "", tid)]
    assert (r.brokers, r.cluster_id, r.controller_id) == ([], None, -1)
    assert c.request("Metadata", 12, topics=[MT(topic_id=tid, name=None)]).topics[0].error_code == \
        ErrorCode.UNKNOWN_TOPIC_ID   # and the connection still serves
    c.close()


@pytest.mark.parametrize("name", [".", "x" * 250, "a/b", ""])
@pytest.mark.parametrize("auto_create", [False, True])
def test_metadata_for_an_invalid_topic_name_is_invalid_topic(bootstrap, name, auto_create):
    c = WireClient(bootstrap)
    r = c.request("Metadata", 12, topics=[MT(name=name)], allow_auto_topic_creation=auto_create)
    assert r.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    c.close()


def test_create_topics_refuses_invalid_names_with_kafkas_messages(bootstrap):
    c = WireClient(bootstrap)
    R = api("CreateTopics").request
    T = R.struct("CreatableTopic")
    long = "y" * 250
    r = c.request("CreateTopics", 7, timeout_ms=5000, topics=[
        T(name=n, num_partitions=1, replication_factor=1) for n in (".", long, "a/b")])
    got = {t.name: (t.error_code, t.error_message) for t in r.topics}
    assert got == {
        ".": (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: '.' is not allowed"),
        long: (ErrorCode.INVALID_TOPIC_EXCEPTION,
               f"Topic name is invalid: the length of '{long}' is longer than the max allowed length 249"),
        "a/b": (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'a/b' contains one or more characters "
                                                   "other than ASCII alphanumerics, '.', '_' and '-'"),
    }
    c.close()


# (timestamp, first version that knows it): Kafka 4.3 answers UNSUPPORTED_VERSION below it, and for
# a negative timestamp it does not know at all, before looking the partition up
@pytest.mark.parametrize("timestamp,first", [(-3, 7), (-4, 8), (-5, 9), (-6, 11), (-7, None)])
def test_list_offsets_special_timestamps_need_their_version(bootstrap, timestamp, first):
    c = WireClient(bootstrap)
    c.create_topic("lo-versions", exist_ok=True)
    R = api("ListOffsets").request
    LT, LP = R.struct("ListOffsetsTopic"), R.struct("ListOffsetsPartition")
    for version in range(1, 12):
        for topic in ("lo-versions", "lo-missing"):
            fields = dict(replica_id=-1, topics=[LT(name=topic, partitions=[LP(partition_index=0, timestamp=timestamp)])])
            if version >= 2:
                fields["isolation_level"] = 0
            err = c.request("ListOffsets", version, **fields).topics[0].partitions[0].error_code
            if first is None or version < first:
                assert err == ErrorCode.UNSUPPORTED_VERSION, (version, topic)
            else:
                assert err == (0 if topic == "lo-versions" else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (version, topic)
    c.close()


def test_produce_acks_0_closes_the_connection_when_a_partition_fails(bootstrap):
    """Kafka answers an acks=0 produce never, and closes the connection when an append failed: the
    producer's only way to hear of it. A good acks=0 produce leaves the connection serving."""
    c = WireClient(bootstrap)
    c.create_topic("acks0", exist_ok=True)
    R = api("Produce").request
    TD, PD = R.struct("TopicProduceData"), R.struct("PartitionProduceData")
    batch = build_batch([(b"k", b"v", [], 1_700_000_000_000)])

    def produce(partition: int) -> None:
        c.send_raw(encode_request(api("Produce"), 9, 99, R.cls(transactional_id=None, acks=0, timeout_ms=1000, topic_data=[
                TD(name="acks0", partition_data=[PD(index=partition, records=batch)])])))

    produce(0)
    assert c.request("Metadata", 12, topics=[MT(name="acks0")]).topics[0].error_code == 0
    produce(7)   # no such partition
    with pytest.raises(ConnectionError):
        c.request("Metadata", 12, topics=[MT(name="acks0")])
    c.close()


@pytest.mark.parametrize("timestamp,version", [(-3, 7), (-5, 9), (-6, 11), (1_700_000_000_000, 7)])
def test_list_offsets_without_an_answer_carries_no_leader_epoch(bootstrap, timestamp, version):
    """Nothing found (an empty partition's max timestamp, no tiered storage, a timestamp past every
    record): Kafka answers offset -1, timestamp -1 and leader epoch -1."""
    c = WireClient(bootstrap)
    c.create_topic("lo-empty", exist_ok=True)
    R = api("ListOffsets").request
    LT, LP = R.struct("ListOffsetsTopic"), R.struct("ListOffsetsPartition")
    p = c.request("ListOffsets", version, replica_id=-1, isolation_level=0, topics=[
        LT(name="lo-empty", partitions=[LP(partition_index=0, timestamp=timestamp)])]).topics[0].partitions[0]
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (0, -1, -1, -1)
    c.close()


def test_metadata_authorized_operations_cover_topics_answered_with_an_error(bootstrap):
    """Kafka fills topic_authorized_operations for every topic it answers, errors included."""
    c = WireClient(bootstrap)
    r = c.request("Metadata", 12, topics=[MT(name="."), MT(name="no-such-topic-ops")],
                  allow_auto_topic_creation=False, include_topic_authorized_operations=True)
    assert [t.error_code for t in r.topics] == [ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert all(t.topic_authorized_operations > 0 for t in r.topics)
    c.close()


def test_create_topics_answers_a_duplicated_name_once_and_refuses_null_configs(bootstrap):
    c = WireClient(bootstrap)
    R = api("CreateTopics").request
    T, C = R.struct("CreatableTopic"), R.struct("CreatableTopicConfig")
    r = c.request("CreateTopics", 7, timeout_ms=5000, topics=[
        T(name="dup-x", num_partitions=1, replication_factor=1), T(name="dup-x", num_partitions=1, replication_factor=1),
        T(name="null-config", num_partitions=1, replication_factor=0, configs=[C(name="cleanup.policy", value=None)])])
    assert [(t.name, t.error_code, t.error_message) for t in r.topics] == [
        ("dup-x", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ("null-config", ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: cleanup.policy")]
    c.close()


def test_describe_configs_with_an_unknown_resource_type_fails_every_resource(bootstrap):
    """Kafka authorizes DescribeConfigs by resource type first and throws on a type it does not know:
    every resource of the request, known ones included, gets INVALID_REQUEST with the error's default
    message and no configs (kwire answered the known ones and refused the unknown one alone)."""
    from kwire.errors import INVALID_REQUEST_MESSAGE

    c = WireClient(bootstrap)
    Res = api("DescribeConfigs").request.struct("DescribeConfigsResource")
    r = c.request("DescribeConfigs", 4, resources=[Res(resource_type=4, resource_name="", configuration_keys=None),
                                                   Res(resource_type=9, resource_name="x", configuration_keys=None)],
                  include_synonyms=False, include_documentation=False)
    assert [(x.error_code, x.error_message, x.configs) for x in r.results] == \
        [(ErrorCode.INVALID_REQUEST, INVALID_REQUEST_MESSAGE, [])] * 2
    r = c.request("DescribeConfigs", 4, resources=[Res(resource_type=4, resource_name="", configuration_keys=None)],
                  include_synonyms=False, include_documentation=False)
    assert r.results[0].error_code == 0 and r.results[0].configs   # known types alone are described
    c.close()


def test_describe_configs_of_an_unknown_topic_has_no_message(bootstrap):
    """Kafka 4.3 answers UNKNOWN_TOPIC_OR_PARTITION with the message left at "" (kwire wrote one)."""
    c = WireClient(bootstrap)
    Res = api("DescribeConfigs").request.struct("DescribeConfigsResource")
    r = c.request("DescribeConfigs", 4, resources=[Res(resource_type=2, resource_name="no-such-topic-xyz",
                                                       configuration_keys=None)],
                  include_synonyms=False, include_documentation=False)
    assert (r.results[0].error_code, r.results[0].error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
    c.close()
