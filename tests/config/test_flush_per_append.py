"""log.flush.per.append (kwire's key) reaches every partition log: an append through the broker
is fdatasynced before it is acknowledged, whether the key is static or set at run time."""
from __future__ import annotations

import os
import uuid

import pytest

from kwire.codec.apis import api
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


@pytest.fixture
def fdatasyncs(monkeypatch):
    """The paths fdatasync was called on (the broker runs in this process, thread mode)."""
    calls: list[str] = []
    real = os.fdatasync

    def spy(fd):
        try:
            calls.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            calls.append("?")
        return real(fd)

    monkeypatch.setattr(os, "fdatasync", spy)
    return calls


def _appends_synced(calls, topic):
    return [p for p in calls if f"/{topic}-0/" in p and p.endswith(".log")]


def test_static_flush_per_append_fdatasyncs_each_append(fdatasyncs):
    with Broker(mode="thread", overrides={"log.flush.per.append": "true"}) as b, \
            WireClient(b.bootstrap_servers) as c:
        topic = f"sync-{uuid.uuid4().hex[:6]}"
        c.create_topic(topic, 1)
        assert b.broker.logs.config_for(topic).fsync_per_append is True
        before = len(_appends_synced(fdatasyncs, topic))
        for i in range(3):
            c.produce(topic, [(None, f"v{i}".encode())])
        assert len(_appends_synced(fdatasyncs, topic)) - before >= 3


def test_default_does_not_sync_and_dynamic_switch_does(fdatasyncs):
    with Broker(mode="thread") as b, WireClient(b.bootstrap_servers) as c:
        topic = f"nosync-{uuid.uuid4().hex[:6]}"
        c.create_topic(topic, 1)
        c.produce(topic, [(None, b"a")])
        c.produce(topic, [(None, b"b")])
        assert _appends_synced(fdatasyncs, topic) == []
        a = api("IncrementalAlterConfigs")
        R, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
        resp = c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[R(
            resource_type=4, resource_name="", configs=[C(name="log.flush.per.append", config_operation=0,
                                                          value="true")])])
        assert resp.responses[0].error_code == 0
        assert b.broker.logs.config_for(topic).fsync_per_append is True
        c.produce(topic, [(None, b"c")])
        assert len(_appends_synced(fdatasyncs, topic)) >= 1
