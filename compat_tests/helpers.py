"""Small helpers shared by the scenarios."""
from __future__ import annotations

import pytest

from kwire.testing.wait import wait_until  # noqa: F401 - the suite's one polling helper

from compat_tests.targets import api_versions

# Kafka API keys the scenarios probe for (Kafka protocol guide, "The Messages")
API_NAMES = {8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
             13: "LeaveGroup", 14: "SyncGroup", 22: "InitProducerId", 24: "AddPartitionsToTxn",
             25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit"}
GROUP_APIS = (8, 9, 10, 11, 12, 13, 14)
IDEMPOTENCE_APIS = (22,)
TRANSACTION_APIS = (22, 24, 26)


def needs(client, feature: str, bootstrap: str | None = None, keys=()) -> None:
    """Skip when the client cannot drive ``feature``; then fail fast if the broker lacks the APIs."""
    from compat_tests.clients import Unsupported

    if feature in client.lacks:
        raise Unsupported(client.lacks[feature])
    if bootstrap and keys:
        require_apis(bootstrap, keys)


def require_apis(bootstrap: str, keys) -> None:
    """Fail at once (instead of after client timeouts) when the broker does not advertise an API the
    scenario needs: Apache Kafka advertises all of them in ApiVersions."""
    have = api_versions(bootstrap)
    missing = [API_NAMES.get(k, str(k)) for k in keys if k not in have]
    assert not missing, f"broker does not advertise {', '.join(missing)} in ApiVersions"


def text_value(i: int, size: int) -> bytes:
    """Printable, line-free bytes of the given size (every client can carry them, kcat included)."""
    unit = f"{i:08d}-abcdefghijklmnopqrstuvwxyz-".encode()
    return (unit * (size // len(unit) + 1))[:size]


def random_text(size: int) -> bytes:
    """Incompressible printable bytes (hex of random data)."""
    import os

    return os.urandom(size // 2 + 1).hex().encode()[:size]
