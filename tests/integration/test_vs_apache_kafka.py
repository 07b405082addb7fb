"""kwire and a real Apache Kafka 4.3 side by side: the same requests, the same answers, for the
differences issue 29 named (one Kafka for the module, ~5 s to start)."""
from __future__ import annotations

import time
import uuid

import pytest

from kwire.codec.apis import api
from kwire.testing import Broker
from kwire.testing.apache_kafka import ApacheKafka
from kwire.testing.client import WireClient
from tests.config.test_min_isr_elr import incremental, legacy   # broker-resource AlterConfigs helpers

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("apache-kafka")]

TOPIC_T, BROKER_T, GROUP_T = 2, 4, 32
# a static broker key behind a group key's default, set alike on both
STATIC = {"group.consumer.heartbeat.interval.ms": "6000"}
_RUN = uuid.uuid4().hex[:8]   # one name per run for the topics both brokers get


@pytest.fixture(scope="module")
def kafka():
    k = ApacheKafka(nodes=1, overrides=STATIC).start()
    try:
        yield k
    finally:
        k.close()


@pytest.fixture(scope="module")
def kw():
    # node id 1, as the ApacheKafka node's
    with Broker(mode="thread", overrides={"node.id": 1, **STATIC}) as b:
        yield b


@pytest.fixture(params=["kafka", "kwire"])
def both(request, kafka, kw):
    """A wire client to each broker in turn; tests compare through a shared dict."""
    target = kafka if request.param == "kafka" else kw
    with WireClient(target.bootstrap_servers, timeout=20) as c:
        yield request.param, c


def _create(c, topic, partitions):
    """Create ``topic`` and wait until this broker hosts its logs (Kafka creates them a little
    after CreateTopics answers)."""
    c.create_topic(topic, partitions)
    for _ in range(100):
        hosted = {(t.name, p.partition_index) for r in c.request("DescribeLogDirs", 4, topics=None).results
                  for t in r.topics for p in t.partitions}
        if all((topic, p) in hosted for p in range(partitions)):
            return
        time.sleep(0.1)
    raise AssertionError(f"{topic}'s logs were not created")


def _describe(c, rtype, name, keys=None, synonyms=True, docs=False):
    res = api("DescribeConfigs").request.struct("DescribeConfigsResource")(
        resource_type=rtype, resource_name=name, configuration_keys=keys)
    r = c.request("DescribeConfigs", 4, resources=[res], include_synonyms=synonyms,
                  include_documentation=docs).results[0]
    return (r.error_code, r.error_message, {
        e.name: (e.value, e.config_source, e.read_only, e.is_sensitive, e.config_type,
                 [(s.name, s.value, s.source) for s in e.synonyms]) for e in r.configs})


# ------------------------------------------------------------------ (a) min.insync.replicas, KIP-966
_answers: dict[str, dict] = {}


def _same_on_both(key: str, label: str, answer):
    """Record ``answer`` for ``label``; once both are in, they must be equal."""
    got = _answers.setdefault(key, {})
    got[label] = answer
    if len(got) == 2:
        assert got["kwire"] == got["kafka"]


def test_cluster_level_min_insync_replicas_is_described_alike(both):
    label, c = both
    topic = f"elr-{_RUN}"
    _create(c, topic, 1)
    answer = {
        "default": _describe(c, BROKER_T, ""),
        "default, no synonyms": _describe(c, BROKER_T, "", synonyms=False),
        "node": _describe(c, BROKER_T, "1", ["min.insync.replicas"]),
        "topic": _describe(c, TOPIC_T, topic, ["min.insync.replicas"]),
    }
    assert answer["default"][2]["min.insync.replicas"][:2] == ("1", 3)   # DYNAMIC_DEFAULT_BROKER_CONFIG
    _same_on_both("describe", label, answer)


def test_min_insync_replicas_refusals_are_alike(both):
    label, c = both
    _same_on_both("refusals", label, [
        incremental(c, "1", [("min.insync.replicas", 0, "2")]),
        incremental(c, "1", [("min.insync.replicas", 1, None)], validate_only=True),
        incremental(c, "", [("min.insync.replicas", 1, None)]),
        legacy(c, "", {"log.cleaner.threads": "2"}),
        legacy(c, "1", {"min.insync.replicas": "3"}),
        # the broker checks the values first, then the controller the ELR rules
        incremental(c, "1", [("min.insync.replicas", 0, "0")]),
        incremental(c, "", [("min.insync.replicas", 0, "0")]),
        incremental(c, "1", [("log.cleaner.threads", 0, "abc")]),
        incremental(c, "", [("num.partitions", 0, "3")]),
    ])


def test_group_configs_are_described_alike(both):
    label, c = both
    group = f"cfg-{_RUN}"
    a = api("IncrementalAlterConfigs")
    R, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
    r = c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[R(
        resource_type=GROUP_T, resource_name=group,
        configs=[C(name="consumer.session.timeout.ms", config_operation=0, value="50000")])]).responses[0]
    assert r.error_code == 0, r
    for _ in range(100):   # Kafka's broker applies the controller's record a little later
        got = _describe(c, GROUP_T, group)
        if got[2].get("consumer.session.timeout.ms", (None,))[0] == "50000":
            break
        time.sleep(0.1)
    assert got[2]["consumer.heartbeat.interval.ms"][:2] == ("6000", 4)   # STATIC_BROKER_CONFIG
    _same_on_both("group configs", label, got)


# ------------------------------------------------------------------ (c) AlterReplicaLogDirs
def _alter_log_dirs(c, dirs, version=2):
    A = api("AlterReplicaLogDirs").request
    D, T = A.struct("AlterReplicaLogDir"), A.struct("AlterReplicaLogDirTopic")
    r = c.request("AlterReplicaLogDirs", version, dirs=[
        D(path=path, topics=[T(name=t, partitions=ps) for t, ps in topics.items()]) for path, topics in dirs])
    return sorted((t.topic_name, p.partition_index, p.error_code) for t in r.results for p in t.partitions)


def test_alter_replica_log_dirs_answers_alike(both):
    label, c = both
    topic = f"ld-{_RUN}"
    _create(c, topic, 2)
    log_dir = c.request("DescribeLogDirs", 4, topics=None).results[0].log_dir   # each broker's own
    versions = {k.api_key: (k.min_version, k.max_version) for k in c.request("ApiVersions", 3, client_software_name="kwire-tests", client_software_version="1").api_keys}
    _same_on_both("alter log dirs", label, [
        versions.get(34),
        _alter_log_dirs(c, [(log_dir, {topic: [0, 1]})]),
        _alter_log_dirs(c, [(log_dir, {topic: [0]})], version=1),
        _alter_log_dirs(c, [("/no/such/dir", {topic: [0]}), ("relative", {topic: [1]})]),
        _alter_log_dirs(c, [(log_dir + "/", {topic: [0]})]),
        _alter_log_dirs(c, [(log_dir, {topic: [5], "no-such-topic": [0]})]),
        _alter_log_dirs(c, [("/no/such/dir", {"no-such-topic": [0]})]),
        _alter_log_dirs(c, [("/no/such/dir", {"x" * 214: [0], "y" * 213: [0]})]),
        _alter_log_dirs(c, [(log_dir, {topic: [0]}), ("/other", {topic: [1]})]),
        _alter_log_dirs(c, []),
    ])


# ------------------------------------------------------------------ (b) KIP-1251 offset commits
def _heartbeat(c, group, member_id, epoch, topic=None, owned=None, topic_id=None):
    T = api("ConsumerGroupHeartbeat").request.struct("TopicPartitions")
    for _ in range(100):   # the coordinator loads __consumer_offsets first (14, 15, 16: retriable)
        r = c.request("ConsumerGroupHeartbeat", 0, group_id=group, member_id=member_id, member_epoch=epoch,
                      rebalance_timeout_ms=30000 if epoch == 0 else -1,
                      subscribed_topic_names=[topic] if epoch == 0 else None,
                      topic_partitions=[] if epoch == 0 else [T(topic_id=topic_id, partitions=sorted(owned))])
        if r.error_code not in (14, 15, 16):
            break
        time.sleep(0.2)
    assert r.error_code == 0, r
    got = None if r.assignment is None else {p for tp in r.assignment.topic_partitions for p in tp.partitions}
    return r.member_id, r.member_epoch, got


def _commit(c, group, member_id, epoch, topic, partitions):
    C = api("OffsetCommit").request
    r = c.request("OffsetCommit", 9, group_id=group, generation_id_or_member_epoch=epoch, member_id=member_id,
                  group_instance_id=None, topics=[C.struct("OffsetCommitRequestTopic")(name=topic, partitions=[
                      C.struct("OffsetCommitRequestPartition")(partition_index=p, committed_offset=1,
                                                               committed_leader_epoch=-1, committed_metadata="")
                      for p in partitions])])
    return sorted({p.error_code for t in r.topics for p in t.partitions})


def test_offset_commits_at_an_older_epoch_are_judged_alike(both):
    """Raw ConsumerGroupHeartbeats: A owns all 4 partitions, B joins, A revokes half and moves
    to the new epoch; then A commits at its old epoch (Kafka 4.3: NONE for what it kept,
    STALE_MEMBER_EPOCH for what it gave away), at a newer one, and at its own."""
    label, c = both
    topic, group = f"cg-{_RUN}", f"g-{_RUN}"
    _create(c, topic, 4)
    for _ in range(100):   # the first FindCoordinator creates __consumer_offsets; wait for its leader
        if c.request("FindCoordinator", 3, key=group, key_type=0).error_code == 0:
            break
        time.sleep(0.2)
    topic_id = next(t.topic_id for t in c.request("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                                                  include_topic_authorized_operations=False).topics
                    if t.name == topic)
    a, e1, owned = _heartbeat(c, group, "", 0, topic)
    for _ in range(100):   # Kafka may assign on a later heartbeat
        if owned == {0, 1, 2, 3}:
            break
        time.sleep(0.1)
        _, e1, got = _heartbeat(c, group, a, e1, topic, owned or set(), topic_id)
        owned = got if got is not None else owned
    b, _eb, _ = _heartbeat(c, group, "", 0, topic)
    for _ in range(100):   # Kafka 4.3 may compute the new target a little later (assignment interval)
        _, epoch, kept = _heartbeat(c, group, a, e1, topic, owned, topic_id)
        if kept is not None and kept != owned:
            break
        time.sleep(0.1)
    assert epoch == e1 and len(kept) == 2        # revoke first, at the same epoch
    _, e2, _ = _heartbeat(c, group, a, e1, topic, kept, topic_id)
    assert e2 > e1
    gone = sorted(owned - kept)
    _same_on_both("kip-1251", label, [
        _commit(c, group, a, e1, topic, sorted(kept)),
        _commit(c, group, a, e1, topic, gone[:1]),
        _commit(c, group, a, e1, topic, sorted(kept) + gone[:1]),
        _commit(c, group, a, e2 + 1, topic, sorted(kept)),
        _commit(c, group, a, e2, topic, sorted(kept)),
        _commit(c, group, b, 0, topic, sorted(kept)),
    ])
    stale = 113
    assert _answers["kip-1251"][label] == [[0], [stale], [stale], [stale], [0], [stale]]
