"""ACLs in a three-node cluster: CreateAcls on one node commits AccessControlEntryRecords through
the active controller; every node's image (and authorizer) then has them: DescribeAcls on each
node lists the ACL and Metadata on each node hides the topic it denies."""
from __future__ import annotations

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode

from .cluster import Cluster, call, wait_for
from .test_ctl_replication import controller_of, create

pytestmark = pytest.mark.slow

ARGS = ("--override", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--override", "allow.everyone.if.no.acl.found=true")


def _acls(port):
    return call(port, "DescribeAcls", 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                principal_filter=None, host_filter=None, operation=1, permission_type=1)


def _listed(port):
    r = call(port, "Metadata", 12, topics=None, allow_auto_topic_creation=False,
             include_topic_authorized_operations=False)
    return {t.name for t in r.topics}


def test_acls_reach_every_node(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=ARGS)
    cluster.start()
    try:
        ports = {i: n.port for i, n in cluster.nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        assert create(ports[ctl], "open", 1, 3).error_code == 0
        assert create(ports[ctl], "closed", 1, 3).error_code == 0
        assert wait_for(lambda: all({"open", "closed"} <= _listed(p) for p in ports.values()), 15)
        other = next(i for i in ports if i != ctl)   # a node that forwards to the controller
        C = api("CreateAcls").request.struct("AclCreation")
        r = call(ports[other], "CreateAcls", 3, creations=[C(
            resource_type=2, resource_name="closed", resource_pattern_type=3, principal="User:ANONYMOUS",
            host="*", operation=2, permission_type=2)])   # DENY ALL on topic closed
        assert [x.error_code for x in r.results] == [0]
        for port in ports.values():
            assert wait_for(lambda p=port: len(_acls(p).resources) == 1, 15)
            res = _acls(port).resources[0]
            assert (res.resource_name, res.acls[0].principal, res.acls[0].operation) == ("closed", "User:ANONYMOUS", 2)
            listed = _listed(port)
            assert "open" in listed and "closed" not in listed
        with_closed = call(ports[ctl], "Metadata", 12, topics=[api("Metadata").request.struct("MetadataRequestTopic")(
            name="closed")], allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        assert with_closed.topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    finally:
        cluster.stop()
