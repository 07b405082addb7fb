"""A restarting broker serves once the controller has given it back the leaderless partitions it
may lead: in the ISR, or with ELR on (KIP-966) in the ELR or as the last known leader. A
single-replica partition's ISR empties at a controlled shutdown with ELR on, so a broker that
looked at the ISR alone served before its re-election and answered NOT_LEADER_OR_FOLLOWER
(tests/integration/test_transactions_wire.py::test_transactions_survive_a_restart[clean], once
in CI). No I/O: Broker._wait_for_leaderships over a stub image and quorum, on a mock clock."""
from __future__ import annotations

import types

import pytest
import trio
import trio.testing

from kwire.broker import Broker
from kwire.metadata.image import PartitionImage


class _Driver:
    async def wait_changed(self):
        await trio.sleep_forever()


def _waited(partition: PartitionImage) -> float:
    fake = types.SimpleNamespace(node_id=1, quorum=types.SimpleNamespace(driver=_Driver()),
                                 image=types.SimpleNamespace(topics={"t": types.SimpleNamespace(
                                     partitions={0: partition})}))

    async def main():
        await Broker._wait_for_leaderships(fake, 5.0)
        return trio.current_time()
    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize("where", ["isr", "elr", "last_known_elr"])
def test_a_leaderless_partition_this_broker_may_lead_is_waited_for(where):
    p = PartitionImage(index=0, leader=-1, replicas=[1], isr=[])
    setattr(p, where, [1])
    assert _waited(p) == pytest.approx(5.0, abs=0.1)   # the bound: nobody elected it here


def test_partitions_led_or_not_ours_are_not_waited_for():
    assert _waited(PartitionImage(index=0, leader=1, replicas=[1], isr=[1])) == 0
    assert _waited(PartitionImage(index=0, leader=-1, replicas=[2], isr=[], elr=[2])) == 0
