"""The metadata image: brokers, topics, partitions and configs, built only by replaying
metadata records (habit: state is derived from the log)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kwire.metadata import records as R


@dataclass
class BrokerImage:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    epoch: int = 0
    fenced: bool = False


@dataclass
class PartitionImage:
    index: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionImage] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name.startswith("__")


class MetadataImage:
    def __init__(self) -> None:
        self.brokers: dict[int, BrokerImage] = {}
        self.topics: dict[str, TopicImage] = {}
        self.topics_by_id: dict[uuid.UUID, TopicImage] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}  # resource name ("" = cluster default)
        self.features: dict[str, int] = {}
        self.next_producer_id = 0
        self.offset = -1  # the last applied record offset
        self.listeners: list = []  # callables(msg, obj) notified after each applied record

    def apply(self, msg, obj) -> None:
        if msg is R.REGISTER_BROKER:
            ep = obj.end_points[0] if obj.end_points else None
            self.brokers[obj.broker_id] = BrokerImage(obj.broker_id, ep.host if ep else "", ep.port if ep else 0,
                                                      obj.rack, obj.broker_epoch, obj.fenced)
        elif msg is R.UNREGISTER_BROKER:
            self.brokers.pop(obj.broker_id, None)
        elif msg is R.FENCE_BROKER:
            if obj.id in self.brokers:
                self.brokers[obj.id].fenced = True
        elif msg is R.UNFENCE_BROKER:
            if obj.id in self.brokers:
                self.brokers[obj.id].fenced = False
        elif msg is R.TOPIC:
            t = TopicImage(obj.name, obj.topic_id)
            self.topics[obj.name] = t
            self.topics_by_id[obj.topic_id] = t
        elif msg is R.PARTITION:
            t = self.topics_by_id.get(obj.topic_id)
            if t is not None:
                t.partitions[obj.partition_id] = PartitionImage(
                    obj.partition_id, obj.leader, list(obj.replicas), list(obj.isr),
                    obj.leader_epoch, obj.partition_epoch)
        elif msg is R.PARTITION_CHANGE:
            t = self.topics_by_id.get(obj.topic_id)
            p = t.partitions.get(obj.partition_id) if t else None
            if p is not None:
                if obj.leader != -2:
                    p.leader = obj.leader
                    p.leader_epoch += 1
                if obj.isr is not None:
                    p.isr = list(obj.isr)
                if obj.replicas is not None:
                    p.replicas = list(obj.replicas)
                p.partition_epoch += 1
        elif msg is R.REMOVE_TOPIC:
            t = self.topics_by_id.pop(obj.topic_id, None)
            if t is not None:
                self.topics.pop(t.name, None)
        elif msg is R.CONFIG:
            if obj.resource_type == R.RESOURCE_TOPIC:
                t = self.topics.get(obj.resource_name)
                if t is not None:
                    if obj.value is None:
                        t.configs.pop(obj.name, None)
                    else:
                        t.configs[obj.name] = obj.value
            elif obj.resource_type == R.RESOURCE_BROKER:
                d = self.broker_configs.setdefault(obj.resource_name, {})
                if obj.value is None:
                    d.pop(obj.name, None)
                else:
                    d[obj.name] = obj.value
        elif msg is R.FEATURE_LEVEL:
            self.features[obj.name] = obj.feature_level
        elif msg is R.PRODUCER_IDS:
            self.next_producer_id = obj.next_producer_id
        for fn in self.listeners:
            fn(msg, obj)

    def apply_bytes(self, data) -> None:
        msg, obj = R.decode_record(data)
        self.apply(msg, obj)

    def live_brokers(self) -> list[BrokerImage]:
        return sorted((b for b in self.brokers.values() if not b.fenced), key=lambda b: b.node_id)
