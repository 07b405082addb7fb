"""ISR changes at the Trio edge (kwire.replication.isr.IsrChanges): one AlterPartition in
flight per partition, marked by the partition's pending ISR (which the high watermark counts,
Kafka's maximal ISR) until it completes.

A request that completes late - sent in an earlier leadership, answered (or timed out) after
this broker asked again for the same ISR - must not clear the newer request's pending ISR:
the high watermark would then pass a replica the controller has already put in the ISR, and
that replica, elected later, would lack committed records. Found by the replication
simulation (tests/replication/sim.py); Kafka compares the pending state by identity too
(Partition.handleAlterPartitionUpdate).
"""
from __future__ import annotations

import trio
import trio.testing

from kwire.errors import ErrorCode
from kwire.metadata.partition_change import AlterPartitionResult
from kwire.replication.isr import IsrChanges

from tests.replication.test_followers import T, Nodes


class SlowQuorum:
    """An active controller that answers each AlterPartition when the test says so."""

    def __init__(self):
        self.asked: list[tuple[list[int], trio.Event]] = []

    async def alter_partition(self, topic_id, partition, leader_epoch, partition_epoch, new_isr):
        go = trio.Event()
        self.asked.append((list(new_isr), go))
        await go.wait()
        return AlterPartitionResult(ErrorCode.REQUEST_TIMED_OUT)


def test_a_late_answer_to_an_older_request_keeps_the_newer_pending_isr(tmp_path):
    n = Nodes(tmp_path)
    quorum = SlowQuorum()

    async def main():
        n.partition([1, 2, 3], isr=[1, 2])
        rm = n.rms[1]
        isr = IsrChanges(1, rm, lambda: n.image, lambda: quorum, lag_ms=30_000)
        async with trio.open_nursery() as nursery:
            isr._nursery = nursery          # no expiry loop: the test decides
            part = rm.partitions[(T, 0)]
            isr.request(part, [1, 2, 3])    # epoch 0: asked, no answer yet
            await trio.testing.wait_all_tasks_blocked()
            assert part.pending_isr == [1, 2, 3] and len(quorum.asked) == 1
            n.change(leader=1)              # a new leadership (epoch 1): pending ISR starts over
            assert part.leader_epoch == 1 and part.pending_isr is None
            isr.request(part, [1, 2, 3])    # asked again, the same ISR
            await trio.testing.wait_all_tasks_blocked()
            assert len(quorum.asked) == 2
            quorum.asked[0][1].set()        # the first request ends (timed out) only now
            await trio.testing.wait_all_tasks_blocked()
            assert part.pending_isr == [1, 2, 3]   # the second is still in flight
            assert 3 in part.maximal_isr
            quorum.asked[1][1].set()
            await trio.testing.wait_all_tasks_blocked()
            assert part.pending_isr is None

    try:
        trio.run(main)
    finally:
        n.close()
