"""A KIP-932 share group (Kafka's ShareGroup / ShareGroupMember) and its membership through
ShareGroupHeartbeat, with Kafka's ``simple`` share assignor. Plain data and pure functions:
no clock, no I/O (the coordinator mixin kwire.groups.share_coordinator keeps the timers).

Epochs as in KIP-848 consumer groups: the *group epoch* is bumped when a member joins,
leaves, changes its subscription, or the subscribed topics' partitions change; the target
assignment is recomputed at the group epoch (the *assignment epoch*). Unlike a consumer
group, partitions are not owned exclusively (records are, by acquisition locks in the share
partitions), so there is no revocation: a member moves to the target at once, its member
epoch the assignment epoch.

States (Kafka's ShareGroup.ShareGroupState): Empty (no members), Stable, Dead (deleted).

The ``simple`` assignor (Kafka's SimpleAssignor, homogeneous and heterogeneous
subscriptions): per topic, the partitions are spread over the members subscribed to it; with
more partitions than members each partition goes to one member, round robin in member id
order (member ids sorted, partitions in order); with more members than partitions every
member gets one partition and a partition may go to several members (member ``i`` gets
partition ``i mod n``), so every member has work and every partition is read. Kafka's
stickiness across rebalances (keeping current assignments where still balanced) is left
out: the assignment is recomputed from the sorted members and partitions.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping
from uuid import UUID

Assignment = dict[UUID, frozenset[int]]


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ShareGroupMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assignment: Assignment = field(default_factory=dict)


def simple_assign(members: Mapping[str, frozenset[UUID]], topics: Mapping[UUID, int]) -> dict[str, Assignment]:
    """``members``: member id -> subscribed topic ids; ``topics``: topic id -> partitions."""
    out: dict[str, dict[UUID, set[int]]] = {m: {} for m in members}
    for t in sorted(topics, key=str):
        n = topics[t]
        subs = sorted(m for m, ts in members.items() if t in ts)
        if not subs or n <= 0:
            continue
        if n >= len(subs):
            for p in range(n):
                out[subs[p % len(subs)]].setdefault(t, set()).add(p)
        else:
            for i, m in enumerate(subs):
                out[m].setdefault(t, set()).add(i % n)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


class ShareGroup:
    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        #: subscribed topic name -> (topic id, partition count) the target was computed for
        self.subscription_metadata: dict[str, tuple[UUID, int]] = {}

    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topic_names(self, members: Iterable[ShareGroupMember] | None = None) -> set[str]:
        out: set[str] = set()
        for m in self.members.values() if members is None else members:
            out.update(m.subscribed_topic_names)
        return out

    def subscribed_topic_ids(self) -> set[UUID]:
        return {tid for tid, _n in self.subscription_metadata.values()}

    # ------------------------------------------------------------------ transitions
    def join_or_update(self, member: ShareGroupMember,
                       all_topics: Mapping[str, tuple[UUID, int]]) -> ShareGroupMember:
        """Put ``member`` (new or with its latest fields), bump the group epoch when needed,
        recompute the target and move the member to it. Returns the member as stored."""
        old = self.members.get(member.member_id)
        bump = old is None or sorted(old.subscribed_topic_names) != sorted(member.subscribed_topic_names)
        self.members[member.member_id] = member
        if self._refresh_metadata(all_topics):
            bump = True
        if bump:
            self.group_epoch += 1
        if self.group_epoch > self.assignment_epoch:
            self._compute_target()
        return self._reconcile(member.member_id)

    def remove(self, member_id: str, all_topics: Mapping[str, tuple[UUID, int]]) -> ShareGroupMember | None:
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        self.target.pop(member_id, None)
        self._refresh_metadata(all_topics)
        self.group_epoch += 1
        self._compute_target()
        return m

    def refresh(self, all_topics: Mapping[str, tuple[UUID, int]]) -> bool:
        """The topics changed (created, deleted, partitions added): a new epoch when the
        subscribed ones did. Returns whether it did."""
        if not self._refresh_metadata(all_topics):
            return False
        self.group_epoch += 1
        self._compute_target()
        return True

    def _refresh_metadata(self, all_topics: Mapping[str, tuple[UUID, int]]) -> bool:
        names = self.subscribed_topic_names()
        meta = {n: all_topics[n] for n in sorted(names) if n in all_topics}
        if meta == self.subscription_metadata:
            return False
        self.subscription_metadata = meta
        return True

    def _compute_target(self) -> None:
        subs = {mid: frozenset(self.subscription_metadata[n][0] for n in m.subscribed_topic_names
                               if n in self.subscription_metadata)
                for mid, m in self.members.items()}
        topics = dict(self.subscription_metadata.values())
        self.target = simple_assign(subs, topics)
        self.assignment_epoch = self.group_epoch

    def _reconcile(self, member_id: str) -> ShareGroupMember:
        m = self.members[member_id]
        if m.member_epoch != self.assignment_epoch or m.assignment != self.target.get(member_id, {}):
            m = replace(m, previous_member_epoch=m.member_epoch, member_epoch=self.assignment_epoch,
                        assignment=self.target.get(member_id, {}))
            self.members[member_id] = m
        return m
