"""The active controller's CreateTopics / CreatePartitions: an intent (what a client asked any
node for) checked against the controller's image, turned into metadata records. Pure: the
quorum (kwire.metadata.quorum) serialises these, makes the controller's own partition logs,
and commits the records.

Checks and messages follow Kafka's ReplicationControlManager: topic names, TOPIC_ALREADY_EXISTS,
non-positive partitions / replication factor, -1 for the controller's num.partitions /
default.replication.factor, manual assignments (INVALID_REPLICA_ASSIGNMENT), configs
(INVALID_CONFIG), INVALID_REPLICATION_FACTOR when the factor exceeds the usable brokers
(unfenced and not in controlled shutdown). Placement: kwire.metadata.placement. A new
partition's ISR is its replicas on usable brokers, its leader the first of them.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from kwire.config import validate_topic_config
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.metadata.placement import PlacementError, UsableBroker, place, validate_assignment

LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_LENGTH = 249


def validate_topic_name(name: str) -> str | None:
    """Kafka's Topic.validate, with its 4.x messages (the differential harness compares them)."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_TOPIC_LENGTH:
        return f"Topic name is invalid: the length of '{name}' is longer than the max allowed length {MAX_TOPIC_LENGTH}"
    if not LEGAL_TOPIC.match(name):
        return (f"Topic name is invalid: '{name}' contains one or more characters other than ASCII "
                "alphanumerics, '.', '_' and '-'")
    return None


class TopicRefused(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass
class CreateTopic:
    """What a client asked for (CreateTopics' CreatableTopic): -1 for the defaults."""
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: dict[int, list[int]] | None = None
    configs: dict[str, str | None] = field(default_factory=dict)
    validate_only: bool = False


@dataclass
class CreatePartitions:
    name: str
    count: int
    assignments: list[list[int]] | None = None
    validate_only: bool = False


@dataclass
class TopicOutcome:
    """The controller's answer to a topic change (CreateTopics / CreatePartitions)."""
    code: ErrorCode
    message: str | None = None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@dataclass
class Plan:
    """Records to commit and the new partitions' replica lists (leader first)."""
    topic_id: uuid.UUID
    replicas: dict[int, list[int]]
    records: list = field(default_factory=list)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def replication_factor(self) -> int:
        return len(next(iter(self.replicas.values()))) if self.replicas else 0


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    # a broker in controlled shutdown takes no new replicas either (Kafka's usable brokers)
    return [UsableBroker(b.node_id, b.rack, not b.active) for b in image.brokers.values()]


def _all_replicas(image: MetadataImage):
    return [p.replicas for t in image.topics.values() for p in t.partitions.values()]


def _manual(assignments, image: MetadataImage, rf: int | None = None) -> list[list[int]]:
    out = []
    registered = image.brokers.keys()
    for i, replicas in enumerate(assignments):
        try:
            validate_assignment(replicas, registered, rf)
        except PlacementError as exc:
            raise TopicRefused(exc.code, exc.message) from None
        rf = len(replicas)
        if not any(image.brokers[b].active for b in replicas):
            raise TopicRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"All brokers specified in the manual partition assignment for partition {i} "
                               "are fenced or in controlled shutdown.")
        out.append(list(replicas))
    return out


def _partition_record(topic_id, index: int, replicas: list[int], image: MetadataImage):
    # the ISR is the assigned replicas that are active, in order; the first of them leads
    isr = [b for b in replicas if b in image.brokers and image.brokers[b].active] or list(replicas)
    return (R.PARTITION, R.PARTITION.cls(partition_id=index, topic_id=topic_id, replicas=list(replicas), isr=isr,
                                         leader=isr[0], leader_epoch=0, partition_epoch=0))


def plan_create_topic(image: MetadataImage, req: CreateTopic, *, default_partitions: int,
                      default_replication_factor: int, in_flight: set[str] = frozenset()) -> Plan:
    """Check ``req`` against ``image`` (and topics being created right now); its Plan.
    Raises TopicRefused with Kafka's code and message."""
    err = validate_topic_name(req.name)
    if err:
        raise TopicRefused(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
    if req.name in image.topics or req.name in in_flight:
        raise TopicRefused(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{req.name}' already exists.")
    clean: dict[str, str] = {}
    for k, v in (req.configs or {}).items():
        try:
            validate_topic_config(k, v)
        except KeyError:
            raise TopicRefused(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {k}") from None
        except ValueError as exc:
            raise TopicRefused(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if v is not None:
            clean[k] = v
    if req.assignments:
        if req.replication_factor != -1:
            raise TopicRefused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                               "replication factor was not set to -1.")
        if req.num_partitions != -1:
            raise TopicRefused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                               "numPartitions was not set to -1.")
        indexes = sorted(req.assignments)
        if indexes != list(range(len(indexes))):
            raise TopicRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "partitions should be a consecutive 0-based integer sequence")
        placed = _manual([req.assignments[i] for i in indexes], image)
    else:
        if req.replication_factor < -1 or req.replication_factor == 0:
            raise TopicRefused(ErrorCode.INVALID_REPLICATION_FACTOR,
                               "Replication factor must be larger than 0, or -1 to use the default value.")
        if req.num_partitions < -1 or req.num_partitions == 0:
            raise TopicRefused(ErrorCode.INVALID_PARTITIONS,
                               "Number of partitions was set to an invalid non-positive value.")
        count = default_partitions if req.num_partitions == -1 else req.num_partitions
        rf = default_replication_factor if req.replication_factor == -1 else req.replication_factor
        try:
            placed = place(count, rf, usable_brokers(image), cluster=_all_replicas(image))
        except PlacementError as exc:
            raise TopicRefused(exc.code, f"Unable to replicate the partition {rf} time(s): {exc.message}") from None
    topic_id = uuid.uuid4()
    plan = Plan(topic_id, dict(enumerate(placed)), configs=clean)
    plan.records.append((R.TOPIC, R.TOPIC.cls(name=req.name, topic_id=topic_id)))
    for i, replicas in enumerate(placed):
        plan.records.append(_partition_record(topic_id, i, replicas, image))
    for k, v in clean.items():
        plan.records.append((R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_TOPIC, resource_name=req.name,
                                                    name=k, value=v)))
    return plan


def plan_create_partitions(image: MetadataImage, req: CreatePartitions) -> Plan:
    """Check ``req`` against ``image``; its Plan (partition records only). Raises TopicRefused."""
    t = image.topics.get(req.name)
    if t is None:
        raise TopicRefused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{req.name}' does not exist.")
    cur = len(t.partitions)
    if req.count == cur:
        raise TopicRefused(ErrorCode.INVALID_PARTITIONS, f"Topic already has {cur} partition(s).")
    if req.count < cur:
        raise TopicRefused(ErrorCode.INVALID_PARTITIONS,
                           f"The topic {req.name} currently has {cur} partition(s); {req.count} would not be an "
                           "increase.")
    additional = req.count - cur
    rf = len(t.partitions[min(t.partitions)].replicas) if t.partitions else 1
    if req.assignments is not None:
        if len(req.assignments) != additional:
            raise TopicRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"Attempted to add {additional} additional partition(s), but only "
                               f"{len(req.assignments)} assignment(s) were specified.")
        placed = _manual(req.assignments, image, rf)
    else:
        try:
            placed = place(additional, rf, usable_brokers(image), cluster=_all_replicas(image),
                           topic=[p.replicas for p in t.partitions.values()])
        except PlacementError as exc:
            raise TopicRefused(exc.code, f"Unable to replicate the partition {rf} time(s): {exc.message}") from None
    plan = Plan(t.topic_id, {cur + i: r for i, r in enumerate(placed)})
    for index, replicas in plan.replicas.items():
        plan.records.append(_partition_record(t.topic_id, index, replicas, image))
    return plan
