"""InitProducerId (key 22): versions 0-5 served.

Without transactional.id (idempotent producers): a producer id from the broker's
ProducerIdManager (kwire.producers.ids: blocks of ids committed as ProducerIdsRecord to the
metadata log, so ids are unique across restarts) and an epoch; v3+ requests that carry the
producer's current id and epoch get the epoch bumped (KIP-360), a stale epoch gets
PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v4, as Kafka answers older clients).
A mismatched pair (only one of id and epoch set) is INVALID_REQUEST.

Left out: transactions. A transactional.id is answered with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED: every client treats it as fatal and says so at once
("Transactional Id authorization failed"), where COORDINATOR_NOT_AVAILABLE would be retried
until the client's timeout with no hint why (FindCoordinator for transactions already answers
COORDINATOR_NOT_AVAILABLE with the message "Transactions are not supported by this broker
yet."). An empty transactional.id is INVALID_REQUEST, as in Kafka.
"""
from __future__ import annotations

import logging

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.metadata import records as R
from kwire.producers.ids import ProducerIdManager

log = logging.getLogger("kwire.init_producer_id")


def producer_id_manager(broker) -> ProducerIdManager:
    """The broker's ProducerIdManager (created on first use, ids from the metadata log)."""
    m = broker.producers
    if m is None:
        def allocate_block(size: int) -> int:
            start = broker.image.next_producer_id
            b = broker.image.brokers.get(broker.node_id)
            broker.commit_metadata([(R.PRODUCER_IDS, R.PRODUCER_IDS.cls(
                broker_id=broker.node_id, broker_epoch=b.epoch if b else -1,
                next_producer_id=start + size))])
            log.info("allocated producer ids %d-%d", start, start + size - 1)
            return start

        m = broker.producers = ProducerIdManager(
            allocate_block, expiration_ms=int(broker.config.get("producer.id.expiration.ms")))
    return m


@handles("InitProducerId", "0-5")
async def init_producer_id(ctx: RequestContext, req):
    v = ctx.version
    tid = req.transactional_id
    if tid is not None:
        err = ErrorCode.INVALID_REQUEST if tid == "" else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        log.info("InitProducerId with transactional.id %r from %s refused: transactions are not supported",
                 tid, ctx.peer)
        return ctx.response(throttle_time_ms=0, error_code=err, producer_id=-1, producer_epoch=-1)
    pid = req.producer_id if v >= 3 else -1
    epoch = req.producer_epoch if v >= 3 else -1
    res = producer_id_manager(ctx.broker).init_producer_id(pid, epoch, ctx.broker.clock.now_ms())
    err = res.error
    if err == ErrorCode.PRODUCER_FENCED and v < 4:
        err = ErrorCode.INVALID_PRODUCER_EPOCH
    if err:
        log.info("InitProducerId(%d, %d) from %s: %s", pid, epoch, ctx.peer, err.name)
    return ctx.response(throttle_time_ms=0, error_code=err, producer_id=res.producer_id,
                        producer_epoch=res.producer_epoch)
