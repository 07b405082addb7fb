"""The transaction coordinator follows the metadata image (kwire.transactions.edge.follow_image):
a broker applies a new ``__transaction_state`` topic record by record (TopicRecord, then one
PartitionRecord per partition, in one metadata entry) and calls follow_image after each; the
coordinator must act on the whole topic, never on the partial one. It once took the id ->
partition map from the first partial view (2 partitions of 3 on broker 2), so on every broker
but the one that created the topic FindCoordinator named it for ids it then refused with
NOT_COORDINATOR, forever (found by tests/replication/test_transactions_eos_cluster.py)."""
from __future__ import annotations

import uuid
from types import SimpleNamespace as NS

import trio
import trio.testing

from kwire.metadata.image import PartitionImage, TopicImage
from kwire.transactions.coordinator import TransactionCoordinator
from kwire.transactions.edge import TransactionEdge
from kwire.transactions.records import TRANSACTION_STATE_TOPIC, partition_for
from kwire.transactions.state_manager import TransactionConfig


class EmptyLog:
    log_start_offset = log_end_offset = 0
    offline = False


def fake_broker(node_id: int, nursery):
    async def no_open(topic, p):
        pass

    rm = NS(leader_epoch=lambda topic, p: 0, local_log=lambda topic, p: EmptyLog(),
            log_opening=lambda topic, p: False, wait_log_open=no_open)
    return NS(node_id=node_id, image=NS(topics={}), _nursery=nursery, replica_manager=rm,
              config=NS(get=lambda key: {"transaction.state.log.load.buffer.size": 1 << 20}[key]))


def tid_of_partition(p: int, n: int) -> str:
    return next(t for t in (f"tx-{i}" for i in range(1000)) if partition_for(t, n) == p)


async def _created_record_by_record(node_id: int, leaders: list[int], config_partitions: int):
    async with trio.open_nursery() as nursery:
        b = fake_broker(node_id, nursery)
        edge = TransactionEdge(b)
        edge.coordinator = TransactionCoordinator(
            TransactionConfig(transaction_state_log_num_partitions=config_partitions), owned_partitions=())
        topic = TopicImage(TRANSACTION_STATE_TOPIC, uuid.uuid4())
        b.image.topics[TRANSACTION_STATE_TOPIC] = topic
        for p, leader in enumerate(leaders):      # one metadata entry: no checkpoint in between
            topic.partitions[p] = PartitionImage(p, leader, [1, 2, 3], [1, 2, 3])
            edge.follow_image()
        await trio.testing.wait_all_tasks_blocked()
        return edge.coordinator


def test_a_new_topic_is_followed_with_all_its_partitions():
    coord = trio.run(_created_record_by_record, 2, [1, 2, 3], 3)
    assert coord.config.transaction_state_log_num_partitions == 3
    assert sorted(coord.state.owned) == [1] and not coord.state.loading
    assert coord.coordinator_error(tid_of_partition(1, 3)) is None
    assert coord.coordinator_error(tid_of_partition(0, 3)) is not None


def test_the_map_follows_the_topic_when_the_config_differs():
    """A broker whose transaction.state.log.num.partitions differs from the topic's count maps
    ids over the topic's partitions, all of them."""
    coord = trio.run(_created_record_by_record, 3, [1, 2, 3, 3], 50)
    assert coord.config.transaction_state_log_num_partitions == 4
    assert sorted(coord.state.owned) == [2, 3]
    assert coord.coordinator_error(tid_of_partition(3, 4)) is None
