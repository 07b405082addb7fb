"""Replica placement for new partitions: usable brokers + the cluster's existing assignments
(+ racks) -> one replica list per partition. Pure: no image, no I/O, no randomness.

The shape of Kafka's KRaft ``StripedReplicaPlacer``: only unfenced brokers are usable
(``UsableBroker``); the replicas of one partition are distinct brokers; with racks, a
partition spans ``min(RF, racks)`` racks (a replica goes to a rack the partition does not use
yet while one is left); leaders are spread evenly over the brokers. Where Kafka shuffles the
brokers with a random start to spread load across topics, kwire starts where the cluster's
load says: each leader goes to the broker leading the fewest partitions of this topic, then of
the cluster, then the next in the rack-alternating rotation, so a topic's leader counts differ
by at most one across brokers and every new topic begins on the least loaded broker.
Followers go likewise to the broker holding the fewest replicas (of the topic, then of the
cluster). ``PlacementError`` carries Kafka's error code and message.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from kwire.errors import ErrorCode
from kwire.value import Value


class UsableBroker(Value):   # frozen (kwire.value: no generated code at import)
    """A broker new replicas may go to (Kafka's UsableBroker): its id, rack and fencing."""
    id: int
    rack: str | None = None
    fenced: bool = False


class PlacementError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def rack_alternated(brokers: Sequence[UsableBroker]) -> list[UsableBroker]:
    """The brokers in rotation order: racks interleaved (the first broker of each rack in rack
    order, then the second of each ...), ids ascending within a rack. Brokers without a rack
    form one rack of their own."""
    by_rack: dict[str, list[UsableBroker]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        by_rack.setdefault(b.rack if b.rack is not None else "", []).append(b)
    racks = [by_rack[r] for r in sorted(by_rack)]
    out: list[UsableBroker] = []
    for i in range(max((len(r) for r in racks), default=0)):
        out.extend(r[i] for r in racks if i < len(r))
    return out


def place(count: int, replication_factor: int, brokers: Sequence[UsableBroker], *,
          cluster: Iterable[Sequence[int]] = (), topic: Iterable[Sequence[int]] = ()) -> list[list[int]]:
    """Replica lists (leader first) for ``count`` new partitions of ``replication_factor``.

    ``cluster``: the replica lists of every existing partition (the load to balance against);
    ``topic``: those of the topic's own existing partitions (CreatePartitions). Raises
    PlacementError(INVALID_REPLICATION_FACTOR) when the factor cannot be met."""
    if replication_factor <= 0:
        raise PlacementError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Invalid replication factor {replication_factor}: the replication factor must be positive.")
    usable = rack_alternated([b for b in brokers if not b.fenced])
    if not usable:
        raise PlacementError(ErrorCode.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced, or have all their log directories cordoned.")
    if replication_factor > len(usable):
        raise PlacementError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"The target replication factor of {replication_factor} cannot be reached because "
                             f"only {len(usable)} broker(s) are registered or some brokers have all their log "
                             "directories cordoned.")  # Kafka 4.3's StripedReplicaPlacer words (KIP-1066)
    order = {b.id: i for i, b in enumerate(usable)}
    rack = {b.id: b.rack for b in usable}
    leaders, replicas = Counter(), Counter()          # the cluster's load
    topic_leaders, topic_replicas = Counter(), Counter()
    for rs in cluster:
        if rs:
            leaders[rs[0]] += 1
            replicas.update(rs)
    for rs in topic:
        if rs:
            topic_leaders[rs[0]] += 1
            topic_replicas.update(rs)
    n = len(usable)
    # the rotation starts at the broker the cluster loads least, so topics begin apart
    start = min(usable, key=lambda b: (leaders[b.id], replicas[b.id], order[b.id])).id
    rot = {bid: (i - order[start]) % n for bid, i in order.items()}
    out: list[list[int]] = []
    last = None
    for _ in range(count):
        # the next leader: fewest leaders of this topic, then of the cluster, then rotation
        # order after the previous partition's leader
        after = (lambda b: (rot[b] - rot[last] - 1) % n) if last is not None else (lambda b: rot[b])
        leader = min(order, key=lambda b: (topic_leaders[b], leaders[b], after(b)))
        chosen = [leader]
        racks_used = {rack[leader]}
        while len(chosen) < replication_factor:
            pos = rot[chosen[-1]]
            nxt = min((b for b in order if b not in chosen),
                      key=lambda b: (rack[b] in racks_used, topic_replicas[b], replicas[b], (rot[b] - pos - 1) % n))
            chosen.append(nxt)
            racks_used.add(rack[nxt])
        for b in chosen:
            topic_replicas[b] += 1
            replicas[b] += 1
        topic_leaders[leader] += 1
        leaders[leader] += 1
        last = leader
        out.append(chosen)
    return out


def validate_assignment(replicas: Sequence[int], registered: Iterable[int],
                        replication_factor: int | None) -> None:
    """One partition's manual replica list, as Kafka's controller checks it: not empty, every
    broker registered and named once, as many replicas as the partitions before it
    (``replication_factor``, None for the first). Raises PlacementError(INVALID_REPLICA_ASSIGNMENT)."""
    if not replicas:
        raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
    known = set(registered)
    prev = None
    for b in sorted(replicas):
        if b not in known:
            raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {b}, but no such broker is "
                                 "registered.")
        if b == prev:
            raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes the broker {b} more than once.")
        prev = b
    if replication_factor is not None and len(replicas) != replication_factor:
        raise PlacementError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes a partition with {len(replicas)} replica(s), "
                             f"but this is not consistent with previous partitions, which have {replication_factor} "
                             "replica(s).")
