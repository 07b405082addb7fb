"""Metadata (key 3): versions 0-13.

v13's top-level error code (KIP-1102: REBOOTSTRAP_REQUIRED tells a client with
metadata.recovery.strategy=rebootstrap to rebootstrap) is always NONE: Kafka's brokers answer
it so too; the code is for a server that knows its client's bootstrap list went stale.

All topics when ``topics`` is null (v1+) or empty (v0); auto topic creation when the request
allows it (always before v4) and auto.create.topics.enable is on, with num.partitions and
default.replication.factor; topics by id from v12 (UNKNOWN_TOPIC_ID when unknown; at v10-11 a
look-up by id gets INVALID_REQUEST for the whole request, as Kafka answers): a topic is
asked for by id when its id is non-zero, whatever the name says (the Java client 4.x sends an
empty name, not null, beside the id). Auto-created topics are created before the answer, so the
client sees them at once instead of retrying on LEADER_NOT_AVAILABLE. Topic and (v8-10)
cluster authorized operations when asked for (every supported operation without an authorizer).
With an authorizer (kwire.security.authorizer): a null topic list lists only the topics the
principal may DESCRIBE; a named topic it may not describe answers TOPIC_AUTHORIZATION_FAILED,
and auto-creation needs CREATE on the cluster or the topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.partition_state import partition_states
from kwire.metadata.topic_changes import validate_topic_name
from kwire.codec.primitives import ZERO_UUID
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed, operations_field
from kwire.security.operations import AclOperation as Op


def topic_metadata(ctx: RequestContext, topic, name: str | None = None, error: int = 0):
    T = ctx.struct("MetadataResponseTopic")
    Pn = ctx.struct("MetadataResponsePartition")
    if topic is None:
        return T(error_code=error, name=name, topic_id=ZERO_UUID, partitions=[])
    parts = [Pn(error_code=0 if s.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=s.index, leader_id=s.leader, leader_epoch=s.leader_epoch,
                replica_nodes=s.replicas, isr_nodes=s.isr, offline_replicas=s.offline_replicas)
             for s in partition_states(ctx.broker, topic)]
    return T(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.is_internal,
             partitions=parts)


@handles("Metadata")
async def metadata(ctx: RequestContext, req):
    b = ctx.broker
    image = b.image
    v = ctx.version
    allow_auto = (req.allow_auto_topic_creation if v >= 4 else True) and bool(b.config.get("auto.create.topics.enable"))
    topics = []
    auth = b.authorizer   # None: no authorization
    if v in (10, 11) and req.topics and any(rt.topic_id != ZERO_UUID or rt.name is None for rt in req.topics):
        # v10-11 carry topic_id in the schema but Kafka serves look-ups by id only from v12: it
        # refuses the request as a whole (MetadataRequest.getErrorResponse: INVALID_REQUEST per topic,
        # no brokers, no cluster id); kwire failed to encode a null name here and closed
        T = ctx.struct("MetadataResponseTopic")
        return ctx.response(throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1, error_code=0,
                            topics=[T(error_code=ErrorCode.INVALID_REQUEST, name=rt.name or "",
                                      topic_id=rt.topic_id, partitions=[]) for rt in req.topics])
    if req.topics is None or (v == 0 and not req.topics):
        for name in sorted(image.topics):
            if auth is None or allowed(ctx, Op.DESCRIBE, TOPIC, name, log_denied=False):   # a filter, not asked for
                topics.append(topic_metadata(ctx, image.topics[name]))
    else:
        for rt in req.topics:
            name = rt.name
            if v >= 10 and rt.topic_id != ZERO_UUID or name is None:
                t = image.topics_by_id.get(rt.topic_id)
                if t is None:
                    topics.append(topic_metadata(ctx, None, None, ErrorCode.UNKNOWN_TOPIC_ID))
                    topics[-1].topic_id = rt.topic_id
                elif auth is not None and not allowed(ctx, Op.DESCRIBE, TOPIC, t.name):
                    topics.append(topic_metadata(ctx, None, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    topics[-1].topic_id = rt.topic_id
                else:
                    topics.append(topic_metadata(ctx, t))
                continue
            if auth is not None and not allowed(ctx, Op.DESCRIBE, TOPIC, name):
                topics.append(topic_metadata(ctx, None, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            t = image.topics.get(name)
            if t is None and allow_auto and not name.startswith("__") and auth is not None \
                    and not allowed(ctx, Op.CREATE, CLUSTER, CLUSTER_NAME, log_denied=False) \
                    and not allowed(ctx, Op.CREATE, TOPIC, name):
                topics.append(topic_metadata(ctx, None, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if t is None and allow_auto and not name.startswith("__"):
                res = await b.create_topic(name, -1, -1, {})
                if res.code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                    topics.append(topic_metadata(ctx, None, name, res.code))
                    continue
                image = b.image   # images are immutable: the one the creation applied to
                t = image.topics.get(name)
            if t is None:
                # as Kafka: a name Topic.validate refuses is INVALID_TOPIC_EXCEPTION, auto-creation or not
                err = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if validate_topic_name(name) is None \
                    else ErrorCode.INVALID_TOPIC_EXCEPTION
                topics.append(topic_metadata(ctx, None, name, err))
            else:
                topics.append(topic_metadata(ctx, t))
    if v >= 8 and req.include_topic_authorized_operations:
        for t in topics:   # as Kafka: every topic answered, errors too, except the ones refused DESCRIBE
            if t.name is not None and t.error_code != ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                t.topic_authorized_operations = operations_field(ctx, "topic", t.name, True)
    B = ctx.struct("MetadataResponseBroker")
    brokers = [B(node_id=x.node_id, host=h, port=p, rack=x.rack)
               for x in image.live_brokers() for h, p in (x.address(ctx.listener),)]
    return ctx.response(throttle_time_ms=0, brokers=brokers, cluster_id=b.cluster_id,
                        controller_id=b.controller_id(), topics=topics, error_code=0,
                        cluster_authorized_operations=operations_field(
                            ctx, "cluster", CLUSTER_NAME, 8 <= v <= 10 and req.include_cluster_authorized_operations))
