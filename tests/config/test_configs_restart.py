"""Dynamic configs are metadata records: broker, topic and group configs (an emptied
cleanup.policy included) survive a restart, through the metadata log and through a snapshot."""
from __future__ import annotations

import uuid

import pytest

from kwire.metadata.delta import replay
from kwire.codec.apis import api
from kwire.metadata.image import MetadataImage
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot
from kwire.metadata.records import RESOURCE_GROUP
from kwire.testing import Broker
from kwire.testing.client import WireClient


def _incremental(c, rtype, name, ops):
    a = api("IncrementalAlterConfigs")
    R, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
    resp = c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[R(
        resource_type=rtype, resource_name=name, configs=[C(name=k, config_operation=op, value=v) for k, op, v in ops])])
    return resp.responses[0].error_code


def _describe(c, rtype, name):
    a = api("DescribeConfigs")
    res = a.request.struct("DescribeConfigsResource")(resource_type=rtype, resource_name=name, configuration_keys=None)
    r = c.request("DescribeConfigs", 4, resources=[res], include_synonyms=False, include_documentation=False).results[0]
    return {e.name: (e.value, e.config_source) for e in r.configs}


@pytest.mark.slow
def test_configs_survive_restart():
    topic, group = f"keep-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    with Broker(mode="thread") as b:
        with WireClient(b.bootstrap_servers) as c:
            c.create_topic(topic, 1, {"cleanup.policy": "compact"})
            assert _incremental(c, 2, topic, [("cleanup.policy", 3, "compact")]) == 0
            assert _incremental(c, 4, "", [("log.retention.ms", 0, "123456")]) == 0
            assert _incremental(c, 32, group, [("share.auto.offset.reset", 0, "earliest")]) == 0
        b.restart()
        with WireClient(b.bootstrap_servers) as c:
            assert _describe(c, 2, topic)["cleanup.policy"] == ("", 1)
            assert _describe(c, 4, "")["log.retention.ms"] == ("123456", 3)
            assert _describe(c, 32, group)["share.auto.offset.reset"] == ("earliest", 8)
        assert b.broker.config.get("log.retention.ms") == 123456


def test_group_configs_in_snapshots():
    from kwire.metadata import records as R

    image = MetadataImage()
    image = replay(image, [(R.CONFIG, R.CONFIG.cls(resource_type=RESOURCE_GROUP, resource_name="g", name="share.auto.offset.reset",
                                       value="earliest"))])
    again = decode_snapshot(encode_snapshot(image))
    assert again.group_configs == {"g": {"share.auto.offset.reset": "earliest"}}
    again = replay(again, [(R.CONFIG, R.CONFIG.cls(resource_type=RESOURCE_GROUP, resource_name="g",
                                                   name="share.auto.offset.reset", value=None))])
    assert again.group_configs == {}

