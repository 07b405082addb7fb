"""Preferred read replicas (KIP-392, "fetch from follower"): which replica a consumer should
read a partition from, as the leader decides it for a Fetch v11+ that carries the client's
rack (``rack_id``). Pure: no image, no I/O.

Mirrors Kafka's org.apache.kafka.common.replica package (ReplicaSelector, ReplicaView,
RackAwareReplicaSelector) and the candidate list of ReplicaManager.findPreferredReadReplica:

- ``replica.selector.class`` names the selector; unset (Kafka's default): none, consumers read
  from the leader. kwire knows Kafka's one shipped selector, RackAwareReplicaSelector; any
  other class name is refused at start-up by the config validator (Kafka fails to start when
  the class cannot be loaded).
- candidates: the leader (its log end offset, caught up now) and every follower in the ISR
  whose log holds the fetch offset (log start <= fetch offset <= log end offset, as its last
  fetch reported them) and whose broker has an endpoint on the client's listener (registered,
  unfenced). A follower out of the ISR is never chosen: it may lag without end.
- RackAwareReplicaSelector: a client without a rack, or whose rack no candidate is in, gets the
  leader; the leader when it is in the client's rack; otherwise the "most caught up" replica
  of that rack (Kafka's ReplicaView.comparator: largest log end offset, then the shortest time
  since it was last caught up, then the largest broker id).
- the leader chosen means no preferred replica (-1): the leader serves the fetch itself.
"""
from __future__ import annotations

from typing import Callable, Iterable

from kwire.value import Value

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
#: the ``replica.selector.class`` values kwire accepts ("" and unset: no selector)
SELECTOR_CLASSES = ("", RACK_AWARE)
NO_PREFERRED_REPLICA = -1


class ReplicaView(Value):   # frozen (kwire.value: no generated code at import)
    """One candidate (Kafka's ReplicaView): its broker, rack, log end offset and how long ago
    it was last caught up with the leader (0 for the leader)."""
    node_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


def most_caught_up(views: Iterable[ReplicaView]) -> ReplicaView:
    """Kafka's ``max(ReplicaView.comparator())``."""
    return max(views, key=lambda v: (v.log_end_offset, -v.time_since_last_caught_up_ms, v.node_id))


def rack_aware(client_rack: str | None, replicas: list[ReplicaView], leader: ReplicaView) -> ReplicaView:
    """Kafka's RackAwareReplicaSelector.select."""
    if not client_rack:
        return leader
    same_rack = [r for r in replicas if r.rack == client_rack]
    if not same_rack:
        return leader
    if leader in same_rack:
        return leader   # the leader is in the client's rack: read from it
    return most_caught_up(same_rack)


Selector = Callable[[str | None, list[ReplicaView], ReplicaView], ReplicaView]
_SELECTORS: dict[str, Selector] = {RACK_AWARE: rack_aware}


def selector_for(class_name: str | None) -> Selector | None:
    """The selector ``replica.selector.class`` names, or None (consumers read from the
    leader). The config validator has refused every other name already."""
    name = (class_name or "").strip()
    if not name:
        return None
    try:
        return _SELECTORS[name]
    except KeyError:
        raise ValueError(f"replica.selector.class: unknown ReplicaSelector {name!r} "
                         f"(kwire has {RACK_AWARE})") from None


def preferred_read_replica(select: Selector, part, brokers, *, fetch_offset: int, now_ms: int,
                           client_rack: str | None, listener: str | None) -> int:
    """Kafka's ReplicaManager.findPreferredReadReplica on the leader of ``part``
    (kwire.replication.partition.Partition): the broker id the consumer should read from, or
    -1 for the leader itself. ``brokers``: the metadata image's brokers by id."""
    def endpoint(node_id: int):
        # Kafka's getPartitionReplicaEndpoints: registered, unfenced, listening on the client's listener
        b = brokers.get(node_id)
        if b is None or b.fenced:
            return None
        if listener is not None and b.endpoints and listener not in b.endpoints:
            return None
        return b

    candidates = []
    for r in part.isr:
        st = part.followers.get(r)
        if r == part.leader or st is None:
            continue
        if st.log_end_offset < fetch_offset or st.log_start_offset > fetch_offset:
            continue   # its log does not hold the fetch offset (its last fetch said so)
        b = endpoint(r)
        if b is None:
            continue   # Kafka's Node.noNode(): never chosen
        candidates.append(ReplicaView(r, b.rack, st.log_end_offset, now_ms - st.last_caught_up_ms))
    lb = endpoint(part.leader)
    leader = ReplicaView(part.leader, lb.rack if lb is not None else None, part.log.log_end_offset, 0)
    chosen = select(client_rack, candidates + [leader], leader)
    if chosen is None or chosen.node_id == part.leader:
        return NO_PREFERRED_REPLICA
    return chosen.node_id
