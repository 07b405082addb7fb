"""One partition's change, decided the way Kafka's controller decides it (its
PartitionChangeBuilder): a partition as the image holds it, who may lead, and what is asked
(a new ISR, new replicas, replicas being added / removed by a reassignment, an election
type, a leader recovery state) in; a PartitionChangeRecord out, or None when nothing would
change. Pure: no image, no I/O.

A reassignment in progress completes in whatever change first finds every replica being
added in the ISR: the replicas being removed leave the replicas and the ISR (a new leader is
elected if the leader was one of them). A change that drops a replica bumps the leader epoch
even when the leader stays.

Leader election (``Election``):
- ONLINE: keep the current leader while it is in the target ISR and acceptable; else the
  first replica, in replica order, that is in the target ISR and acceptable.
- PREFERRED: the first replica (the preferred leader) if it is in the ISR and acceptable,
  else as ONLINE (current leader first, then the other replicas in order).
- UNCLEAN: as ONLINE; when no ISR member is acceptable, the first acceptable replica at
  all. The ISR then becomes [new leader] and the leader recovery state RECOVERING (the new
  leader's log may lack acknowledged records: data loss, which is why
  unclean.leader.election.enable is false unless a topic or the broker says otherwise).
- no eligible leader: leader -1 (offline).
"Acceptable" is the caller's predicate: Kafka's ``isActive`` (registered, unfenced, not in
controlled shutdown), with the broker being removed never and the broker being added always
(``leader_acceptor``).

The target ISR is written only when it differs from the current one and is not empty: a
partition whose last ISR member is removed keeps that member, so it can come back with no
data lost once that broker returns (Kafka keeps it for the same reason). Every record bumps
the partition epoch; only a new leader (the record's ``leader`` != -2) bumps the leader epoch
(kwire.metadata.image.PartitionImage.merge, Kafka's PartitionRegistration.merge).
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

from kwire.errors import ErrorCode
from kwire.metadata import records as R

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED, RECOVERING = 0, 1     # Kafka's LeaderRecoveryState
NO_RECOVERY_CHANGE = -1


class Election(enum.Enum):
    """Kafka's PartitionChangeBuilder.Election."""
    PREFERRED = "preferred"
    ONLINE = "online"
    UNCLEAN = "unclean"


@dataclass
class AlterPartitionResult:
    """The controller's answer to an AlterPartition for one partition: the error code, and
    on success (NONE) the partition as it now is (NEW_LEADER_ELECTED: a change was committed
    but another broker leads now; the fields show that state)."""
    code: ErrorCode
    leader: int = NO_LEADER
    leader_epoch: int = -1
    isr: list[int] = field(default_factory=list)
    partition_epoch: int = -1
    leader_recovery_state: int = RECOVERED


def leader_acceptor(brokers, *, removing: int = NO_LEADER, adding: int = NO_LEADER) -> Callable[[int], bool]:
    """Who may lead (and, for AlterPartition, join an ISR): an active broker of ``brokers``
    (the image's BrokerImages by id), never ``removing``, always ``adding`` (a broker being
    unfenced in the same change)."""
    def acceptable(replica: int) -> bool:
        if replica == removing:
            return False
        if replica == adding:
            return True
        b = brokers.get(replica)
        return b is not None and b.active
    return acceptable


def election_for(unclean_enabled: bool) -> Election:
    return Election.UNCLEAN if unclean_enabled else Election.ONLINE


def without(isr: Iterable[int], broker: int) -> list[int]:
    return [r for r in isr if r != broker]


class PartitionChangeBuilder:
    def __init__(self, partition, topic_id: uuid.UUID, is_acceptable_leader: Callable[[int], bool],
                 election: Election = Election.ONLINE):
        self.partition = partition
        self.topic_id = topic_id
        self.is_acceptable_leader = is_acceptable_leader
        self.election = election
        self.target_isr: list[int] = list(partition.isr)
        self.target_replicas: list[int] = list(partition.replicas)
        self.target_removing: list[int] = list(partition.removing_replicas)
        self.target_adding: list[int] = list(partition.adding_replicas)
        self.target_leader_recovery_state: int = partition.leader_recovery_state

    def set_target_isr(self, isr: Iterable[int]) -> "PartitionChangeBuilder":
        self.target_isr = list(isr)
        return self

    def set_target_replicas(self, replicas: Iterable[int]) -> "PartitionChangeBuilder":
        self.target_replicas = list(replicas)
        return self

    def set_target_removing(self, removing: Iterable[int]) -> "PartitionChangeBuilder":
        self.target_removing = list(removing)
        return self

    def set_target_adding(self, adding: Iterable[int]) -> "PartitionChangeBuilder":
        self.target_adding = list(adding)
        return self

    def set_election(self, election: Election) -> "PartitionChangeBuilder":
        self.election = election
        return self

    def set_target_leader_recovery_state(self, state: int) -> "PartitionChangeBuilder":
        self.target_leader_recovery_state = state
        return self

    # ------------------------------------------------------------------ election
    def _valid_new_leader(self, replica: int) -> bool:
        return replica in self.target_isr and self.is_acceptable_leader(replica)

    def elect_leader(self) -> tuple[int, bool]:
        """(the leader, whether the election was unclean)."""
        current = self.partition.leader
        if self.election is Election.PREFERRED and self.target_replicas:
            preferred = self.target_replicas[0]
            if self._valid_new_leader(preferred):
                return preferred, False
            if self._valid_new_leader(current):
                return current, False
            for r in self.target_replicas[1:]:
                if self._valid_new_leader(r):
                    return r, False
            return NO_LEADER, False
        if self._valid_new_leader(current):
            return current, False
        for r in self.target_replicas:
            if self._valid_new_leader(r):
                return r, False
        if self.election is Election.UNCLEAN:
            for r in self.target_replicas:
                if self.is_acceptable_leader(r):
                    return r, True
        return NO_LEADER, False

    # ------------------------------------------------------------------ build
    def _complete_reassignment_if_needed(self) -> None:
        """A reassignment completes once every added replica is in the ISR: the removed
        replicas leave the replicas and the ISR (Kafka's maybeCompleteReassignment)."""
        if not self.target_removing and not self.target_adding:
            return
        isr = [r for r in self.target_isr if r not in self.target_removing]
        if not isr or any(r not in isr for r in self.target_adding):
            return
        self.target_isr = isr
        self.target_replicas = [r for r in self.target_replicas if r not in self.target_removing]
        self.target_removing, self.target_adding = [], []

    def build(self):
        """The PartitionChangeRecord (``records.PARTITION_CHANGE.cls``), or None for no change."""
        p = self.partition
        rec = R.PARTITION_CHANGE.cls(partition_id=p.index, topic_id=self.topic_id)
        self._complete_reassignment_if_needed()
        leader, unclean = self.elect_leader()
        if leader != p.leader:
            rec.leader = leader
            if unclean:   # the ISR is reset to the new leader alone: it may lack acknowledged records
                rec.isr = [leader]
                if p.leader_recovery_state != RECOVERING:
                    rec.leader_recovery_state = RECOVERING
        if rec.leader == NO_LEADER_CHANGE and any(r not in self.target_replicas for r in p.replicas):
            rec.leader = p.leader   # a replica leaves: a new leader epoch fences it (Kafka does the same)
        if rec.isr is None and self.target_isr and self.target_isr != list(p.isr):
            rec.isr = list(self.target_isr)
        if self.target_replicas and self.target_replicas != list(p.replicas):
            rec.replicas = list(self.target_replicas)
        if self.target_removing != list(p.removing_replicas):
            rec.removing_replicas = list(self.target_removing)
        if self.target_adding != list(p.adding_replicas):
            rec.adding_replicas = list(self.target_adding)
        if rec.leader_recovery_state == NO_RECOVERY_CHANGE \
                and self.target_leader_recovery_state != p.leader_recovery_state:
            rec.leader_recovery_state = self.target_leader_recovery_state
        if rec.leader == NO_LEADER_CHANGE and rec.isr is None and rec.replicas is None \
                and rec.removing_replicas is None and rec.adding_replicas is None \
                and rec.leader_recovery_state == NO_RECOVERY_CHANGE:
            return None
        return rec


def record(change) -> tuple:
    """(message, object) of a built change, as metadata records travel."""
    return R.PARTITION_CHANGE, change
