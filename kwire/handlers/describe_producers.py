"""DescribeProducers (key 61): version 0 (KIP-664; Kafka's KafkaApis.handleDescribeProducersRequest
and Partition.activeProducerState).

For each partition asked for, the producers its leader's producer state holds
(kwire.log.producer_state: every producer id not yet expired by producer.id.expiration.ms):
producer id and epoch, the last sequence of its retained batches (-1 when none, as after an
epoch bump) and its last timestamp, the coordinator epoch of its last transaction marker and the
first offset of its open transaction (-1: none), ordered by producer id. Only the leader answers:
UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist, NOT_LEADER_OR_FOLLOWER where
this broker is not its leader, KAFKA_STORAGE_ERROR when its log dir is offline (the replica
manager's one leader check). A log that never had an idempotent or transactional producer
has no producer state and answers an empty list.
With an authorizer: READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
"""
from __future__ import annotations

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import TOPIC, allowed
from kwire.security.operations import AclOperation as Op


@handles("DescribeProducers")
async def describe_producers(ctx: RequestContext, req):
    rm = ctx.broker.replica_manager
    T = ctx.struct("TopicResponse")
    P = ctx.struct("PartitionResponse")
    S = ctx.struct("ProducerState")
    auth = ctx.broker.authorizer
    out = []
    for t in req.topics:
        parts = []
        out.append(T(name=t.name, partitions=parts))
        denied = auth is not None and not allowed(ctx, Op.READ, TOPIC, t.name)
        for index in t.partition_indexes:
            if denied:
                parts.append(P(partition_index=index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                               active_producers=[]))
                continue
            try:
                plog = rm.leader_log(t.name, index)
            except KafkaError as exc:
                parts.append(P(partition_index=index, error_code=exc.code, active_producers=[]))
                continue
            ps = plog.producer_state
            producers = [] if ps is None else [
                S(producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_seq,
                  last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                  current_txn_start_offset=e.current_txn_first_offset)
                for pid, e in sorted(ps.producers.items())]
            parts.append(P(partition_index=index, error_code=0, active_producers=producers))
    return ctx.response(throttle_time_ms=0, topics=out)
