"""DescribeCluster (key 60): versions 0-2; UnregisterBroker (key 64): version 0.

DescribeCluster: cluster id, controller and live brokers from the metadata image, and the
cluster's authorized operations when asked (without an authorizer: every operation a cluster
supports). endpoint_type 1 (brokers) only; a request for controllers (2) gets
UNSUPPORTED_ENDPOINT_TYPE, as Kafka does on a broker listener. v2 (KIP-1073):
include_fenced_brokers lists every registered broker, each with is_fenced; otherwise only the
unfenced ones, as before.

UnregisterBroker: removes a broker's registration through the active controller
(UnregisterBrokerRecord), so a decommissioned or phantom broker id disappears from Metadata
and DescribeCluster. BROKER_ID_NOT_REGISTERED for an id that is not registered. Unlike Kafka
(whose live brokers re-register at their next heartbeat), a broker that is alive (not fenced)
is refused with INVALID_REQUEST: stop it first; the controller fences it after
broker.session.timeout.ms. With an authorizer it needs ALTER on the cluster
(CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.metadata import records as R
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed, operations_field
from kwire.security.operations import AclOperation as Op

UNSUPPORTED_ENDPOINT_TYPE = 115


@handles("DescribeCluster")
async def describe_cluster(ctx: RequestContext, req):
    b = ctx.broker
    ops = operations_field(ctx, "cluster", CLUSTER_NAME, req.include_cluster_authorized_operations)
    if ctx.version >= 1 and req.endpoint_type != 1:
        return ctx.response(throttle_time_ms=0, error_code=UNSUPPORTED_ENDPOINT_TYPE,
                            error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
                            endpoint_type=req.endpoint_type, cluster_id=b.cluster_id, controller_id=-1, brokers=[])
    B = ctx.struct("DescribeClusterBroker")
    if ctx.version >= 2 and req.include_fenced_brokers:
        listed = sorted(b.image.brokers.values(), key=lambda x: x.node_id)
    else:
        listed = b.image.live_brokers()
    brokers = [B(broker_id=x.node_id, host=h, port=p, rack=x.rack, is_fenced=x.fenced)
               for x in listed for h, p in (x.address(ctx.listener),)]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                        cluster_id=b.cluster_id, controller_id=b.controller_id(), brokers=brokers,
                        cluster_authorized_operations=ops)


@handles("UnregisterBroker")
async def unregister_broker(ctx: RequestContext, req):
    b = ctx.broker
    if b.authorizer is not None and not allowed(ctx, Op.ALTER, CLUSTER, CLUSTER_NAME):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None)
    reg = b.image.brokers.get(req.broker_id)
    if reg is None:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.BROKER_ID_NOT_REGISTERED,
                            error_message=f"Broker ID {req.broker_id} is not currently registered")
    if not reg.fenced:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                            error_message=f"Broker {req.broker_id} is alive (not fenced); stop it before "
                                          f"unregistering it")
    try:
        await b.submit_metadata([(R.UNREGISTER_BROKER, R.UNREGISTER_BROKER.cls(
            broker_id=req.broker_id, broker_epoch=reg.epoch))])
    except KafkaError as exc:
        return ctx.response(throttle_time_ms=0, error_code=exc.code, error_message=str(exc))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None)
