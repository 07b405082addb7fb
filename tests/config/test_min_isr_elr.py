"""The cluster-level min.insync.replicas a Kafka 4.1+ cluster holds from its format on (KIP-966):
the controller's records and refusals (kwire.metadata.config_control), and what DescribeConfigs,
IncrementalAlterConfigs and AlterConfigs answer on a kwire broker. tests/integration/
test_vs_apache_kafka.py checks the same answers against a real Kafka 4.3."""
from __future__ import annotations

import uuid

import pytest

from kwire.metadata.delta import replay
from kwire.codec.apis import api
from kwire.metadata import records as R
from kwire.metadata.config_control import (BROKER_MIN_ISR_ALTERED, CLUSTER_MIN_ISR_REMOVED, elr_safety_records,
                                           min_isr_transition_error)
from kwire.metadata.image import MetadataImage
from kwire.testing import Broker
from kwire.testing.client import WireClient

TOPIC_T, BROKER_T = 2, 4
DYN_DEFAULT, STATIC, DEFAULT = 3, 4, 5
INVALID_CONFIG = 40


def _config(image, name, key, value):
    return replay(image, [(R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_BROKER, resource_name=name, name=key, value=value))])


# ------------------------------------------------------------------ the controller's rules
def test_safety_records_write_the_static_value_once_and_remove_broker_level_ones():
    image = MetadataImage()
    recs = elr_safety_records(image, 2)
    assert [(o.resource_type, o.resource_name, o.name, o.value) for _, o in recs] == [
        (R.RESOURCE_BROKER, "", "min.insync.replicas", "2")]
    for _, o in recs:
        image = replay(image, [(R.CONFIG, o)])
    assert elr_safety_records(image, 3) == []          # an existing cluster-level value is kept
    image = _config(image, "2", "min.insync.replicas", "3")    # left from before ELR
    image = _config(image, "1", "log.cleaner.threads", "2")
    recs = elr_safety_records(image, 2)
    assert [(o.resource_name, o.name, o.value) for _, o in recs] == [("2", "min.insync.replicas", None)]


@pytest.mark.parametrize("name,changes,error", [
    ("1", {"min.insync.replicas": "2"}, BROKER_MIN_ISR_ALTERED),
    ("1", {"min.insync.replicas": None}, BROKER_MIN_ISR_ALTERED),
    ("", {"min.insync.replicas": None}, CLUSTER_MIN_ISR_REMOVED),
    ("", {"min.insync.replicas": "2"}, None),
    ("1", {"log.cleaner.threads": "2"}, None),
])
def test_min_isr_transitions(name, changes, error):
    assert min_isr_transition_error(name, changes) == error


# ------------------------------------------------------------------ on the wire
@pytest.fixture(scope="module")
def kw():
    with Broker(mode="thread", overrides={"node.id": 1, "min.insync.replicas": 2}) as b:
        yield b


@pytest.fixture
def wire(kw):
    with WireClient(kw.bootstrap_servers) as c:
        yield c


def describe(c, rtype, name, keys=None, synonyms=True):
    res = api("DescribeConfigs").request.struct("DescribeConfigsResource")(
        resource_type=rtype, resource_name=name, configuration_keys=keys)
    r = c.request("DescribeConfigs", 4, resources=[res], include_synonyms=synonyms,
                  include_documentation=False).results[0]
    assert (r.error_code, r.error_message) == (0, "")
    return {e.name: (e.value, e.config_source, e.read_only, e.is_sensitive, e.config_type,
                     [(s.name, s.value, s.source) for s in e.synonyms]) for e in r.configs}


def incremental(c, name, ops, validate_only=False):
    a = api("IncrementalAlterConfigs")
    R_, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
    r = c.request("IncrementalAlterConfigs", 1, validate_only=validate_only, resources=[R_(
        resource_type=BROKER_T, resource_name=name,
        configs=[C(name=k, config_operation=op, value=v) for k, op, v in ops])]).responses[0]
    return r.error_code, r.error_message


def legacy(c, name, configs):
    a = api("AlterConfigs")
    R_, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
    r = c.request("AlterConfigs", 1, validate_only=False, resources=[R_(
        resource_type=BROKER_T, resource_name=name,
        configs=[C(name=k, value=v) for k, v in configs.items()])]).responses[0]
    return r.error_code, r.error_message


@pytest.mark.slow
def test_a_new_cluster_holds_the_static_value_at_cluster_level(wire):
    int_type = 3
    assert describe(wire, BROKER_T, "") == {
        "min.insync.replicas": ("2", DYN_DEFAULT, False, False, int_type, [("min.insync.replicas", "2", DYN_DEFAULT)])}
    assert describe(wire, BROKER_T, "", synonyms=False)["min.insync.replicas"][5] == []
    assert describe(wire, BROKER_T, "1", ["min.insync.replicas"])["min.insync.replicas"] == (
        "2", DYN_DEFAULT, False, False, int_type,
        [("min.insync.replicas", "2", DYN_DEFAULT), ("min.insync.replicas", "2", STATIC),
         ("min.insync.replicas", "1", DEFAULT)])
    topic = f"elr-{uuid.uuid4().hex[:8]}"
    wire.create_topic(topic, 1)
    assert describe(wire, TOPIC_T, topic, ["min.insync.replicas"])["min.insync.replicas"][:2] == ("2", DYN_DEFAULT)


@pytest.mark.slow
def test_broker_level_min_isr_is_refused_and_cluster_level_cannot_be_removed(wire):
    assert incremental(wire, "1", [("min.insync.replicas", 0, "3")]) == (INVALID_CONFIG, BROKER_MIN_ISR_ALTERED)
    assert incremental(wire, "1", [("min.insync.replicas", 1, None)], True) == (INVALID_CONFIG, BROKER_MIN_ISR_ALTERED)
    assert legacy(wire, "1", {"min.insync.replicas": "3"}) == (INVALID_CONFIG, BROKER_MIN_ISR_ALTERED)
    assert incremental(wire, "", [("min.insync.replicas", 1, None)]) == (INVALID_CONFIG, CLUSTER_MIN_ISR_REMOVED)
    # a legacy AlterConfigs replaces the whole set: leaving the key out removes it
    assert legacy(wire, "", {"log.cleaner.threads": "2"}) == (INVALID_CONFIG, CLUSTER_MIN_ISR_REMOVED)
    assert describe(wire, BROKER_T, "")["min.insync.replicas"][0] == "2"
    assert incremental(wire, "", [("min.insync.replicas", 0, "1")]) == (0, None)
    assert describe(wire, BROKER_T, "")["min.insync.replicas"][:2] == ("1", DYN_DEFAULT)
    assert legacy(wire, "", {"min.insync.replicas": "2"}) == (0, None)


@pytest.mark.slow
def test_a_topic_min_isr_change_clears_its_elr_on_a_running_broker(kw, wire):
    """The ClearElrRecord goes through the metadata log with the ConfigRecord (one commit)."""
    a = api("IncrementalAlterConfigs")
    R_, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
    topic = f"elr-{uuid.uuid4().hex[:8]}"
    wire.create_topic(topic, 1)
    image = kw.server.broker.image
    p = image.topics[topic].partitions[0]
    p.elr, p.last_known_elr = [7], [8]   # as if replicas had left the ISR below min ISR
    epoch = p.partition_epoch
    r = wire.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[R_(
        resource_type=TOPIC_T, resource_name=topic, configs=[C(name="min.insync.replicas", config_operation=0,
                                                               value="1")])]).responses[0]
    assert r.error_code == 0
    p = kw.server.broker.image.topics[topic].partitions[0]
    assert (p.elr, p.last_known_elr, p.partition_epoch) == ([], [], epoch + 1)
    part = kw.server.broker.replica_manager.partitions[(topic, 0)]
    assert part.partition_epoch == p.partition_epoch   # the leader took up the new partition epoch


@pytest.mark.slow
def test_a_cluster_emulating_4_0_has_no_elr_rules():
    """Kafka 4.0 formats without ELR: no cluster-level min.insync.replicas is written and a
    broker-level one may be set, as there."""
    with Broker(mode="thread", overrides={"node.id": 1, "min.insync.replicas": 2,
                                          "kwire.emulate.kafka.version": "4.0"}) as b, \
            WireClient(b.bootstrap_servers) as c:
        assert "min.insync.replicas" not in b.server.broker.image.broker_configs.get("", {})
        assert incremental(c, "1", [("min.insync.replicas", 0, "3")]) == (0, None)
        assert describe(c, BROKER_T, "1", ["min.insync.replicas"])["min.insync.replicas"][:2] == ("3", 2)
