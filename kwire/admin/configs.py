"""``kwire configs``: kafka-configs.sh's flags and output, for topic, broker and group configs.

--describe prints ``Dynamic configs for topic t are:`` (``All configs ...`` with --all) then
``  name=value sensitive=false synonyms={SOURCE:name=value, ...}`` per config, sorted by name;
--alter --add-config k=v,k2=[a,b] --delete-config k3 sends IncrementalAlterConfigs and prints
``Completed updating config for topic t.``. Broker configs are asked of the broker itself
(--entity-name ID) or set cluster-wide (--entity-default). Users and clients: client quotas
(kwire.admin.quotas) and, for users, SCRAM credentials (kwire.admin.user_scram). Left out: IPs
and client-metrics entities, --add-config-file.
"""
from __future__ import annotations

import argparse

from kwire.admin import quotas, user_scram
from kwire.admin.common import add_common, client, parse_add_config, run
from kwire.cmdline import UsageError

TYPES = {"topics": 2, "brokers": 4, "groups": 32}
SINGULAR = {"topics": "topic", "brokers": "broker", "groups": "group", "users": "user"}
SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
           4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
           7: "CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
SET, DELETE = 0, 1

EPILOG = """\
examples:
  kwire configs --describe --entity-type topics --entity-name orders
  kwire configs --describe --topic orders --all
  kwire configs --alter --topic orders --add-config retention.ms=86400000,cleanup.policy=[compact,delete]
  kwire configs --alter --topic orders --delete-config retention.ms
  kwire configs --describe --broker 1
  kwire configs --alter --broker-defaults --add-config log.retention.ms=3600000
  kwire configs --alter --entity-type users --entity-name alice \
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
  kwire configs --describe --entity-type users
"""


def add_parser(sub) -> None:
    p = sub.add_parser("configs", help="describe and alter topic, broker and group configs (kafka-configs.sh)",
                       description="Describe or change configs, as kafka-configs.sh does.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(p)
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--describe", action="store_true", help="show configs (dynamic ones, or --all)")
    act.add_argument("--alter", action="store_true", help="set (--add-config) or remove (--delete-config) configs")
    p.add_argument("--entity-type", choices=sorted([*TYPES, *quotas.ENTITY_TYPES]),
                   help="topics, brokers, groups; users (quotas, SCRAM credentials) or clients (quotas)")
    p.add_argument("--entity-name", metavar="NAME", help="the topic, broker id, group, user or client id")
    p.add_argument("--entity-default", action="store_true",
                   help="brokers: the cluster-wide default; users / clients: the default quota entity")
    p.add_argument("--topic", metavar="TOPIC", help="short for --entity-type topics --entity-name TOPIC")
    p.add_argument("--broker", metavar="ID", help="short for --entity-type brokers --entity-name ID")
    p.add_argument("--broker-defaults", action="store_true", help="short for --entity-type brokers --entity-default")
    p.add_argument("--group", metavar="GROUP", help="short for --entity-type groups --entity-name GROUP")
    p.add_argument("--all", action="store_true", help="--describe: every config, not only the dynamic ones")
    p.add_argument("--add-config", action="append", default=[], metavar="K=V,K2=[A,B]",
                   help="--alter: configs to set (values with commas in square brackets)")
    p.add_argument("--delete-config", action="append", default=[], metavar="K,K2",
                   help="--alter: configs to remove (back to their defaults)")
    p.set_defaults(run=lambda args: run("configs", _main, args))


def _entity(args) -> tuple[str, str | None]:
    kinds = [k for k, on in (("topics", args.topic), ("brokers", args.broker or args.broker_defaults),
                             ("groups", args.group)) if on]
    if len(kinds) > 1 or (kinds and args.entity_type and args.entity_type != kinds[0]):
        raise UsageError("kwire configs: give one entity (--topic, --broker, --broker-defaults, --group or "
                         "--entity-type/--entity-name)")
    etype = kinds[0] if kinds else args.entity_type
    if etype is None:
        raise UsageError("kwire configs: say which entity: --entity-type topics|brokers|groups (or --topic, "
                         "--broker, --group)")
    name = args.topic or args.broker or args.group or args.entity_name
    if args.broker_defaults or args.entity_default:
        if etype not in ("brokers", *quotas.ENTITY_TYPES):
            raise UsageError("kwire configs: --entity-default is for brokers, users and clients only")
        name = ""
    if etype == "brokers" and name and not name.isdigit():
        raise UsageError(f"kwire configs: broker {name!r} is not a broker id (an integer)")
    return etype, name


def _main(args) -> int:
    etype, name = _entity(args)
    with client(args, "configs") as c:
        if etype in quotas.ENTITY_TYPES:
            return quotas.main(c, args, etype, name, scram=user_scram if etype == "users" else None)
        if args.describe:
            names = [name] if name is not None else _all_names(c, etype)
            for n in names:
                _describe(c, etype, n, args.all)
        else:
            if name is None:
                raise UsageError(f"kwire configs: --alter needs --entity-name (the {SINGULAR[etype]})")
            adds = {}
            for a in args.add_config:
                adds.update(parse_add_config(a))
            deletes = [k.strip() for d in args.delete_config for k in d.split(",") if k.strip()]
            if not adds and not deletes:
                raise UsageError("kwire configs: --alter needs --add-config or --delete-config")
            _alter(c, etype, name, adds, deletes)
    return 0


def _all_names(c, etype: str) -> list[str]:
    if etype == "topics":
        return sorted(t.name for t in c.metadata(None).topics if t.error_code == 0 and t.name)
    if etype == "brokers":
        c.metadata([])
        return [str(b) for b in sorted(c.brokers)]
    raise UsageError("kwire configs: --describe --entity-type groups needs --entity-name")


def _node_for(etype: str, name: str) -> int | None:
    return int(name) if etype == "brokers" and name else None


def _describe(c, etype: str, name: str, describe_all: bool) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    R = c.struct("DescribeConfigs", "DescribeConfigsResource")
    body, v = c.call("DescribeConfigs", node=_node_for(etype, name),
                     resources=[R(resource_type=TYPES[etype], resource_name=name, configuration_keys=None)],
                     include_synonyms=True, include_documentation=False)
    r = body.results[0]
    if r.error_code:
        raise AdminError(f"{error_name(r.error_code)}: {r.error_message or name}", r.error_code)
    if etype == "brokers" and name == "":
        wanted = 3
        print(f"{'All' if describe_all else 'Default'} configs for brokers in the cluster are:")
    else:
        wanted = {"topics": 1, "brokers": 2, "groups": 8}[etype]
        print(f"{'All' if describe_all else 'Dynamic'} configs for {SINGULAR[etype]} {name} are:")
    for e in sorted(r.configs, key=lambda e: e.name):
        source = e.config_source if v >= 1 else (5 if e.is_default else wanted)
        if not describe_all and source != wanted:
            continue
        value = "null" if e.is_sensitive or e.value is None else e.value
        syn = ", ".join(f"{SOURCES.get(s.source, s.source)}:{s.name}="
                        f"{'null' if e.is_sensitive or s.value is None else s.value}"
                        for s in (e.synonyms or []))
        print(f"  {e.name}={value} sensitive={'true' if e.is_sensitive else 'false'} synonyms={{{syn}}}")


def _alter(c, etype: str, name: str, adds: dict[str, str], deletes: list[str]) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    R = c.struct("IncrementalAlterConfigs", "AlterConfigsResource")
    A = c.struct("IncrementalAlterConfigs", "AlterableConfig")
    ops = [A(name=k, config_operation=SET, value=v) for k, v in adds.items()]
    ops += [A(name=k, config_operation=DELETE, value=None) for k in deletes]
    body, _ = c.call("IncrementalAlterConfigs", node=_node_for(etype, name),
                     resources=[R(resource_type=TYPES[etype], resource_name=name, configs=ops)], validate_only=False)
    r = body.responses[0]
    if r.error_code:
        raise AdminError(f"{error_name(r.error_code)}: {r.error_message or name}", r.error_code)
    if etype == "brokers" and name == "":
        print("Completed updating default config for brokers in the cluster.")
    else:
        print(f"Completed updating config for {SINGULAR[etype]} {name}.")
