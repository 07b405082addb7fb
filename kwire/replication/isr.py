"""ISR changes, the Trio edge (Kafka's AlterPartitionManager and the leader's
isr-expiration task): the replica manager decides (a follower caught up: expand; a follower
behind for replica.lag.time.max.ms: shrink) and this sends the change to the active
controller as an AlterPartition (``MetadataQuorum.alter_partition``), one in flight per
partition. The ISR itself changes here only when the controller's PartitionChangeRecord
applies, like every other metadata change; a refused change (a stale leader or partition
epoch) is dropped and decided again from the new state.
"""
from __future__ import annotations

import logging

import trio

from kwire.errors import ErrorCode

log = logging.getLogger("kwire.replication.isr")


class IsrChanges:
    def __init__(self, node_id: int, replica_manager, image, quorum, lag_ms: int):
        self.node_id = node_id
        self.replica_manager = replica_manager
        self.image = image
        self.quorum = quorum          # a callable: the MetadataQuorum (set once the broker opens)
        self.lag_ms = lag_ms
        self._nursery = None
        replica_manager.on_isr_change = self.request

    def start(self, nursery) -> None:
        self._nursery = nursery
        nursery.start_soon(self._expire_loop)

    def request(self, part, new_isr: list[int]) -> None:
        """Ask the controller for ``new_isr`` (the replica manager's decision), unless a change
        is in flight for the partition already."""
        if self._nursery is None or part.pending_isr is not None or not part.is_leader:
            return
        t = self.image().topics.get(part.topic)
        if t is None:
            return
        # this request's own list: its completion clears the pending ISR only while it is still
        # this one (a later request for the same ISR, in a later leadership, keeps its own)
        pending = part.pending_isr = list(new_isr)
        self._nursery.start_soon(self._send, part, t.topic_id, pending, part.leader_epoch,
                                 part.partition_epoch)

    async def _send(self, part, topic_id, new_isr, leader_epoch: int, partition_epoch: int) -> None:
        what = f"{part.topic}-{part.index} ISR {part.isr} -> {new_isr}"
        try:
            res = await self.quorum().alter_partition(topic_id, part.index, leader_epoch, partition_epoch, new_isr)
            if res.code != ErrorCode.NONE:
                log.info("broker %d: %s refused by the controller: %s", self.node_id, what,
                         ErrorCode(res.code).name)
            else:
                log.info("broker %d: %s (partition epoch %d)", self.node_id, what, res.partition_epoch)
        except Exception as exc:  # noqa: BLE001 - decided again at the next check
            log.info("broker %d: %s not sent: %s", self.node_id, what, exc)
        finally:
            if part.pending_isr is new_isr:
                part.pending_isr = None

    async def _expire_loop(self) -> None:
        """Kafka's isr-expiration task: every replica.lag.time.max.ms / 2."""
        while True:
            await trio.sleep(max(self.lag_ms / 2000, 0.05))
            for part, new_isr in self.replica_manager.isr_shrinks(self.lag_ms):
                self.request(part, new_isr)
