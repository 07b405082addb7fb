"""The metadata image (Kafka's MetadataImage): brokers, topics, partitions, configs, ACLs,
client quotas and SCRAM credentials, built only by replaying metadata records (habit: state is
derived from the log).

An image is immutable once built: each committed batch of records is replayed into a
kwire.metadata.delta.MetadataDelta, whose ``apply`` makes the next image (copy on write, the
untouched topics, brokers and stores shared with the previous one). Nothing writes to an
image's objects after that, so a reader may hold one across awaits. ``PartitionImage.merge``
and ``clear_elr`` are for the delta's own fresh copies only.

Snapshots (records that rebuild an image): kwire.metadata.snapshot."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kwire.quota.store import ClientQuotaStore
from kwire.security.authorizer import AclStore
from kwire.security.scram_credentials import ScramCredentialStore


@dataclass
class BrokerImage:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    epoch: int = 0
    fenced: bool = False
    in_controlled_shutdown: bool = False   # until it registers again (a new broker epoch)
    # every registered listener: name -> (host, port, security protocol code); the first is host/port
    endpoints: dict = field(default_factory=dict)

    def address(self, listener: str | None) -> tuple[str, int]:
        """(host, port) of this broker's listener ``listener`` (Kafka answers Metadata with the
        endpoints of the listener the request came in on); the first listener's otherwise."""
        ep = self.endpoints.get(listener) if listener else None
        return (ep[0], ep[1]) if ep is not None else (self.host, self.port)

    @property
    def active(self) -> bool:
        """Kafka's ``isActive``: may lead partitions and join ISRs (unfenced, not shutting down)."""
        return not self.fenced and not self.in_controlled_shutdown


@dataclass
class PartitionImage:
    index: int
    leader: int
    replicas: list[int]
    isr: list[int]
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: int = 0   # 0 RECOVERED; 1 RECOVERING (elected uncleanly, not yet recovered)
    # a reassignment in progress: replicas being removed / added (both in ``replicas`` meanwhile)
    removing_replicas: list[int] = field(default_factory=list)
    adding_replicas: list[int] = field(default_factory=list)
    # KIP-966: replicas that left the ISR below min.insync.replicas and may still lead (their
    # logs hold every committed record), and the last leader of a partition whose ISR and ELR
    # emptied (Kafka's PartitionRegistration.elr / lastKnownElr)
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)

    def copy(self) -> "PartitionImage":
        return PartitionImage(self.index, self.leader, list(self.replicas), list(self.isr), self.leader_epoch,
                              self.partition_epoch, self.leader_recovery_state, list(self.removing_replicas),
                              list(self.adding_replicas), list(self.elr), list(self.last_known_elr))

    def merge(self, change) -> None:
        """Apply a PartitionChangeRecord, as Kafka's PartitionRegistration.merge: a new leader
        (-2 means unchanged) bumps the leader epoch; every change bumps the partition epoch."""
        if change.leader != -2:
            self.leader = change.leader
            self.leader_epoch += 1
        if change.isr is not None:
            self.isr = list(change.isr)
        if change.replicas is not None:
            self.replicas = list(change.replicas)
        if change.removing_replicas is not None:
            self.removing_replicas = list(change.removing_replicas)
        if change.adding_replicas is not None:
            self.adding_replicas = list(change.adding_replicas)
        if change.leader_recovery_state != -1:
            self.leader_recovery_state = change.leader_recovery_state
        if change.eligible_leader_replicas is not None:
            self.elr = list(change.eligible_leader_replicas)
        if change.last_known_elr is not None:
            self.last_known_elr = list(change.last_known_elr)
        self.partition_epoch += 1

    def clear_elr(self) -> bool:
        """A ClearElrRecord on this partition (Kafka's ReplicationControlManager.removeTopicElrs:
        a merge of a change emptying both lists, so the partition epoch moves); False when both
        were empty already (nothing changes)."""
        if not self.elr and not self.last_known_elr:
            return False
        self.elr, self.last_known_elr = [], []
        self.partition_epoch += 1
        return True


@dataclass
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionImage] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name.startswith("__")


class MetadataImage:
    def __init__(self) -> None:
        self.brokers: dict[int, BrokerImage] = {}
        self.topics: dict[str, TopicImage] = {}
        self.topics_by_id: dict[uuid.UUID, TopicImage] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}  # resource name ("" = cluster default)
        self.group_configs: dict[str, dict[str, str]] = {}   # group id -> its configs
        self.features: dict[str, int] = {}
        self.next_producer_id = 0
        self.acls = AclStore()   # AccessControlEntryRecords by id (kwire.security.authorizer)
        self.client_quotas = ClientQuotaStore()   # ClientQuotaRecords (kwire.quota.store)
        self.scram = ScramCredentialStore()   # UserScramCredentialRecords (kwire.security.scram_credentials)
        self.offset = -1  # the last applied record offset

    def live_brokers(self) -> list[BrokerImage]:
        return sorted((b for b in self.brokers.values() if not b.fenced), key=lambda b: b.node_id)
