"""Unauthorized principals on the secured pair (SASL_PLAINTEXT + PLAIN, Kafka's StandardAuthorizer
on both, ``allow.everyone.if.no.acl.found=false``): each case creates its topic, group and ACLs as
``admin`` (a super user; ACLs through CreateAcls on the wire, then waited for with DescribeAcls),
logs in as another user and sends one kind of request with a grant level of none, a neighbouring
permission (DESCRIBE where READ is needed...), or the one needed. Compared: the error codes and
messages, and what Metadata, ListGroups and OffsetFetch hide.

Principals, so that one case's grants never widen another's: ``alice`` gets only literal ACLs on
the case's own topic, group and transactional id; ``bob`` only DESCRIBE on single groups (the
ListGroups cases); ``carol`` the cluster-level grants (DescribeAcls)."""
from __future__ import annotations

import time

from hypothesis import strategies as st

from kwire.codec.records import build_batch

from differential.cases.data import TS, produce_request
from differential.run import Family
from differential.session import S, Session

V = st.integers(0, 10_000)

# Kafka's AclResourceType, AclOperation, AclPermissionType, PatternType codes
TOPIC, GROUP, CLUSTER, TXN_ID = 2, 3, 4, 5
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS = 3, 4, 5, 6, 7, 8, 10, 11
ALLOW, LITERAL = 3, 3
CLUSTER_NAME = "kafka-cluster"


def grant(s: Session, principal: str, acls: list[tuple[int, str, int]], timeout: float = 10.0) -> None:
    """Create ALLOW ACLs (resource type, name, operation) for ``User:principal`` as admin, then wait
    until the broker's authorizer has them (DescribeAcls is answered from it)."""
    if not acls:
        return
    C = S("CreateAcls", "AclCreation")
    body = s.setup("CreateAcls", 3, creations=[
        C(resource_type=rt, resource_name=name, resource_pattern_type=LITERAL, principal=f"User:{principal}",
          host="*", operation=op, permission_type=ALLOW) for rt, name, op in acls])
    assert body is not None and all(r.error_code == 0 for r in body.results), body
    deadline = time.monotonic() + timeout
    for rt, name, op in acls:
        while True:
            d = s.setup("DescribeAcls", 3, resource_type_filter=rt, resource_name_filter=name, pattern_type_filter=LITERAL,
                        principal_filter=f"User:{principal}", host_filter=None, operation=op, permission_type=ALLOW)
            if d is not None and d.error_code == 0 and d.resources:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{s.side.name}: ACL {rt} {name} {op} for {principal} not visible: {d}")
            time.sleep(0.05)


def simple_commit(s: Session, group: str, topic: str) -> None:
    """As admin: the group exists (a "simple" group's commit), so describing it is meaningful."""
    CT = S("OffsetCommit", "OffsetCommitRequestTopic")
    CP = S("OffsetCommit", "OffsetCommitRequestPartition")
    s.wait_coordinator(group)
    s.setup("OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
            group_instance_id=None, topics=[CT(name=topic, partitions=[CP(partition_index=0, committed_offset=1,
                                                                          committed_metadata="")])])


def record(i: int = 0) -> bytes:
    return build_batch([(b"k", f"v{i}".encode(), [], TS)])


# what each level grants alice, per kind: (resource type, "topic" | "group" | "txn" | name, operation)
LEVELS = {
    "metadata": {"none": [], "describe": [(TOPIC, "topic", DESCRIBE)],
                 "create": [(TOPIC, "topic", DESCRIBE), (TOPIC, "missing", CREATE)]},
    "produce": {"none": [], "describe": [(TOPIC, "topic", DESCRIBE)], "write": [(TOPIC, "topic", WRITE)]},
    "fetch": {"none": [], "describe": [(TOPIC, "topic", DESCRIBE)], "read": [(TOPIC, "topic", READ)]},
    "list_offsets": {"none": [], "read": [(TOPIC, "topic", READ)], "describe": [(TOPIC, "topic", DESCRIBE)]},
    "find_coordinator": {"none": [], "describe": [(GROUP, "group", DESCRIBE), (TXN_ID, "txn", DESCRIBE)]},
    "group": {"none": [], "group-only": [(GROUP, "group", READ)],
              "topic-only": [(TOPIC, "topic", READ)],
              "full": [(GROUP, "group", READ), (TOPIC, "topic", READ)]},
    "create_topics": {"none": [], "describe": [(TOPIC, "new", DESCRIBE)], "create": [(TOPIC, "new", CREATE)]},
    "delete_topics": {"none": [], "describe": [(TOPIC, "topic", DESCRIBE)], "delete": [(TOPIC, "topic", DELETE)]},
    "describe_configs": {"none": [], "describe": [(TOPIC, "topic", DESCRIBE)],
                         "describe-configs": [(TOPIC, "topic", DESCRIBE_CONFIGS)]},
    "alter_configs": {"none": [], "describe-configs": [(TOPIC, "topic", DESCRIBE_CONFIGS)],
                      "alter-configs": [(TOPIC, "topic", ALTER_CONFIGS)]},
    "init_producer_id": {"none": [], "describe": [(TXN_ID, "txn", DESCRIBE)], "write": [(TXN_ID, "txn", WRITE)],
                         "topic-write": [(TOPIC, "topic", WRITE)]},
    "describe_groups": {"none": [], "describe": [(GROUP, "group", DESCRIBE)]},
}
# kinds whose principal and grants are not alice's literal ones
OTHER = {"list_groups": ["none", "describe"], "acls": ["none", "cluster-describe"]}


def _names(s: Session) -> dict:
    return {"topic": s.topic("a"), "missing": s.topic("missing"), "new": s.topic("new"), "group": s.group(),
            "txn": s.group("txn")}


def secured(s: Session, p) -> None:
    # the case number picks the (kind, level), so that every one is run in turn (hypothesis's
    # derandomized draws favour the first items of a list); hypothesis draws the versions
    kind, level = KIND_LEVELS[s.n % len(KIND_LEVELS)]
    vdraw, vdraw2 = p
    names = _names(s)
    topic, group, txn = names["topic"], names["group"], names["txn"]
    s.create_topic(topic, 1)
    s.setup("Produce", 9, **produce_request(s, 9, topic, 0, record()))
    if kind in OTHER:
        return _other(s, kind, level, vdraw, vdraw2, topic, group)
    if kind in ("describe_groups", "group"):
        simple_commit(s, group, topic)
    grant(s, "alice", [(rt, names.get(n, n), op) for rt, n, op in LEVELS[kind][level]])
    tid = s.topic_id(topic)
    s.login("alice")
    if kind == "metadata":
        v = s.version("Metadata", vdraw, at_least=4)
        T = S("Metadata", "MetadataRequestTopic")
        s.call("Metadata", v, topics=[T(name=topic), T(name=names["missing"])], allow_auto_topic_creation=True)
        s.call("Metadata", v, label="Metadata-all", topics=None, allow_auto_topic_creation=False)
        if v >= 10:
            s.call("Metadata", v, label="Metadata-by-id", topics=[T(topic_id=tid, name=None)],
                   allow_auto_topic_creation=False)
    elif kind == "produce":
        v = s.version("Produce", vdraw, at_least=3)
        s.call("Produce", v, **produce_request(s, v, topic, 0, record(1), acks=1))
    elif kind == "fetch":
        v = s.version("Fetch", vdraw, at_least=4)
        FT, FP = S("Fetch", "FetchTopic"), S("Fetch", "FetchPartition")
        t = FT(partitions=[FP(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])
        if v >= 13:
            t.topic_id = tid
        else:
            t.topic = topic
        s.call("Fetch", v, replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
               topics=[t])
    elif kind == "list_offsets":
        v = s.version("ListOffsets", vdraw, at_least=1)
        T, P = S("ListOffsets", "ListOffsetsTopic"), S("ListOffsets", "ListOffsetsPartition")
        s.call("ListOffsets", v, replica_id=-1, isolation_level=0,
               topics=[T(name=topic, partitions=[P(partition_index=0, timestamp=-1)])])
    elif kind == "find_coordinator":
        v = s.version("FindCoordinator", vdraw)
        for key_type, key in ((0, group), (1, txn)):
            if v >= 4:
                s.call("FindCoordinator", v, key_type=key_type, coordinator_keys=[key])
            elif v >= 1 or key_type == 0:
                s.call("FindCoordinator", v, key=key, key_type=key_type)
    elif kind == "group":
        _group(s, vdraw, vdraw2, topic, group, tid)
    elif kind == "create_topics":
        v = s.version("CreateTopics", vdraw)
        R = S("CreateTopics", "CreatableTopic")
        fields = {"topics": [R(name=names["new"], num_partitions=1, replication_factor=1, assignments=[], configs=[]),
                             R(name=s.topic("other"), num_partitions=1, replication_factor=1, assignments=[],
                               configs=[])], "timeout_ms": 15000}
        if v >= 1:
            fields["validate_only"] = True   # nothing is left behind to differ later
        s.call("CreateTopics", v, **fields)
    elif kind == "delete_topics":
        v = s.version("DeleteTopics", vdraw)
        if v >= 6:
            D = S("DeleteTopics", "DeleteTopicState")
            s.call("DeleteTopics", v, topics=[D(name=topic, topic_id=None), D(name=s.topic("missing"))],
                   timeout_ms=15000)
            s.call("DeleteTopics", v, label="DeleteTopics-by-id", topics=[D(name=None, topic_id=tid)],
                   timeout_ms=15000)
        else:
            s.call("DeleteTopics", v, topic_names=[topic, s.topic("missing")], timeout_ms=15000)
    elif kind == "describe_configs":
        v = s.version("DescribeConfigs", vdraw)
        R = S("DescribeConfigs", "DescribeConfigsResource")
        s.call("DescribeConfigs", v, resources=[
            R(resource_type=2, resource_name=topic, configuration_keys=["cleanup.policy"]),
            R(resource_type=4, resource_name="1", configuration_keys=["num.partitions"])])
    elif kind == "alter_configs":
        v = s.version("IncrementalAlterConfigs", vdraw)
        R = S("IncrementalAlterConfigs", "AlterConfigsResource")
        C = S("IncrementalAlterConfigs", "AlterableConfig")
        s.call("IncrementalAlterConfigs", v, validate_only=False, resources=[
            R(resource_type=2, resource_name=topic, configs=[C(name="retention.ms", config_operation=0, value="86400000")]),
            R(resource_type=4, resource_name="", configs=[C(name="log.cleaner.threads", config_operation=0, value="1")])])
        va = s.version("AlterConfigs", vdraw2)
        R = S("AlterConfigs", "AlterConfigsResource")
        C = S("AlterConfigs", "AlterableConfig")
        s.call("AlterConfigs", va, validate_only=True, resources=[
            R(resource_type=2, resource_name=topic, configs=[C(name="retention.ms", value="3600000")])])
    elif kind == "init_producer_id":
        v = s.version("InitProducerId", vdraw)
        s.call("InitProducerId", v, transactional_id=txn, transaction_timeout_ms=60000)
        s.call("InitProducerId", v, label="InitProducerId-idempotent", transactional_id=None,
               transaction_timeout_ms=60000)
    elif kind == "describe_groups":
        v = s.version("DescribeGroups", vdraw)
        fields = {"groups": [group, s.group("absent")]}
        if v >= 3:
            fields["include_authorized_operations"] = True
        s.call("DescribeGroups", v, **fields)


def _group(s: Session, vdraw, vdraw2, topic: str, group: str, tid) -> None:
    JP = S("JoinGroup", "JoinGroupRequestProtocol")
    vj = s.version("JoinGroup", vdraw)
    join = dict(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=5000, member_id="",
                protocol_type="consumer", protocols=[JP(name="range", metadata=b"")])
    if vj >= 5:
        join["group_instance_id"] = None
    s.call("JoinGroup", vj, **join)
    vc = s.version("OffsetCommit", vdraw2)
    CT, CP = S("OffsetCommit", "OffsetCommitRequestTopic"), S("OffsetCommit", "OffsetCommitRequestPartition")
    ct = CT(partitions=[CP(partition_index=0, committed_offset=1, committed_metadata="")])
    if vc >= 10:
        ct.topic_id = tid
    else:
        ct.name = topic
    fields = dict(group_id=group, member_id="", topics=[ct])
    if vc >= 1:
        fields["generation_id_or_member_epoch"] = -1
    if vc >= 7:
        fields["group_instance_id"] = None
    s.call("OffsetCommit", vc, **fields)
    vf = s.version("OffsetFetch", vdraw ^ vdraw2)
    if vf >= 8:
        FT, FG = S("OffsetFetch", "OffsetFetchRequestTopics"), S("OffsetFetch", "OffsetFetchRequestGroup")
        t = FT(partition_indexes=[0])
        if vf >= 10:
            t.topic_id = tid
        else:
            t.name = topic
        s.call("OffsetFetch", vf, groups=[FG(group_id=group, topics=[t])])
        s.call("OffsetFetch", vf, label="OffsetFetch-all", groups=[FG(group_id=group, topics=None)])
    else:
        FT = S("OffsetFetch", "OffsetFetchRequestTopic")
        s.call("OffsetFetch", vf, group_id=group, topics=[FT(name=topic, partition_indexes=[0])])


def _other(s: Session, kind: str, level: str, vdraw, vdraw2, topic: str, group: str) -> None:
    if kind == "list_groups":
        simple_commit(s, group, topic)
        simple_commit(s, s.group("hidden"), topic)
        if level == "describe":
            grant(s, "bob", [(GROUP, group, DESCRIBE)])
        s.login("bob")
        v = s.version("ListGroups", vdraw)
        fields = {}
        if v >= 4:
            fields["states_filter"] = []
        if v >= 5:
            fields["types_filter"] = []
        s.call("ListGroups", v, **fields)
    elif kind == "acls":
        if level == "cluster-describe":
            grant(s, "carol", [(CLUSTER, CLUSTER_NAME, DESCRIBE)])
        grant(s, "alice", [(TOPIC, topic, READ)])   # something to describe
        s.login("carol" if level == "cluster-describe" else "bob")
        v = s.version("DescribeAcls", vdraw, at_least=1)
        s.call("DescribeAcls", v, resource_type_filter=TOPIC, resource_name_filter=topic, pattern_type_filter=1,
               principal_filter=None, host_filter=None, operation=1, permission_type=1)
        vc = s.version("CreateAcls", vdraw2, at_least=1)
        C = S("CreateAcls", "AclCreation")
        s.call("CreateAcls", vc, creations=[C(resource_type=TOPIC, resource_name=topic, resource_pattern_type=LITERAL,
                                              principal="User:bob", host="*", operation=WRITE, permission_type=ALLOW)])


KIND_LEVELS = [(k, lv) for k, levels in LEVELS.items() for lv in sorted(levels)] + \
    [(k, lv) for k, levels in OTHER.items() for lv in levels]
secured_st = st.tuples(V, V)


FAMILIES = [
    Family("secured", secured_st, secured, examples=120, ci_examples=0, secured=True),
]
