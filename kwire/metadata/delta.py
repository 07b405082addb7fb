"""The change one committed batch of metadata records makes (Kafka's MetadataDelta), and the
new image it yields.

An image (kwire.metadata.image.MetadataImage) is never changed once built: a delta replays
the batch's records against its base image, copying on write what they touch (a topic and
the partitions changed in it, a broker, the config map of a resource, the ACL / quota / SCRAM
store), and ``apply`` returns a new image that shares every untouched object with the old
one. A reader that took ``broker.image`` keeps a consistent view for as long as it holds it.

The delta also says what changed, in the words the publishers need (Kafka's TopicsDelta /
ClusterDelta / ConfigurationsDelta / AclsDelta / ClientQuotasDelta / ScramDelta): changed
partitions per topic id, created and deleted topics, changed brokers, configs by resource,
and whether ACLs, quotas, SCRAM credentials, features or producer ids moved.
"""
from __future__ import annotations

import uuid
from dataclasses import replace

from kwire.metadata import records as R
from kwire.metadata.image import BrokerImage, MetadataImage, PartitionImage, TopicImage
from kwire.security.authorizer import AclBinding
from kwire.security.scram_credentials import ScramCredential


class MetadataDelta:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image                      # the base: never changed
        # copy-on-write views (None: unchanged, the base's dict serves)
        self._brokers: dict[int, BrokerImage] | None = None
        self._topics: dict[str, TopicImage] | None = None
        self._topics_by_id: dict[uuid.UUID, TopicImage] | None = None
        self._broker_configs: dict[str, dict[str, str]] | None = None
        self._group_configs: dict[str, dict[str, str]] | None = None
        self._features: dict[str, int] | None = None
        self._acls = self._client_quotas = self._scram = None
        self._next_producer_id: int | None = None
        self._copied: set = set()               # ids of objects this delta owns (copied already)
        self._owned: list = []
        # what changed, for the publishers
        self.changed_brokers: set[int] = set()
        self.registered_brokers: set[int] = set()   # a RegisterBrokerRecord (a new broker epoch)
        self.is_snapshot = False   # a snapshot replaced the image: treat everything as changed
        self.created_topics: set[uuid.UUID] = set()
        self.deleted_topics: dict[uuid.UUID, TopicImage] = {}   # as the base image had them
        self.changed_partitions: dict[uuid.UUID, set[int]] = {}   # created or changed, by topic id
        self.changed_topic_configs: set[str] = set()              # topic names
        self.changed_broker_configs: set[str] = set()             # resource names ("" the cluster default)
        self.changed_group_configs: set[str] = set()
        self.features_changed = False
        self.acls_changed = False
        self.client_quotas_changed = False
        self.scram_changed = False
        self.producer_ids_changed = False
        self.records = 0

    # ------------------------------------------------------------------ reads (the delta's view)
    @property
    def brokers(self) -> dict[int, BrokerImage]:
        return self._brokers if self._brokers is not None else self.image.brokers

    @property
    def topics(self) -> dict[str, TopicImage]:
        return self._topics if self._topics is not None else self.image.topics

    @property
    def topics_by_id(self) -> dict[uuid.UUID, TopicImage]:
        return self._topics_by_id if self._topics_by_id is not None else self.image.topics_by_id

    def changed_partition_names(self, image: MetadataImage):
        """(topic name, partition index) of every created or changed partition of a topic that
        ``image`` (the applied one) still holds, in topic then partition order."""
        for tid, parts in self.changed_partitions.items():
            t = image.topics_by_id.get(tid)
            if t is not None:
                for p in sorted(parts):
                    if p in t.partitions:
                        yield t.name, p

    # ------------------------------------------------------------------ copy on write
    def _own(self, obj) -> bool:
        return id(obj) in self._copied

    def _mark(self, obj):
        self._copied.add(id(obj))
        self._owned.append(obj)   # alive while the delta is: its id is not reused
        return obj

    def _broker_for_write(self, broker_id: int) -> BrokerImage | None:
        b = self.brokers.get(broker_id)
        if b is None:
            return None
        if not self._own(b):
            if self._brokers is None:
                self._brokers = dict(self.image.brokers)
            b = self._brokers[broker_id] = self._mark(replace(b, endpoints=dict(b.endpoints)))
        self.changed_brokers.add(broker_id)
        return b

    def _topic_dicts(self) -> None:
        if self._topics is None:
            self._topics = dict(self.image.topics)
            self._topics_by_id = dict(self.image.topics_by_id)

    def _topic_for_write(self, t: TopicImage) -> TopicImage:
        if self._own(t):
            return t
        self._topic_dicts()
        c = self._mark(TopicImage(t.name, t.topic_id, dict(t.partitions), dict(t.configs)))
        self._topics[t.name] = c
        self._topics_by_id[t.topic_id] = c
        return c

    def _partition_for_write(self, t: TopicImage, index: int) -> PartitionImage | None:
        p = t.partitions.get(index)
        if p is None:
            return None
        t = self._topic_for_write(t)
        if not self._own(p):
            p = t.partitions[index] = self._mark(p.copy())
        self.changed_partitions.setdefault(t.topic_id, set()).add(index)
        return p

    def _configs(self, resource_type: int) -> dict[str, dict[str, str]]:
        if resource_type == R.RESOURCE_BROKER:
            if self._broker_configs is None:
                self._broker_configs = dict(self.image.broker_configs)
            return self._broker_configs
        if self._group_configs is None:
            self._group_configs = dict(self.image.group_configs)
        return self._group_configs

    def _store(self, attr: str):
        got = getattr(self, attr)
        if got is None:
            got = getattr(self.image, attr[1:]).copy()
            setattr(self, attr, got)
        return got

    # ------------------------------------------------------------------ replay
    def replay(self, msg, obj) -> None:
        """Apply one record to the delta (Kafka's MetadataDelta.replay)."""
        self.records += 1
        if msg is R.REGISTER_BROKER:
            ep = obj.end_points[0] if obj.end_points else None
            if self._brokers is None:
                self._brokers = dict(self.image.brokers)
            self._brokers[obj.broker_id] = self._mark(BrokerImage(
                obj.broker_id, ep.host if ep else "", ep.port if ep else 0, obj.rack, obj.broker_epoch, obj.fenced,
                endpoints={e.name: (e.host, e.port, e.security_protocol) for e in obj.end_points or ()}))
            self.changed_brokers.add(obj.broker_id)
            self.registered_brokers.add(obj.broker_id)
        elif msg is R.UNREGISTER_BROKER:
            if obj.broker_id in self.brokers:
                if self._brokers is None:
                    self._brokers = dict(self.image.brokers)
                del self._brokers[obj.broker_id]
                self.changed_brokers.add(obj.broker_id)
        elif msg is R.FENCE_BROKER or msg is R.UNFENCE_BROKER:
            b = self.brokers.get(obj.id)
            if b is not None and b.epoch == obj.epoch:   # a record of an older registration changes nothing
                self._broker_for_write(obj.id).fenced = msg is R.FENCE_BROKER
        elif msg is R.BROKER_REGISTRATION_CHANGE:
            b = self.brokers.get(obj.broker_id)
            if b is not None and b.epoch == obj.broker_epoch and (obj.fenced or obj.in_controlled_shutdown):
                b = self._broker_for_write(obj.broker_id)
                if obj.fenced:
                    b.fenced = obj.fenced > 0
                if obj.in_controlled_shutdown:
                    b.in_controlled_shutdown = True
        elif msg is R.TOPIC:
            self._topic_dicts()
            t = self._mark(TopicImage(obj.name, obj.topic_id))
            self._topics[obj.name] = t
            self._topics_by_id[obj.topic_id] = t
            self.created_topics.add(obj.topic_id)
        elif msg is R.PARTITION:
            t = self.topics_by_id.get(obj.topic_id)
            if t is not None:
                t = self._topic_for_write(t)
                t.partitions[obj.partition_id] = self._mark(PartitionImage(
                    obj.partition_id, obj.leader, list(obj.replicas), list(obj.isr),
                    obj.leader_epoch, obj.partition_epoch, obj.leader_recovery_state,
                    list(obj.removing_replicas or ()), list(obj.adding_replicas or ()),
                    list(obj.eligible_leader_replicas or ()), list(obj.last_known_elr or ())))
                self.changed_partitions.setdefault(t.topic_id, set()).add(obj.partition_id)
        elif msg is R.PARTITION_CHANGE:
            t = self.topics_by_id.get(obj.topic_id)
            p = self._partition_for_write(t, obj.partition_id) if t is not None else None
            if p is not None:
                p.merge(obj)
        elif msg is R.CLEAR_ELR:
            # Kafka replays a topic's clear only for a topic that exists (it refuses the record
            # otherwise; kwire's config path writes it for existing topics only)
            topics = [self.topics[obj.topic_name]] if obj.topic_name in self.topics else \
                list(self.topics.values()) if not obj.topic_name else []
            for t in topics:
                for i, p in t.partitions.items():
                    if p.elr or p.last_known_elr:
                        self._partition_for_write(self.topics_by_id[t.topic_id], i).clear_elr()
        elif msg is R.REMOVE_TOPIC:
            t = self.topics_by_id.get(obj.topic_id)
            if t is not None:
                self._topic_dicts()
                del self._topics_by_id[obj.topic_id]
                if self._topics.get(t.name) is t:
                    del self._topics[t.name]
                self.changed_partitions.pop(obj.topic_id, None)
                if obj.topic_id in self.created_topics:
                    self.created_topics.discard(obj.topic_id)   # made and gone within this batch
                else:
                    self.deleted_topics[obj.topic_id] = self.image.topics_by_id[obj.topic_id]
        elif msg is R.CONFIG:
            self._replay_config(obj)
        elif msg is R.FEATURE_LEVEL:
            if self._features is None:
                self._features = dict(self.image.features)
            self._features[obj.name] = obj.feature_level
            self.features_changed = True
        elif msg is R.PRODUCER_IDS:
            self._next_producer_id = obj.next_producer_id
            self.producer_ids_changed = True
        elif msg is R.ACCESS_CONTROL_ENTRY:
            self._store("_acls").add(obj.id, AclBinding(obj.resource_type, obj.resource_name, obj.pattern_type,
                                                        obj.principal, obj.host, obj.operation, obj.permission_type))
            self.acls_changed = True
        elif msg is R.REMOVE_ACCESS_CONTROL_ENTRY:
            self._store("_acls").remove(obj.id)
            self.acls_changed = True
        elif msg is R.CLIENT_QUOTA:
            self._store("_client_quotas").apply(obj)
            self.client_quotas_changed = True
        elif msg is R.USER_SCRAM_CREDENTIAL:
            self._store("_scram").put(obj.name, obj.mechanism, ScramCredential(
                bytes(obj.salt), bytes(obj.stored_key), bytes(obj.server_key), obj.iterations))
            self.scram_changed = True
        elif msg is R.REMOVE_USER_SCRAM_CREDENTIAL:
            self._store("_scram").remove(obj.name, obj.mechanism)
            self.scram_changed = True

    def _replay_config(self, obj) -> None:
        if obj.resource_type == R.RESOURCE_TOPIC:
            t = self.topics.get(obj.resource_name)
            if t is None:
                return
            t = self._topic_for_write(t)
            if obj.value is None:
                t.configs.pop(obj.name, None)
            else:
                t.configs[obj.name] = obj.value
            self.changed_topic_configs.add(obj.resource_name)
        elif obj.resource_type in (R.RESOURCE_BROKER, R.RESOURCE_GROUP):
            by_name = self._configs(obj.resource_type)
            d = by_name.get(obj.resource_name)
            if d is None or not self._own(d):
                d = by_name[obj.resource_name] = self._mark(dict(d or {}))
            if obj.value is None:
                d.pop(obj.name, None)
                if not d and obj.resource_type == R.RESOURCE_GROUP:
                    del by_name[obj.resource_name]
            else:
                d[obj.name] = obj.value
            (self.changed_broker_configs if obj.resource_type == R.RESOURCE_BROKER
             else self.changed_group_configs).add(obj.resource_name)

    @property
    def configs_changed(self) -> bool:
        return bool(self.changed_topic_configs or self.changed_broker_configs or self.changed_group_configs)

    @classmethod
    def snapshot(cls, old: MetadataImage, new: MetadataImage) -> "MetadataDelta":
        """The delta of a snapshot load (Kafka's finishSnapshot): ``new`` replaces ``old``
        whole; ``is_snapshot`` tells publishers to take everything up afresh."""
        d = cls(old)
        d.is_snapshot = True
        d.features_changed = d.acls_changed = d.client_quotas_changed = d.scram_changed = True
        d.producer_ids_changed = True
        d._snapshot_image = new
        return d

    def replay_all(self, recs) -> "MetadataDelta":
        for m, o in recs:
            self.replay(m, o)
        return self

    # ------------------------------------------------------------------ apply
    def apply(self, offset: int | None = None) -> MetadataImage:
        """The new image: the base with this delta's changes (Kafka's MetadataDelta.apply);
        ``offset`` is the last record offset it includes (the base's when None)."""
        if self.is_snapshot:
            return self._snapshot_image
        base = self.image
        out = MetadataImage()
        out.brokers = self.brokers
        out.topics = self.topics
        out.topics_by_id = self.topics_by_id
        out.broker_configs = self._broker_configs if self._broker_configs is not None else base.broker_configs
        out.group_configs = self._group_configs if self._group_configs is not None else base.group_configs
        out.features = self._features if self._features is not None else base.features
        out.next_producer_id = self._next_producer_id if self._next_producer_id is not None else base.next_producer_id
        out.acls = self._acls if self._acls is not None else base.acls
        out.client_quotas = self._client_quotas if self._client_quotas is not None else base.client_quotas
        out.scram = self._scram if self._scram is not None else base.scram
        out.offset = base.offset if offset is None else offset
        self._copied, self._owned = set(), []   # the new image's objects are shared from now: never written again
        return out


def replay(image: MetadataImage, recs, offset: int | None = None) -> MetadataImage:
    """The image ``recs`` ((message, record) pairs) make of ``image``, as one batch."""
    return MetadataDelta(image).replay_all(recs).apply(offset)


def replay_bytes(image: MetadataImage, values, offset: int | None = None) -> MetadataImage:
    """Like :func:`replay`, over encoded records (as the metadata log holds them)."""
    return replay(image, (R.decode_record(v) for v in values), offset)
