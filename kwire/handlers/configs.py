"""DescribeConfigs (key 32) 0-4, AlterConfigs (key 33) 0-2, IncrementalAlterConfigs (key 44) 0-1.

Topic (resource type 2) and broker (4) configs with Kafka's names and defaults
(kwire.config). Sources as Kafka reports them: DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG; synonyms (v1+) and
config types (v3+). AlterConfigs replaces a resource's whole dynamic set;
IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT. Changes are ConfigRecords in the
metadata log. Left out: broker logger configs (type 8), client quotas, documentation text.
"""
from __future__ import annotations

from dataclasses import dataclass

from kwire.config import BROKER_DEFAULTS, TOPIC_CONFIGS, broker_type, validate_topic_config
from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.metadata.records import RESOURCE_BROKER, RESOURCE_TOPIC

DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_CONFIGS = {"cleanup.policy"}


@dataclass
class Entry:
    name: str
    value: str | None
    source: int
    synonyms: list  # [(name, value, source)]


def _str(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def config_type(name: str) -> int:
    """Kafka's ConfigType: BOOLEAN 1, STRING 2, INT 3, SHORT 4, LONG 5, DOUBLE 6, LIST 7."""
    if name in LIST_CONFIGS:
        return 7
    t = TOPIC_CONFIGS[name][2] if name in TOPIC_CONFIGS else broker_type(name)
    return {bool: 1, str: 2, int: 5, float: 6}.get(t, 2)


def describe_topic_entries(b, topic, overrides: dict | None = None) -> list[Entry]:
    dyn_default = b.image.broker_configs.get("", {})
    out = []
    for name, (bkey, dflt, _t) in sorted(TOPIC_CONFIGS.items()):
        syn = []
        explicit = overrides if overrides is not None else (topic.configs if topic else {})
        if name in explicit and explicit[name] is not None:
            syn.append((name, explicit[name], DYNAMIC_TOPIC_CONFIG))
        if bkey in dyn_default:
            syn.append((bkey, dyn_default[bkey], DYNAMIC_DEFAULT_BROKER_CONFIG))
        if not b.config.is_default(bkey):
            syn.append((bkey, _str(b.config.get(bkey)), STATIC_BROKER_CONFIG))
        syn.append((bkey, _str(dflt), DEFAULT_CONFIG))
        value, source = syn[0][1], syn[0][2]
        if source == DEFAULT_CONFIG:
            value = _str(b.config.topic_default(name))
        out.append(Entry(name, value, source, syn))
    return out


def describe_broker_entries(b, broker_name: str) -> list[Entry]:
    dyn_node = b.image.broker_configs.get(broker_name, {})
    dyn_default = b.image.broker_configs.get("", {})
    out = []
    for name in sorted(BROKER_DEFAULTS):
        syn = []
        if name in dyn_node:
            syn.append((name, dyn_node[name], DYNAMIC_BROKER_CONFIG))
        if name in dyn_default:
            syn.append((name, dyn_default[name], DYNAMIC_DEFAULT_BROKER_CONFIG))
        if not b.config.is_default(name):
            syn.append((name, _str(b.config.get(name)), STATIC_BROKER_CONFIG))
        syn.append((name, _str(BROKER_DEFAULTS[name]), DEFAULT_CONFIG))
        out.append(Entry(name, syn[0][1], syn[0][2], syn))
    return out


@handles("DescribeConfigs")
async def describe_configs(ctx: RequestContext, req):
    b = ctx.broker
    v = ctx.version
    R = ctx.struct("DescribeConfigsResult")
    C = ctx.struct("DescribeConfigsResourceResult")
    S = ctx.struct("DescribeConfigsSynonym")
    out = []
    for res in req.resources:
        r = R(error_code=0, error_message=None, resource_type=res.resource_type,
              resource_name=res.resource_name, configs=[])
        out.append(r)
        if res.resource_type == RESOURCE_TOPIC:
            t = b.image.topics.get(res.resource_name)
            if t is None:
                r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                r.error_message = f"Topic {res.resource_name} does not exist"
                continue
            entries = describe_topic_entries(b, t)
        elif res.resource_type == RESOURCE_BROKER:
            if res.resource_name not in ("", str(b.node_id)):
                r.error_code = ErrorCode.INVALID_REQUEST
                r.error_message = f"Unexpected broker id, expected {b.node_id} or empty string, but received {res.resource_name}"
                continue
            entries = describe_broker_entries(b, res.resource_name)
        else:
            r.error_code = ErrorCode.INVALID_REQUEST
            r.error_message = f"Unsupported resource type {res.resource_type}"
            continue
        keys = set(res.configuration_keys) if res.configuration_keys is not None else None
        for e in entries:
            if keys is not None and e.name not in keys:
                continue
            c = C(name=e.name, value=e.value, read_only=False, config_source=e.source,
                  is_default=e.source == DEFAULT_CONFIG, is_sensitive=False,
                  config_type=config_type(e.name))
            if v >= 1 and req.include_synonyms:
                c.synonyms = [S(name=n, value=val, source=s) for n, val, s in e.synonyms]
            r.configs.append(c)
    return ctx.response(throttle_time_ms=0, results=out)


def _check_resource(b, rtype: int, name: str) -> tuple[int, str | None]:
    if rtype == RESOURCE_TOPIC:
        if name not in b.image.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist"
        return 0, None
    if rtype == RESOURCE_BROKER:
        if name not in ("", str(b.node_id)):
            return ErrorCode.INVALID_REQUEST, f"Unexpected broker id {name}"
        return 0, None
    return ErrorCode.INVALID_REQUEST, f"Unsupported resource type {rtype}"


def _validate(rtype: int, name: str, value: str | None) -> str | None:
    if rtype == RESOURCE_TOPIC:
        try:
            validate_topic_config(name, value)
        except KeyError:
            return f"Unknown topic config name: {name}"
        except ValueError as exc:
            return str(exc)
        return None
    if name not in BROKER_DEFAULTS:
        return f"Unknown broker config name: {name}"
    return None


async def _apply(ctx: RequestContext, req, changes_for):
    b = ctx.broker
    R = ctx.struct("AlterConfigsResourceResponse")
    out = []
    for res in req.resources:
        r = R(error_code=0, error_message=None, resource_type=res.resource_type, resource_name=res.resource_name)
        out.append(r)
        code, msg = _check_resource(b, res.resource_type, res.resource_name)
        if code:
            r.error_code, r.error_message = code, msg
            continue
        changes, err = changes_for(b, res)
        if err:
            r.error_code, r.error_message = ErrorCode.INVALID_CONFIG, err
            continue
        for k, val in changes.items():
            err = _validate(res.resource_type, k, val)
            if err:
                r.error_code, r.error_message = ErrorCode.INVALID_CONFIG, err
                break
        if r.error_code or req.validate_only:
            continue
        try:
            await b.set_configs(res.resource_type, res.resource_name, changes)
        except KafkaError as exc:
            r.error_code, r.error_message = exc.code, str(exc)
    return ctx.response(throttle_time_ms=0, responses=out)


def _current(b, rtype: int, name: str) -> dict[str, str]:
    if rtype == RESOURCE_TOPIC:
        return dict(b.image.topics[name].configs)
    return dict(b.image.broker_configs.get(name, {}))


@handles("AlterConfigs")
async def alter_configs(ctx: RequestContext, req):
    def changes_for(b, res):
        new = {c.name: c.value for c in res.configs}
        changes: dict = {k: None for k in _current(b, res.resource_type, res.resource_name) if k not in new}
        changes.update(new)
        return changes, None
    return await _apply(ctx, req, changes_for)


@handles("IncrementalAlterConfigs")
async def incremental_alter_configs(ctx: RequestContext, req):
    def changes_for(b, res):
        cur = _current(b, res.resource_type, res.resource_name)
        changes: dict = {}
        for c in res.configs:
            op = c.config_operation
            if op == SET:
                changes[c.name] = c.value
            elif op == DELETE:
                changes[c.name] = None
            elif op in (APPEND, SUBTRACT):
                if c.name not in LIST_CONFIGS:
                    return None, f"Config value append is not allowed for config key: {c.name}"
                base = changes.get(c.name, cur.get(c.name))
                if base is None and res.resource_type == RESOURCE_TOPIC:
                    base = str(b.config.topic_default(c.name))
                items = [x for x in (base or "").split(",") if x]
                vals = [x for x in (c.value or "").split(",") if x]
                if op == APPEND:
                    items += [x for x in vals if x not in items]
                else:
                    items = [x for x in items if x not in vals]
                changes[c.name] = ",".join(items)
            else:
                return None, f"Unknown config operation {op}"
        return changes, None
    return await _apply(ctx, req, changes_for)
