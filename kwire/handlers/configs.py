"""DescribeConfigs (key 32) 0-4, AlterConfigs (key 33) 0-2, IncrementalAlterConfigs (key 44) 0-1,
ListConfigResources (key 74) 0-1.

Topic (resource type 2), broker (4) and group (32) configs, read through the one config table
(kwire.config_keys): every key Kafka 4 knows, with Kafka's types, defaults and validators.
DescribeConfigs reports each value's true source (TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG), read_only
as Kafka does (broker keys that cannot change at run time), is_sensitive (PASSWORD keys, value
null), synonyms in Kafka's order (v1+), config types (v3+) and documentation (v3+, on request);
see kwire.handlers.config_entries. The broker resource "" lists the cluster-default dynamic
configs only, as Kafka does.

AlterConfigs replaces a resource's whole dynamic set; IncrementalAlterConfigs applies SET,
DELETE, APPEND and SUBTRACT (list-typed keys; duplicates are not appended, and subtracting the
last value leaves an empty list). Broker keys are refused as Kafka's DynamicBrokerConfig refuses
them (INVALID_REQUEST): read-only keys, per-broker keys at the cluster default, TLS store keys
without a listener prefix, values of the wrong type; a key Kafka knows but kwire does not use is
validated, stored and described. Topic and group keys: unknown names and bad values are
INVALID_CONFIG with Kafka's messages. message.format.version (Kafka 3.x) is accepted and stored,
and changes nothing. Changes are ConfigRecords in the metadata log. As on a Kafka 4.1+ cluster
(KIP-966, ELR on), the cluster holds a cluster-level min.insync.replicas from its first
registration on; a broker-level one cannot be set or removed and the cluster-level one cannot be
removed (INVALID_CONFIG, kwire.metadata.config_control).

With an authorizer: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, the cluster (broker
resources) or the group (TOPIC_, CLUSTER_, GROUP_AUTHORIZATION_FAILED).

Left out: broker logger configs (type 8), client metrics resources (type 16), listener-prefixed
broker keys (listener.name.X.key), config providers and alter-config policies.
"""
from __future__ import annotations

from kwire.broker import validate_topic_name
from kwire.config import BROKER, GROUP, TOPIC
from kwire.configdef import ConfigError, Type
from kwire.errors import INVALID_REQUEST_MESSAGE, ErrorCode, KafkaError
from kwire.handlers import RequestContext, handles
from kwire.handlers.config_entries import (
    DEFAULT_CONFIG, Describer, config_type, describe_topic_entries,
)
from kwire.metadata.config_control import elr_enabled, min_isr_transition_error
from kwire.metadata.records import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC
from kwire.security.authorizer import config_resource_error, denied_message
from kwire.security.operations import AclOperation as Op

RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS = 8, 16
# the resource types Kafka's ConfigResource.Type knows (UNKNOWN aside)
KAFKA_RESOURCE_TYPES = frozenset({RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS,
                                  RESOURCE_GROUP})
RESOURCE_NAMES = {RESOURCE_TOPIC: "TOPIC", RESOURCE_BROKER: "BROKER", RESOURCE_BROKER_LOGGER: "BROKER_LOGGER",
                  RESOURCE_CLIENT_METRICS: "CLIENT_METRICS", RESOURCE_GROUP: "GROUP"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: changed at run time only with a listener prefix.
TLS_STORE_KEYS = {"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
                  "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
                  "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates"}


def _broker_name_error(b, name: str) -> str | None:
    if name == "":
        return None
    try:
        node = int(name)
    except ValueError:
        return f"Broker id must be an integer, but it is: {name}"
    if node != b.node_id:
        return f"Unexpected broker id, expected {b.node_id} or empty string, but received {name}"
    return None


# --------------------------------------------------------------------------- DescribeConfigs
@handles("DescribeConfigs")
async def describe_configs(ctx: RequestContext, req):
    b = ctx.broker
    v = ctx.version
    R = ctx.struct("DescribeConfigsResult")
    C = ctx.struct("DescribeConfigsResourceResult")
    S = ctx.struct("DescribeConfigsSynonym")
    describer = Describer(b)
    synonyms = v >= 1 and req.include_synonyms
    docs = v >= 3 and req.include_documentation
    out = []
    if any(res.resource_type not in KAFKA_RESOURCE_TYPES for res in req.resources):
        # Kafka's KafkaApis authorizes by resource type before describing anything and throws
        # InvalidRequestException on a type it does not know: the whole request fails, every
        # resource answered INVALID_REQUEST with the error's default message and no configs
        return ctx.response(throttle_time_ms=0, results=[
            R(error_code=ErrorCode.INVALID_REQUEST, error_message=INVALID_REQUEST_MESSAGE,
              resource_type=res.resource_type, resource_name=res.resource_name, configs=[])
            for res in req.resources])
    for res in req.resources:
        # Kafka's ConfigHelper leaves the message at its default, "" (not null), when all is well
        r = R(error_code=0, error_message="", resource_type=res.resource_type,
              resource_name=res.resource_name, configs=[])
        out.append(r)
        name = res.resource_name
        denied = config_resource_error(ctx, res.resource_type, name, Op.DESCRIBE_CONFIGS)
        if denied:   # Kafka: the error's default message ("Topic authorization failed.")
            r.error_code, r.error_message = denied, denied_message(denied)
            continue
        if res.resource_type == RESOURCE_TOPIC:
            err = validate_topic_name(name)
            if err:
                r.error_code, r.error_message = ErrorCode.INVALID_TOPIC_EXCEPTION, err
                continue
            t = b.image.topics.get(name)
            if t is None:
                # Kafka sets only the code here; the message stays "" (seen side by side with 4.3.1)
                r.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            entries = describer.topic_entries(t)
        elif res.resource_type == RESOURCE_BROKER:
            err = _broker_name_error(b, name)
            if err:
                r.error_code, r.error_message = ErrorCode.INVALID_REQUEST, err
                continue
            entries = describer.broker_entries(name)
        elif res.resource_type == RESOURCE_GROUP:
            if not name:
                r.error_code, r.error_message = ErrorCode.INVALID_REQUEST, "Group name must not be empty"
                continue
            entries = describer.group_entries(name)
        else:
            r.error_code = ErrorCode.INVALID_REQUEST
            r.error_message = f"Unsupported resource type: {RESOURCE_NAMES.get(res.resource_type, 'UNKNOWN')}"
            continue
        keys = set(res.configuration_keys) if res.configuration_keys else None
        for e in entries:
            if keys is not None and e.name not in keys:
                continue
            c = C(name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
                  is_default=e.source == DEFAULT_CONFIG, is_sensitive=e.sensitive, config_type=e.config_type,
                  documentation=e.doc if docs else None)
            if synonyms:
                c.synonyms = [S(name=n, value=val, source=s) for n, val, s in e.synonyms]
            r.configs.append(c)
    return ctx.response(throttle_time_ms=0, results=out)


# --------------------------------------------------------------------------- validation
class Refused(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def _check_resource(b, rtype: int, name: str) -> None:
    if rtype == RESOURCE_TOPIC:
        if name not in b.image.topics:
            raise Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist")
    elif rtype == RESOURCE_BROKER:
        err = _broker_name_error(b, name)
        if err:
            raise Refused(ErrorCode.INVALID_REQUEST, err)
    elif rtype == RESOURCE_GROUP:
        if not name:
            raise Refused(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    else:
        raise Refused(ErrorCode.INVALID_REQUEST,
                      f"Unsupported resource type: {RESOURCE_NAMES.get(rtype, 'UNKNOWN')}")


def _table(rtype: int) -> dict:
    return {RESOURCE_TOPIC: TOPIC, RESOURCE_BROKER: BROKER, RESOURCE_GROUP: GROUP}[rtype]


def _validate_broker(b, name: str, changes: dict) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs, in its order; INVALID_REQUEST on refusal,
    with the message alone, as a Kafka 4.3 broker answers it for a node and for the default."""
    def refuse(msg: str):
        raise Refused(ErrorCode.INVALID_REQUEST, msg)
    unknown = sorted(k for k in changes if k not in BROKER)
    if unknown:
        raise Refused(ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {unknown[0]}")
    read_only = sorted(k for k in changes if not BROKER[k].dynamic)
    if read_only:
        refuse(f"Cannot update these configs dynamically: [{', '.join(read_only)}]")
    tls = sorted(k for k in changes if k in TLS_STORE_KEYS)
    if tls:
        refuse("These security configs can be dynamically updated only per-listener using the listener "
               f"prefix: [{', '.join(tls)}]")
    for k, v in changes.items():
        if v is not None:
            try:
                BROKER[k].parse(v)
            except ConfigError as exc:
                refuse(str(exc))
    if name == "":
        per_broker = sorted(k for k in changes if BROKER[k].mode == "per-broker")
        if per_broker:
            refuse("Cannot update these configs at default cluster level, broker id must be specified: "
                   f"[{', '.join(per_broker)}]")


def _validate_topic(new: dict) -> None:
    for k, v in new.items():
        if k not in TOPIC:
            raise Refused(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {k}")
        if v is not None:
            try:
                TOPIC[k].parse(v)
            except ConfigError as exc:
                raise Refused(ErrorCode.INVALID_CONFIG, str(exc)) from None
    lo, hi = new.get("min.compaction.lag.ms"), new.get("max.compaction.lag.ms")
    lo = TOPIC["min.compaction.lag.ms"].parse(lo) if lo is not None else 0
    hi = TOPIC["max.compaction.lag.ms"].parse(hi) if hi is not None else TOPIC["max.compaction.lag.ms"].default
    if lo > hi:
        raise Refused(ErrorCode.INVALID_CONFIG, f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
                                                f"max.compaction.lag.ms ({hi})")


# GroupConfig.validateValues: group key -> (broker key of its minimum, broker key of its maximum)
_GROUP_BOUNDS = {
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
    "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms",
                                      "group.streams.max.heartbeat.interval.ms"),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas"),
    "streams.task.offset.interval.ms": ("group.streams.min.task.offset.interval.ms", None),
    **{f"{kind}.assignment.interval.ms": (f"group.{kind}.min.assignment.interval.ms",
                                          f"group.{kind}.max.assignment.interval.ms")
       for kind in ("consumer", "share", "streams")},
}


def _validate_group(b, new: dict) -> None:
    parsed = {}
    for k, v in new.items():
        if k not in GROUP:
            raise Refused(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {k}")
        if v is not None:
            try:
                parsed[k] = GROUP[k].parse(v)
            except ConfigError as exc:
                raise Refused(ErrorCode.INVALID_CONFIG, str(exc)) from None
    eff = {k: parsed.get(k, b.config.get(s.synonyms[0]) if s.synonyms else s.default) for k, s in GROUP.items()}
    for k, (lo, hi) in _GROUP_BOUNDS.items():
        if k not in parsed:
            continue
        if lo is not None and eff[k] < b.config.get(lo):
            raise Refused(ErrorCode.INVALID_CONFIG, f"{k} must be greater than or equal to {lo}")
        if hi is not None and eff[k] > b.config.get(hi):
            raise Refused(ErrorCode.INVALID_CONFIG, f"{k} must be less than or equal to {hi}")
    for kind in ("consumer", "share", "streams"):
        if eff[f"{kind}.session.timeout.ms"] <= eff[f"{kind}.heartbeat.interval.ms"]:
            raise Refused(ErrorCode.INVALID_CONFIG, f"{kind}.session.timeout.ms must be greater than "
                                                    f"{kind}.heartbeat.interval.ms")


def _current(b, rtype: int, name: str) -> dict[str, str]:
    if rtype == RESOURCE_TOPIC:
        return dict(b.image.topics[name].configs)
    if rtype == RESOURCE_GROUP:
        return dict(b.image.group_configs.get(name, {}))
    return dict(b.image.broker_configs.get(name, {}))


async def _apply(ctx: RequestContext, req, changes_for):
    """Validate each resource's changes ({key: new value or None}) and commit them."""
    b = ctx.broker
    R = ctx.struct("AlterConfigsResourceResponse")
    out = []
    for res in req.resources:
        r = R(error_code=0, error_message=None, resource_type=res.resource_type, resource_name=res.resource_name)
        out.append(r)
        denied = config_resource_error(ctx, res.resource_type, res.resource_name, Op.ALTER_CONFIGS)
        if denied:   # Kafka: the error's default message ("Topic authorization failed.")
            r.error_code, r.error_message = denied, denied_message(denied)
            continue
        try:
            _check_resource(b, res.resource_type, res.resource_name)
            cur = _current(b, res.resource_type, res.resource_name)
            changes = changes_for(b, res, cur)
            if res.resource_type == RESOURCE_BROKER:
                _validate_broker(b, res.resource_name, {k: v for k, v in changes.items()
                                                         if v is not None or k in cur})
                elr = min_isr_transition_error(res.resource_name, changes) if elr_enabled(b.image) else None
                if elr:   # the controller's check, after the broker's own validation of the values
                    raise Refused(ErrorCode.INVALID_CONFIG, elr)
            else:
                new = {**cur, **changes}
                new = {k: v for k, v in new.items() if v is not None}
                check = {k: new.get(k) for k in set(changes) | set(new)}
                if res.resource_type == RESOURCE_TOPIC:
                    _validate_topic(check)
                else:
                    _validate_group(b, check)
        except Refused as exc:
            r.error_code, r.error_message = exc.code, exc.message
            continue
        if req.validate_only:
            continue
        changes = {k: v for k, v in changes.items() if v is not None or k in cur}
        try:
            await b.set_configs(res.resource_type, res.resource_name, changes)
        except KafkaError as exc:
            r.error_code, r.error_message = exc.code, str(exc)
    return ctx.response(throttle_time_ms=0, responses=out)


@handles("AlterConfigs")
async def alter_configs(ctx: RequestContext, req):
    def changes_for(b, res, cur):
        new = {c.name: c.value for c in res.configs}
        changes: dict = {k: None for k in cur if k not in new}
        changes.update(new)
        return changes
    return await _apply(ctx, req, changes_for)


def _list_parts(value: str | None) -> list[str]:
    return [x for x in (value or "").split(",") if x]


@handles("IncrementalAlterConfigs")
async def incremental_alter_configs(ctx: RequestContext, req):
    def changes_for(b, res, cur):
        table = _table(res.resource_type)
        changes: dict = {}
        for c in res.configs:
            op = c.config_operation
            if op == SET:
                changes[c.name] = c.value
            elif op == DELETE:
                changes[c.name] = None
            elif op in (APPEND, SUBTRACT):
                spec = table.get(c.name)
                if spec is None or spec.type is not Type.LIST:
                    if res.resource_type == RESOURCE_BROKER:   # the broker's own check (ConfigAdminManager)
                        verb = "append" if op == APPEND else "subtract"
                        raise Refused(ErrorCode.INVALID_REQUEST,
                                      f"Config value {verb} is not allowed for config key: {c.name}")
                    raise Refused(ErrorCode.INVALID_CONFIG,
                                  f"Can't {OP_NAMES[op]} to key {c.name} because its type is not LIST.")
                base = changes[c.name] if c.name in changes else cur.get(c.name)
                if base is None:
                    dflt = b.config.topic_default(c.name) if res.resource_type == RESOURCE_TOPIC else \
                        b.config.get(c.name) if res.resource_type == RESOURCE_BROKER else spec.default
                    base = ",".join(dflt or [])
                items = _list_parts(base)
                for x in _list_parts(c.value):
                    if op == APPEND and x not in items:
                        items.append(x)
                    elif op == SUBTRACT and x in items:
                        items.remove(x)
                changes[c.name] = ",".join(items)
            else:
                raise Refused(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
        return changes
    return await _apply(ctx, req, changes_for)


# --------------------------------------------------------------------------- ListConfigResources
SUPPORTED_LIST_TYPES = (RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS,
                        RESOURCE_GROUP)


@handles("ListConfigResources")
async def list_config_resources(ctx: RequestContext, req):
    """v0 (ListClientMetricsResources) lists client metrics resources (kwire has none); v1 lists
    topics, brokers (and their loggers), client metrics resources and groups with configs,
    filtered by resource type (empty: all)."""
    b = ctx.broker
    C = ctx.struct("ConfigResource")
    if config_resource_error(ctx, RESOURCE_BROKER, "", Op.DESCRIBE_CONFIGS):   # Kafka: on the cluster
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    if ctx.version == 0:
        return ctx.response(throttle_time_ms=0, error_code=0, config_resources=[])
    types = list(req.resource_types) or list(SUPPORTED_LIST_TYPES)
    if any(t not in SUPPORTED_LIST_TYPES for t in types):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, config_resources=[])
    out = []
    for t in types:
        if t == RESOURCE_TOPIC:
            names = sorted(b.image.topics)
        elif t in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER):
            names = [str(n) for n in sorted(b.image.brokers)]
        elif t == RESOURCE_GROUP:
            names = sorted(g for g, cfgs in b.image.group_configs.items() if cfgs)
        else:
            names = []
        out += [C(resource_name=n, resource_type=t) for n in names]
    return ctx.response(throttle_time_ms=0, error_code=0, config_resources=out)


__all__ = ["config_type", "describe_topic_entries"]
