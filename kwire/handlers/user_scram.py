"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51): version 0
(KIP-554; the only version Kafka has).

SCRAM credentials are metadata records (UserScramCredentialRecord / RemoveUserScramCredentialRecord)
committed through ``broker.submit_metadata`` (forwarded to the active controller in a cluster,
as Kafka forwards AlterUserScramCredentials), so every node's image has them and its SASL
SCRAM server (kwire.security.sasl) authenticates with them at once. The validation is Kafka's
ScramControlManager's (kwire.security.scram_credentials.alter): DUPLICATE_RESOURCE,
RESOURCE_NOT_FOUND, UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL per user; Describe
is ScramImage.describe (RESOURCE_NOT_FOUND / DUPLICATE_RESOURCE per user, every user when
none is named). With an authorizer, Describe needs DESCRIBE and Alter needs ALTER on the
cluster (CLUSTER_AUTHORIZATION_FAILED otherwise: Describe's top-level error, Alter's on each
user); without one, as Kafka, anyone may. Only the quorum's credentials are described or
deleted, never those kwire derives from JAAS passwords (see kwire.security.sasl).
One difference: the request is validated against this node's image, not the controller's
(as CreateAcls here), so a deletion sent to a node that has not yet applied the credential's
record may be answered RESOURCE_NOT_FOUND. Left out: nothing of version 0.
"""
from __future__ import annotations

import logging

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op
from kwire.security.scram_credentials import alter

log = logging.getLogger("kwire.security")


@handles("DescribeUserScramCredentials", "0")
async def describe_user_scram_credentials(ctx: RequestContext, req):
    Result, Info = ctx.struct("DescribeUserScramCredentialsResult"), ctx.struct("CredentialInfo")
    names = [u.name for u in req.users] if req.users else None
    if not allowed(ctx, Op.DESCRIBE, CLUSTER, CLUSTER_NAME):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        msg = "Cluster authorization failed."
        return ctx.response(throttle_time_ms=0, error_code=code, error_message=msg, results=[
            Result(user=n, error_code=code, error_message=msg, credential_infos=[]) for n in names or ()])
    out = [Result(user=user, error_code=code, error_message=msg,
                  credential_infos=[Info(mechanism=m, iterations=i) for m, i in infos])
           for user, code, msg, infos in ctx.broker.image.scram.describe(names)]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, results=out)


@handles("AlterUserScramCredentials", "0")
async def alter_user_scram_credentials(ctx: RequestContext, req):
    Result = ctx.struct("AlterUserScramCredentialsResult")

    def answer(results):
        return ctx.response(throttle_time_ms=0, results=[Result(user=u, error_code=c, error_message=m)
                                                         for u, c, m in results])

    if not allowed(ctx, Op.ALTER, CLUSTER, CLUSTER_NAME):
        users = dict.fromkeys(x.name for x in (*req.deletions, *req.upsertions))
        return answer([(u, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.") for u in users])
    plan = alter(ctx.broker.image.scram, req.deletions, req.upsertions)
    results = plan.results
    if plan.records:
        try:
            await ctx.broker.submit_metadata(plan.records)
        except Exception as exc:  # noqa: BLE001 - each user's answer carries the failure
            code = exc.code if isinstance(exc, KafkaError) else ErrorCode.NOT_CONTROLLER
            log.warning("AlterUserScramCredentials from %s: commit failed: %s", ctx.peer, exc)
            results = [(u, code if c == ErrorCode.NONE else c, str(exc) if c == ErrorCode.NONE else m)
                       for u, c, m in results]
        else:
            log.info("SCRAM credentials altered by %s: %s", ctx.principal,
                     ", ".join(u for u, c, _ in results if c == ErrorCode.NONE))
    return answer(results)
