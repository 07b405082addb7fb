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

Eligible leader replicas (KIP-966; ``elr_enabled``, the eligible.leader.replicas.version
feature, on in a cluster formatted as Kafka 4.1+): while the target ISR is below the topic's
min.insync.replicas (``min_isr``) the replicas that leave it join the ELR (not those back from
an unclean shutdown); at min ISR or above the ELR empties. With the ISR empty an active ELR
member may lead (it becomes the ISR, clean); with ISR and ELR empty, the last leader
(LastKnownElr, written when the partition loses its leader) may lead again, uncleanly. An
unclean election empties the ELR.

Without ELR the target ISR is written only when it differs from the current one and is not
empty: a partition whose last ISR member is removed keeps that member, so it can come back
with no data lost once that broker returns (Kafka keeps it for the same reason); with ELR the
ISR may empty, the ELR holding who may lead. Every record bumps the partition epoch; only a
new leader (the record's ``leader`` != -2) bumps the leader epoch
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
                 election: Election = Election.ONLINE, *, min_isr: int = 1, elr_enabled: bool = False):
        self.partition = partition
        self.topic_id = topic_id
        self.is_acceptable_leader = is_acceptable_leader
        self.election = election
        self.min_isr = min_isr            # the topic's effective min.insync.replicas (used with ELR only)
        self.elr_enabled = elr_enabled    # eligible.leader.replicas.version >= 1
        self.target_isr: list[int] = list(partition.isr)
        self.target_replicas: list[int] = list(partition.replicas)
        self.target_removing: list[int] = list(partition.removing_replicas)
        self.target_adding: list[int] = list(partition.adding_replicas)
        self.target_elr: list[int] = list(partition.elr)
        self.unclean_shutdown_replicas: list[int] = []
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

    def set_unclean_shutdown_replicas(self, replicas: Iterable[int]) -> "PartitionChangeBuilder":
        """Replicas whose broker restarted after an unclean shutdown: their logs may have lost
        acknowledged records, so they leave the ELR (Kafka's setUncleanShutdownReplicas)."""
        self.unclean_shutdown_replicas = list(replicas)
        return self

    # ------------------------------------------------------------------ election
    def _valid_new_leader(self, replica: int) -> bool:
        """In the target ISR, or in the target ELR when the ISR is empty; and acceptable."""
        return (replica in self.target_isr or (not self.target_isr and replica in self.target_elr)) \
            and self.is_acceptable_leader(replica)

    def _can_elect_last_known_leader(self) -> bool:
        """KIP-966's balanced recovery (Kafka's canElectLastKnownLeader): with ISR and ELR both
        empty, the last leader (LastKnownElr, one member) may lead again once it is back. It
        is the replica most likely to hold the most records, but the election is unclean."""
        p = self.partition
        return self.elr_enabled and not self.target_elr and not self.target_isr \
            and len(p.last_known_elr) == 1 and self.is_acceptable_leader(p.last_known_elr[0])

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
            if self._can_elect_last_known_leader():
                return self.partition.last_known_elr[0], True
            return NO_LEADER, False
        if self._valid_new_leader(current):
            return current, False
        for r in self.target_replicas:
            if self._valid_new_leader(r):
                return r, False
        if self._can_elect_last_known_leader():
            return self.partition.last_known_elr[0], True
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

    def _populate_target_elr(self) -> None:
        """Kafka's maybePopulateTargetElr: while the target ISR is below min.insync.replicas,
        the replicas leaving the ISR join the ELR (they hold every record committed while they
        were in it, as acks=all could commit nothing without them); ISR members and replicas
        back from an unclean shutdown never are in it. At min ISR or above the ELR empties."""
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = []
            return
        candidates = set(self.target_elr) | set(self.partition.isr)
        self.target_elr = sorted(r for r in candidates if r not in self.target_isr
                                 and r not in self.unclean_shutdown_replicas)

    def build(self):
        """The PartitionChangeRecord (``records.PARTITION_CHANGE.cls``), or None for no change
        (the steps of Kafka's PartitionChangeBuilder.build, in its order)."""
        p = self.partition
        rec = R.PARTITION_CHANGE.cls(partition_id=p.index, topic_id=self.topic_id)
        self._complete_reassignment_if_needed()
        self._populate_target_elr()
        leader, unclean = self.elect_leader()
        if leader != p.leader:
            if leader in self.target_elr:   # elected from the ELR: it is the ISR now
                self.target_isr = [leader]
                self.target_elr = [r for r in self.target_elr if r != leader]
            rec.leader = leader
            if unclean:   # the ISR is reset to the new leader alone: it may lack acknowledged records
                rec.isr = [leader]
                if p.leader_recovery_state != RECOVERING:
                    rec.leader_recovery_state = RECOVERING
        if rec.leader == NO_LEADER_CHANGE and any(r not in self.target_replicas for r in p.replicas):
            rec.leader = p.leader   # a replica leaves: a new leader epoch fences it (Kafka does the same)
        # Kafka's maybeUpdateRecordElr: an unclean election or ELR off empties the ELR
        if rec.isr is not None or not self.elr_enabled:
            self.target_elr = []
        if self.target_elr != list(p.elr):
            rec.eligible_leader_replicas = list(self.target_elr)
        # without ELR the last ISR member stays (no other record of who holds the data);
        # with ELR the ISR may empty: the ELR and LastKnownElr say who may lead again
        if rec.isr is None and (self.target_isr or self.elr_enabled) and self.target_isr != list(p.isr):
            rec.isr = list(self.target_isr)
        if self.elr_enabled:   # Kafka's maybeUpdateLastKnownLeader
            if rec.leader == NO_LEADER and not p.last_known_elr:
                rec.last_known_elr = [p.leader]   # the partition just lost its leader: remember it
            elif rec.leader >= 0 and p.last_known_elr:
                rec.last_known_elr = []
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
                and rec.leader_recovery_state == NO_RECOVERY_CHANGE \
                and rec.eligible_leader_replicas is None and rec.last_known_elr is None:
            return None
        return rec


def record(change) -> tuple:
    """(message, object) of a built change, as metadata records travel."""
    return R.PARTITION_CHANGE, change
