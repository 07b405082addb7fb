"""Authorization in the handlers, on a PLAINTEXT broker (every client is User:ANONYMOUS) with the
StandardAuthorizer: ACLs for User:ANONYMOUS allow, then deny; stock clients see Kafka's errors.

allow.everyone.if.no.acl.found is on so the test can manage ACLs and topics (no ACL names the
cluster until the test adds one); each check then names the resource it is about."""
from __future__ import annotations

import uuid

import pytest

from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import KafkaWireError, WireClient

# the tests share one broker and build on each other's ACLs in file order: one worker runs them all
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("authorization_wire")]

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": True, "group.initial.rebalance.delay.ms": 0,
              "offsets.topic.num.partitions": 1}
ANON = "User:ANONYMOUS"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(mode="thread", data_dir=str(tmp_path_factory.mktemp("acl") / "data"), overrides=AUTHORIZER)
    b.start()
    yield b
    b.stop()


@pytest.fixture
def admin(broker):
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _binding(rtype, name, op, perm, pattern="LITERAL"):
    from confluent_kafka.admin import (  # noqa: PLC0415
        AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType,
    )
    return AclBinding(getattr(ResourceType, rtype), name, getattr(ResourcePatternType, pattern), ANON, "*",
                      getattr(AclOperation, op), getattr(AclPermissionType, perm))


def add(admin, *bindings):
    for f in admin.create_acls(list(bindings), request_timeout=10).values():
        f.result(10)


def remove(admin, *bindings):
    from confluent_kafka.admin import AclBindingFilter  # noqa: PLC0415
    filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation,
                                b.permission_type) for b in bindings]
    for f in admin.delete_acls(filters, request_timeout=10).values():
        f.result(10)


def _topic(broker, partitions=1) -> str:
    name = f"acl-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c:
        c.create_topic(name, partitions)
    return name


def test_produce_write_allow_then_deny(broker, admin):
    t = _topic(broker)
    allow = _binding("TOPIC", t, "WRITE", "ALLOW")
    add(admin, allow)
    with WireClient(broker.bootstrap_servers) as c:
        assert c.produce(t, [b"a", b"b"]) == [0, 1]
    deny = _binding("TOPIC", t, "WRITE", "DENY")
    add(admin, deny)
    with WireClient(broker.bootstrap_servers) as c:
        with pytest.raises(KafkaWireError) as e:
            c.produce(t, [b"c"])
        assert e.value.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # a stock producer gets the error for its message
    from confluent_kafka import KafkaError, Producer  # noqa: PLC0415
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 5000})
    errors = []
    p.produce(t, b"x", on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    remove(admin, deny)
    with WireClient(broker.bootstrap_servers) as c:
        assert c.produce(t, [b"d"]) == [2]


def test_fetch_needs_read(broker, admin):
    t = _topic(broker)
    add(admin, _binding("TOPIC", t, "WRITE", "ALLOW"))
    with WireClient(broker.bootstrap_servers) as c:
        c.produce(t, [b"1", b"2"])
        with pytest.raises(KafkaWireError) as e:    # the topic has ACLs, none of them READ
            c.consume(t, 2, timeout=5)
        assert e.value.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    add(admin, _binding("TOPIC", t, "READ", "ALLOW"))
    with WireClient(broker.bootstrap_servers) as c:
        assert [r.value for r in c.consume(t, 2, timeout=5)] == [b"1", b"2"]
    add(admin, _binding("TOPIC", t, "READ", "DENY"))
    with WireClient(broker.bootstrap_servers) as c:
        with pytest.raises(KafkaWireError) as e:
            c.consume(t, 2, timeout=5)
        assert e.value.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_kafka_python_consumer_refused(broker, admin):
    import kafka.errors as Errors  # noqa: PLC0415
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415
    t = _topic(broker)
    add(admin, _binding("TOPIC", t, "WRITE", "ALLOW"), _binding("TOPIC", t, "READ", "DENY"))
    with WireClient(broker.bootstrap_servers) as c:
        c.produce(t, [b"1"])
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=3000)
    try:
        consumer.assign([TopicPartition(t, 0)])
        consumer.seek(TopicPartition(t, 0), 0)
        with pytest.raises(Errors.TopicAuthorizationFailedError):
            for _ in range(20):
                consumer.poll(timeout_ms=500)
    finally:
        consumer.close()


def test_metadata_hides_topics_not_described(broker, admin):
    visible, hidden = _topic(broker), _topic(broker)
    add(admin, _binding("TOPIC", hidden, "ALL", "DENY"))
    listed = admin.list_topics(timeout=10).topics
    assert visible in listed and hidden not in listed
    md = admin.list_topics(topic=hidden, timeout=10).topics[hidden]
    assert md.error is not None and md.error.code() == 29   # TOPIC_AUTHORIZATION_FAILED


def test_auto_create_needs_create(broker, admin):
    # from here on an ACL names the cluster: ANONYMOUS may ALTER it (manage ACLs), not CREATE
    add(admin, _binding("BROKER", "kafka-cluster", "ALTER", "ALLOW"),
        _binding("TOPIC", "auto-", "DESCRIBE", "ALLOW", "PREFIXED"))
    from kwire.codec.apis import api  # noqa: PLC0415
    MT = api("Metadata").request.struct("MetadataRequestTopic")
    with WireClient(broker.bootstrap_servers) as c:
        r = c.request("Metadata", 9, topics=[MT(name="auto-x")], allow_auto_topic_creation=True,
                      include_cluster_authorized_operations=False, include_topic_authorized_operations=False)
        assert r.topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        add(admin, _binding("TOPIC", "auto-", "CREATE", "ALLOW", "PREFIXED"))
        r = c.request("Metadata", 9, topics=[MT(name="auto-x")], allow_auto_topic_creation=True,
                      include_cluster_authorized_operations=False, include_topic_authorized_operations=False)
        assert r.topics[0].error_code == 0 and r.topics[0].partitions


def test_list_offsets_needs_describe(broker, admin):
    from kwire.codec.apis import api  # noqa: PLC0415
    t = _topic(broker)
    Rq = api("ListOffsets").request
    T, P = Rq.struct("ListOffsetsTopic"), Rq.struct("ListOffsetsPartition")

    def list_offsets(c):
        r = c.request("ListOffsets", 5, replica_id=-1, isolation_level=0,
                      topics=[T(name=t, partitions=[P(partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
        return r.topics[0].partitions[0]

    with WireClient(broker.bootstrap_servers) as c:
        assert list_offsets(c).error_code == 0
        add(admin, _binding("TOPIC", t, "DESCRIBE", "DENY"))
        assert list_offsets(c).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _consume_error(broker, topic, group, timeout=10.0):
    """The first error a confluent consumer in ``group`` gets (or the messages it read)."""
    import time  # noqa: PLC0415

    from confluent_kafka import Consumer  # noqa: PLC0415
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest",
                  "session.timeout.ms": 6000})
    got = []
    try:
        c.subscribe([topic])
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                return m.error().code(), got
            got.append(m.value())
            if len(got) == 1:
                c.commit(asynchronous=False)
                return None, got
    finally:
        c.close()
    return None, got


def test_consumer_group_read_allow_then_deny(broker, admin):
    from confluent_kafka import KafkaError  # noqa: PLC0415
    t = _topic(broker)
    g = f"g-{t}"
    add(admin, _binding("TOPIC", t, "WRITE", "ALLOW"), _binding("TOPIC", t, "READ", "ALLOW"),
        _binding("GROUP", g, "READ", "ALLOW"))
    with WireClient(broker.bootstrap_servers) as c:
        c.produce(t, [b"v"])
    assert _consume_error(broker, t, g) == (None, [b"v"])
    add(admin, _binding("GROUP", g, "READ", "DENY"))
    err, got = _consume_error(broker, t, g)
    assert got == [] and err == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_kafka_python_group_denied(broker, admin):
    import kafka.errors as Errors  # noqa: PLC0415
    from kafka import KafkaConsumer  # noqa: PLC0415
    t = _topic(broker)
    g = f"kg-{t}"
    add(admin, _binding("TOPIC", t, "READ", "ALLOW"), _binding("GROUP", g, "ALL", "DENY"))
    consumer = KafkaConsumer(t, bootstrap_servers=broker.bootstrap_servers, group_id=g, consumer_timeout_ms=3000)
    try:
        with pytest.raises((Errors.GroupAuthorizationFailedError, Errors.KafkaError)) as e:
            for _ in range(20):
                consumer.poll(timeout_ms=500)
        assert "GroupAuthorizationFailed" in type(e.value).__name__ or "GROUP_AUTHORIZATION" in str(e.value).upper()
    finally:
        consumer.close()


def test_list_and_describe_groups_filtered(broker, admin):
    from confluent_kafka import KafkaError  # noqa: PLC0415
    t = _topic(broker)
    ok, hidden = f"ok-{t}", f"hid-{t}"
    add(admin, _binding("TOPIC", t, "ALL", "ALLOW"), _binding("GROUP", ok, "READ", "ALLOW"),
        _binding("GROUP", hidden, "READ", "ALLOW"))
    with WireClient(broker.bootstrap_servers) as c:
        c.produce(t, [b"v"])
    for g in (ok, hidden):
        assert _consume_error(broker, t, g)[0] is None
    add(admin, _binding("GROUP", hidden, "DESCRIBE", "DENY"))
    # DESCRIBE on the cluster lists every group; without it, only those the principal may describe
    no_cluster_describe = _binding("BROKER", "kafka-cluster", "DESCRIBE", "DENY")
    add(admin, no_cluster_describe)
    try:
        ids = {g.group_id for g in admin.list_consumer_groups(request_timeout=10).result(10).valid}
        assert ok in ids and hidden not in ids
    finally:
        remove(admin, no_cluster_describe)
    ids = {g.group_id for g in admin.list_consumer_groups(request_timeout=10).result(10).valid}
    assert ok in ids and hidden in ids
    [f] = admin.describe_consumer_groups([hidden], request_timeout=10).values()
    with pytest.raises(Exception) as e:
        f.result(10)
    assert e.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_topic_admin_needs_create_delete_alter(broker, admin):
    from confluent_kafka import KafkaError  # noqa: PLC0415

    from kwire.codec.apis import api  # noqa: PLC0415
    from confluent_kafka.admin import NewPartitions, NewTopic  # noqa: PLC0415
    # the cluster has an ACL (ALTER, from test_auto_create_needs_create or here): no CREATE on it
    add(admin, _binding("BROKER", "kafka-cluster", "ALTER", "ALLOW"))
    name = f"adm-{uuid.uuid4().hex[:8]}"
    add(admin, _binding("TOPIC", name, "DESCRIBE", "ALLOW"))
    [f] = admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10).values()
    with pytest.raises(Exception) as e:
        f.result(10)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    add(admin, _binding("TOPIC", name, "CREATE", "ALLOW"))
    with WireClient(broker.bootstrap_servers) as c:   # validate_only: created, its configs not shown
        CT = api("CreateTopics").request.struct("CreatableTopic")
        r = c.request("CreateTopics", 7, topics=[CT(name=name, num_partitions=1, replication_factor=1, assignments=[],
                                                     configs=[])], timeout_ms=10000, validate_only=True)
        assert r.topics[0].error_code == 0 and r.topics[0].configs == []
        assert r.topics[0].topic_config_error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    [f] = admin.create_topics([NewTopic(name, 1, 1)], request_timeout=10).values()
    assert f.result(10) is None
    [f] = admin.create_partitions([NewPartitions(name, 2)], request_timeout=10).values()
    with pytest.raises(Exception) as e:
        f.result(10)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    add(admin, _binding("TOPIC", name, "ALTER", "ALLOW"))
    [f] = admin.create_partitions([NewPartitions(name, 2)], request_timeout=10).values()
    assert f.result(10) is None
    [f] = admin.delete_topics([name], request_timeout=10).values()
    with pytest.raises(Exception) as e:
        f.result(10)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    add(admin, _binding("TOPIC", name, "DELETE", "ALLOW"))
    [f] = admin.delete_topics([name], request_timeout=10).values()
    assert f.result(10) is None


def test_configs_need_describe_and_alter_configs(broker, admin):
    from confluent_kafka import KafkaError  # noqa: PLC0415
    from confluent_kafka.admin import ConfigResource  # noqa: PLC0415
    t = _topic(broker)
    add(admin, _binding("TOPIC", t, "DESCRIBE", "ALLOW"))
    res = ConfigResource("topic", t, set_config={"retention.ms": "1000"})
    for fut in (list(admin.describe_configs([ConfigResource("topic", t)], request_timeout=10).values())[0],
                list(admin.alter_configs([res], request_timeout=10).values())[0]):
        with pytest.raises(Exception) as e:
            fut.result(10)
        assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    add(admin, _binding("TOPIC", t, "ALTER_CONFIGS", "ALLOW"))   # implies DESCRIBE_CONFIGS
    assert list(admin.alter_configs([res], request_timeout=10).values())[0].result(10) is None
    got = list(admin.describe_configs([ConfigResource("topic", t)], request_timeout=10).values())[0].result(10)
    assert got["retention.ms"].value == "1000"
    # broker configs are the cluster's: ANONYMOUS may ALTER the cluster, not DESCRIBE_CONFIGS it
    add(admin, _binding("BROKER", "kafka-cluster", "ALTER", "ALLOW"))
    [f] = admin.describe_configs([ConfigResource("broker", "1")], request_timeout=10).values()
    with pytest.raises(Exception) as e:
        f.result(10)
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_transactional_id_write_deny_then_allow(broker, admin):
    from confluent_kafka import KafkaException, Producer  # noqa: PLC0415
    t = _topic(broker)
    tid = f"tx-{t}"
    add(admin, _binding("TOPIC", t, "WRITE", "ALLOW"), _binding("TRANSACTIONAL_ID", tid, "DESCRIBE", "ALLOW"))
    conf = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid, "transaction.timeout.ms": 10000}
    p = Producer(conf)
    with pytest.raises(KafkaException) as e:
        p.init_transactions(10)
    assert e.value.args[0].code() == 53   # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    add(admin, _binding("TRANSACTIONAL_ID", tid, "WRITE", "ALLOW"))
    p = Producer(conf)
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(t, b"in-txn")
    p.commit_transaction(10)
    with WireClient(broker.bootstrap_servers) as c:
        add(admin, _binding("TOPIC", t, "READ", "ALLOW"))
        assert [r.value for r in c.consume(t, 1, timeout=5)] == [b"in-txn"]


def test_cluster_apis_and_authorized_operations(broker, admin):
    from kwire.security.operations import AclOperation as Op  # noqa: PLC0415
    with WireClient(broker.bootstrap_servers) as c:
        # the cluster's ACLs by now: ANONYMOUS may ALTER it (implies DESCRIBE); nothing else
        add(admin, _binding("BROKER", "kafka-cluster", "ALTER", "ALLOW"))
        assert c.request("DescribeQuorum", 0, topics=[]).error_code == 0
        r = c.request("DescribeCluster", 0, include_cluster_authorized_operations=True)
        ops = {op for op in Op if r.cluster_authorized_operations & (1 << int(op))}
        assert ops == {Op.ALTER, Op.DESCRIBE}
        assert c.request("DescribeLogDirs", 4, topics=None).error_code == 0
        deny = _binding("BROKER", "kafka-cluster", "DESCRIBE", "DENY")
        add(admin, deny)
        try:
            r = c.request("DescribeLogDirs", 4, topics=None)
            assert r.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and r.results == []
            r = c.request("ListPartitionReassignments", 0, timeout_ms=1000, topics=None)
            assert r.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            assert c.request("DescribeQuorum", 0, topics=[]).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        finally:
            remove(admin, deny)


def test_aiokafka_producer_refused(broker, admin):
    import asyncio  # noqa: PLC0415

    from aiokafka import AIOKafkaProducer  # noqa: PLC0415
    from aiokafka.errors import TopicAuthorizationFailedError  # noqa: PLC0415
    t = _topic(broker)
    # DESCRIBE allowed (Metadata answers), WRITE denied: the Produce itself is refused
    add(admin, _binding("TOPIC", t, "DESCRIBE", "ALLOW"), _binding("TOPIC", t, "WRITE", "DENY"))

    async def main():
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=5000)
        await p.start()
        try:
            await p.send_and_wait(t, b"x")
        finally:
            await p.stop()

    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(asyncio.wait_for(main(), 20))


def test_inter_broker_apis_need_cluster_action(broker, admin):
    """A client posing as a follower or a transaction coordinator is refused without
    CLUSTER_ACTION (the cluster's ACLs here grant ANONYMOUS only ALTER), allowed with it."""
    from kwire.codec.apis import api  # noqa: PLC0415
    t = _topic(broker)
    add(admin, _binding("BROKER", "kafka-cluster", "ALTER", "ALLOW"), _binding("TOPIC", t, "ALL", "ALLOW"))
    F = api("Fetch").request
    W = api("WriteTxnMarkers").request

    def follower_fetch(c):
        tp = F.struct("FetchTopic")(topic=t, topic_id=None, partitions=[F.struct("FetchPartition")(
            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=1 << 20)])
        r = c.request("Fetch", 11, replica_id=7, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                      session_id=0, session_epoch=-1, topics=[tp], forgotten_topics_data=[], rack_id="")
        return r.responses[0].partitions[0].error_code

    def markers(c):
        m = W.struct("WritableTxnMarker")(producer_id=1, producer_epoch=0, transaction_result=False,
                                          coordinator_epoch=0, topics=[
            W.struct("WritableTxnMarkerTopic")(name=t, partition_indexes=[0])])
        return c.request("WriteTxnMarkers", 1, markers=[m]).markers[0].topics[0].partitions[0].error_code

    with WireClient(broker.bootstrap_servers) as c:
        assert follower_fetch(c) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert markers(c) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        grant = _binding("BROKER", "kafka-cluster", "CLUSTER_ACTION", "ALLOW")
        add(admin, grant)
        try:
            # past the check: the follower path's own answer (7 is no replica: NOT_LEADER_OR_FOLLOWER)
            assert follower_fetch(c) == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert markers(c) != ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        finally:
            remove(admin, grant)


def test_idempotent_producer_needs_idempotent_write_or_a_topic_write(tmp_path):
    from confluent_kafka import Producer  # noqa: PLC0415
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides=AUTHORIZER)
    b.start()
    try:
        a = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        t = _topic(b)
        # the cluster and the topic have ACLs; ANONYMOUS may not write anything
        add(a, _binding("BROKER", "kafka-cluster", "ALTER", "ALLOW"), _binding("TOPIC", t, "DESCRIBE", "ALLOW"))

        from confluent_kafka import KafkaException  # noqa: PLC0415
        conf = {"bootstrap.servers": b.bootstrap_servers, "enable.idempotence": True, "message.timeout.ms": 5000}
        p = Producer(conf)
        p.produce(t, b"x")
        with pytest.raises(KafkaException) as e:   # librdkafka raises the fatal InitProducerId error
            p.flush(10)
        assert e.value.args[0].code() == 31 and e.value.args[0].fatal()   # CLUSTER_AUTHORIZATION_FAILED
        add(a, _binding("BROKER", "kafka-cluster", "IDEMPOTENT_WRITE", "ALLOW"), _binding("TOPIC", t, "WRITE", "ALLOW"))
        p, delivered = Producer(conf), []
        p.produce(t, b"y", on_delivery=lambda err, msg: delivered.append(err))
        p.flush(10)
        assert delivered == [None]
    finally:
        b.stop()
