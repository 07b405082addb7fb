"""Member and group state of a classic (JoinGroup/SyncGroup) group, as in Kafka's GroupMetadata.

States and the transitions Kafka allows::

    Empty               -> PreparingRebalance, Dead
    PreparingRebalance  -> CompletingRebalance, Empty, Dead
    CompletingRebalance -> PreparingRebalance, Stable, Dead
    Stable              -> PreparingRebalance, Dead
    Dead                -> (none)
"""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field

from kwire.groups.offsets import OffsetStore
from kwire.coordinator.pending import Pending
from kwire.codec import consumer_protocol as cp
from kwire.errors import CodecError


log = logging.getLogger("kwire.groups")

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS = {
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                     GroupState.EMPTY},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: {GroupState.STABLE, GroupState.PREPARING_REBALANCE,
                      GroupState.COMPLETING_REBALANCE, GroupState.EMPTY, GroupState.DEAD},
}


class IllegalTransition(RuntimeError):
    pass


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_pending: Pending | None = None  # set while the member awaits the end of a join
    sync_pending: Pending | None = None  # set while the member awaits its assignment
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_pending is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_pending is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")


@dataclass(eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # insertion order = join order
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: set[str] = field(default_factory=set)  # got MEMBER_ID_REQUIRED
    pending_sync_members: set[str] = field(default_factory=set)
    current_state_timestamp: int | None = None  # wall clock ms of the last generation change
    subscribed_topics: set[str] | None = None  # None: unknown (or not a consumer group)
    new_member_added: bool = False
    initial_delay_remaining_ms: int | None = None  # set while the initial rebalance delay runs
    offsets: OffsetStore = field(default_factory=OffsetStore)
    #: set when this is a KIP-848 consumer group (kwire.groups.consumer_group); the classic
    #: state then stays Empty, with no classic members
    consumer: object = None

    # -- state --------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalTransition(f"group {self.group_id}: {self.state.value} -> {state.value}")
        log.debug("group %s: %s -> %s (generation %d, %d members, leader %s)", self.group_id,
                  self.state.value, state.value, self.generation_id, len(self.members),
                  self.leader_id)
        self.state = state

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # -- members ------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def static_member_id(self, instance_id: str) -> str | None:
        return self.static_members.get(instance_id)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members[old_id]
        member.member_id = new_id
        # keep the join order: rebuild the dict with the new id in the old one's place
        self.members = {(new_id if k == old_id else k): v for k, v in self.members.items()}
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.pending_sync_members.discard(old_id)
        return member

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return (len(self.members) == self.num_awaiting_join() and not self.pending_members)

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for m in self.members.values():
            if m.awaiting_join:
                self.leader_id = m.member_id
                return True
        return False

    # -- protocols ----------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        names: set[str] | None = None
        for m in self.members.values():
            s = set(m.protocol_names())
            names = s if names is None else names & s
        return names or set()

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        if not self.members:
            return bool(protocols)
        candidates = self.candidate_protocols()
        return any(name in candidates for name, _ in protocols)

    def select_protocol(self) -> str:
        """The protocol with most votes; each member votes for its first candidate.

        Ties go to the protocol the leader prefers first (Kafka leaves ties to hash order).
        """
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id}: no protocol supported by every member")
        votes: dict[str, int] = {}
        for m in self.members.values():
            v = m.vote(candidates)
            votes[v] = votes.get(v, 0) + 1
        order = self.members[self.leader_id].protocol_names() if self.leader_id in self.members \
            else sorted(candidates)
        return max(votes, key=lambda p: (votes[p], -order.index(p) if p in order else -len(order)))

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            try:
                topics.update(cp.decode_subscription(m.metadata(self.protocol_name)).topics)
            except (KeyError, CodecError, UnicodeDecodeError):
                return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return True  # unknown: be safe
        return topic in self.subscribed_topics

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.subscribed_topics = None
            self.transition_to(GroupState.EMPTY)
        self.current_state_timestamp = now_ms
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """(member id, group instance id, metadata of the chosen protocol) for the leader."""
        assert self.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]
