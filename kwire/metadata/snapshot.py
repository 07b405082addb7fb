"""Metadata snapshots: the records that rebuild an image from nothing, and their bytes
(each record 4-byte length first), as the metadata quorum's snapshots hold them."""
from __future__ import annotations

import uuid

from kwire.metadata import records as R
from kwire.metadata.delta import MetadataDelta
from kwire.metadata.image import MetadataImage


def image_records(image: MetadataImage) -> list:
    """Metadata records that rebuild ``image`` from nothing (a metadata snapshot)."""
    out: list = []
    for name, level in sorted(image.features.items()):
        out.append((R.FEATURE_LEVEL, R.FEATURE_LEVEL.cls(name=name, feature_level=level)))
    for b in sorted(image.brokers.values(), key=lambda b: b.node_id):
        out.append((R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
            broker_id=b.node_id, incarnation_id=uuid.UUID(int=0), broker_epoch=b.epoch,
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
    """The image a snapshot's records build from nothing (one delta over the empty image)."""
    delta = MetadataDelta(MetadataImage())
    pos = 0
    while pos + 4 <= len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        delta.replay(*R.decode_record(data[pos + 4:pos + 4 + n]))
        pos += 4 + n
    return delta.apply()
