"""InitializeShareGroupState (key 83, v0), ReadShareGroupState (key 84, v0),
WriteShareGroupState (key 85, v0-1), DeleteShareGroupState (key 86, v0) and
ReadShareGroupStateSummary (key 87, v0-1): the share
coordinator's side of KIP-932's inter-broker RPCs (Kafka's ShareCoordinatorService), sent by
a share partition's leader (kwire.share.state_store, the persister; Initialize and Summary by
a group coordinator, kwire.share.state_admin); answered by
kwire.share.coordinator to the leader of the
``__share_group_state`` partition of the key "group:topicId:partition".

Read answers the key's last state (state epoch, start offset, state batches; start offset -1
and no batches: never written, or deleted) and remembers the reader's leader epoch; Write
appends a ShareSnapshot record (acks=all) and answers once it is replicated; Delete replaces
the state by an empty one at the next state epoch (likewise, one batch per state partition
for the whole request; see kwire.share.coordinator). A state partition being loaded: the
request waits for its load.
Initialize sets a start offset with nothing in flight at the state epoch it names (start
offset -1: the stored one kept); Summary answers the state epoch, leader epoch, start offset
and (v1) the records done in flight, fencing nothing. Per-partition errors:
NOT_COORDINATOR (this broker does not lead the state partition), COORDINATOR_LOAD_IN_PROGRESS
(its log is not readable here), FENCED_LEADER_EPOCH (a leader epoch older than the last one
seen for the key), FENCED_STATE_EPOCH (a write at a state epoch older than the stored one:
the state was deleted or initialized since the leader read it), INVALID_REQUEST (a share partition index below 0), REQUEST_TIMED_OUT,
NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER (the append's outcome). With an
authorizer: CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED everywhere), as Kafka.
Served while share.version is 1 (kwire.handlers.api_versions).

Left out: Write v1's
DeliveryCompleteCount is accepted and not kept (Kafka uses it for lag, not recovery).
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op
from kwire.share.partition import StateBatch
from kwire.share.state_admin import DONE_STATES

E = ErrorCode


def _denied(ctx: RequestContext) -> bool:
    return ctx.broker.authorizer is not None and not allowed(ctx, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME)


async def _answer(ctx: RequestContext, req, result: str, op, fields=lambda st: {}):
    """The response of one of these RPCs: for each partition CLUSTER_AUTHORIZATION_FAILED (no
    CLUSTER_ACTION), INVALID_REQUEST (an index below 0), else ``await op(topic id, partition
    request)`` -> (error, state or None); ``fields(state or None)``: the partition result's
    own fields beyond the error."""
    TR, PR = ctx.struct(result), ctx.struct("PartitionResult")
    denied = _denied(ctx)
    results = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            if denied:
                err, st = E.CLUSTER_AUTHORIZATION_FAILED, None
            elif p.partition < 0:
                err, st = E.INVALID_REQUEST, None
            else:
                err, st = await op(t.topic_id, p)
            parts.append(PR(partition=p.partition, error_code=err, error_message=None if err == E.NONE else err.name,
                            **fields(st)))
        results.append(TR(topic_id=t.topic_id, partitions=parts))
    return ctx.response(results=results)


@handles("ReadShareGroupState", "0")
async def read_share_group_state(ctx: RequestContext, req):
    coord = ctx.broker.share_state.coordinator
    SB = ctx.struct("StateBatch")

    async def read(topic_id, p):
        return await coord.read(req.group_id, topic_id, p.partition, p.leader_epoch)

    return await _answer(ctx, req, "ReadStateResult", read, lambda st: dict(
        state_epoch=st.state_epoch if st is not None else 0,
        start_offset=st.start_offset if st is not None else -1,
        state_batches=[SB(first_offset=x.first_offset, last_offset=x.last_offset,
                          delivery_state=x.delivery_state, delivery_count=x.delivery_count)
                       for x in (st.batches if st is not None else ())]))


@handles("WriteShareGroupState", "0-1")
async def write_share_group_state(ctx: RequestContext, req):
    coord = ctx.broker.share_state.coordinator

    async def write(topic_id, p):
        batches = tuple(StateBatch(x.first_offset, x.last_offset, x.delivery_state, x.delivery_count)
                        for x in p.state_batches)
        return await coord.write(req.group_id, topic_id, p.partition, p.state_epoch, p.leader_epoch,
                                 p.start_offset, batches), None

    return await _answer(ctx, req, "WriteStateResult", write)


@handles("DeleteShareGroupState", "0")
async def delete_share_group_state(ctx: RequestContext, req):
    coord = ctx.broker.share_state.coordinator
    # one batch per state partition for the whole request (kwire.share.coordinator.delete_many)
    done = {} if _denied(ctx) else await coord.delete_many(
        req.group_id, [(t.topic_id, p.partition) for t in req.topics for p in t.partitions if p.partition >= 0])

    async def delete(topic_id, p):
        return done[(topic_id, p.partition)], None

    return await _answer(ctx, req, "DeleteStateResult", delete)


@handles("InitializeShareGroupState", "0")
async def initialize_share_group_state(ctx: RequestContext, req):
    coord = ctx.broker.share_state.coordinator

    async def initialize(topic_id, p):
        return await coord.initialize(req.group_id, topic_id, p.partition, p.state_epoch, p.start_offset), None

    return await _answer(ctx, req, "InitializeStateResult", initialize)


@handles("ReadShareGroupStateSummary", "0-1")
async def read_share_group_state_summary(ctx: RequestContext, req):
    coord = ctx.broker.share_state.coordinator

    async def summary(topic_id, p):
        return await coord.read(req.group_id, topic_id, p.partition, -1)

    def fields(st):
        if st is None:
            return dict(state_epoch=0, leader_epoch=-1, start_offset=-1, delivery_complete_count=-1)
        done = sum(x.last_offset - x.first_offset + 1 for x in st.batches if x.delivery_state in DONE_STATES)
        return dict(state_epoch=st.state_epoch, leader_epoch=st.leader_epoch, start_offset=st.start_offset,
                    delivery_complete_count=done)

    return await _answer(ctx, req, "ReadStateSummaryResult", summary, fields)
