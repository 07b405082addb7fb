"""CreateTopics (key 19) 0-7, DeleteTopics (key 20) 0-6, CreatePartitions (key 37) 0-3 (CreateTopics
v0-1 and DeleteTopics v0 are Kafka 3.x's: under kwire.emulate.kafka.version 4.x they are refused).

Topic changes are metadata records (TopicRecord, PartitionRecord, ConfigRecord,
RemoveTopicRecord) committed to the metadata log, then applied. CreateTopics honours
validate_only, configs (validated with Kafka's names; INVALID_CONFIG otherwise), manual
assignments, -1 for the broker defaults (v4+), and reports the effective configs (v5+).
DeleteTopics by name and, from v6, by topic id. CreatePartitions with or without
assignments (null: placed; a list: one per new partition). With an authorizer: CreateTopics
needs CREATE on the cluster or the topic, DeleteTopics DELETE and CreatePartitions ALTER on the
topic (TOPIC_AUTHORIZATION_FAILED); a topic created without DESCRIBE_CONFIGS on it is answered
without its configs (topic_config_error_code TOPIC_AUTHORIZATION_FAILED), as Kafka.

Placement: any node takes the request and hands the intent to the active controller, which
checks it against its own image, places the replicas (kwire.metadata.placement: leaders
spread evenly over the unfenced brokers, rack-aware when brokers have racks) and commits;
INVALID_REPLICATION_FACTOR with Kafka's message when the factor exceeds the usable brokers.
Replication factor: any factor up to the usable brokers (unfenced, not in controlled
shutdown); a new partition's ISR is its replicas on usable brokers.
"""
from __future__ import annotations

import uuid

from kwire.config import TOPIC_CONFIGS
from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.configs import config_type, describe_topic_entries
from kwire.metadata.topic_changes import validate_topic_name
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed
from kwire.security.operations import AclOperation as Op


def _topic_denied(ctx: RequestContext, op: int, name: str) -> bool:
    return ctx.broker.authorizer is not None and not allowed(ctx, op, TOPIC, name)


@handles("CreateTopics")
async def create_topics(ctx: RequestContext, req):
    b = ctx.broker
    R = ctx.struct("CreatableTopicResult")
    C = ctx.struct("CreatableTopicConfigs")
    seen: dict[str, int] = {}
    for t in req.topics:
        seen[t.name] = seen.get(t.name, 0) + 1
    out = []
    cluster_create = b.authorizer is None or allowed(ctx, Op.CREATE, CLUSTER, CLUSTER_NAME)
    for t in req.topics:
        if seen[t.name] != 1:   # as Kafka (its response is keyed by name): one answer per duplicated name
            if seen[t.name] > 1:
                out.append(R(name=t.name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name."))
                seen[t.name] = 0
            continue
        r = R(name=t.name, error_code=0, error_message=None)
        out.append(r)
        if not cluster_create and _topic_denied(ctx, Op.CREATE, t.name):
            r.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            r.error_message = "Authorization failed."
            continue
        assignments = None
        if t.assignments:   # checked by the controller, with Kafka's messages
            assignments = {}
            for a in t.assignments:
                if a.partition_index in assignments:
                    r.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
                    r.error_message = f"Found multiple manual partition assignments for partition {a.partition_index}"
                    break
                assignments[a.partition_index] = list(a.broker_ids)
            if r.error_code:
                continue
        configs = {c.name: c.value for c in t.configs}
        nulls = [k for k, v in configs.items() if v is None]
        if nulls and validate_topic_name(t.name) is None and t.name not in b.image.topics:
            # as Kafka's controller: after the name and existence checks, before the partition count
            # and replication factor
            r.error_code = ErrorCode.INVALID_CONFIG
            r.error_message = f"Null value not supported for topic configs: {','.join(nulls)}"
            continue
        res = await b.create_topic(t.name, t.num_partitions, t.replication_factor, configs,
                             validate_only=req.validate_only, assignments=assignments)
        r.error_code, r.error_message = res.code, res.message
        if res.code == ErrorCode.NONE:
            topic = b.image.topics.get(t.name)
            if topic is not None and not req.validate_only:
                r.topic_id = topic.topic_id
                r.num_partitions = len(topic.partitions)
                r.replication_factor = len(topic.partitions[min(topic.partitions)].replicas)
            else:  # validate_only: what the controller would have made, a fresh topic id included
                # (Kafka's ReplicationControlManager draws the id before it knows the request only validates)
                r.num_partitions, r.replication_factor = res.num_partitions, res.replication_factor
                r.topic_id = uuid.uuid4()
                topic = None
            if _topic_denied(ctx, Op.DESCRIBE_CONFIGS, t.name):
                # Kafka (ReplicationControlManager.createTopic): created, but its partitions, replication
                # factor and configs are not shown to a principal that may not describe its configs
                r.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                r.num_partitions = r.replication_factor = -1
                continue
            r.configs = [C(name=e.name, value=e.value, read_only=False, config_source=e.source, is_sensitive=False)
                         for e in describe_topic_entries(b, topic, overrides=configs if topic is None else None)]
    return ctx.response(throttle_time_ms=0, topics=out)


@handles("DeleteTopics")
async def delete_topics(ctx: RequestContext, req):
    b = ctx.broker
    R = ctx.struct("DeletableTopicResult")
    out = []
    if ctx.version >= 6:
        items = [(t.name, t.topic_id) for t in req.topics]
    else:
        items = [(n, None) for n in req.topic_names]
    for name, tid in items:
        by_id = name is None
        if by_id:
            t = b.image.topics_by_id.get(tid)
            if t is None:
                out.append(R(name=None, topic_id=tid, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                             error_message="This server does not host this topic ID."))
                continue
            name = t.name
        t = b.image.topics.get(name)
        topic_id = t.topic_id if t else (tid or None)
        if _topic_denied(ctx, Op.DELETE, name):
            # Kafka's KafkaApis.handleDeleteTopicsRequest: the error's default message (CreateTopics says
            # "Authorization failed."), the topic id as the request gave it (zero when named), and no
            # name for a topic asked by id that the principal may not describe
            hidden = by_id and _topic_denied(ctx, Op.DESCRIBE, name)
            r = R(name=None if hidden else name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                  error_message="Topic authorization failed.")
            if tid is not None:
                r.topic_id = tid
            out.append(r)
            continue
        res = await b.delete_topic(name)
        r = R(name=name, error_code=res.code, error_message=res.message if res.code else None)
        if topic_id is not None:
            r.topic_id = topic_id
        out.append(r)
    return ctx.response(throttle_time_ms=0, responses=out)


@handles("CreatePartitions")
async def create_partitions(ctx: RequestContext, req):
    b = ctx.broker
    R = ctx.struct("CreatePartitionsTopicResult")
    out = []
    for t in req.topics:
        # null: the controller places them; an empty list is a (too short) manual assignment
        assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
        if _topic_denied(ctx, Op.ALTER, t.name):
            out.append(R(name=t.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         error_message="Authorization failed."))
            continue
        res = await b.create_partitions(t.name, t.count, validate_only=req.validate_only, assignments=assignments)
        out.append(R(name=t.name, error_code=res.code, error_message=res.message if res.code else None))
    return ctx.response(throttle_time_ms=0, results=out)


__all__ = ["TOPIC_CONFIGS", "config_type"]
