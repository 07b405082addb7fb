"""Server-side assignors of KIP-848 consumer groups (``group.consumer.assignors``): ``uniform``
and ``range``, as Kafka's UniformAssignor and RangeAssignor compute a target assignment.

An assignor is a pure function::

    assign(members, topics, current) -> {member id: {topic id: frozenset(partitions)}}

- ``members``: member id -> the topic ids it subscribes to (resolved names / regex);
- ``topics``: topic id -> partition count (the subscribed topics that exist);
- ``current``: member id -> its current target assignment (for stickiness).

``uniform`` spreads every subscribed partition over the members subscribed to its topic so
that, among the members that could take a partition, counts differ by at most one, and keeps
a partition with its current owner whenever that stays balanced (sticky, as Kafka's
optimized / general uniform builders). ``range`` gives each member, per topic, a contiguous
range of partitions in member id order (the first ``n % m`` members one more), as the classic
range assignor; co-partitioned topics land on the same member.

Rack awareness (``racks``: each member's rack id and each partition's replica racks), as
Kafka's assignors: used only when some member has a rack, member and partition racks overlap,
and not every partition has the same racks (Kafka's useRackAwareAssignment). Then ``uniform``
puts balance first, rack second, stickiness third: a member keeps a current partition only
when it is on one of the partition's racks, unowned partitions go to an eligible member on
their rack while it has room, the rest to the least loaded; ``range`` gives each member its
count per topic as before, first from the partitions on its rack, then the rest in order.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping
from uuid import UUID

Assignment = dict[UUID, frozenset[int]]
Assignor = Callable[..., dict[str, Assignment]]


class Racks:
    """Members' rack ids and partitions' replica racks, for rack-aware assignment."""

    def __init__(self, member_racks: Mapping[str, str | None],
                 partition_racks: Callable[[UUID, int], frozenset[str]]):
        self.member_racks = member_racks
        self.partition_racks = partition_racks

    def use(self, members: Iterable[str], partitions: Iterable[tuple[UUID, int]]) -> bool:
        """Kafka's useRackAwareAssignment."""
        member_racks = {self.member_racks.get(m) for m in members} - {None}
        if not member_racks:
            return False
        per_partition = [self.partition_racks(t, p) for t, p in partitions]
        all_racks = frozenset().union(*per_partition) if per_partition else frozenset()
        if member_racks.isdisjoint(all_racks):
            return False
        return not all(r == all_racks for r in per_partition)

    def match(self, member: str, t: UUID, p: int) -> bool:
        rack = self.member_racks.get(member)
        return rack is not None and rack in self.partition_racks(t, p)


def _freeze(out: dict[str, dict[UUID, set[int]]]) -> dict[str, Assignment]:
    return {mid: {t: frozenset(ps) for t, ps in a.items() if ps} for mid, a in out.items()}


def uniform(members: Mapping[str, frozenset[UUID]], topics: Mapping[UUID, int],
            current: Mapping[str, Assignment], racks: Racks | None = None) -> dict[str, Assignment]:
    out: dict[str, dict[UUID, set[int]]] = {mid: {} for mid in members}
    count = {mid: 0 for mid in members}
    # every partition and the members that may own it
    partitions = [(t, p) for t in sorted(topics, key=str) for p in range(topics[t])]
    eligible = {t: sorted(m for m, subs in members.items() if t in subs) for t in topics}
    total_for = {m: sum(topics[t] for t in members[m] if t in topics) for m in members}
    # fair share: partitions / members when everyone subscribes to everything; for mixed
    # subscriptions a member never exceeds the average over the members sharing its topics
    n_members = max(1, sum(1 for m in members if total_for[m]))
    quota = -(-len(partitions) // n_members)   # ceil

    use_rack = racks is not None and racks.use([m for m in members if total_for[m]], partitions)

    def on_rack(m: str, t: UUID, p: int) -> bool:
        return not use_rack or racks.match(m, t, p)

    owner: dict[tuple[UUID, int], str] = {}
    # 1. stickiness: keep current owners while they are eligible, under quota (and on the
    #    partition's rack when racks are used)
    for m in sorted(members):
        for t, ps in sorted((current.get(m) or {}).items(), key=lambda kv: str(kv[0])):
            if t not in topics or m not in eligible[t]:
                continue
            for p in sorted(ps):
                if p < topics[t] and (t, p) not in owner and count[m] < quota and on_rack(m, t, p):
                    owner[(t, p)] = m
                    count[m] += 1
    # 2. the rest to an eligible member on the partition's rack with room, else the least loaded
    for t, p in partitions:
        if (t, p) in owner or not eligible[t]:
            continue
        local = [x for x in eligible[t] if count[x] < quota and racks.match(x, t, p)] if use_rack else []
        m = min(local or eligible[t], key=lambda x: (count[x], x))
        owner[(t, p)] = m
        count[m] += 1
    # 3. balance: move partitions from a member holding two more than another eligible one
    #    (with racks: first the partitions off their owner's rack, to a member on their rack)
    moved = True
    while moved:
        moved = False
        for (t, p), m in sorted(owner.items(), key=lambda kv: (-count[kv[1]], on_rack(kv[1], *kv[0]),
                                                               str(kv[0][0]), kv[0][1])):
            least = min(eligible[t], key=lambda x: (count[x], not on_rack(x, t, p), x))
            if count[m] - count[least] > 1:
                owner[(t, p)] = least
                count[m] -= 1
                count[least] += 1
                moved = True
                break
    for (t, p), m in owner.items():
        out[m].setdefault(t, set()).add(p)
    return _freeze(out)


def range_(members: Mapping[str, frozenset[UUID]], topics: Mapping[UUID, int],
           current: Mapping[str, Assignment], racks: Racks | None = None) -> dict[str, Assignment]:
    out: dict[str, dict[UUID, set[int]]] = {mid: {} for mid in members}
    for t, n in topics.items():
        subs = sorted(m for m, s in members.items() if t in s)
        if not subs:
            continue
        each, extra = divmod(n, len(subs))
        sizes = {m: each + (1 if i < extra else 0) for i, m in enumerate(subs)}
        if racks is not None and racks.use(subs, [(t, p) for p in range(n)]):
            # the partitions on each member's rack first (in order), then the rest in order
            free = list(range(n))
            for m in subs:
                mine = [p for p in free if racks.match(m, t, p)][:sizes[m]]
                if mine:
                    out[m][t] = set(mine)
                    free = [p for p in free if p not in out[m][t]]
            for m in subs:
                short = sizes[m] - len(out[m].get(t, ()))
                if short > 0:
                    out[m].setdefault(t, set()).update(free[:short])
                    free = free[short:]
            continue
        start = 0
        for m in subs:
            if sizes[m]:
                out[m][t] = set(range(start, start + sizes[m]))
            start += sizes[m]
    return _freeze(out)


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_}


def assignor_name(configured: list[str]) -> list[str]:
    """The names of the configured assignors kwire knows (class names map to their short
    names, as Kafka's ``UniformAssignor`` is ``uniform``)."""
    out = []
    for c in configured:
        short = c.rsplit(".", 1)[-1].lower().removesuffix("assignor")
        if short in ASSIGNORS:
            out.append(short)
    return out or ["uniform", "range"]
