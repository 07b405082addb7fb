"""AlterReplicaLogDirs against a running kwire, with kafka-python's admin client
(alter_replica_log_dirs) and the raw wire client: a replica asked into the dir it is in
succeeds, another path is LOG_DIR_NOT_FOUND, an unknown partition UNKNOWN_TOPIC_OR_PARTITION,
an offline dir KAFKA_STORAGE_ERROR; ApiVersions advertises it. tests/integration/
test_vs_apache_kafka.py sends the same requests to Apache Kafka 4.3."""
from __future__ import annotations

import errno
import os
import uuid

import pytest
from kafka import TopicPartitionReplica
from kafka import errors as Errors
from kafka.admin import KafkaAdminClient

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import KafkaWireError

from .test_storage_errors import FailingDisk

pytestmark = pytest.mark.slow


@pytest.fixture
def broker(tmp_path):
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides={"node.id": 1})
    b.start()
    yield b
    b.stop()


def alter(c, dirs, version=2):
    A = api("AlterReplicaLogDirs").request
    D, T = A.struct("AlterReplicaLogDir"), A.struct("AlterReplicaLogDirTopic")
    r = c.request("AlterReplicaLogDirs", version, dirs=[
        D(path=path, topics=[T(name=t, partitions=ps) for t, ps in topics.items()]) for path, topics in dirs])
    return {(t.topic_name, p.partition_index): p.error_code for t in r.results for p in t.partitions}


def test_kafka_python_admin_moves_a_replica_to_its_own_dir_and_is_refused_others(broker):
    t = f"ld-{uuid.uuid4().hex[:8]}"
    log_dir = os.path.abspath(broker.data_dir)
    with broker.client() as c:
        c.create_topic(t, 2)
        assert c.request("DescribeLogDirs", 4, topics=None).results[0].log_dir == log_dir
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        got = admin.alter_replica_log_dirs({
            TopicPartitionReplica(t, 0, 1): log_dir,
            TopicPartitionReplica(t, 1, 1): "/no/such/dir",
            TopicPartitionReplica("no-such-topic", 0, 1): log_dir,
        })
        assert {tpr.partition if tpr.topic == t else tpr.topic: err for tpr, err in got.items()} == {
            0: Errors.NoError, 1: Errors.LogDirNotFoundError, "no-such-topic": Errors.UnknownTopicOrPartitionError}
    finally:
        admin.close()


def test_wire_answers_in_kafkas_order(broker):
    t = f"ld-{uuid.uuid4().hex[:8]}"
    log_dir = os.path.abspath(broker.data_dir)
    with broker.client() as c:
        c.create_topic(t, 2)
        for version in (1, 2):   # v0 (3.x) only under kwire.emulate.kafka.version 3.9
            assert alter(c, [(log_dir, {t: [0, 1]})], version) == {(t, 0): 0, (t, 1): 0}
        # the path as given: relative or with a trailing slash, it is not the dir
        assert alter(c, [("data", {t: [0]}), (log_dir + "/", {t: [1]})]) == {
            (t, 0): ErrorCode.LOG_DIR_NOT_FOUND, (t, 1): ErrorCode.LOG_DIR_NOT_FOUND}
        # the dir is checked before the partition; a partition named twice: the last dir wins
        assert alter(c, [(log_dir, {t: [0]}), ("/elsewhere", {t: [0], "gone": [0]})]) == {
            (t, 0): ErrorCode.LOG_DIR_NOT_FOUND, ("gone", 0): ErrorCode.LOG_DIR_NOT_FOUND}
        assert alter(c, [(log_dir, {t: [2], "gone": [0]})]) == {
            (t, 2): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        # <topic>-<partition>.<32 hex>-future must fit a 255-character file name
        assert alter(c, [("/elsewhere", {"x" * 214: [0], "y" * 213: [0]})]) == {
            ("x" * 214, 0): ErrorCode.INVALID_TOPIC_EXCEPTION, ("y" * 213, 0): ErrorCode.LOG_DIR_NOT_FOUND}
        assert alter(c, []) == {}
        versions = {k.api_key: (k.min_version, k.max_version) for k in c.request("ApiVersions", 3, client_software_name="kwire-tests", client_software_version="1").api_keys}
        assert versions[34] == (1, 2)   # as Kafka 4.x, the default emulated release


def test_an_offline_dir_answers_kafka_storage_error(tmp_path, monkeypatch):
    """A move into a failed dir, or of a replica in one, is KAFKA_STORAGE_ERROR (the broker
    has a healthy dir too: a broker whose every log dir failed shuts down)."""
    t, u = f"ld-{uuid.uuid4().hex[:8]}", f"ok-{uuid.uuid4().hex[:8]}"
    data, spare = os.path.abspath(str(tmp_path / "data")), os.path.abspath(str(tmp_path / "spare"))
    with Broker(mode="thread", data_dir=data, log_dirs=[spare], overrides={"node.id": 1}) as b, b.client() as c:
        c.create_topic(t)
        c.create_topic(u)
        assert (b.broker.logs.log_dir_of(t, 0), b.broker.logs.log_dir_of(u, 0)) == (data, spare)
        c.produce(t, ["a"])
        disk = FailingDisk(monkeypatch, t)
        disk.fail("pwritev", errno.EIO)
        with pytest.raises(KafkaWireError):
            c.produce(t, ["lost"])
        assert alter(c, [(data, {u: [0]}), (spare, {t: [0]})]) == {
            (u, 0): ErrorCode.KAFKA_STORAGE_ERROR, (t, 0): ErrorCode.KAFKA_STORAGE_ERROR}
        assert alter(c, [(spare, {u: [0]})]) == {(u, 0): ErrorCode.NONE}   # where it is: nothing to do
        disk.heal()


def test_without_alter_on_the_cluster_every_partition_is_refused(tmp_path):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)
    b = Broker(mode="thread", data_dir=str(tmp_path / "data"), overrides={
        "node.id": 1, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": True})
    b.start()
    try:
        log_dir = os.path.abspath(b.data_dir)
        with b.client() as c:
            c.create_topic("t", 1)
            assert alter(c, [(log_dir, {"t": [0]})]) == {("t", 0): ErrorCode.NONE}
            # an ACL on the cluster that allows DESCRIBE only: ALTER is no longer everyone's
            admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
            only_describe = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                                       "User:ANONYMOUS", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)
            for f in admin.create_acls([only_describe], request_timeout=10).values():
                f.result(10)
            del admin
            assert alter(c, [(log_dir, {"t": [0]}), ("/elsewhere", {"gone": [1]})]) == {
                ("t", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ("gone", 1): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    finally:
        b.stop()
