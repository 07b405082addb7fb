"""One partition's state as Metadata and DescribeTopicPartitions answer it: leader (-1 when
its broker is not live), leader epoch, replicas, ISR (as the controller keeps it: a fenced
broker leaves every ISR it was in), and offline replicas
(a replica whose broker is not live, or this node's when its log is offline: the replica
manager's view, as Kafka's KRaftMetadataCache counts a replica in an offline log dir)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from kwire.handlers import BrokerServices


@dataclass(frozen=True, slots=True)
class PartitionState:
    index: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


def partition_states(b: BrokerServices, topic, indexes: Iterable[int] | None = None) -> list[PartitionState]:
    """States of ``topic``'s partitions (an image TopicImage), of ``indexes`` (default: all,
    in index order)."""
    live = {x.node_id for x in b.image.live_brokers()}
    rm = b.replica_manager
    out = []
    for idx in (sorted(topic.partitions) if indexes is None else indexes):
        p = topic.partitions[idx]
        offline = [r for r in p.replicas
                   if r not in live or (r == b.node_id and rm.log_offline(topic.name, idx))]
        out.append(PartitionState(idx, p.leader if p.leader in live else -1, p.leader_epoch,
                                  list(p.replicas), list(p.isr), offline))
    return out
