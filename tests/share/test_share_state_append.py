"""The share coordinator's state writes go through the replica manager's one append path
(ReplicaManager.append, then the outcome awaited): acks=all with the checks every writer
gets, the leader epoch of the append among them. Sans-I/O: one real replica manager over a
metadata image, the follower's fetch handed to the leader's ``read_for_follower``."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import trio
import trio.testing

from kwire.metadata.delta import replay
from kwire.errors import ErrorCode as E
from kwire.log.config import LogConfig
from kwire.log.manager import LogManager
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.replication import ReplicaManager
from kwire.share import records as SR
from kwire.share.coordinator import ShareCoordinator

NOW = 1_700_000_000_000


def test_a_state_write_whose_leadership_moved_during_the_wait_is_not_acknowledged(tmp_path):
    """Appended in leader epoch 5; while it waits for the follower, the leadership goes to
    broker 2 and comes back in epoch 7, and the high watermark then passes the offset: the
    record at that offset may not be the one written (Kafka's leader epoch check), so the
    write answers NOT_LEADER_OR_FOLLOWER, not NONE."""
    image = MetadataImage()
    for node in (1, 2):
        image = replay(image, [(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
            broker_id=node, incarnation_id=uuid.uuid4(), broker_epoch=1, end_points=[], rack=None, fenced=False))])
    tid = uuid.uuid4()
    image = replay(image, [(R.TOPIC, R.TOPIC.cls(name=SR.STATE_TOPIC, topic_id=tid))])
    logs = LogManager(str(tmp_path), LogConfig())
    config = {"share.coordinator.write.timeout.ms": 5000}
    broker = SimpleNamespace(node_id=1, image=image, config=SimpleNamespace(get=config.__getitem__),
                             clock=SimpleNamespace(now_ms=lambda: NOW))
    rm = broker.replica_manager = ReplicaManager(1, logs, lambda: broker.image,
                                                 producer_id_expiration_ms=lambda: 86_400_000, now_ms=lambda: NOW)

    def lead(leader: int, epoch: int) -> None:
        broker.image = replay(broker.image, [(R.PARTITION, R.PARTITION.cls(partition_id=0, topic_id=tid, replicas=[1, 2], isr=[1, 2],
                                                 leader=leader, leader_epoch=epoch, partition_epoch=epoch))])
        rm.apply_partition(SR.STATE_TOPIC, 0)

    lead(1, 5)
    coord = ShareCoordinator(broker)
    answers = []

    async def main():
        async with trio.open_nursery() as n:
            async def write():
                answers.append(await coord.append(0, [(b"k", b"v")]))

            n.start_soon(write)
            await trio.testing.wait_all_tasks_blocked()
            plog = rm.local_log(SR.STATE_TOPIC, 0)
            assert plog.log_end_offset == 1 and plog.high_watermark == 0 and answers == []
            # no checkpoint between these: the writer sees only the end state
            lead(2, 6)
            lead(1, 7)
            rm.read_for_follower(SR.STATE_TOPIC, 0, 2, 1, -1, 1 << 20)
            assert plog.high_watermark == 1

    try:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        logs.close()
    assert answers == [E.NOT_LEADER_OR_FOLLOWER]
