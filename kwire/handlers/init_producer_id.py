"""InitProducerId (key 22): versions 0-5 served.

Without transactional.id (idempotent producers): a producer id from the broker's
ProducerIdManager (kwire.producers.ids) and an epoch. Ids come in blocks of 1000, each
committed as a ProducerIdsRecord to the metadata log before its first id is handed out, so
ids are unique across restarts. v3+ requests that carry the producer's current id and epoch
get the epoch bumped (KIP-360); a stale epoch gets PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v4, as Kafka answers older clients). Only one of id and epoch set: INVALID_REQUEST.

With a transactional.id the transaction coordinator answers (kwire.handlers.transactions:
epoch bump, fencing of zombies, recovery of the previous producer's ongoing transaction).
With an authorizer: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on
some topic (CLUSTER_AUTHORIZATION_FAILED), a transactional one WRITE on its transactional id.
Block allocation goes through ``broker.submit_metadata`` (the active controller in a cluster);
the block start is read from this node's image (no controller-side AllocateProducerIds yet).
"""
from __future__ import annotations

import logging

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.producers.ids import ensure_producer_ids
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed, host_of, principal_of
from kwire.security.operations import AclOperation as Op

log = logging.getLogger("kwire.init_producer_id")


@handles("InitProducerId", "0-5")
async def init_producer_id(ctx: RequestContext, req):
    v = ctx.version
    if req.transactional_id is not None:
        from kwire.handlers.transactions import (  # noqa: PLC0415 - start-up time: transactional only
            init_transactional_producer_id)

        return await init_transactional_producer_id(ctx, req)
    pid = req.producer_id if v >= 3 else -1
    epoch = req.producer_epoch if v >= 3 else -1
    b = ctx.broker
    if b.authorizer is not None and not allowed(ctx, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME) \
            and not b.authorizer.authorize_any(principal_of(ctx), host_of(ctx), Op.WRITE, TOPIC):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            producer_id=-1, producer_epoch=-1)
    m = b.producer_ids
    try:
        await ensure_producer_ids(b, m)
    except Exception as exc:  # noqa: BLE001 - no controller, a failed commit: the client retries
        log.warning("InitProducerId from %s: cannot allocate producer ids: %s", ctx.peer, exc)
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                            producer_id=-1, producer_epoch=-1)
    res = m.init_producer_id(pid, epoch, b.clock.now_ms())
    err = res.error
    if err == ErrorCode.PRODUCER_FENCED and v < 4:
        err = ErrorCode.INVALID_PRODUCER_EPOCH
    if err:
        log.info("InitProducerId(%d, %d) from %s: %s", pid, epoch, ctx.peer, err.name)
    return ctx.response(throttle_time_ms=0, error_code=err, producer_id=res.producer_id,
                        producer_epoch=res.producer_epoch)
