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
range assignor; co-partitioned topics land on the same member. Kafka's rack awareness is left
out (members' rack ids are recorded but not used).
"""
from __future__ import annotations

from typing import Callable, Mapping
from uuid import UUID

Assignment = dict[UUID, frozenset[int]]
Assignor = Callable[[Mapping[str, frozenset[UUID]], Mapping[UUID, int], Mapping[str, Assignment]],
                    dict[str, Assignment]]


def _freeze(out: dict[str, dict[UUID, set[int]]]) -> dict[str, Assignment]:
    return {mid: {t: frozenset(ps) for t, ps in a.items() if ps} for mid, a in out.items()}


def uniform(members: Mapping[str, frozenset[UUID]], topics: Mapping[UUID, int],
            current: Mapping[str, Assignment]) -> dict[str, Assignment]:
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

    owner: dict[tuple[UUID, int], str] = {}
    # 1. stickiness: keep current owners while they are eligible and under quota
    for m in sorted(members):
        for t, ps in sorted((current.get(m) or {}).items(), key=lambda kv: str(kv[0])):
            if t not in topics or m not in eligible[t]:
                continue
            for p in sorted(ps):
                if p < topics[t] and (t, p) not in owner and count[m] < quota:
                    owner[(t, p)] = m
                    count[m] += 1
    # 2. the rest to the least loaded eligible member
    for t, p in partitions:
        if (t, p) in owner or not eligible[t]:
            continue
        m = min(eligible[t], key=lambda x: (count[x], x))
        owner[(t, p)] = m
        count[m] += 1
    # 3. balance: move partitions from a member holding two more than another eligible one
    moved = True
    while moved:
        moved = False
        for (t, p), m in sorted(owner.items(), key=lambda kv: (-count[kv[1]], str(kv[0][0]), kv[0][1])):
            least = min(eligible[t], key=lambda x: (count[x], x))
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
           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    out: dict[str, dict[UUID, set[int]]] = {mid: {} for mid in members}
    for t, n in topics.items():
        subs = sorted(m for m, s in members.items() if t in s)
        if not subs:
            continue
        each, extra = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            size = each + (1 if i < extra else 0)
            if size:
                out[m][t] = set(range(start, start + size))
            start += size
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
