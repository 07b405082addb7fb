"""ProducerIdManager: producer ids and epochs for InitProducerId (no I/O, time is an input).

Ids come in blocks (``BLOCK_SIZE``) from ``allocate_block(size) -> first id``; the broker
commits each block as a ProducerIdsRecord to the metadata log before handing out its first
id, so an id is never reused, across restarts either (Kafka's ProducerIdManager asks the
controller for blocks the same way, AllocateProducerIds).

Epochs (KIP-360), for a request carrying the producer id and epoch it holds:
* the id is known and the epoch is its current one: the epoch is bumped (a new id with epoch
  0 once the epoch would reach Short.MAX_VALUE - 1, as Kafka's isEpochExhausted);
* the epoch is the one before the last bump (the answer to that bump was lost): the current
  epoch again;
* any other epoch: PRODUCER_FENCED (the handler answers INVALID_PRODUCER_EPOCH below v4);
* an id we have no epoch for (the broker restarted, or the id expired after
  producer.id.expiration.ms without re-initialising): a fresh id with epoch 0, which is what
  Kafka always answers a producer without transactional.id, so no two producers can ever
  share an id and epoch.
A request without id and epoch gets a fresh id with epoch 0.
"""
from __future__ import annotations

import logging
from typing import Callable

from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.value import Value

log = logging.getLogger("kwire.init_producer_id")

BLOCK_SIZE = 1000
MAX_EPOCH = 32767  # Short.MAX_VALUE
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
PURGE_INTERVAL_MS = 60_000


class InitResult(Value):   # frozen (kwire.value: no generated code at import)
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


def epoch_exhausted(epoch: int) -> bool:
    return epoch >= MAX_EPOCH - 1


class ProducerIdManager:
    """``available`` ids left in the current block; when it is 0 the caller commits a new
    block and hands it over with ``add_block(start, size)`` (the handler does this, since
    committing metadata may await the controller). ``allocate_block(size) -> start`` may be
    given instead for synchronous use (tests, a single node)."""

    def __init__(self, allocate_block: Callable[[int], int] | None = None, *, block_size: int = BLOCK_SIZE,
                 expiration_ms: int = 86_400_000):
        self.allocate_block = allocate_block
        self.block_size = block_size
        self.expiration_ms = expiration_ms
        self._next = 0
        self._end = 0  # exclusive end of the current block; empty until the first block
        # producer id -> [current epoch, epoch before the last bump (-1: none), last init ms]
        self.epochs: dict[int, list[int]] = {}
        self._last_purge_ms: int | None = None

    @property
    def available(self) -> int:
        return self._end - self._next

    def add_block(self, start: int, size: int) -> None:
        self._next, self._end = start, start + size

    def generate_producer_id(self) -> int:
        if self._next >= self._end:
            if self.allocate_block is None:
                raise RuntimeError("no producer ids left: add_block first")
            self.add_block(self.allocate_block(self.block_size), self.block_size)
        pid = self._next
        self._next += 1
        return pid

    def _fresh(self, now_ms: int) -> InitResult:
        pid = self.generate_producer_id()
        self.epochs[pid] = [0, NO_PRODUCER_EPOCH, now_ms]
        return InitResult(ErrorCode.NONE, pid, 0)

    def init_producer_id(self, producer_id: int, producer_epoch: int, now_ms: int) -> InitResult:
        self._purge(now_ms)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return InitResult(ErrorCode.INVALID_REQUEST)
        if producer_id == NO_PRODUCER_ID:
            return self._fresh(now_ms)
        state = self.epochs.get(producer_id)
        if state is None:
            return self._fresh(now_ms)
        current, previous, _ = state
        if producer_epoch == current:
            bumped = current + 1
            if epoch_exhausted(bumped):
                del self.epochs[producer_id]
                return self._fresh(now_ms)
            self.epochs[producer_id] = [bumped, current, now_ms]
            return InitResult(ErrorCode.NONE, producer_id, bumped)
        if producer_epoch == previous:
            state[2] = now_ms
            return InitResult(ErrorCode.NONE, producer_id, current)
        return InitResult(ErrorCode.PRODUCER_FENCED)

    def _purge(self, now_ms: int) -> None:
        if self._last_purge_ms is not None and now_ms - self._last_purge_ms < PURGE_INTERVAL_MS:
            return
        self._last_purge_ms = now_ms
        limit = self.expiration_ms
        for pid in [p for p, s in self.epochs.items() if now_ms - s[2] >= limit]:
            del self.epochs[pid]


async def ensure_producer_ids(broker, m: ProducerIdManager) -> None:
    """Commit a new block of producer ids to the metadata log when the current one is used up."""
    async with broker.producer_ids_lock:   # one block allocation at a time
        if m.available > 0:
            return
        start = broker.image.next_producer_id
        b = broker.image.brokers.get(broker.node_id)
        recs = [(R.PRODUCER_IDS, R.PRODUCER_IDS.cls(
            broker_id=broker.node_id, broker_epoch=b.epoch if b else -1, next_producer_id=start + m.block_size))]
        await broker.submit_metadata(recs)  # the quorum's log (forwarded to the active controller)
        m.add_block(start, m.block_size)
        log.info("allocated producer ids %d-%d", start, start + m.block_size - 1)
