"""DescribeCluster (key 60): versions 0-1.

Cluster id, controller and live brokers from the metadata image. endpoint_type 1 (brokers)
only; a request for controllers (2) gets MISMATCHED_ENDPOINT_TYPE... reported as
UNSUPPORTED_ENDPOINT_TYPE, as Kafka does on a broker listener.
"""
from __future__ import annotations

from kwire.handlers import RequestContext, handles

UNSUPPORTED_ENDPOINT_TYPE = 115


@handles("DescribeCluster")
async def describe_cluster(ctx: RequestContext, req):
    b = ctx.broker
    if ctx.version >= 1 and req.endpoint_type != 1:
        return ctx.response(throttle_time_ms=0, error_code=UNSUPPORTED_ENDPOINT_TYPE,
                            error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
                            endpoint_type=req.endpoint_type, cluster_id=b.cluster_id, controller_id=-1, brokers=[])
    B = ctx.struct("DescribeClusterBroker")
    brokers = [B(broker_id=x.node_id, host=x.host, port=x.port, rack=x.rack) for x in b.image.live_brokers()]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                        cluster_id=b.cluster_id, controller_id=b.controller_id(), brokers=brokers)
