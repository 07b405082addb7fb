"""The consumer embedded protocol: what a consumer puts in JoinGroup ``metadata`` (its
subscription) and what the leader hands back through SyncGroup ``assignment``.

Not an API (no api key): the group coordinator treats these bytes as opaque, but reads them to
answer DescribeGroups for tooling and to check subscriptions. Versions follow Kafka's
ConsumerProtocolSubscription.json (0-3) and ConsumerProtocolAssignment.json (0-3); neither is
flexible. On the wire each is prefixed by an INT16 version. Like Kafka's ConsumerProtocol, a
version newer than ours is read as our newest (newer versions only append fields) and bytes
after the known fields are ignored; a negative version is an error.

Public API::

    encode_subscription(obj, version) -> bytes     decode_subscription(buf) -> obj
    encode_assignment(obj, version) -> bytes       decode_assignment(buf) -> obj
    read_version(buf) -> int                       (the INT16 prefix as sent)

Objects: ``SUBSCRIPTION()`` / ``ASSIGNMENT()``, nested ``TopicPartition`` via
``SUBSCRIPTION.struct("TopicPartition")`` (aliases ``SubscriptionTopicPartition`` and
``AssignmentTopicPartition`` below).
"""
from __future__ import annotations

import struct

from kwire.codec.schema import F, Message
from kwire.errors import EncodeError, InvalidLength, TruncatedData

SUBSCRIPTION = Message("ConsumerProtocolSubscription", kind="data", valid="0-3", fields=[
    F("topics", "[]string", "0+"),
    F("user_data", "bytes", "0+", nullable="0+", default=None),
    F("owned_partitions", "[]TopicPartition", "1+", ignorable=True, fields=[
        F("topic", "string", "1+", map_key=True),
        F("partitions", "[]int32", "1+"),
    ]),
    F("generation_id", "int32", "2+", default=-1, ignorable=True),
    F("rack_id", "string", "3+", nullable="3+", default=None, ignorable=True),
])

ASSIGNMENT = Message("ConsumerProtocolAssignment", kind="data", valid="0-3", fields=[
    F("assigned_partitions", "[]TopicPartition", "0+", fields=[
        F("topic", "string", "0+", map_key=True),
        F("partitions", "[]int32", "0+"),
    ]),
    F("user_data", "bytes", "0+", nullable="0+", default=None),
])

Subscription = SUBSCRIPTION.cls
Assignment = ASSIGNMENT.cls
SubscriptionTopicPartition = SUBSCRIPTION.struct("TopicPartition")
AssignmentTopicPartition = ASSIGNMENT.struct("TopicPartition")

_VERSION = struct.Struct(">h")


def read_version(buf) -> int:
    """The INT16 version prefix of an encoded subscription or assignment."""
    if len(buf) < 2:
        raise TruncatedData("consumer protocol: no version prefix")
    return _VERSION.unpack_from(buf, 0)[0]


def _encode(msg: Message, obj, version: int) -> bytes:
    if version not in msg.valid:
        raise EncodeError(f"{msg.name} has no version {version}")
    return _VERSION.pack(version) + msg.encode(obj, version)


def _decode(msg: Message, buf):
    version = read_version(buf)
    if version < msg.valid.lo:
        raise InvalidLength(f"unsupported {msg.name} version {version}")
    version = min(version, msg.valid.hi)
    obj, _end = msg.decode_from(memoryview(buf), version, 2)
    return obj


def encode_subscription(obj, version: int) -> bytes:
    return _encode(SUBSCRIPTION, obj, version)


def decode_subscription(buf):
    return _decode(SUBSCRIPTION, buf)


def encode_assignment(obj, version: int) -> bytes:
    return _encode(ASSIGNMENT, obj, version)


def decode_assignment(buf):
    return _decode(ASSIGNMENT, buf)
