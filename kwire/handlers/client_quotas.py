"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49): versions 0-1 served.

Quotas are ClientQuotaRecords committed through ``broker.submit_metadata`` (the active
controller in a cluster), so every broker's image (kwire.quota.store) and quota managers
(kwire.quota.manager) have them. Describe answers the entities a filter matches, with Kafka's
match types (0 exact name, 1 default entity, 2 any entity of the type) and strict (the entity
has no other types); a malformed filter is INVALID_REQUEST (UNSUPPORTED_VERSION for an unknown
entity type), with entries null. Alter checks each entry as Kafka's ClientQuotaControlManager
(entity types user / client-id, no empty names, known keys, whole numbers for the byte rates:
INVALID_REQUEST with Kafka's message), writes a record only for a value that changes or a key
that is there to remove, and with validate_only writes nothing. With an authorizer, Describe
needs DESCRIBE_CONFIGS and Alter ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).
Left out: ip entities and controller_mutation_rate (refused with INVALID_REQUEST: kwire does not
enforce connection-rate or topic-mutation quotas).
"""
from __future__ import annotations

import logging

from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.metadata import records as R
from kwire.quota.store import QuotaRequestError, validate_alteration
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op

log = logging.getLogger("kwire.quotas")


@handles("DescribeClientQuotas", "0-1")
async def describe_client_quotas(ctx: RequestContext, req):
    def answer(code, msg=None, entries=None):
        return ctx.response(throttle_time_ms=0, error_code=code, error_message=msg, entries=entries)

    if ctx.broker.authorizer is not None and not allowed(ctx, Op.DESCRIBE_CONFIGS, CLUSTER, CLUSTER_NAME):
        return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    try:
        found = ctx.broker.image.client_quotas.describe(req.components, req.strict)
    except QuotaRequestError as exc:
        return answer(exc.code, str(exc))
    Entry, Entity, Value = ctx.struct("EntryData"), ctx.struct("EntityData"), ctx.struct("ValueData")
    return answer(ErrorCode.NONE, None, [
        Entry(entity=[Entity(entity_type=t, entity_name=n) for t, n in ent],
              values=[Value(key=k, value=v) for k, v in sorted(values.items())])
        for ent, values in found])


@handles("AlterClientQuotas", "0-1")
async def alter_client_quotas(ctx: RequestContext, req):
    Entry, Entity = ctx.struct("EntryData"), ctx.struct("EntityData")
    results: list[list] = []   # [code, message] per request entry
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.ALTER_CONFIGS, CLUSTER, CLUSTER_NAME):
        results = [[ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."] for _ in req.entries]
    else:
        store = ctx.broker.image.client_quotas
        recs = []
        seen: dict = {}
        RecEntity = R.CLIENT_QUOTA.struct("EntityData")
        for i, e in enumerate(req.entries):
            pairs = [(x.entity_type, x.entity_name) for x in e.entity]
            ops = [(o.key, None if o.remove else o.value) for o in e.ops]
            ent, code, msg = validate_alteration(pairs, ops)
            if ent is not None and ent in seen:
                code, msg = ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {dict(ent)}"
            results.append([code, msg])
            if code != ErrorCode.NONE:
                continue
            seen[ent] = i
            current = store.entities.get(ent, {})
            for key, value in ops:
                if value is None:
                    if key not in current:
                        continue
                elif current.get(key) == value:
                    continue   # Kafka writes only what changes
                recs.append((R.CLIENT_QUOTA, R.CLIENT_QUOTA.cls(
                    entity=[RecEntity(entity_type=t, entity_name=n) for t, n in ent], key=key,
                    value=0.0 if value is None else float(value), remove=value is None)))
        if recs and not req.validate_only:
            try:
                await ctx.broker.submit_metadata(recs)
            except Exception as exc:  # noqa: BLE001 - the entries' answers carry the failure
                code = exc.code if isinstance(exc, KafkaError) else ErrorCode.NOT_CONTROLLER
                log.warning("AlterClientQuotas from %s: commit failed: %s", ctx.peer, exc)
                results = [[code, str(exc)] if c == ErrorCode.NONE else [c, m] for c, m in results]
            else:
                log.info("altered client quotas (%d record(s)) for %s", len(recs), ctx.peer)
    return ctx.response(throttle_time_ms=0, entries=[
        Entry(error_code=code, error_message=msg,
              entity=[Entity(entity_type=x.entity_type, entity_name=x.entity_name) for x in e.entity])
        for e, (code, msg) in zip(req.entries, results)])
