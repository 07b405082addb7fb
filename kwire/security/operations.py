"""Authorized operations as Kafka reports them in Metadata, DescribeCluster and DescribeGroups.

A response carries a 32-bit field with bit ``code`` set for every ACL operation the caller may
perform on the resource (Kafka's AclOperation codes). Kafka answers INT32_MIN when the request
did not ask. Without an authorizer every caller may do everything a resource type supports
(Kafka's AclEntry.supportedOperations), which is what Kafka reports with no authorizer
configured; with one, kwire.security.authorizer.operations_field asks it.
"""
from __future__ import annotations

import enum


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


NOT_REQUESTED = -(1 << 31)
O = AclOperation
SUPPORTED = {
    "topic": (O.READ, O.WRITE, O.CREATE, O.DESCRIBE, O.DELETE, O.ALTER, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS),
    "group": (O.READ, O.DESCRIBE, O.DELETE, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS),
    "cluster": (O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE, O.ALTER,
                O.DESCRIBE),
}


def bitfield(ops) -> int:
    out = 0
    for op in ops:
        out |= 1 << int(op)
    return out


def authorized_operations(resource_type: str, requested: bool) -> int:
    """The field for one resource: the caller's operations, or NOT_REQUESTED."""
    if not requested:
        return NOT_REQUESTED
    return bitfield(SUPPORTED[resource_type])
