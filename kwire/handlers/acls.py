"""DescribeAcls (key 29), CreateAcls (key 30), DeleteAcls (key 31): versions 0-3 served (v0, Kafka
3.x's: no pattern type, LITERAL; DescribeAcls/DeleteAcls v0 filters match literal patterns only).

ACLs are metadata records (AccessControlEntryRecord / RemoveAccessControlEntryRecord) committed
through ``broker.submit_metadata`` (the active controller in a cluster), so every broker's image
and authorizer (kwire.security.authorizer) has them. As Kafka: with no authorizer configured
every request is answered SECURITY_DISABLED; Describe needs DESCRIBE on the cluster, Create and
Delete need ALTER (CLUSTER_AUTHORIZATION_FAILED otherwise); a malformed binding or filter is
INVALID_REQUEST; creating an ACL that exists changes nothing and succeeds.
"""
from __future__ import annotations

import logging
import uuid

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.metadata import records as R
from kwire.security.authorizer import (
    CLUSTER, CLUSTER_NAME, AclBinding, AclBindingFilter, allowed, validate_binding,
)
from kwire.security.operations import AclOperation as Op

log = logging.getLogger("kwire.acls")

_DISABLED = "No Authorizer is configured on the broker"


def _cluster_denied(ctx: RequestContext, op: int) -> bool:
    return not allowed(ctx, op, CLUSTER, CLUSTER_NAME)


def _filter(f) -> AclBindingFilter:
    return AclBindingFilter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                            f.principal_filter, f.host_filter, f.operation, f.permission_type)


@handles("DescribeAcls", "0-3")
async def describe_acls(ctx: RequestContext, req):
    def answer(err, msg=None, resources=()):
        return ctx.response(throttle_time_ms=0, error_code=err, error_message=msg, resources=list(resources))

    if ctx.broker.authorizer is None:
        return answer(ErrorCode.SECURITY_DISABLED, _DISABLED)
    if _cluster_denied(ctx, Op.DESCRIBE):
        return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    flt = _filter(req)
    bad = flt.invalid()
    if bad:
        return answer(ErrorCode.INVALID_REQUEST, bad)
    grouped: dict[tuple[int, str, int], list] = {}
    for _, b in ctx.broker.image.acls.find(flt):
        grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    Res, Desc = ctx.struct("DescribeAclsResource"), ctx.struct("AclDescription")
    out = []
    for (rtype, name, pattern), bs in sorted(grouped.items()):
        out.append(Res(resource_type=rtype, resource_name=name, pattern_type=pattern, acls=[
            Desc(principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission_type)
            for b in sorted(bs, key=lambda b: (b.principal, b.host, b.operation, b.permission_type))]))
    return answer(ErrorCode.NONE, "", out)   # Kafka answers "" (not null) when all is well


@handles("CreateAcls", "0-3")
async def create_acls(ctx: RequestContext, req):
    Result = ctx.struct("AclCreationResult")

    def answer(codes):
        return ctx.response(throttle_time_ms=0, results=[Result(error_code=c, error_message=m) for c, m in codes])

    n = len(req.creations)
    if ctx.broker.authorizer is None:
        return answer([(ErrorCode.SECURITY_DISABLED, _DISABLED)] * n)
    if _cluster_denied(ctx, Op.ALTER):
        return answer([(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)] * n)
    acls = ctx.broker.image.acls
    codes: list[tuple[int, str | None]] = []
    recs = []
    new: set[AclBinding] = set()
    for c in req.creations:
        b = AclBinding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
                       c.permission_type)
        bad = validate_binding(b)
        if bad:
            codes.append((ErrorCode.INVALID_REQUEST, bad))
            continue
        codes.append((ErrorCode.NONE, None))
        if b in new or acls.id_of(b) is not None:
            continue   # Kafka: an ACL that exists is not added twice
        new.add(b)
        recs.append((R.ACCESS_CONTROL_ENTRY, R.ACCESS_CONTROL_ENTRY.cls(
            id=uuid.uuid4(), resource_type=b.resource_type, resource_name=b.resource_name,
            pattern_type=b.pattern_type, principal=b.principal, host=b.host, operation=b.operation,
            permission_type=b.permission_type)))
    if recs:
        try:
            await ctx.broker.submit_metadata(recs)
        except KafkaError as exc:
            codes = [(exc.code if c == ErrorCode.NONE else c, m) for c, m in codes]
        except Exception as exc:  # noqa: BLE001 - no controller: the client may retry
            log.warning("CreateAcls from %s: commit failed: %s", ctx.peer, exc)
            codes = [(ErrorCode.NOT_CONTROLLER if c == ErrorCode.NONE else c, m) for c, m in codes]
        else:
            log.info("created %d ACL(s) for %s", len(recs), ctx.peer)
    return answer(codes)


@handles("DeleteAcls", "0-3")
async def delete_acls(ctx: RequestContext, req):
    FilterResult, Matching = ctx.struct("DeleteAclsFilterResult"), ctx.struct("DeleteAclsMatchingAcl")

    def answer(results):
        return ctx.response(throttle_time_ms=0, filter_results=results)

    def failed(err, msg=None):
        return answer([FilterResult(error_code=err, error_message=msg, matching_acls=[]) for _ in req.filters])

    if ctx.broker.authorizer is None:
        return failed(ErrorCode.SECURITY_DISABLED, _DISABLED)
    if _cluster_denied(ctx, Op.ALTER):
        return failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    acls = ctx.broker.image.acls
    per_filter: list[tuple[int, str | None, list]] = []
    doomed: dict[uuid.UUID, AclBinding] = {}
    for f in req.filters:
        flt = _filter(f)
        bad = flt.invalid()
        if bad:
            per_filter.append((ErrorCode.INVALID_REQUEST, bad, []))
            continue
        found = acls.find(flt)
        doomed.update(found)
        per_filter.append((ErrorCode.NONE, None, [b for _, b in found]))
    if doomed:
        recs = [(R.REMOVE_ACCESS_CONTROL_ENTRY, R.REMOVE_ACCESS_CONTROL_ENTRY.cls(id=i)) for i in doomed]
        try:
            await ctx.broker.submit_metadata(recs)
        except Exception as exc:  # noqa: BLE001 - the filters' answer carries the failure
            code = exc.code if isinstance(exc, KafkaError) else ErrorCode.NOT_CONTROLLER
            log.warning("DeleteAcls from %s: commit failed: %s", ctx.peer, exc)
            return failed(code, str(exc))
        log.info("deleted %d ACL(s) for %s", len(doomed), ctx.peer)
    return answer([FilterResult(error_code=e, error_message=m, matching_acls=[
        Matching(error_code=0, error_message=None, resource_type=b.resource_type, resource_name=b.resource_name,
                 pattern_type=b.pattern_type, principal=b.principal, host=b.host, operation=b.operation,
                 permission_type=b.permission_type) for b in bs]) for e, m, bs in per_filter])
