"""DescribeTopicPartitions (key 75) over the wire: requests encoded and responses decoded by
kafka-python's protocol classes (an independent encoder), against a running broker: topics by
name and all topics in name order, pagination across topics and partitions with the cursor
Kafka forms, unknown and illegal names, a cursor outside the topic list, the broker's cap on
the limit, offline replicas from the replica manager (shared with Metadata), ApiVersions
advertising key 75, and kafka-python's KafkaAdminClient.describe_topic_partitions."""
import uuid

import pytest
from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.security.operations import authorized_operations
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow

MetadataTopic = api("Metadata").request.struct("MetadataRequestTopic")
LIMIT_CAP = 15  # max.request.partition.size.limit of this module's broker


@pytest.fixture(scope="module")
def broker():
    with Broker(mode="thread", overrides={"max.request.partition.size.limit": LIMIT_CAP}) as b:
        yield b


@pytest.fixture(scope="module")
def three(broker):
    """Three topics of five partitions each, created out of name order."""
    tag = uuid.uuid4().hex[:6]
    names = [f"dtp-{tag}-c", f"dtp-{tag}-a", f"dtp-{tag}-b"]
    for n in names:
        broker.create_topic(n, 5)
    return sorted(names)


_corr = iter(range(7000, 1 << 30))


def describe(broker, topics, limit=2000, cursor=None):
    """One DescribeTopicPartitions v0 round trip, by kafka-python's classes."""
    c = None if cursor is None else DescribeTopicPartitionsRequest.Cursor(
        topic_name=cursor[0], partition_index=cursor[1])
    req = DescribeTopicPartitionsRequest[0](
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name=t) for t in topics],
        response_partition_limit=limit, cursor=c)
    corr = next(_corr)
    req.with_header(correlation_id=corr, client_id="dtp-test")
    with WireClient(broker.bootstrap_servers) as c:
        c.send_raw(req.encode(header=True, framed=True))
        frame = c.recv_frame()
    resp = DescribeTopicPartitionsResponse[0].decode(frame, header=True)
    assert resp.header.correlation_id == corr
    return resp


def cursor_of(resp):
    nc = resp.next_cursor
    return None if nc is None else (nc.topic_name, nc.partition_index)


def test_topics_by_name_in_name_order(broker, three):
    resp = describe(broker, [three[2], three[0], three[1], three[0]])
    assert [t.name for t in resp.topics] == three
    assert cursor_of(resp) is None
    image = broker.broker.image
    for t in resp.topics:
        ti = image.topics[t.name]
        assert t.error_code == 0
        assert uuid.UUID(str(t.topic_id)) == ti.topic_id
        assert t.is_internal is False
        assert t.topic_authorized_operations == authorized_operations("topic", True)
        assert [p.partition_index for p in t.partitions] == [0, 1, 2, 3, 4]
        for p in t.partitions:
            pi = ti.partitions[p.partition_index]
            assert p.error_code == 0
            assert p.leader_id == pi.leader == broker.broker.node_id
            assert p.leader_epoch == pi.leader_epoch
            assert list(p.replica_nodes) == pi.replicas
            assert list(p.isr_nodes) == pi.isr
            assert not p.eligible_leader_replicas and not p.last_known_elr
            assert list(p.offline_replicas) == []


def test_pagination_across_topics_and_partitions(broker, three):
    """3 topics x 5 partitions, 4 at a time: every partition exactly once, each page's cursor
    the first partition left out."""
    seen, cursors, cursor = [], [], None
    for _ in range(10):
        resp = describe(broker, three, limit=4, cursor=cursor)
        page = [(t.name, p.partition_index) for t in resp.topics for p in t.partitions]
        assert 0 < len(page) <= 4
        seen += page
        cursor = cursor_of(resp)
        if cursor is None:
            break
        cursors.append(cursor)
    a, b, c = three
    assert seen == [(n, i) for n in three for i in range(5)]
    assert cursors == [(a, 4), (b, 3), (c, 2)]


def test_cursor_at_topic_start_when_a_topic_ends_the_page(broker, three):
    """A page that ends exactly with a topic points at the next topic's partition 0 (Kafka
    sends that topic no partitions)."""
    resp = describe(broker, three, limit=5)
    assert [t.name for t in resp.topics] == three[:1]
    assert cursor_of(resp) == (three[1], 0)
    resp = describe(broker, three, limit=5, cursor=(three[1], 0))
    assert [t.name for t in resp.topics] == [three[1]]
    assert cursor_of(resp) == (three[2], 0)


def test_all_topics_paginated(broker, three):
    """An empty topic list: every topic, by name, across pages; the limit is capped by
    max.request.partition.size.limit."""
    broker.create_topic(f"dtp-extra-{uuid.uuid4().hex[:6]}", 3)   # more than one page in all
    expect = [(n, i) for n in sorted(broker.broker.image.topics)
              for i in sorted(broker.broker.image.topics[n].partitions)]
    assert len(expect) > LIMIT_CAP
    seen, cursor, pages = [], None, 0
    for _ in range(50):
        pages += 1
        resp = describe(broker, [], limit=2000, cursor=cursor)
        page = [(t.name, p.partition_index) for t in resp.topics for p in t.partitions]
        assert len(page) <= LIMIT_CAP
        seen += page
        cursor = cursor_of(resp)
        if cursor is None:
            break
    assert seen == expect and pages >= 2
    assert set((n, i) for n in three for i in range(5)) <= set(seen)


def test_unknown_and_illegal_names(broker, three):
    missing = f"dtp-missing-{uuid.uuid4().hex[:6]}"
    resp = describe(broker, [missing, three[0], "bad/name"])
    by = {t.name: t for t in resp.topics}
    assert [t.name for t in resp.topics] == sorted([missing, three[0], "bad/name"])
    assert by[missing].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert by[missing].topic_id is None   # kafka-python's decoding of the zero uuid
    assert by[missing].partitions == []
    assert by["bad/name"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert by[three[0]].error_code == 0 and len(by[three[0]].partitions) == 5


def test_cursor_topic_must_be_listed(broker, three):
    resp = describe(broker, [three[0], three[1]], cursor=(three[2], 0))
    assert [(t.name, t.error_code) for t in resp.topics] == [
        (three[0], ErrorCode.INVALID_REQUEST), (three[1], ErrorCode.INVALID_REQUEST)]
    assert cursor_of(resp) is None


def test_cursor_skips_earlier_topics_and_partitions(broker, three):
    resp = describe(broker, three, cursor=(three[1], 2))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in resp.topics] == [
        (three[1], [2, 3, 4]), (three[2], [0, 1, 2, 3, 4])]


def test_offline_replica_shared_with_metadata(broker, three):
    """This node's replica whose log is offline (the replica manager's view) is an offline
    replica in DescribeTopicPartitions and Metadata alike."""
    rm = broker.broker.replica_manager
    tp = (three[0], 1)
    node = broker.broker.node_id
    rm.offline_partitions[tp] = "test: log dir offline"
    try:
        resp = describe(broker, [three[0]])
        offline = {p.partition_index: list(p.offline_replicas) for p in resp.topics[0].partitions}
        assert offline == {0: [], 1: [node], 2: [], 3: [], 4: []}
        with WireClient(broker.bootstrap_servers) as c:
            md = c.request("Metadata", 12, topics=[MetadataTopic(name=three[0])])
        moffline = {p.partition_index: list(p.offline_replicas) for p in md.topics[0].partitions}
        assert moffline == offline
    finally:
        rm.offline_partitions.pop(tp, None)
    assert all(not p.offline_replicas for p in describe(broker, [three[0]]).topics[0].partitions)


def test_api_versions_advertises_key_75(broker):
    with WireClient(broker.bootstrap_servers) as c:
        resp = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[75] == (0, 0)


def test_kafka_python_admin_describe_topic_partitions(broker, three):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        out = admin.describe_topic_partitions(three, response_partition_limit=6)
        assert [t["name"] for t in out["topics"]] == three[:2]
        assert [len(t["partitions"]) for t in out["topics"]] == [5, 1]
        assert out["next_cursor"] == {"topic_name": three[1], "partition_index": 1}
        rest = admin.describe_topic_partitions(three, cursor=out["next_cursor"])
        assert [(t["name"], len(t["partitions"])) for t in rest["topics"]] == [(three[1], 4), (three[2], 5)]
        assert rest["next_cursor"] is None
    finally:
        admin.close()


def test_failed_log_dir_makes_replicas_offline(tmp_path):
    """Once a data dir fails (the LogDirFailureChannel an I/O error reports to), every
    replica this node holds there is offline, in DescribeTopicPartitions and Metadata.
    Two log dirs, one failed: with every dir failed the broker shuts down (as Kafka halts),
    and a request after that would race the shutdown."""
    with Broker(mode="thread", log_dirs=[str(tmp_path / "second")]) as b:
        b.create_topic("dtp-dir", 4)
        node = b.broker.node_id
        assert [list(p.offline_replicas) for p in describe(b, ["dtp-dir"]).topics[0].partitions] == [[]] * 4
        logs = [b.broker.replica_manager.logs.get("dtp-dir", p) for p in range(4)]
        failed = logs[0].log_dir
        want = [[node] if plog.log_dir == failed else [] for plog in logs]
        assert [] in want, "the partitions should spread over both dirs"
        logs[0].failure_channel.maybe_add_offline_log_dir(failed, "test: disk gone")
        resp = describe(b, ["dtp-dir"])
        assert [list(p.offline_replicas) for p in resp.topics[0].partitions] == want
        with WireClient(b.bootstrap_servers) as c:
            md = c.request("Metadata", 12, topics=[MetadataTopic(name="dtp-dir")])
        assert [list(p.offline_replicas) for p in md.topics[0].partitions] == want
        assert not b.broker.stop_requested.is_set()
