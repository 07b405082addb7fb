"""Client quotas in a three-node cluster: AlterClientQuotas on a node that is not the active
controller is committed through the controller (ClientQuotaRecords); every node then describes
the quota and enforces it (a request_percentage so small that the first request is throttled)."""
from __future__ import annotations

import pytest

from kwire.codec.apis import api
from kwire.testing.client import WireClient

from .cluster import Cluster, call, wait_for
from .test_ctl_replication import controller_of

pytestmark = pytest.mark.slow


def _describe(port):
    r = call(port, "DescribeClientQuotas", 1, components=[], strict=False)
    return {tuple((x.entity_type, x.entity_name) for x in e.entity): {v.key: v.value for v in e.values}
            for e in r.entries}


def _throttle_of_first_request(port) -> int:
    with WireClient(f"127.0.0.1:{port}", client_id="limited") as c:
        return c.request("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False).throttle_time_ms


def test_quota_altered_through_one_node_reaches_every_node(tmp_path):
    cluster = Cluster(str(tmp_path))
    cluster.start()
    try:
        ports = {i: n.port for i, n in cluster.nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        other = next(i for i in ports if i != ctl)   # forwards to the controller
        assert all(_throttle_of_first_request(p) == 0 for p in ports.values())
        R = api("AlterClientQuotas").request
        E = R.struct("EntryData")
        r = call(ports[other], "AlterClientQuotas", 1, validate_only=False, entries=[E(
            entity=[R.struct("EntityData")(entity_type="client-id", entity_name="limited")],
            ops=[R.struct("OpData")(key="request_percentage", value=0.0001, remove=False),
                 R.struct("OpData")(key="producer_byte_rate", value=1048576, remove=False)])])
        assert [(e.error_code, e.error_message) for e in r.entries] == [(0, None)]
        want = {(("client-id", "limited"),): {"producer_byte_rate": 1048576.0, "request_percentage": 0.0001}}
        for port in ports.values():
            assert wait_for(lambda p=port: _describe(p) == want, 15)
            assert _throttle_of_first_request(port) > 0
    finally:
        cluster.stop()
