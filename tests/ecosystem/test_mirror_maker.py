"""MirrorMaker 2 (connect-mirror 4.3.1, dedicated mode: ``bin/connect-mirror-maker.sh mm2.properties``)
between kwire and Apache Kafka 4.3.1 both ways, and between two kwire clusters (issue 30, deliverable 3).

One MirrorMaker process replicates ``orders`` (3 partitions, a retention.ms of its own) from the first
cluster to the second as ``<alias>.orders`` and ``payments`` (2 partitions) the other way, with the
checkpoint connector translating consumer group offsets (emit.checkpoints, sync.group.offsets) and
the heartbeat connector writing ``heartbeats``. The scenario:

1. records (key, value, a header) and two groups' commits on each side before MirrorMaker starts:
   ``*-done`` has consumed everything, ``*-half`` stopped part way;
2. MirrorMaker replicates them; the groups' offsets appear on the other cluster translated to the
   replica's offsets: exactly the end for ``-done`` (a consumer moving there reprocesses nothing
   and loses nothing: offset.lag.max=0 gives an offset sync for every record); ``-half`` at or
   before its committed position where MirrorMaker translates it (its translation is conservative:
   KAFKA-14666's OffsetSyncStore keeps a sparse history of syncs, and none of those read before its
   first read-to-end but the latest; it declines what it cannot translate, never skips ahead);
3. more records while MirrorMaker runs, a SIGKILL of MirrorMaker mid-way, more records while it
   is down, a restart: every replica partition holds its source partition's records in order,
   with at most replays of runs already copied (MirrorSourceTask is at-least-once: its offsets
   are committed after the records are written), none lost;
4. the replica topics have the source's partition count and retention.ms (topic config sync), the
   checkpoints and heartbeats topics hold records.

Each pair takes ~2-3 minutes on 2 shared cores (JVM start-ups, the replication itself is fast).

Topic ACL sync (sync.topic.acls.enabled) runs on its own pair with an authorizer on both sides
(kwire's and Kafka's StandardAuthorizer): each side's topic ACLs arrive on the other side's replica
topic as MirrorSourceConnector rewrites them (~2.5 minutes with the two brokers' start-ups)."""
from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kwire.testing import Broker
from tests.ecosystem.jvm_procs import MIRROR_MAKER, ConnectWorker, JavaProcess, require_jars, write_properties

PHASE = 1500            # records per topic in each of the three phases
RETENTION = "987654321"
# each pair's first cluster's topic and its second's (kwire_one serves two pairs: other names)
TOPICS = {"orders": 3, "payments": 2, "orders2": 3, "payments2": 2, "ledger": 2}


def _produce(bootstrap: str, topic: str, start: int, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                  "partitioner": "murmur2_random"})
    for i in range(start, start + n):
        p.produce(topic, key=f"k{i % 97}", value=f"{topic}-{i:06d}", headers=[("seq", str(i).encode())])
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def _read_all(bootstrap: str, topic: str, partitions: int, deadline: float,
              want: dict[int, list] | None = None) -> dict[int, list]:
    """Each partition's records (key, value, headers) from offset 0 to its end; with ``want``, keeps
    reading until every wanted record showed (the replica catching up) or the deadline."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}", "enable.auto.commit": False})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in range(partitions)}
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: dict[int, list] = defaultdict(list)
        while time.monotonic() < deadline:
            for m in c.consume(2000, 0.5):
                if not m.error():
                    got[m.partition()].append((m.key(), m.value(), tuple(m.headers() or ())))
            if want is None:
                if all(len(got[p]) >= ends[p] for p in range(partitions)):
                    break
            elif all(set(got[p]) >= set(want.get(p, ())) for p in range(partitions)):
                # a second more: a replay past the wanted records must show
                for m in c.consume(2000, 1.0):
                    if not m.error():
                        got[m.partition()].append((m.key(), m.value(), tuple(m.headers() or ())))
                break
        return dict(got)
    finally:
        c.close()


def _is_replays_of(got: list, want: list) -> bool:
    """``want`` in order, where a run of records already copied may be copied again; none skipped."""
    index = {r: i for i, r in enumerate(want)}
    nxt = 0
    for r in got:
        i = index.get(r)
        if i is None or i > nxt:
            return False
        nxt = max(nxt, i + 1)
    return nxt == len(want)


_COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE)


def _commit(bootstrap: str, group: str, offsets: list[TopicPartition]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                c.commit(offsets=offsets, asynchronous=False)
                return
            except KafkaException as e:
                # a fresh Apache Kafka answers NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS) while
                # __consumer_offsets is created and loaded; librdkafka's sync commit does not retry it
                if e.args[0].code() not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def _group_offsets(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    try:
        r = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                              request_timeout=20)[group].result(30)
    except Exception:
        return {}
    return {(tp.topic, tp.partition): tp.offset for tp in r.topic_partitions if tp.offset >= 0}


class Side:
    def __init__(self, alias: str, bootstrap: str, topic: str):
        self.alias, self.bootstrap, self.topic = alias, bootstrap, topic
        self.partitions = TOPICS[topic]
        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def setup(self) -> dict[str, dict]:
        for f in self.admin.create_topics([NewTopic(self.topic, self.partitions, 1,
                                                    config={"retention.ms": RETENTION})]).values():
            f.result(30)
        _produce(self.bootstrap, self.topic, 0, PHASE)
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "ends"})
        ends = {p: c.get_watermark_offsets(TopicPartition(self.topic, p), 30)[1] for p in range(self.partitions)}
        c.close()
        half = {p: ends[p] // 2 + p for p in ends}
        _commit(self.bootstrap, f"{self.topic}-done", [TopicPartition(self.topic, p, o) for p, o in ends.items()])
        _commit(self.bootstrap, f"{self.topic}-half", [TopicPartition(self.topic, p, o) for p, o in half.items()])
        return {"done": ends, "half": half}


def mm2_properties(a: Side, b: Side) -> dict[str, object]:
    return {
        "clusters": f"{a.alias}, {b.alias}",
        f"{a.alias}.bootstrap.servers": a.bootstrap,
        f"{b.alias}.bootstrap.servers": b.bootstrap,
        f"{a.alias}->{b.alias}.enabled": "true",
        f"{a.alias}->{b.alias}.topics": a.topic,
        f"{b.alias}->{a.alias}.enabled": "true",
        f"{b.alias}->{a.alias}.topics": b.topic,
        "groups": f"{a.topic}-.*|{b.topic}-.*",
        # one node each: every topic MirrorMaker and its Connect herders create has one replica
        **{k: 1 for k in ("replication.factor", "checkpoints.topic.replication.factor",
                          "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
                          "offset.storage.replication.factor", "status.storage.replication.factor",
                          "config.storage.replication.factor")},
        "emit.checkpoints.interval.seconds": 1,
        "emit.heartbeats.interval.seconds": 1,
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": 1,
        # an offset sync for every record: a fully consumed group translates exactly
        "offset.lag.max": 0,
        "offset.flush.interval.ms": 1000,
        # the Mirror connectors carry META-INF/services manifests: no classpath scan per herder
        "plugin.discovery": "service_load",
    }


def _wait(what: str, check, mm: JavaProcess, timeout: float, last=lambda: ""):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert mm.alive(), f"MirrorMaker exited:\n{mm.tail()}"
        assert time.monotonic() < deadline, f"{what}: not in {timeout:.0f} s: {last()}\n{mm.tail()}"
        time.sleep(1)


def run_pair(a: Side, b: Side, work: Path) -> dict:
    commits = {a.alias: a.setup(), b.alias: b.setup()}
    conf = write_properties(work / "mm2.properties", mm2_properties(a, b))
    mm = JavaProcess(MIRROR_MAKER, [str(conf)], work / "mm2.log", heap="320m")
    result: dict = {"groups": {}, "configs": {}, "internal": {}}
    seen: dict[str, dict] = {}
    try:
        mm.start()
        # phase 1 copied, and the fully consumed groups translated on the other side
        for src, dst in ((a, b), (b, a)):
            replica = f"{src.alias}.{src.topic}"
            group, up = f"{src.topic}-done", commits[src.alias]["done"]

            def translated(group=group, up=up, replica=replica):
                got = seen[group] = _group_offsets(dst.admin, group)
                return got if got == {(replica, p): o for p, o in up.items()} else None

            result["groups"][(dst.alias, group)] = (
                _wait(f"{group} on {dst.alias}", translated, mm, 180, lambda g=group, up=up: f"{seen[g]} for {up}"), up)
        # the half-way groups as translated by now: whether MirrorMaker translates them at all is a
        # race of its own (OffsetSyncStore keeps only the latest sync per partition of those it
        # reads before its first read-to-end: a checkpoint task that starts after the records were
        # copied declines offsets older than that sync)
        for src, dst in ((a, b), (b, a)):
            group = f"{src.topic}-half"
            result["groups"][(dst.alias, group)] = (_group_offsets(dst.admin, group), commits[src.alias]["half"])
        # phase 2 while MirrorMaker runs; the kill once part of it is across
        for s in (a, b):
            _produce(s.bootstrap, s.topic, PHASE, PHASE)
        time.sleep(1.5)
        mm.kill()
        for s in (a, b):
            _produce(s.bootstrap, s.topic, 2 * PHASE, PHASE)
        mm.start()
        deadline = time.monotonic() + 240
        for src, dst in ((a, b), (b, a)):
            replica = f"{src.alias}.{src.topic}"
            upstream = _read_all(src.bootstrap, src.topic, src.partitions, deadline)
            assert sum(map(len, upstream.values())) == 3 * PHASE
            downstream = _read_all(dst.bootstrap, replica, src.partitions, deadline, want=upstream)
            result[(src.alias, dst.alias)] = (upstream, downstream)
            md = dst.admin.list_topics(timeout=10).topics
            result["configs"][replica] = (
                len(md[replica].partitions),
                dst.admin.describe_configs([ConfigResource("topic", replica)])[ConfigResource("topic", replica)]
                .result(30)["retention.ms"].value)
            c = Consumer({"bootstrap.servers": dst.bootstrap, "group.id": "ends"})
            try:
                for t in (f"{src.alias}.checkpoints.internal", "heartbeats", f"{src.alias}.heartbeats"):
                    if t in md:
                        result["internal"][(dst.alias, t)] = sum(
                            c.get_watermark_offsets(TopicPartition(t, p), 30)[1] for p in md[t].partitions)
            finally:
                c.close()
        assert mm.alive(), mm.tail()
        return result
    finally:
        mm.stop()


def check_pair(res: dict, a: Side, b: Side) -> None:
    for src, dst in ((a, b), (b, a)):
        upstream, downstream = res[(src.alias, dst.alias)]
        for p in range(src.partitions):
            assert _is_replays_of(downstream.get(p, []), upstream[p]), \
                f"{src.alias}.{src.topic}[{p}] on {dst.alias}: lost or reordered records"
        replica = f"{src.alias}.{src.topic}"
        assert res["configs"][replica] == (src.partitions, RETENTION)
        assert res["internal"].get((dst.alias, f"{src.alias}.checkpoints.internal"), 0) > 0
        assert res["internal"].get((dst.alias, "heartbeats"), 0) > 0
        # the source's own heartbeats topic (written by the other direction's flow), replicated
        assert res["internal"].get((dst.alias, f"{src.alias}.heartbeats"), 0) > 0
        done, up = res["groups"][(dst.alias, f"{src.topic}-done")]
        assert done == {(replica, p): o for p, o in up.items()}
        # translated or not (see run_pair), never past the group's position: nothing skipped
        half, up = res["groups"][(dst.alias, f"{src.topic}-half")]
        assert set(half) <= {(replica, p) for p in up}, half
        for (_, p), o in half.items():
            assert 0 <= o <= up[p], (p, o, up[p])


@pytest.fixture(scope="module")
def mirror_jars():
    require_jars("connect-mirror", "connect-mirror-client", "connect-runtime")


@pytest.fixture(scope="module")
def kwire_two():
    with Broker(mode="process", overrides={"kwire.emulate.kafka.version": "4.3"}) as b:
        yield b


def test_kwire_and_apache_kafka_both_ways(kwire_one, kafka_one, mirror_jars, tmp_path):
    a = Side("kwire", kwire_one.bootstrap_servers, "orders")
    b = Side("kafka", kafka_one.bootstrap_servers, "payments")
    check_pair(run_pair(a, b, tmp_path), a, b)


def test_kwire_to_kwire(kwire_one, kwire_two, mirror_jars, tmp_path):
    a = Side("east", kwire_one.bootstrap_servers, "orders2")
    b = Side("west", kwire_two.bootstrap_servers, "payments2")
    check_pair(run_pair(a, b, tmp_path), a, b)


def test_replay_check_itself():
    assert _is_replays_of([1, 2, 3, 2, 3, 4], [1, 2, 3, 4])
    assert not _is_replays_of([1, 3, 2, 4], [1, 2, 3, 4])
    assert not _is_replays_of([1, 2, 4], [1, 2, 3, 4])


def test_mirror_connectors_on_a_connect_cluster(kwire_one, kafka_one, mirror_jars, tmp_path):
    """The Mirror connectors as plain connectors on a distributed Connect worker attached to the
    target (kwire), created through the REST API: Apache Kafka's ``ledger`` copied to kwire as
    ``kafka.ledger``, a fully consumed group translated exactly, the topic's configs carried."""
    src = Side("kafka", kafka_one.bootstrap_servers, "ledger")
    commits = src.setup()
    kwire = AdminClient({"bootstrap.servers": kwire_one.bootstrap_servers})
    worker = ConnectWorker(tmp_path, "mirror-worker", {
        "bootstrap.servers": kwire_one.bootstrap_servers,
        "group.id": "mirror-connect",
        "config.storage.topic": "mirror-connect-configs", "offset.storage.topic": "mirror-connect-offsets",
        "status.storage.topic": "mirror-connect-status",
        "config.storage.replication.factor": 1, "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1,
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    })
    common = {"source.cluster.alias": "kafka", "target.cluster.alias": "kwire",
              "source.cluster.bootstrap.servers": kafka_one.bootstrap_servers,
              "target.cluster.bootstrap.servers": kwire_one.bootstrap_servers,
              "replication.factor": 1, "offset-syncs.topic.replication.factor": 1,
              "checkpoints.topic.replication.factor": 1, "offset.lag.max": 0,
              # bytes through unchanged, headers too (the worker's default header converter,
              # SimpleHeaderConverter, would write a bytes header as base64 text): what MirrorMaker's
              # dedicated mode sets for its herders
              "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
              "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
              "header.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}
    try:
        worker.start().wait_ready()
        worker.create("mirror-source", {**common, "tasks.max": 1, "topics": "ledger",
                                        "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector"})
        worker.create("mirror-checkpoint", {**common, "tasks.max": 1, "groups": "ledger-.*",
                                            "emit.checkpoints.interval.seconds": 1,
                                            "sync.group.offsets.enabled": "true",
                                            "sync.group.offsets.interval.seconds": 1,
                                            "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"})
        worker.wait_running(["mirror-source", "mirror-checkpoint"], timeout=180)
        deadline = time.monotonic() + 180
        upstream = _read_all(src.bootstrap, "ledger", 2, deadline)
        downstream = _read_all(kwire_one.bootstrap_servers, "kafka.ledger", 2, deadline, want=upstream)
        # no restart here: an exact copy
        assert downstream == upstream
        want = {("kafka.ledger", p): o for p, o in commits["done"].items()}
        got: dict = {}
        while time.monotonic() < deadline and got != want:
            got = _group_offsets(kwire, "ledger-done")
            time.sleep(1)
        assert got == want, worker.tail()
        cfg = kwire.describe_configs([ConfigResource("topic", "kafka.ledger")])
        assert next(iter(cfg.values())).result(30)["retention.ms"].value == RETENTION
    finally:
        worker.stop()


# ------------------------------------------------------------------ topic ACL sync
# sync.topic.acls.enabled (on by default) with an authorizer on both sides: kwire's, and Kafka's
# StandardAuthorizer. MirrorMaker (MirrorSourceConnector.syncTopicAcls) lists the source's topic
# ACLs, keeps the LITERAL ones of replicated topics except ALLOW WRITE (only MirrorMaker writes a
# replica), turns ALLOW ALL into ALLOW READ (downgradeAllowAllACL) and creates them on the
# replica topic of the target. MirrorMaker's clients are ANONYMOUS on the PLAINTEXT listeners: a
# super user on both clusters, as is the test's own admin client.
ACL_OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
}


def _source_acls(topic: str) -> list:
    """(principal, pattern type, name, operation, permission) of the ACLs set on the source."""
    return [("User:alice", "LITERAL", topic, "ALL", "ALLOW"),       # mirrored as ALLOW READ
            ("User:bob", "LITERAL", topic, "WRITE", "ALLOW"),       # not mirrored
            ("User:carol", "LITERAL", topic, "READ", "DENY"),       # mirrored as is
            ("User:dave", "LITERAL", topic, "DESCRIBE", "ALLOW"),   # mirrored as is
            ("User:erin", "LITERAL", topic, "ALL", "DENY"),         # DENY ALL: mirrored as is
            ("User:frank", "PREFIXED", topic[:4], "READ", "ALLOW"),  # not literal: not mirrored
            ("User:grace", "LITERAL", "not-mirrored", "READ", "ALLOW")]  # a topic not replicated


def _mirrored(replica: str) -> set:
    return {("User:alice", "LITERAL", replica, "READ", "ALLOW"), ("User:carol", "LITERAL", replica, "READ", "DENY"),
            ("User:dave", "LITERAL", replica, "DESCRIBE", "ALLOW"), ("User:erin", "LITERAL", replica, "ALL", "DENY")}


def _create_acls(admin: AdminClient, acls: list) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
    bindings = [AclBinding(ResourceType.TOPIC, name, ResourcePatternType[pt], principal, "*",
                           AclOperation[op], AclPermissionType[perm]) for principal, pt, name, op, perm in acls]
    for f in admin.create_acls(bindings).values():
        f.result(30)


def _topic_acls(admin: AdminClient, topic: str) -> set:
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)
    flt = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    return {(b.principal, b.resource_pattern_type.name, b.name, b.operation.name, b.permission_type.name)
            for b in admin.describe_acls(flt).result(30)}


@pytest.fixture(scope="module")
def kwire_acl():
    with Broker(mode="process", overrides={**ACL_OVERRIDES, "kwire.emulate.kafka.version": "4.3"}) as b:
        yield b


@pytest.fixture(scope="module")
def kafka_acl():
    from kwire.testing.apache_kafka import ApacheKafka
    with ApacheKafka(nodes=1, heap="256m", overrides=ACL_OVERRIDES) as k:
        yield k


def test_topic_acls_synced_both_ways_with_authorizers_on_both_sides(kwire_acl, kafka_acl, mirror_jars, tmp_path):
    a, b = ("kwire", kwire_acl.bootstrap_servers, "acl-orders"), ("kafka", kafka_acl.bootstrap_servers, "acl-payments")
    admins = {}
    for alias, boot, topic in (a, b):
        admins[alias] = AdminClient({"bootstrap.servers": boot})
        for f in admins[alias].create_topics([NewTopic(topic, 1, 1), NewTopic("not-mirrored", 1, 1)]).values():
            f.result(30)
        _create_acls(admins[alias], _source_acls(topic))
    conf = write_properties(tmp_path / "mm2.properties", {
        "clusters": "kwire, kafka",
        "kwire.bootstrap.servers": a[1], "kafka.bootstrap.servers": b[1],
        "kwire->kafka.enabled": "true", "kwire->kafka.topics": a[2],
        "kafka->kwire.enabled": "true", "kafka->kwire.topics": b[2],
        "sync.topic.acls.enabled": "true", "sync.topic.acls.interval.seconds": 1,
        "emit.checkpoints.enabled": "false", "sync.group.offsets.enabled": "false",
        **{k: 1 for k in ("replication.factor", "checkpoints.topic.replication.factor",
                          "heartbeats.topic.replication.factor", "offset-syncs.topic.replication.factor",
                          "offset.storage.replication.factor", "status.storage.replication.factor",
                          "config.storage.replication.factor")},
        "plugin.discovery": "service_load",
    })
    mm = JavaProcess(MIRROR_MAKER, [str(conf)], tmp_path / "mm2.log", heap="320m")
    got: dict = {}
    try:
        mm.start()
        for (src, _, topic), (dst, _, _) in ((a, b), (b, a)):
            replica = f"{src}.{topic}"

            def synced(dst=dst, replica=replica):
                got[replica] = _topic_acls(admins[dst], replica)
                return got[replica] == _mirrored(replica)

            _wait(f"{replica}'s ACLs on {dst}", synced, mm, 180, lambda r=replica: f"{got.get(r)}")
        # a few more sync rounds (one a second): nothing else arrives, nothing is duplicated
        time.sleep(3)
        for (src, _, topic), (dst, _, _) in ((a, b), (b, a)):
            replica = f"{src}.{topic}"
            assert _topic_acls(admins[dst], replica) == _mirrored(replica)
            # the source's own ACLs are untouched, and the unreplicated topic's never crossed
            assert _topic_acls(admins[src], topic) == {x for x in _source_acls(topic)
                                                       if x[1] == "LITERAL" and x[2] == topic}
            assert _topic_acls(admins[dst], f"{src}.not-mirrored") == set()
        assert mm.alive(), mm.tail()
    finally:
        mm.stop()
