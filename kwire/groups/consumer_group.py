"""A KIP-848 consumer group (Kafka's ``ConsumerGroup`` / ``ConsumerGroupMember``) and the
reconciliation of one member towards its target assignment (Kafka's CurrentAssignmentBuilder).
Plain data and pure functions: no clock, no I/O.

Epochs: the *group epoch* is bumped when the group's membership, subscriptions or the
metadata of its subscribed topics change; the *assignment epoch* is the group epoch the
target assignment was computed at; each member has a *member epoch*, the assignment epoch it
has reconciled to.

Member states (Kafka's MemberState, byte values as in its records):

- STABLE (0): owns exactly its assigned partitions at its epoch;
- UNREVOKED_PARTITIONS (1): must revoke ``pending_revocation`` before it moves to the new
  epoch; it keeps its epoch meanwhile and gets nothing new;
- UNRELEASED_PARTITIONS (2): moved to the new epoch, but some of its target partitions are
  still owned (assigned or pending revocation) by another member: they are given once that
  member lets them go, so a partition is never owned by two members at once.

Partitions are keyed by topic id (``uuid.UUID``), as in the heartbeat and the records.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping
from uuid import UUID

Assignment = dict[UUID, frozenset[int]]


class MemberState(enum.IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """A member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside a
    consumer group, after an online upgrade: its session timeout and the protocols it
    offered in its JoinGroup (name, consumer protocol subscription bytes)."""
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    #: set for a member using the classic protocol (kwire.groups.consumer_migration)
    classic: ClassicMemberMetadata | None = None
    #: KIP-1251: (topic id, partition) -> the member epoch at which the partition was assigned
    #: to this member, for each partition it owns (assigned or pending revocation)
    assignment_epochs: Mapping[tuple[UUID, int], int] = field(default_factory=dict)

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def owned_partitions(self) -> Iterable[tuple[UUID, int]]:
        for a in (self.assigned, self.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    yield t, p

    def assignment_epoch(self, topic_id: UUID, partition: int) -> int | None:
        """Kafka's ConsumerGroupMember.assignmentEpoch, then pendingRevocationEpoch: the epoch
        the partition was assigned to this member at, None when it does not own it."""
        if partition in self.assigned.get(topic_id, ()) or partition in self.pending_revocation.get(topic_id, ()):
            return self.assignment_epochs.get((topic_id, partition), self.member_epoch)
        return None

    def subscribes(self, topic: str) -> bool:
        if topic in self.subscribed_topic_names:
            return True
        return self.subscribed_topic_regex is not None and _regex_matches(self.subscribed_topic_regex, topic)

    def same_subscription(self, other: "ConsumerGroupMember") -> bool:
        return (sorted(self.subscribed_topic_names) == sorted(other.subscribed_topic_names)
                and self.subscribed_topic_regex == other.subscribed_topic_regex
                and self.server_assignor == other.server_assignor)


#: what Python's ``re`` accepts and RE2/J refuses: lookaround, backreferences, atomic groups,
#: conditionals, possessive quantifiers (outside escapes)
_NOT_RE2 = re.compile(r"""(?<!\\)(?:\\\\)*(?:\(\?(?:=|!|<=|<!|>|\(|P=)|\\[1-9]|[*+?}]\+)""")


def compile_regex(pattern: str) -> re.Pattern:
    """A subscription regex in RE2/J syntax, as Kafka documents: the common subset
    (character classes, alternation, repetition, anchors) reads the same in Python's ``re``;
    constructs RE2/J refuses are refused here too. Raises ``re.error`` for an invalid one."""
    m = _NOT_RE2.search(pattern)
    if m is not None:
        raise re.error(f"not RE2/J syntax: {m.group(0)!r}", pattern, m.start())
    return re.compile(pattern)


def _regex_matches(pattern: str, topic: str) -> bool:
    try:
        return compile_regex(pattern).fullmatch(topic) is not None
    except re.error:
        return False


class ConsumerGroup:
    """The state of one consumer group (members, epochs, target assignment)."""

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignor: str | None = None              # the assignor of the last target
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, Assignment] = {}       # member id -> target assignment
        self.static_members: dict[str, str] = {}      # instance id -> member id
        #: the subscribed topics the target was computed for: name -> (topic id, partitions)
        self.subscription_metadata: dict[str, tuple[UUID, int]] = {}
        #: (topic id, partition) -> epoch of the member owning it (assigned or revoking)
        self._partition_epochs: dict[tuple[UUID, int], int] = {}
        self._partition_owner: dict[tuple[UUID, int], str] = {}

    # -- state --------------------------------------------------------------------------
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch != self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.state is not MemberState.STABLE or m.member_epoch != self.assignment_epoch:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    # -- members ------------------------------------------------------------------------
    def current_partition_epoch(self, topic_id: UUID, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when it is free."""
        return self._partition_epochs.get((topic_id, partition), -1)

    def partition_owner(self, topic_id: UUID, partition: int) -> str | None:
        return self._partition_owner.get((topic_id, partition))

    def update_member(self, m: ConsumerGroupMember) -> None:
        old = self.members.get(m.member_id)
        if old is not None:
            self._release(old)
        self.members[m.member_id] = m
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        for tp in m.owned_partitions():
            self._partition_epochs[tp] = m.member_epoch
            self._partition_owner[tp] = m.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        m = self.members.pop(member_id, None)
        if m is not None:
            self._release(m)
            if m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
                del self.static_members[m.instance_id]
        self.target.pop(member_id, None)
        return m

    def _release(self, m: ConsumerGroupMember) -> None:
        for tp in m.owned_partitions():
            if self._partition_owner.get(tp) == m.member_id:
                del self._partition_owner[tp]
                del self._partition_epochs[tp]

    # -- subscriptions ------------------------------------------------------------------
    def subscribed_topic_names(self, all_topics: Iterable[str],
                               members: Iterable[ConsumerGroupMember] | None = None) -> set[str]:
        all_topics = list(all_topics)
        out: set[str] = set()
        for m in self.members.values() if members is None else members:
            out.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex is not None:
                out.update(t for t in all_topics if m.subscribes(t))
        return out


def member_topic_ids(m: ConsumerGroupMember, metadata: Mapping[str, tuple[UUID, int]]) -> frozenset[UUID]:
    """The ids of the existing topics a member subscribes to."""
    return frozenset(tid for name, (tid, _n) in metadata.items() if m.subscribes(name))


def is_subset(owned: Mapping[UUID, Iterable[int]] | None, assigned: Assignment) -> bool:
    if owned is None:
        return True
    return all(set(ps) <= set(assigned.get(t, ())) for t, ps in owned.items() if ps)


def reconcile(m: ConsumerGroupMember, target_epoch: int, target: Assignment,
              owned: Mapping[UUID, Iterable[int]] | None,
              partition_epoch: Callable[[UUID, int], int],
              subscribed: frozenset[UUID]) -> ConsumerGroupMember:
    """Kafka's CurrentAssignmentBuilder.build: the member's next state towards ``target``
    (computed at ``target_epoch``). ``owned``: the partitions the member says it owns in this
    heartbeat (None: not sent, it is assumed to still own what it was asked to revoke);
    ``partition_epoch(t, p)``: the epoch of the member owning a partition, -1 when free;
    ``subscribed``: the topic ids it subscribes to now (others' partitions are revoked)."""
    def owns_revoked(pending: Assignment) -> bool:
        if owned is None:
            return True
        return any(p in pending.get(t, ()) for t, ps in owned.items() for p in ps)

    if m.state is MemberState.STABLE:
        if m.member_epoch == target_epoch:
            return m
    elif m.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_revoked(m.pending_revocation):
            return m

    new_assigned: dict[UUID, frozenset[int]] = {}
    new_revoking: dict[UUID, frozenset[int]] = {}
    new_pending: dict[UUID, frozenset[int]] = {}
    unreleased = False
    for t in set(target) | set(m.assigned):
        tgt = target.get(t, frozenset()) if t in subscribed else frozenset()
        cur = m.assigned.get(t, frozenset())
        kept = cur & tgt
        revoking = cur - kept
        waiting = set(tgt - kept)
        mine_revoking = m.pending_revocation.get(t, frozenset())
        blocked = {p for p in waiting if partition_epoch(t, p) != -1 and p not in mine_revoking}
        if blocked:
            unreleased = True
            waiting -= blocked
        if kept:
            new_assigned[t] = kept
        if revoking:
            new_revoking[t] = frozenset(revoking)
        if waiting:
            new_pending[t] = frozenset(waiting)

    if new_revoking and owns_revoked(new_revoking):
        # revoke first: keep the epoch, give nothing new until the client let go
        return replace(m, state=MemberState.UNREVOKED_PARTITIONS, previous_member_epoch=m.member_epoch,
                       assigned=new_assigned, pending_revocation=new_revoking,
                       assignment_epochs=_epochs(m, (new_assigned, new_revoking), target_epoch))
    for t, ps in new_pending.items():
        new_assigned[t] = new_assigned.get(t, frozenset()) | ps
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(m, state=state, previous_member_epoch=m.member_epoch, member_epoch=target_epoch,
                   assigned=new_assigned, pending_revocation={},
                   assignment_epochs=_epochs(m, (new_assigned,), target_epoch))


def _epochs(m: ConsumerGroupMember, owned: Iterable[Assignment], target_epoch: int) -> dict[tuple[UUID, int], int]:
    """KIP-1251 (Kafka's CurrentAssignmentBuilder.computeNextAssignment): a partition the
    member keeps (assigned or revoking) keeps the epoch it was assigned at; a partition it gets
    now is assigned at the target epoch."""
    out = {}
    for a in owned:
        for t, ps in a.items():
            for p in ps:
                e = m.assignment_epoch(t, p)
                out[(t, p)] = target_epoch if e is None else e
    return out


def with_assignment_epoch(assigned: Assignment, epoch: int) -> dict[tuple[UUID, int], int]:
    """Every partition of ``assigned`` assigned at ``epoch``."""
    return {(t, p): epoch for t, ps in assigned.items() for p in ps}


def validate_commit_epochs(m: ConsumerGroupMember, member_epoch: int,
                           partitions: Iterable[tuple[UUID | None, str, int]]) -> str | None:
    """Kafka 4.3's ConsumerGroup.validateOffsetCommit for a member of the group (KIP-1251): an
    offset commit at the member epoch is valid; one at an older epoch is valid for a partition
    the member owns (assigned or pending revocation) when the epoch is at least the partition's
    assignment epoch. ``partitions``: (topic id or None when the topic is unknown, topic name,
    partition). Returns why it is refused (STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a
    classic member, with this message), or None."""
    if member_epoch == m.member_epoch:
        return None
    what = "generation id" if m.uses_classic_protocol else "member epoch"
    if member_epoch > m.member_epoch:
        return f"Received {what} {member_epoch} is newer than current member epoch {m.member_epoch}."
    for topic_id, topic, partition in partitions:
        epoch = m.assignment_epoch(topic_id, partition) if topic_id is not None else None
        if epoch is None:
            return f"Partition {topic}-{partition} is not assigned or pending revocation for member."
        if member_epoch < epoch:
            return (f"Received {what} {member_epoch} is older than assignment epoch {epoch} "
                    f"for partition {topic}-{partition}.")
    return None
