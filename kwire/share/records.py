"""The durable form of share partitions in ``__share_group_state``: Kafka's share-coordinator
records (share-coordinator/src/main/resources/common/message), key version = record type:

- 0 ShareSnapshotKey (group, topic id, partition) -> ShareSnapshotValue v0: the whole state
  (snapshot epoch, state epoch, leader epoch, start offset, create / write timestamps, the
  in-flight state batches: first / last offset, delivery state 0 available / 2 acknowledged /
  4 archived, delivery count);
- 1 ShareUpdateKey (same fields) -> ShareUpdateValue v0: the state batches that changed since
  the snapshot of the same snapshot epoch, and the start offset (-1: unchanged).

Keys are not flexible, values are (tagged fields skipped on read; DeliveryCompleteCount,
Kafka 4.2's tagged field 0, is not written). kwire writes a snapshot on every change (the topic
is compacted, so the last one is what a load reads) and reads both kinds; a tombstone deletes
the share partition's state. The keys and ShareUpdateValue follow Kafka's JSON as read from
apache/kafka; the ShareSnapshotValue revision readable here is an older one (no timestamps):
the CreateTimestamp / WriteTimestamp fields after StartOffset are Kafka 4.1+'s as recalled, not
checked against its JSON, so a snapshot written by Kafka may not decode here (nor ours there).

The ``__share_group_state`` partition of a share partition: ``abs(hash("group:topicId:partition"))
% partitions`` with Java's String.hashCode, as Kafka's SharePartitionKey.asCoordinatorKey.
"""
from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from uuid import UUID

from kwire.codec.schema import F, Message
from kwire.coordinator.records import partition_for_key
from kwire.errors import CodecError
from kwire.share.partition import StateBatch

SNAPSHOT, UPDATE = 0, 1
from kwire.internal_topics import SHARE_STATE_TOPIC as STATE_TOPIC  # noqa: E402,F401 - named here too

_I16 = struct.Struct(">h")

KEY = Message("ShareSnapshotKey", valid="0-1", fields=[
    F("group_id", "string", "0+"),
    F("topic_id", "uuid", "0+"),
    F("partition", "int32", "0+"),
])


def _batches(version: str) -> F:
    return F("state_batches", "[]StateBatch", version, fields=[
        F("first_offset", "int64", "0+"),
        F("last_offset", "int64", "0+"),
        F("delivery_state", "int8", "0+"),
        F("delivery_count", "int16", "0+"),
    ])


SNAPSHOT_VALUE = Message("ShareSnapshotValue", valid="0", flexible="0+", fields=[
    F("snapshot_epoch", "int32", "0+"),
    F("state_epoch", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("start_offset", "int64", "0+"),
    F("create_timestamp", "int64", "0+"),
    F("write_timestamp", "int64", "0+"),
    _batches("0+"),
])
UPDATE_VALUE = Message("ShareUpdateValue", valid="0", flexible="0+", fields=[
    F("snapshot_epoch", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("start_offset", "int64", "0+"),
    _batches("0+"),
])
_SB = SNAPSHOT_VALUE.struct("StateBatch")
_UB = UPDATE_VALUE.struct("StateBatch")


def state_partition(group_id: str, topic_id: UUID, partition: int, partitions: int) -> int:
    """The ``__share_group_state`` partition holding a share partition's state (Kafka's
    Utils.abs: abs, with MIN_VALUE mapped to 0)."""
    return partition_for_key(f"{group_id}:{kafka_uuid_string(topic_id)}:{partition}", partitions)


def kafka_uuid_string(u: UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def parse_coordinator_key(key: str) -> tuple[str, UUID, int] | None:
    """(group id, topic id, partition) of a share coordinator key "group:topicId:partition"
    (Kafka's SharePartitionKey.getInstance; FindCoordinator key type 2), None if malformed."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return None
    try:
        raw = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        if len(raw) != 16 or kafka_uuid_string(UUID(bytes=raw)) != parts[1]:
            return None
        partition = int(parts[2])
    except ValueError:
        return None
    return (parts[0], UUID(bytes=raw), partition) if partition >= 0 else None


@dataclass(slots=True)
class ShareState:
    group_id: str
    topic_id: UUID
    partition: int
    snapshot_epoch: int = 0
    state_epoch: int = 0
    leader_epoch: int = 0
    start_offset: int = 0
    create_timestamp: int = -1
    write_timestamp: int = -1
    batches: tuple[StateBatch, ...] = ()


def key(kind: int, group_id: str, topic_id: UUID, partition: int) -> bytes:
    return _I16.pack(kind) + KEY.encode(KEY(group_id=group_id, topic_id=topic_id, partition=partition), kind)


def decode_key(buf: bytes) -> tuple[int, str, UUID, int]:
    kind = _I16.unpack_from(buf, 0)[0]
    if kind not in (SNAPSHOT, UPDATE):
        raise CodecError(f"not a share-coordinator record key: {kind}")
    k = KEY.decode(buf, kind, 2)
    return kind, k.group_id, k.topic_id, k.partition


def snapshot_value(s: ShareState) -> bytes:
    return _I16.pack(0) + SNAPSHOT_VALUE.encode(SNAPSHOT_VALUE(
        snapshot_epoch=s.snapshot_epoch, state_epoch=s.state_epoch, leader_epoch=s.leader_epoch,
        start_offset=s.start_offset, create_timestamp=s.create_timestamp, write_timestamp=s.write_timestamp,
        state_batches=[_SB(first_offset=b.first_offset, last_offset=b.last_offset, delivery_state=b.delivery_state,
                           delivery_count=b.delivery_count) for b in s.batches]), 0)


def _read(msg: Message, buf: bytes):
    version = _I16.unpack_from(buf, 0)[0]
    if version != 0:
        raise CodecError(f"unknown {msg.name} version {version}")
    return msg.decode(buf, 0, 2, exact=False)


def _state_batches(items) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in items)


def decode_snapshot(group_id: str, topic_id: UUID, partition: int, buf: bytes) -> ShareState:
    v = _read(SNAPSHOT_VALUE, buf)
    return ShareState(group_id, topic_id, partition, v.snapshot_epoch, v.state_epoch, v.leader_epoch,
                      v.start_offset, v.create_timestamp, v.write_timestamp, _state_batches(v.state_batches))


def update_value(snapshot_epoch: int, leader_epoch: int, start_offset: int, batches) -> bytes:
    return _I16.pack(0) + UPDATE_VALUE.encode(UPDATE_VALUE(
        snapshot_epoch=snapshot_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
        state_batches=[_UB(first_offset=b.first_offset, last_offset=b.last_offset, delivery_state=b.delivery_state,
                           delivery_count=b.delivery_count) for b in batches]), 0)


def apply_update(s: ShareState, buf: bytes) -> ShareState:
    """A ShareUpdate on top of the state (Kafka's ShareCoordinatorShard merge: the update's
    batches replace the offsets they cover; batches below the start offset are dropped)."""
    v = _read(UPDATE_VALUE, buf)
    start = s.start_offset if v.start_offset < 0 else v.start_offset
    per: dict[int, tuple[int, int]] = {}
    for b in s.batches:
        for off in range(b.first_offset, b.last_offset + 1):
            per[off] = (b.delivery_state, b.delivery_count)
    for b in v.state_batches:
        for off in range(b.first_offset, b.last_offset + 1):
            per[off] = (b.delivery_state, b.delivery_count)
    runs: list[StateBatch] = []
    for off in sorted(o for o in per if o >= start):
        st, n = per[off]
        last = runs[-1] if runs else None
        if last is not None and last.last_offset == off - 1 and (last.delivery_state, last.delivery_count) == (st, n):
            runs[-1] = StateBatch(last.first_offset, off, st, n)
        else:
            runs.append(StateBatch(off, off, st, n))
    return ShareState(s.group_id, s.topic_id, s.partition, s.snapshot_epoch, s.state_epoch, v.leader_epoch,
                      start, s.create_timestamp, s.write_timestamp, tuple(runs))
