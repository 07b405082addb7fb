"""The metadata image: brokers, topics, partitions, configs, ACLs and SCRAM credentials, built
only by replaying metadata records (habit: state is derived from the log)."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kwire.metadata import records as R
from kwire.quota.store import ClientQuotaStore
from kwire.security.authorizer import AclBinding, AclStore
from kwire.security.scram_credentials import ScramCredential, ScramCredentialStore


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
        self.listeners: list = []  # callables(msg, obj) notified after each applied record

    def apply(self, msg, obj) -> None:
        if msg is R.REGISTER_BROKER:
            ep = obj.end_points[0] if obj.end_points else None
            self.brokers[obj.broker_id] = BrokerImage(
                obj.broker_id, ep.host if ep else "", ep.port if ep else 0, obj.rack, obj.broker_epoch, obj.fenced,
                endpoints={e.name: (e.host, e.port, e.security_protocol) for e in obj.end_points or ()})
        elif msg is R.UNREGISTER_BROKER:
            self.brokers.pop(obj.broker_id, None)
        elif msg is R.FENCE_BROKER or msg is R.UNFENCE_BROKER:
            b = self.brokers.get(obj.id)
            if b is not None and b.epoch == obj.epoch:   # a record of an older registration changes nothing
                b.fenced = msg is R.FENCE_BROKER
        elif msg is R.BROKER_REGISTRATION_CHANGE:
            b = self.brokers.get(obj.broker_id)
            if b is not None and b.epoch == obj.broker_epoch:
                if obj.fenced:
                    b.fenced = obj.fenced > 0
                if obj.in_controlled_shutdown:
                    b.in_controlled_shutdown = True
        elif msg is R.TOPIC:
            t = TopicImage(obj.name, obj.topic_id)
            self.topics[obj.name] = t
            self.topics_by_id[obj.topic_id] = t
        elif msg is R.PARTITION:
            t = self.topics_by_id.get(obj.topic_id)
            if t is not None:
                t.partitions[obj.partition_id] = PartitionImage(
                    obj.partition_id, obj.leader, list(obj.replicas), list(obj.isr),
                    obj.leader_epoch, obj.partition_epoch, obj.leader_recovery_state,
                    list(obj.removing_replicas or ()), list(obj.adding_replicas or ()),
                    list(obj.eligible_leader_replicas or ()), list(obj.last_known_elr or ()))
        elif msg is R.PARTITION_CHANGE:
            t = self.topics_by_id.get(obj.topic_id)
            p = t.partitions.get(obj.partition_id) if t else None
            if p is not None:
                p.merge(obj)
        elif msg is R.CLEAR_ELR:
            # Kafka replays a topic's clear only for a topic that exists (it refuses the record
            # otherwise; kwire's config path writes it for existing topics only)
            topics = [self.topics[obj.topic_name]] if obj.topic_name in self.topics else \
                list(self.topics.values()) if not obj.topic_name else []
            for t in topics:
                for p in t.partitions.values():
                    p.clear_elr()
        elif msg is R.REMOVE_TOPIC:
            t = self.topics_by_id.pop(obj.topic_id, None)
            if t is not None:
                self.topics.pop(t.name, None)
        elif msg is R.CONFIG:
            if obj.resource_type == R.RESOURCE_TOPIC:
                t = self.topics.get(obj.resource_name)
                if t is not None:
                    if obj.value is None:
                        t.configs.pop(obj.name, None)
                    else:
                        t.configs[obj.name] = obj.value
            elif obj.resource_type in (R.RESOURCE_BROKER, R.RESOURCE_GROUP):
                by_name = self.broker_configs if obj.resource_type == R.RESOURCE_BROKER else self.group_configs
                d = by_name.setdefault(obj.resource_name, {})
                if obj.value is None:
                    d.pop(obj.name, None)
                    if not d and obj.resource_type == R.RESOURCE_GROUP:
                        del by_name[obj.resource_name]
                else:
                    d[obj.name] = obj.value
        elif msg is R.FEATURE_LEVEL:
            self.features[obj.name] = obj.feature_level
        elif msg is R.PRODUCER_IDS:
            self.next_producer_id = obj.next_producer_id
        elif msg is R.ACCESS_CONTROL_ENTRY:
            self.acls.add(obj.id, AclBinding(obj.resource_type, obj.resource_name, obj.pattern_type, obj.principal,
                                             obj.host, obj.operation, obj.permission_type))
        elif msg is R.REMOVE_ACCESS_CONTROL_ENTRY:
            self.acls.remove(obj.id)
        elif msg is R.CLIENT_QUOTA:
            self.client_quotas.apply(obj)
        elif msg is R.USER_SCRAM_CREDENTIAL:
            self.scram.put(obj.name, obj.mechanism, ScramCredential(bytes(obj.salt), bytes(obj.stored_key),
                                                                    bytes(obj.server_key), obj.iterations))
        elif msg is R.REMOVE_USER_SCRAM_CREDENTIAL:
            self.scram.remove(obj.name, obj.mechanism)
        for fn in self.listeners:
            fn(msg, obj)

    def apply_bytes(self, data) -> None:
        msg, obj = R.decode_record(data)
        self.apply(msg, obj)

    def live_brokers(self) -> list[BrokerImage]:
        return sorted((b for b in self.brokers.values() if not b.fenced), key=lambda b: b.node_id)


def image_records(image: MetadataImage) -> list:
    """Metadata records that rebuild ``image`` from nothing (a metadata snapshot)."""
    import uuid as _uuid  # noqa: PLC0415

    out: list = []
    for name, level in sorted(image.features.items()):
        out.append((R.FEATURE_LEVEL, R.FEATURE_LEVEL.cls(name=name, feature_level=level)))
    for b in sorted(image.brokers.values(), key=lambda b: b.node_id):
        out.append((R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
            broker_id=b.node_id, incarnation_id=_uuid.UUID(int=0), broker_epoch=b.epoch,
            end_points=[R.REGISTER_BROKER.struct("BrokerEndpoint")(name=n, host=h, port=p, security_protocol=sp)
                        for n, (h, p, sp) in (b.endpoints or {"PLAINTEXT": (b.host, b.port, 0)}).items()],
            rack=b.rack, fenced=b.fenced)))
        if b.in_controlled_shutdown:
            out.append((R.BROKER_REGISTRATION_CHANGE, R.BROKER_REGISTRATION_CHANGE.cls(
                broker_id=b.node_id, broker_epoch=b.epoch, in_controlled_shutdown=1)))
    for t in sorted(image.topics.values(), key=lambda t: t.name):
        out.append((R.TOPIC, R.TOPIC.cls(name=t.name, topic_id=t.topic_id)))
        for p in sorted(t.partitions.values(), key=lambda p: p.index):
            out.append((R.PARTITION, R.PARTITION.cls(
                partition_id=p.index, topic_id=t.topic_id, replicas=list(p.replicas), isr=list(p.isr),
                removing_replicas=list(p.removing_replicas), adding_replicas=list(p.adding_replicas), leader=p.leader,
                leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                leader_recovery_state=p.leader_recovery_state, eligible_leader_replicas=list(p.elr) or None,
                last_known_elr=list(p.last_known_elr) or None)))
        for k, v in sorted(t.configs.items()):
            out.append((R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_TOPIC, resource_name=t.name, name=k, value=v)))
    for rtype, by_name in ((R.RESOURCE_BROKER, image.broker_configs), (R.RESOURCE_GROUP, image.group_configs)):
        for res, configs in sorted(by_name.items()):
            for k, v in sorted(configs.items()):
                out.append((R.CONFIG, R.CONFIG.cls(resource_type=rtype, resource_name=res, name=k, value=v)))
    for acl_id, b in sorted(image.acls.by_id.items(), key=lambda kv: kv[0]):
        out.append((R.ACCESS_CONTROL_ENTRY, R.ACCESS_CONTROL_ENTRY.cls(
            id=acl_id, resource_type=b.resource_type, resource_name=b.resource_name, pattern_type=b.pattern_type,
            principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission_type)))
    Ent = R.CLIENT_QUOTA.struct("EntityData")
    for ent, values in sorted(image.client_quotas.entities.items(), key=lambda kv: repr(kv[0])):
        for k, v in sorted(values.items()):
            out.append((R.CLIENT_QUOTA, R.CLIENT_QUOTA.cls(
                entity=[Ent(entity_type=t, entity_name=n) for t, n in ent], key=k, value=v, remove=False)))
    for user, mechanism, c in image.scram.items():
        out.append((R.USER_SCRAM_CREDENTIAL, R.USER_SCRAM_CREDENTIAL.cls(
            name=user, mechanism=mechanism, salt=c.salt, stored_key=c.stored_key, server_key=c.server_key,
            iterations=c.iterations)))
    if image.next_producer_id:
        out.append((R.PRODUCER_IDS, R.PRODUCER_IDS.cls(broker_id=-1, broker_epoch=-1,
                                                       next_producer_id=image.next_producer_id)))
    return out


def encode_snapshot(image: MetadataImage) -> bytes:
    """A snapshot's bytes: each record of :func:`image_records`, 4-byte length first."""
    out = bytearray()
    for m, o in image_records(image):
        data = R.encode_record(m, o)
        out += len(data).to_bytes(4, "big") + data
    return bytes(out)


def decode_snapshot(data: bytes) -> MetadataImage:
    image = MetadataImage()
    pos = 0
    while pos + 4 <= len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        image.apply_bytes(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return image
