"""Edges of the admin APIs that outside clients found: ListGroups filters, FindCoordinator for
transactional ids, Metadata by topic id with an empty name, authorized operations,
UnregisterBroker."""
from __future__ import annotations

import time
import uuid

import pytest
import trio
from confluent_kafka import Consumer, Producer, TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.security.operations import NOT_REQUESTED, authorized_operations
from kwire.testing import Broker
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

TOPIC_OPS = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
             AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}


@pytest.fixture(scope="module")
def broker():
    # Kafka 4.0's ranges: Metadata v13, DescribeCluster v2
    with Broker(overrides={"kwire.emulate.kafka.version": "4.0", "group.initial.rebalance.delay.ms": 0,
                           "broker.session.timeout.ms": 1500}) as b:
        yield b


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _list_groups(bs: str, version: int, **filters):
    with WireClient(bs) as c:
        return c.request("ListGroups", version, **filters)


def test_group_whose_members_left_is_empty_and_filters_apply(broker):
    bs = broker.bootstrap_servers
    topic, group = _name("t"), _name("g")
    broker.create_topic(topic, 2)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "session.timeout.ms": 6000})
    c.subscribe([topic])
    try:
        wait_until(lambda: c.poll(0.2) is None and len(c.assignment()) == 2, 20, message="assignment")
        stable = _list_groups(bs, 5, states_filter=["Stable"], types_filter=[])
        assert group in {g.group_id for g in stable.groups}
    finally:
        c.close()   # LeaveGroup: the last member leaves

    def state_of(version=5, **f):
        return {g.group_id: g for g in _list_groups(bs, version, **f).groups}.get(group)

    wait_until(lambda: state_of(states_filter=["Empty"], types_filter=[]), 10, message="group listed as Empty")
    assert state_of(states_filter=["Stable"], types_filter=[]) is None
    assert state_of(states_filter=["stable", "PreparingRebalance"], types_filter=[]) is None
    g = state_of(states_filter=[], types_filter=["classic"])
    assert g.group_state == "Empty" and g.group_type == "classic" and g.protocol_type == "consumer"
    assert state_of(states_filter=[], types_filter=["consumer"]) is None   # no KIP-848 groups
    assert state_of(4, states_filter=["Empty"]).group_state == "Empty"
    assert state_of(0) is not None
    # the stock admin client's view
    admin = AdminClient({"bootstrap.servers": bs})
    from confluent_kafka import ConsumerGroupState
    listed = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(10)
    assert group in {x.group_id for x in listed.valid}
    listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(10)
    assert group not in {x.group_id for x in listed.valid}


@pytest.mark.parametrize("version", [1, 3, 4, 5])
def test_find_coordinator_for_transactional_id_names_the_coordinator(broker, version):
    """The transaction coordinator is the leader of the id's __transaction_state partition
    (created on the first look-up); an empty id is INVALID_REQUEST."""
    with WireClient(broker.bootstrap_servers) as c:
        if version < 4:
            r = c.request("FindCoordinator", version, key="my-txn", key_type=1)
            assert (r.error_code, r.node_id, r.port) == (0, 1, broker.port)
            assert r.error_message == "NONE"   # as Kafka: Errors.NONE.message() up to v3
            r = c.request("FindCoordinator", version, key="", key_type=1)
            assert r.error_code == ErrorCode.INVALID_REQUEST
        else:
            r = c.request("FindCoordinator", version, key_type=1, coordinator_keys=["my-txn", ""])
            assert [(x.error_code, x.node_id) for x in r.coordinators] == [(0, 1), (ErrorCode.INVALID_REQUEST, -1)]
            assert r.coordinators[0].error_message == ""   # as Kafka from v4


def test_transactional_producer_initializes(broker):
    """confluent-kafka's init_transactions: FindCoordinator key type 1, InitProducerId with the
    transactional id; a second producer with the same id fences the first."""
    tid = _name("txn")
    t0 = time.monotonic()
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(30)
    assert time.monotonic() - t0 < 10
    with WireClient(broker.bootstrap_servers) as c:
        d = c.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]
        assert (d.error_code, d.transaction_state, d.producer_epoch, d.transaction_timeout_ms) == \
            (0, "Empty", 0, 60000)
    p2 = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid})
    p2.init_transactions(30)
    with WireClient(broker.bootstrap_servers) as c:
        d = c.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]
        assert d.producer_epoch == 1


def test_metadata_by_topic_id_with_empty_name(broker):
    topic = _name("byid")
    broker.create_topic(topic, 3)
    with WireClient(broker.bootstrap_servers) as c:
        T = api("Metadata").request.struct("MetadataRequestTopic")
        first = c.request("Metadata", 12, topics=[T(name=topic)], allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
        tid = first.topics[0].topic_id
        for name in ("", None):     # Java 4.x sends "", others null
            r = c.request("Metadata", 12, topics=[T(topic_id=tid, name=name)], allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
            got = r.topics[0]
            assert got.error_code == 0 and got.name == topic and got.topic_id == tid and len(got.partitions) == 3
        r = c.request("Metadata", 13, topics=[T(topic_id=uuid.uuid4(), name="")], allow_auto_topic_creation=False,
                      include_topic_authorized_operations=False)
        assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        assert r.error_code == 0     # v13's top-level code: Kafka's brokers never set it either


def test_authorized_operations_with_a_stock_admin_client(broker):
    bs = broker.bootstrap_servers
    topic, group = _name("ops"), _name("g")
    broker.create_topic(topic, 1)
    admin = AdminClient({"bootstrap.servers": bs})
    d = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(10)
    assert set(d.authorized_operations) == TOPIC_OPS
    d = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    assert not d.authorized_operations
    cl = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert set(cl.authorized_operations) == {AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                                             AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                                             AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE}
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    c.subscribe([topic])
    try:
        wait_until(lambda: c.poll(0.2) is None and c.assignment(), 20, message="assignment")
        g = admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(10)
        assert set(g.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                                                AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    finally:
        c.close()
    with WireClient(bs) as w:   # not asked: Kafka's INT32_MIN
        r = w.request("Metadata", 9, topics=None, allow_auto_topic_creation=False,
                      include_cluster_authorized_operations=False, include_topic_authorized_operations=False)
        assert r.cluster_authorized_operations == NOT_REQUESTED
        assert all(t.topic_authorized_operations == NOT_REQUESTED for t in r.topics)
        r = w.request("Metadata", 9, topics=None, allow_auto_topic_creation=False,
                      include_cluster_authorized_operations=True, include_topic_authorized_operations=True)
        assert r.cluster_authorized_operations == authorized_operations("cluster", True) == 8096
        assert {t.topic_authorized_operations for t in r.topics} == {3576}


def _unregister(bs: str, broker_id: int):
    with WireClient(bs) as c:
        return c.request("UnregisterBroker", 0, broker_id=broker_id)


def test_unregister_broker_removes_a_dead_registration(broker):
    bs = broker.bootstrap_servers
    phantom = 7
    rec = (R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
        broker_id=phantom, incarnation_id=uuid.uuid4(), broker_epoch=1,
        end_points=[R.REGISTER_BROKER.struct("BrokerEndpoint")(name="PLAINTEXT", host="127.0.0.1", port=1,
                                                                security_protocol=0)],
        rack=None, fenced=False))
    trio.from_thread.run(broker.broker.submit_metadata, [rec], trio_token=broker._trio_token)
    def image():    # the broker's current image: each committed batch makes a new one
        return broker.broker.image

    assert phantom in image().brokers
    r = _unregister(bs, 99)
    assert r.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED and "99" in r.error_message
    if not image().brokers[phantom].fenced:        # alive as far as the controller knows: refused
        r = _unregister(bs, phantom)
        assert r.error_code in (ErrorCode.INVALID_REQUEST, ErrorCode.NONE)
    # it never heartbeats: the controller fences it after broker.session.timeout.ms
    wait_until(lambda: phantom not in image().brokers or image().brokers[phantom].fenced, 10, message="fenced")
    with WireClient(bs) as c:
        r = c.request("DescribeCluster", 0, include_cluster_authorized_operations=False)
        assert [b.broker_id for b in r.brokers] == [1]
        # v2 (KIP-1073): fenced brokers only when asked, each with is_fenced
        r = c.request("DescribeCluster", 2, include_cluster_authorized_operations=False, endpoint_type=1,
                      include_fenced_brokers=False)
        assert [(b.broker_id, b.is_fenced) for b in r.brokers] == [(1, False)]
        r = c.request("DescribeCluster", 2, include_cluster_authorized_operations=False, endpoint_type=1,
                      include_fenced_brokers=True)
        if phantom in image().brokers:
            assert [(b.broker_id, b.is_fenced) for b in r.brokers] == [(1, False), (phantom, True)]
    if phantom in image().brokers:
        r = _unregister(bs, phantom)
        assert r.error_code == 0, r
    assert phantom not in image().brokers
    assert _unregister(bs, phantom).error_code == ErrorCode.BROKER_ID_NOT_REGISTERED
    assert _unregister(bs, 1).error_code == ErrorCode.INVALID_REQUEST     # this live broker
