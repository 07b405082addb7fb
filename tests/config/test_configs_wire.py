"""Broker, topic and group configs through the wire, with stock clients and the raw wire client:
every key of the table round-trips through DescribeConfigs with its type and default; sources,
read-only flags and synonyms as Kafka reports them; AlterConfigs / IncrementalAlterConfigs as
Kafka accepts and refuses them; group configs; ListConfigResources."""
from __future__ import annotations

import uuid

import pytest
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from kwire.codec.apis import api
from kwire.config import BROKER, GROUP, TOPIC
from kwire.configdef import to_string
from kwire.testing import Broker, free_port
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow

TOPIC_T, BROKER_T, GROUP_T = 2, 4, 32
TOPIC_CONFIG, DYN_BROKER, DYN_DEFAULT, STATIC, DEFAULT, GROUP_CONFIG = 1, 2, 3, 4, 5, 8
INVALID_REQUEST, INVALID_CONFIG = 42, 40


@pytest.fixture(scope="module")
def kw():
    port = free_port()
    with Broker(mode="thread", port=port, overrides={
            "kwire.emulate.kafka.version": "3.9",   # DescribeConfigs v0 (test_documentation_and_v0) is 3.x's
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.retention.hours": 24,
            "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture
def wire(kw):
    with WireClient(kw.bootstrap_servers) as c:
        yield c


@pytest.fixture(scope="module")
def admin(kw):
    a = KafkaAdminClient(bootstrap_servers=kw.bootstrap_servers, request_timeout_ms=10000)
    yield a
    a.close()


def describe(c, rtype, name, keys=None, version=4):
    a = api("DescribeConfigs")
    res = a.request.struct("DescribeConfigsResource")(resource_type=rtype, resource_name=name,
                                                      configuration_keys=keys)
    resp = c.request("DescribeConfigs", version, resources=[res], include_synonyms=True,
                     include_documentation=True)
    r = resp.results[0]
    return r, {e.name: e for e in r.configs}


def incremental(c, rtype, name, ops, validate_only=False):
    a = api("IncrementalAlterConfigs")
    R, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
    resp = c.request("IncrementalAlterConfigs", 1, validate_only=validate_only, resources=[R(
        resource_type=rtype, resource_name=name,
        configs=[C(name=k, config_operation=op, value=v) for k, op, v in ops])])
    r = resp.responses[0]
    return r.error_code, r.error_message


def syn(entry):
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def new_topic(wire, **configs):
    name = f"cfg-{uuid.uuid4().hex[:8]}"
    wire.create_topic(name, 1, {k: str(v) for k, v in configs.items()})
    return name


# ------------------------------------------------------------------ every key, type and default
def test_every_broker_key_round_trips_with_type_and_default(kw, admin):
    node = str(kw.broker.node_id)
    got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, node)], config_filter="all")
    configs = got["broker"][node]
    given = set(kw.broker.config.originals)
    for name, spec in BROKER.items():
        if spec.hidden:
            continue
        assert name in configs, name
        e = configs[name]
        assert e["config_type"] == spec.type.name, name
        assert e["read_only"] == (not spec.dynamic), name
        assert e["is_sensitive"] == spec.sensitive, name
        if name not in given:   # 3.9 emulation: no KIP-966 cluster-level min.insync.replicas (test_min_isr_elr.py)
            assert e["config_source"] == "DEFAULT_CONFIG", name
            assert e["value"] == (None if spec.sensitive else spec.default_string), name


def test_every_topic_key_round_trips_with_type_and_default(kw, wire, admin):
    t = new_topic(wire)
    got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t)], config_filter="all")
    configs = got["topic"][t]
    cfg = kw.broker.config
    listed = {n for n, s in TOPIC.items() if not s.hidden}
    assert set(configs) == listed
    for name in listed:
        spec = TOPIC[name]
        e = configs[name]
        assert e["config_type"] == spec.type.name and e["read_only"] is False, name
        assert e["value"] == to_string(cfg.topic_default(name), spec.type), name
        if name != "retention.ms":   # set through log.retention.hours on this broker
            assert e["value"] == spec.default_string, name


def test_documentation_and_v0(kw, wire):
    _, cs = describe(wire, BROKER_T, str(kw.broker.node_id), ["num.partitions", "log.cleanup.policy"])
    assert cs["num.partitions"].documentation == BROKER["num.partitions"].doc
    assert cs["log.cleanup.policy"].config_type == 7
    _, cs = describe(wire, BROKER_T, str(kw.broker.node_id), ["num.partitions"], version=0)
    assert cs["num.partitions"].is_default is True and cs["num.partitions"].read_only is True


# ------------------------------------------------------------------ sources, read_only, synonyms
def test_static_and_default_sources(kw, wire):
    node = str(kw.broker.node_id)
    _, cs = describe(wire, BROKER_T, node)
    adv = cs["advertised.listeners"]
    assert (adv.config_source, adv.read_only, adv.value) == (STATIC, True, f"PLAINTEXT://127.0.0.1:{kw.port}")
    assert syn(cs["num.partitions"]) == [("num.partitions", "1", DEFAULT)]
    assert cs["num.partitions"].read_only is True and cs["num.partitions"].config_type == 3
    hours = cs["log.retention.hours"]
    assert (hours.value, hours.config_source) == ("24", STATIC)
    assert syn(hours) == [("log.retention.hours", "24", STATIC), ("log.retention.hours", "168", DEFAULT)]
    assert cs["log.retention.ms"].value is None and cs["log.retention.ms"].read_only is False
    pw = cs["ssl.keystore.password"]
    assert (pw.is_sensitive, pw.value, pw.config_type) == (True, None, 9)
    r, cs = describe(wire, BROKER_T, "")
    assert r.error_code == 0
    r, _ = describe(wire, BROKER_T, "99")
    assert r.error_code == INVALID_REQUEST and "Unexpected broker id" in r.error_message


def test_dynamic_sources_and_synonym_order(kw, wire):
    node = str(kw.broker.node_id)
    t = new_topic(wire)
    _, cs = describe(wire, TOPIC_T, t)
    # as Kafka: the topic's synonyms start at log.retention.ms, so with only .hours set there are none
    assert (cs["retention.ms"].value, cs["retention.ms"].config_source, syn(cs["retention.ms"])) == \
        (str(24 * 3600000), DEFAULT, [])
    assert syn(cs["segment.bytes"]) == [("log.segment.bytes", "1073741824", DEFAULT)]
    try:
        assert incremental(wire, BROKER_T, "", [("log.retention.ms", 0, "3600000")]) == (0, None)
        _, cs = describe(wire, TOPIC_T, t)
        assert cs["retention.ms"].value == "3600000" and cs["retention.ms"].config_source == DYN_DEFAULT
        assert syn(cs["retention.ms"]) == [("log.retention.ms", "3600000", DYN_DEFAULT),
                                           ("log.retention.hours", "24", STATIC),
                                           ("log.retention.hours", "168", DEFAULT)]
        assert kw.broker.logs.config_for(t).retention_ms == 3600000     # the log follows
        _, bs = describe(wire, BROKER_T, "")
        assert list(bs) == ["log.retention.ms"] and syn(bs["log.retention.ms"]) == \
            [("log.retention.ms", "3600000", DYN_DEFAULT)]
        assert incremental(wire, BROKER_T, node, [("log.retention.ms", 0, "7200000")]) == (0, None)
        _, cs = describe(wire, TOPIC_T, t)
        assert syn(cs["retention.ms"])[:2] == [("log.retention.ms", "7200000", DYN_BROKER),
                                               ("log.retention.ms", "3600000", DYN_DEFAULT)]
        _, bs = describe(wire, BROKER_T, node, ["log.retention.ms"])
        assert (bs["log.retention.ms"].value, bs["log.retention.ms"].config_source) == ("7200000", DYN_BROKER)
        assert incremental(wire, TOPIC_T, t, [("retention.ms", 0, "1000")]) == (0, None)
        _, cs = describe(wire, TOPIC_T, t)
        assert syn(cs["retention.ms"])[0] == ("retention.ms", "1000", TOPIC_CONFIG)
        assert cs["retention.ms"].config_source == TOPIC_CONFIG and cs["retention.ms"].read_only is False
        assert kw.broker.logs.config_for(t).retention_ms == 1000
    finally:
        incremental(wire, BROKER_T, node, [("log.retention.ms", 1, None)])
        incremental(wire, BROKER_T, "", [("log.retention.ms", 1, None)])
    _, bs = describe(wire, BROKER_T, "")
    assert list(bs) == []   # a 3.9 cluster holds no cluster-level min.insync.replicas (a 4.1+ one does)


def test_replication_throttle_rates_have_no_default_synonym(kw, wire):
    """What kafka-reassign-partitions --throttle sets (found side by side with Kafka's kafka-configs
    --describe, tests/ecosystem/test_kafka_tools_three.py): Kafka's broker quota keys are not in
    KafkaConfig's ConfigDef, so their only synonym is the dynamic value."""
    node = str(kw.broker.node_id)
    keys = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
            "replica.alter.log.dirs.io.max.bytes.per.second")
    try:
        assert incremental(wire, BROKER_T, node, [(k, 0, "1000") for k in keys]) == (0, None)
        _, bs = describe(wire, BROKER_T, node)
        for k in keys:
            assert (bs[k].value, bs[k].config_source, syn(bs[k])) == ("1000", DYN_BROKER, [(k, "1000", DYN_BROKER)])
    finally:
        incremental(wire, BROKER_T, node, [(k, 1, None) for k in keys])
    _, bs = describe(wire, BROKER_T, node)
    assert not set(keys) & set(bs)      # described only once set


# ------------------------------------------------------------------ what alters are refused or accepted
def test_broker_alters_as_kafka_refuses_and_accepts(kw, wire, admin):
    node = str(kw.broker.node_id)
    code, msg = incremental(wire, BROKER_T, node, [("num.partitions", 0, "3")])
    assert code == INVALID_REQUEST and "Cannot update these configs dynamically: [num.partitions]" in msg
    code, msg = incremental(wire, BROKER_T, "", [("sasl.kerberos.min.time.before.relogin", 0, "1000")])
    assert code == INVALID_REQUEST and "broker id must be specified" in msg
    code, msg = incremental(wire, BROKER_T, node, [("sasl.kerberos.min.time.before.relogin", 0, "soon")])
    assert code == INVALID_REQUEST and "Not a number of type LONG" in msg
    code, msg = incremental(wire, BROKER_T, node, [("ssl.keystore.location", 0, "/k.jks")])
    assert code == INVALID_REQUEST and "listener prefix" in msg
    code, msg = incremental(wire, BROKER_T, node, [("no.such.broker.key", 0, "1")])
    assert code == INVALID_CONFIG
    # a key Kafka knows and kwire does not use: validated, stored, described
    res = admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, node,
                                              {"sasl.kerberos.min.time.before.relogin": "120000"})])
    assert all(not getattr(e, "errno", 0) for e in res["broker"].values())
    got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, node,
                                                 ["sasl.kerberos.min.time.before.relogin"])],
                                 config_filter="all")["broker"][node]["sasl.kerberos.min.time.before.relogin"]
    assert (got["value"], got["config_source"], got["read_only"], got["config_type"]) == \
        ("120000", "DYNAMIC_BROKER_CONFIG", False, "LONG")
    assert kw.broker.image.broker_configs[node]["sasl.kerberos.min.time.before.relogin"] == "120000"
    assert incremental(wire, BROKER_T, node, [("sasl.kerberos.min.time.before.relogin", 1, None)]) == (0, None)


def test_topic_alters(kw, wire):
    t = new_topic(wire)
    code, msg = incremental(wire, TOPIC_T, t, [("no.such.topic.key", 0, "1")])
    assert (code, msg) == (INVALID_CONFIG, "Unknown topic config name: no.such.topic.key")
    code, msg = incremental(wire, TOPIC_T, t, [("retention.ms", 0, "soon")])
    assert (code, msg) == (INVALID_CONFIG, "Invalid value soon for configuration retention.ms: "
                                           "Not a number of type LONG")
    code, msg = incremental(wire, TOPIC_T, t, [("retention.ms", 2, "5")])
    assert code == INVALID_CONFIG and "type is not LIST" in msg
    # message.format.version: accepted as Kafka 3.x accepted it, stored, ignored
    assert incremental(wire, TOPIC_T, t, [("message.format.version", 0, "2.8-IV1")]) == (0, None)
    _, cs = describe(wire, TOPIC_T, t)
    assert cs["message.format.version"].value == "2.8-IV1" and cs["message.format.version"].config_source == 1
    assert incremental(wire, TOPIC_T, t, [("retention.ms", 0, "5000")], validate_only=True) == (0, None)
    assert "retention.ms" not in kw.broker.image.topics[t].configs


def test_append_subtract_with_confluent_kafka(kw, wire):
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource as CR,
                                       ResourceType)

    t = new_topic(wire)
    ac = AdminClient({"bootstrap.servers": kw.bootstrap_servers})

    def alter(op, value, key="cleanup.policy"):
        res = CR(ResourceType.TOPIC, t, incremental_configs=[ConfigEntry(key, value, incremental_operation=op)])
        ac.incremental_alter_configs([res])[res].result(10)

    def policy():
        res = CR(ResourceType.TOPIC, t)
        return ac.describe_configs([res])[res].result(10)["cleanup.policy"].value

    alter(AlterConfigOpType.APPEND, "compact")
    assert policy() == "delete,compact"
    alter(AlterConfigOpType.APPEND, "compact")      # already there: not added twice
    assert policy() == "delete,compact"
    alter(AlterConfigOpType.SUBTRACT, "delete")
    assert policy() == "compact"
    alter(AlterConfigOpType.SUBTRACT, "compact")    # Kafka 4: an empty policy is valid
    assert policy() == ""
    assert kw.broker.image.topics[t].configs["cleanup.policy"] == ""
    with pytest.raises(Exception) as ei:
        alter(AlterConfigOpType.APPEND, "shred")
    assert "INVALID_CONFIG" in str(ei.value) or "String must be one of" in str(ei.value)


# ------------------------------------------------------------------ groups
def test_group_configs(kw, wire, admin):
    g = f"share-{uuid.uuid4().hex[:6]}"
    # what share-consumer fixtures do before anything else
    res = admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, g,
                                              {"share.auto.offset.reset": (AlterConfigOp.SET, "earliest")})],
                              incremental=True)
    assert all(not getattr(e, "errno", 0) for e in res["group"].values())
    got = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, g)], config_filter="all")["group"][g]
    assert set(got) == {n for n, s in GROUP.items() if not s.hidden}
    assert (got["share.auto.offset.reset"]["value"], got["share.auto.offset.reset"]["config_source"]) == \
        ("earliest", "DYNAMIC_GROUP_CONFIG")   # kafka-python's name of source 8
    assert (got["consumer.session.timeout.ms"]["value"], got["consumer.session.timeout.ms"]["config_source"],
            got["consumer.session.timeout.ms"]["config_type"]) == ("45000", "DEFAULT_CONFIG", "INT")
    code, msg = incremental(wire, GROUP_T, g, [("share.auto.offset.reset", 0, "sideways")])
    assert code == INVALID_CONFIG
    assert incremental(wire, GROUP_T, g, [("share.auto.offset.reset", 0, "by_duration:PT1H")]) == (0, None)
    code, msg = incremental(wire, GROUP_T, g, [("consumer.heartbeat.interval.ms", 0, "1000")])
    assert (code, msg) == (INVALID_CONFIG, "consumer.heartbeat.interval.ms must be greater than or equal to "
                                           "group.consumer.min.heartbeat.interval.ms")
    code, msg = incremental(wire, GROUP_T, g, [("no.such.group.key", 0, "1")])
    assert (code, msg) == (INVALID_CONFIG, "Unknown group config name: no.such.group.key")
    r, _ = describe(wire, GROUP_T, "")
    assert r.error_code == INVALID_REQUEST
    assert kw.broker.image.group_configs[g] == {"share.auto.offset.reset": "by_duration:PT1H"}


# ------------------------------------------------------------------ ListConfigResources
@pytest.fixture(scope="module")
def kw41():
    """ListConfigResources v1 (any resource type) is Kafka 4.1's; the default emulation (3.9) has v0."""
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "4.1"}) as b:
        yield b


def test_list_config_resources_v1_is_kafka_41s(wire):
    versions = wire.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    assert {(k.api_key, k.min_version, k.max_version) for k in versions.api_keys} >= {(74, 0, 0)}


def test_list_config_resources(kw41):
    kw = kw41
    with WireClient(kw.bootstrap_servers) as wire:
        admin = KafkaAdminClient(bootstrap_servers=kw.bootstrap_servers, request_timeout_ms=10000)
        try:
            _list_config_resources(kw, wire, admin)
        finally:
            admin.close()


def _list_config_resources(kw, wire, admin):
    t = new_topic(wire)
    g = f"grp-{uuid.uuid4().hex[:6]}"
    assert incremental(wire, GROUP_T, g, [("consumer.session.timeout.ms", 0, "50000")]) == (0, None)
    versions = wire.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    assert {(k.api_key, k.min_version, k.max_version) for k in versions.api_keys} >= {(74, 0, 1)}
    resp = wire.request("ListConfigResources", 1, resource_types=[])
    listed = {(r.resource_type, r.resource_name) for r in resp.config_resources}
    node = str(kw.broker.node_id)
    assert {(TOPIC_T, t), (BROKER_T, node), (GROUP_T, g)} <= listed
    resp = wire.request("ListConfigResources", 1, resource_types=[GROUP_T])
    assert resp.error_code == 0 and {r.resource_type for r in resp.config_resources} == {GROUP_T}
    assert g in {r.resource_name for r in resp.config_resources}
    assert wire.request("ListConfigResources", 0).config_resources == []
    assert wire.request("ListConfigResources", 1, resource_types=[99]).error_code == INVALID_REQUEST
    by_type = admin.list_config_resources(["TOPIC", "BROKER"])
    assert t in by_type["topic"] and by_type["broker"] == [node]
