"""ApiVersions, Metadata, CreateTopics, DeleteTopics, DescribeConfigs: valid and invalid requests."""
from __future__ import annotations

import time
import uuid

from hypothesis import strategies as st

from differential.run import Family
from differential.session import S, Session

# topic names a request may carry: one that exists (created by the case), one that does not, and
# names Kafka's Topic.validate refuses
TOPIC_KINDS = ["existing", "unknown", "invalid-chars", "too-long", "internal", "dot"]


def topic_name(s: Session, kind: str) -> str:
    return {"existing": s.topic("a"), "unknown": s.topic("missing"), "invalid-chars": s.topic("bad/name"),
            "too-long": "x" * 250, "internal": "__consumer_offsets", "dot": "."}[kind]


# ---------------------------------------------------------------- ApiVersions
def api_versions(s: Session, p) -> None:
    version, software = p
    if version <= 4:
        fields = {"client_software_name": software[0], "client_software_version": software[1]} if version >= 3 else {}
        s.call("ApiVersions", version, **fields)
    else:
        # a version neither serves: both must answer v0 UNSUPPORTED_VERSION with their ranges
        from kwire.codec.apis import api
        from kwire.codec.frame import encode_request
        a = api("ApiVersions")
        frame = bytearray(encode_request(a, 3, 7, a.request.cls(client_software_name="x",
                                                                 client_software_version="1")))
        frame[6:8] = version.to_bytes(2, "big")
        s.raw("ApiVersions-unknown-version", bytes(frame), "ApiVersions", 0)


api_versions_st = st.tuples(st.sampled_from([0, 1, 2, 3, 4, 5, 127]),
                            st.sampled_from([("apache-kafka-java", "4.3.1"), ("librdkafka", "2.6.0"),
                                             ("", ""), ("bad name!", "1.0"), ("kafka-python", "-")]))


# ---------------------------------------------------------------- Metadata
def metadata(s: Session, p) -> None:
    vdraw, kinds, all_topics, auto_create, authorized_ops = p
    version = s.version("Metadata", vdraw)
    s.create_topic(s.topic("a"), 2)
    T = S("Metadata", "MetadataRequestTopic")
    if all_topics and version >= 1:
        topics = None
    else:
        topics = [T(name=topic_name(s, k)) for k in kinds]
    fields = {"topics": topics}
    if version >= 4:
        fields["allow_auto_topic_creation"] = auto_create
    if version >= 8:
        fields["include_topic_authorized_operations"] = authorized_ops
        if version <= 10:
            fields["include_cluster_authorized_operations"] = authorized_ops
    s.call("Metadata", version, **fields)
    if version >= 10:
        # by topic id: the existing topic's, and one no broker knows
        ids = [s.topic_id(s.topic("a")), uuid.UUID(int=0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0)]
        s.call("Metadata", version, label="Metadata-by-id",
               topics=[T(topic_id=i, name=None) for i in ids], allow_auto_topic_creation=False)


V = st.integers(0, 10_000)   # a version draw (Session.version turns it into one both serve)
metadata_st = st.tuples(V, st.lists(st.sampled_from(TOPIC_KINDS), min_size=0, max_size=3, unique=True),
                        st.booleans(), st.booleans(), st.booleans())


# ---------------------------------------------------------------- CreateTopics
CONFIGS = [
    {}, {"cleanup.policy": "compact"}, {"retention.ms": "-1"}, {"retention.ms": "abc"},
    {"no.such.config": "1"}, {"min.insync.replicas": "2"}, {"max.message.bytes": "0"},
    {"compression.type": "zstd"}, {"compression.type": "brotli"}, {"segment.bytes": "1"},
    {"cleanup.policy": None},
]


def create_topics(s: Session, p) -> None:
    vdraw, entries, validate_only = p
    version = s.version("CreateTopics", vdraw)
    s.create_topic(s.topic("a"), 1)   # "existing"
    R = S("CreateTopics", "CreatableTopic")
    C = S("CreateTopics", "CreatableTopicConfig")
    A = S("CreateTopics", "CreatableReplicaAssignment")
    topics = []
    for i, (kind, partitions, rf, config, assign) in enumerate(entries):
        name = s.topic(f"new{i}") if kind == "unknown" else topic_name(s, kind)
        assignments = [A(partition_index=0, broker_ids=[1])] if assign == "ok" else \
            [A(partition_index=0, broker_ids=[7])] if assign == "bad-broker" else []
        if assignments:
            partitions, rf = -1, -1
        topics.append(R(name=name, num_partitions=partitions, replication_factor=rf, assignments=assignments,
                        configs=[C(name=k, value=v) for k, v in CONFIGS[config].items()]))
    fields = {"topics": topics, "timeout_ms": 15000}
    if version >= 1:
        fields["validate_only"] = validate_only
    s.call("CreateTopics", version, **fields)


create_topics_st = st.tuples(
    V,
    st.lists(st.tuples(st.sampled_from(["unknown", "unknown", "existing", "invalid-chars", "too-long", "dot"]),
                       st.sampled_from([1, 3, -1, 0]), st.sampled_from([1, -1, 2, 0]),
                       st.integers(0, len(CONFIGS) - 1), st.sampled_from(["none", "none", "ok", "bad-broker"])),
             min_size=1, max_size=3),
    st.booleans())


# ---------------------------------------------------------------- DeleteTopics
def delete_topics(s: Session, p) -> None:
    vdraw, kinds = p
    version = s.version("DeleteTopics", vdraw)
    s.create_topic(s.topic("a"), 1)
    if version >= 6:
        D = S("DeleteTopics", "DeleteTopicState")
        topics = []
        for k in kinds:
            if k == "by-id":
                topics.append(D(name=None, topic_id=s.topic_id(s.topic("a"))))
            elif k == "unknown-id":
                topics.append(D(name=None, topic_id=uuid.UUID(int=0xDEAD_BEEF)))
            else:
                topics.append(D(name=topic_name(s, k), topic_id=uuid.UUID(int=0)))
        s.call("DeleteTopics", version, topics=topics, timeout_ms=15000)
    else:
        names = [topic_name(s, k) for k in kinds if k not in ("by-id", "unknown-id")]
        s.call("DeleteTopics", version, topic_names=names, timeout_ms=15000)
    # and what Metadata says afterwards, once the deletion reached the broker's metadata (Kafka's
    # DeleteTopics answers when the controller committed it, a moment before its broker applies it)
    T = S("Metadata", "MetadataRequestTopic")
    deleted = version >= 6 and {"existing", "by-id"} & set(kinds) or version < 6 and "existing" in kinds
    deadline = time.monotonic() + 3
    while deleted and time.monotonic() < deadline:
        m = s.setup("Metadata", 12, topics=[T(name=s.topic("a"))], allow_auto_topic_creation=False)
        if m is None or m.topics[0].error_code != 0:
            break
        time.sleep(0.05)
    s.call("Metadata", 12, label="Metadata-after-delete", topics=[T(name=s.topic("a"))], allow_auto_topic_creation=False)


delete_topics_st = st.tuples(V,
                             st.lists(st.sampled_from(["existing", "unknown", "invalid-chars", "internal", "by-id",
                                                       "unknown-id"]), min_size=1, max_size=3, unique=True))


# ---------------------------------------------------------------- DescribeConfigs
TOPIC_KEYS = [None, [], ["cleanup.policy", "retention.ms"], ["no.such.config"], ["min.insync.replicas"]]
BROKER_KEYS = [["num.partitions", "auto.create.topics.enable"], ["log.retention.hours"], ["no.such.config"],
               ["group.initial.rebalance.delay.ms"]]


def describe_configs(s: Session, p) -> None:
    vdraw, resources, synonyms, docs = p
    version = s.version("DescribeConfigs", vdraw)
    s.create_topic(s.topic("a"), 1, {"retention.ms": "12345"})
    R = S("DescribeConfigs", "DescribeConfigsResource")
    res = []
    for kind, keys in resources:
        if kind == "topic":
            res.append(R(resource_type=2, resource_name=s.topic("a"), configuration_keys=TOPIC_KEYS[keys % len(TOPIC_KEYS)]))
        elif kind == "unknown-topic":
            res.append(R(resource_type=2, resource_name=s.topic("missing"), configuration_keys=None))
        elif kind == "broker":
            res.append(R(resource_type=4, resource_name="1", configuration_keys=BROKER_KEYS[keys % len(BROKER_KEYS)]))
        elif kind == "other-broker":
            res.append(R(resource_type=4, resource_name="7", configuration_keys=None))
        elif kind == "bad-broker-name":
            res.append(R(resource_type=4, resource_name="one", configuration_keys=None))
        elif kind == "unknown-type":
            res.append(R(resource_type=9, resource_name="x", configuration_keys=None))
    fields = {"resources": res}
    if version >= 1:
        fields["include_synonyms"] = synonyms
    if version >= 3:
        fields["include_documentation"] = docs
    s.call("DescribeConfigs", version, **fields)


describe_configs_st = st.tuples(
    V,
    st.lists(st.tuples(st.sampled_from(["topic", "topic", "unknown-topic", "broker", "other-broker", "bad-broker-name",
                                        "unknown-type"]), st.integers(0, 9)), min_size=1, max_size=3),
    st.booleans(), st.booleans())


FAMILIES = [
    Family("api_versions", api_versions_st, api_versions, examples=25, ci_examples=6),
    Family("metadata", metadata_st, metadata, examples=120, ci_examples=15),
    Family("create_topics", create_topics_st, create_topics, examples=100, ci_examples=10),
    Family("delete_topics", delete_topics_st, delete_topics, examples=40, ci_examples=5),
    Family("describe_configs", describe_configs_st, describe_configs, examples=60, ci_examples=6),
]
