"""DescribeTopicPartitions (key 75): version 0 (KIP-966), as Kafka's
DescribeTopicPartitionsRequestHandler and KRaftMetadataCache answer it.

Topics by name (duplicates once), or every topic when the list is empty; answered in name
order. At most min(response_partition_limit, max.request.partition.size.limit) partitions;
when more remain, next_cursor names the first one left out (a topic and partition index;
index 0 of the next topic once a topic was answered whole). A cursor starts the page: topics
before its topic are skipped, its topic starts at its partition index; with a topic list the
cursor's topic must be in it, else every requested topic gets INVALID_REQUEST. A name that
is not a topic: UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION when not a legal name),
zero topic id; every topic (listed or all) counts against the limit only by its partitions.
Partitions as Metadata gives them (kwire.handlers.partition_state), with a partition error
of 0 even when leaderless (leader -1), as Kafka answers here.

eligible_leader_replicas and last_known_elr are the image's (kwire.metadata.partition_change
keeps them while eligible.leader.replicas.version is on; empty otherwise). With an
authorizer, topics the principal may not DESCRIBE are left out of an all-topics answer and
TOPIC_AUTHORIZATION_FAILED when named; topic_authorized_operations holds the principal's
operations (every supported one without an authorizer).
"""
from __future__ import annotations

from kwire.codec.primitives import ZERO_UUID
from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.handlers.partition_state import partition_states
from kwire.metadata.topic_changes import validate_topic_name
from kwire.security.authorizer import TOPIC, allowed, operations_field
from kwire.security.operations import AclOperation as Op


@handles("DescribeTopicPartitions")
async def describe_topic_partitions(ctx: RequestContext, req):
    b = ctx.broker
    image = b.image
    T = ctx.struct("DescribeTopicPartitionsResponseTopic")
    fetch_all = not req.topics
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    requested = list(image.topics) if fetch_all else [t.name for t in req.topics]
    names = sorted({n for n in requested if n >= cursor_topic})
    if not fetch_all and cursor is not None and cursor_topic not in names:
        return ctx.response(throttle_time_ms=0, next_cursor=None, topics=[
            T(error_code=ErrorCode.INVALID_REQUEST, name=t.name, topic_id=ZERO_UUID, partitions=[])
            for t in req.topics])

    P = ctx.struct("DescribeTopicPartitionsResponsePartition")
    auth = b.authorizer
    remaining = min(int(b.config.get("max.request.partition.size.limit")), req.response_partition_limit)
    topics, next_cursor = [], None
    for name in names:
        if remaining == 0:
            next_cursor = _cursor(ctx, name, 0)
            break
        if remaining < 0:
            break
        if auth is not None and not allowed(ctx, Op.DESCRIBE, TOPIC, name):
            if not fetch_all:
                topics.append(T(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID,
                                is_internal=name.startswith("__"), partitions=[]))
            continue
        topic = image.topics.get(name)
        if topic is None:
            if not fetch_all:
                err = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if validate_topic_name(name) is None \
                    else ErrorCode.INVALID_TOPIC_EXCEPTION
                topics.append(T(error_code=err, name=name, topic_id=ZERO_UUID,
                                is_internal=name.startswith("__"), partitions=[]))
            continue
        start = cursor.partition_index if name == cursor_topic and cursor is not None else 0
        indexes = [i for i in sorted(topic.partitions) if i >= start]
        page, rest = indexes[:remaining], indexes[remaining:]
        parts = [P(error_code=0, partition_index=s.index, leader_id=s.leader, leader_epoch=s.leader_epoch,
                   replica_nodes=s.replicas, isr_nodes=s.isr,
                   eligible_leader_replicas=list(topic.partitions[s.index].elr),
                   last_known_elr=list(topic.partitions[s.index].last_known_elr), offline_replicas=s.offline_replicas)
                 for s in partition_states(b, topic, page)]
        topics.append(T(error_code=0, name=name, topic_id=topic.topic_id, is_internal=topic.is_internal,
                        partitions=parts, topic_authorized_operations=operations_field(ctx, "topic", name, True)))
        if rest:
            next_cursor = _cursor(ctx, name, rest[0])
            break
        remaining -= len(parts)
    return ctx.response(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)


def _cursor(ctx: RequestContext, topic: str, partition: int):
    return ctx.struct("Cursor")(topic_name=topic, partition_index=partition)
