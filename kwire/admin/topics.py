"""``kwire topics``: kafka-topics.sh's flags and output.

--list, --describe (``Topic: t\tTopicId: ..\tPartitionCount: n\tReplicationFactor: r\tConfigs: ..``
then one ``\tTopic: t\tPartition: p\tLeader: l\tReplicas: ..\tIsr: ..`` line per partition),
--create (``Created topic t.``), --alter --partitions N, --delete; ``--topic`` is a regular
expression for every action but --create, as in Kafka. Left out: --replica-assignment and
the reassignment columns (kwire moves replicas with AlterPartitionReassignments, not here).
"""
from __future__ import annotations

import argparse
import re

from kwire.admin.common import add_common, client, run
from kwire.cmdline import UsageError

TOPIC, DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG = 2, 5, 1
INTERNAL = ("__consumer_offsets", "__transaction_state", "__share_group_state")

EPILOG = """\
examples:
  kwire topics --list
  kwire topics --create --topic orders --partitions 3 --replication-factor 1 --config retention.ms=86400000
  kwire topics --describe --topic orders
  kwire topics --alter --topic orders --partitions 6
  kwire topics --delete --topic 'test-.*'
"""


def add_parser(sub) -> None:
    p = sub.add_parser("topics", help="list, describe, create, alter, delete topics (kafka-topics.sh)",
                       description="Create, delete, describe or change topics, as kafka-topics.sh does.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(p)
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--list", action="store_true", help="list topic names")
    act.add_argument("--describe", action="store_true", help="partitions, leaders, replicas, ISR and configs")
    act.add_argument("--create", action="store_true", help="create a topic (--topic, --partitions, ...)")
    act.add_argument("--alter", action="store_true", help="add partitions to a topic (--partitions)")
    act.add_argument("--delete", action="store_true", help="delete topics")
    p.add_argument("--topic", metavar="TOPIC", help="the topic (a regular expression except for --create)")
    p.add_argument("--partitions", type=int, metavar="N",
                   help="partitions of a new topic (default: the broker's num.partitions), or the new count for --alter")
    p.add_argument("--replication-factor", type=int, metavar="N",
                   help="replicas of each partition of a new topic (default: default.replication.factor)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a topic config of a new topic (repeatable), e.g. --config cleanup.policy=compact")
    p.add_argument("--if-not-exists", action="store_true", help="--create: no error if the topic exists")
    p.add_argument("--if-exists", action="store_true", help="--alter/--delete/--describe: no error if it does not")
    p.add_argument("--exclude-internal", action="store_true", help="leave internal topics out of --list/--describe")
    p.add_argument("--under-replicated-partitions", action="store_true",
                   help="--describe: only partitions whose ISR is smaller than their replicas")
    p.add_argument("--unavailable-partitions", action="store_true",
                   help="--describe: only partitions whose leader is not available")
    p.add_argument("--under-min-isr-partitions", action="store_true",
                   help="--describe: only partitions whose ISR is smaller than min.insync.replicas")
    p.add_argument("--at-min-isr-partitions", action="store_true",
                   help="--describe: only partitions whose ISR equals min.insync.replicas")
    p.add_argument("--topics-with-overrides", action="store_true",
                   help="--describe: only topics that override a config")
    p.set_defaults(run=lambda args: run("topics", _main, args))


def _main(args) -> int:
    if (args.create or args.alter) and not args.topic:
        raise UsageError("kwire topics: --create and --alter need --topic")
    if args.delete and not args.topic:
        raise UsageError("kwire topics: --delete needs --topic")
    if args.alter and args.partitions is None:
        raise UsageError("kwire topics: --alter needs --partitions N (topic configs: kwire configs --alter)")
    configs = {}
    for item in args.config:
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise UsageError(f"kwire topics: --config needs KEY=VALUE, got {item!r}")
        configs[k.strip()] = v.strip()
    with client(args, "topics") as c:
        if args.create:
            return _create(c, args, configs)
        names = _matching(c, args)
        if args.list:
            for n in names:
                print(n)
            return 0
        if not names and args.topic and not args.if_exists:
            from kwire.admin.client import AdminError  # noqa: PLC0415 - start-up time (kwire.admin)

            raise AdminError(f"Topic '{args.topic}' does not exist as expected")
        if args.describe:
            _describe(c, args, names)
        elif args.alter:
            _alter(c, args, names)
        elif args.delete:
            _delete(c, names)
    return 0


def _matching(c, args) -> list[str]:
    md = c.metadata(None)
    names = sorted(t.name for t in md.topics if t.error_code == 0 and t.name)
    if args.exclude_internal:
        names = [n for n in names if n not in INTERNAL]
    if args.topic:
        try:
            pat = re.compile(args.topic)
        except re.error as exc:
            raise UsageError(f"kwire topics: --topic {args.topic!r} is not a regular expression ({exc})") from None
        names = [n for n in names if pat.fullmatch(n)]
    return names


def _create(c, args, configs: dict) -> int:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)
    from kwire.errors import ErrorCode  # noqa: PLC0415 - start-up time (kwire.admin)

    if args.partitions is not None and args.partitions < 1:
        raise UsageError("kwire topics: The partitions must be greater than 0")
    if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise UsageError("kwire topics: The replication factor must be between 1 and 32767 inclusive")
    CT = c.struct("CreateTopics", "CreatableTopic")
    CC = c.struct("CreateTopics", "CreatableTopicConfig")
    topic = CT(name=args.topic, num_partitions=-1 if args.partitions is None else args.partitions,
               replication_factor=-1 if args.replication_factor is None else args.replication_factor,
               assignments=[], configs=[CC(name=k, value=v) for k, v in configs.items()])
    body, _ = c.call("CreateTopics", topics=[topic], timeout_ms=int(args.timeout * 1000), validate_only=False)
    for t in body.topics:
        if t.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return 0
        if t.error_code:
            msg = t.error_message or f"topic {t.name}"
            raise AdminError(f"{error_name(t.error_code)}: {msg}", t.error_code)
    print(f"Created topic {args.topic}.")
    return 0


def _configs(c, names: list[str]) -> dict[str, list]:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    R = c.struct("DescribeConfigs", "DescribeConfigsResource")
    body, _ = c.call("DescribeConfigs", resources=[R(resource_type=TOPIC, resource_name=n, configuration_keys=None)
                                                   for n in names], include_synonyms=False)
    out = {}
    for r in body.results:
        if r.error_code:
            raise AdminError(f"DescribeConfigs {r.resource_name}: {error_name(r.error_code)}", r.error_code)
        out[r.resource_name] = r.configs
    return out


def _source(entry, version: int) -> int:
    if version == 0:
        return DEFAULT_CONFIG if entry.is_default else DYNAMIC_TOPIC_CONFIG
    return entry.config_source


def _describe(c, args, names: list[str]) -> None:
    md = c.metadata(names)
    live = set(c.brokers)
    by_name = {t.name: t for t in md.topics}
    configs = _configs(c, names) if names else {}
    cfg_version = c.version(c.any_broker(), "DescribeConfigs")
    report = (args.under_replicated_partitions or args.unavailable_partitions or args.under_min_isr_partitions
              or args.at_min_isr_partitions)
    for name in names:
        t = by_name.get(name)
        if t is None or t.error_code:
            continue
        entries = configs.get(name, [])
        overrides = [e for e in entries if _source(e, cfg_version) != DEFAULT_CONFIG]
        if args.topics_with_overrides and not any(_source(e, cfg_version) == DYNAMIC_TOPIC_CONFIG for e in entries):
            continue
        parts = sorted(t.partitions, key=lambda p: p.partition_index)
        rf = len(parts[0].replica_nodes) if parts else 0
        if not report:
            topic_id = getattr(t, "topic_id", None)
            line = f"Topic: {name}"
            if topic_id is not None and topic_id.int != 0:
                line += f"\tTopicId: {_kafka_uuid(topic_id)}"
            line += f"\tPartitionCount: {len(parts)}\tReplicationFactor: {rf}\tConfigs: " + ",".join(
                f"{e.name}={e.value}" for e in overrides if e.value is not None)
            print(line)
        if args.topics_with_overrides:
            continue
        min_isr = next((int(e.value) for e in entries if e.name == "min.insync.replicas" and e.value), 1)
        for p in parts:
            leader_ok = p.leader_id >= 0 and p.leader_id in live
            if report and not (
                    (args.under_replicated_partitions and len(p.isr_nodes) < len(p.replica_nodes))
                    or (args.unavailable_partitions and not leader_ok)
                    or (args.under_min_isr_partitions and (p.leader_id < 0 or len(p.isr_nodes) < min_isr))
                    or (args.at_min_isr_partitions and len(p.isr_nodes) == min_isr)):
                continue
            leader = p.leader_id if p.leader_id >= 0 else "none"
            print(f"\tTopic: {name}\tPartition: {p.partition_index}\tLeader: {leader}"
                  f"\tReplicas: {','.join(map(str, p.replica_nodes))}\tIsr: {','.join(map(str, p.isr_nodes))}"
                  f"\tElr: N/A\tLastKnownElr: N/A")


def _kafka_uuid(u) -> str:
    """Kafka prints topic ids in URL-safe base64 without padding."""
    import base64  # noqa: PLC0415 - start-up time: ~2 ms of kwire --help (kwire.admin)

    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _alter(c, args, names: list[str]) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    T = c.struct("CreatePartitions", "CreatePartitionsTopic")
    body, _ = c.call("CreatePartitions", topics=[T(name=n, count=args.partitions, assignments=None) for n in names],
                     timeout_ms=int(args.timeout * 1000), validate_only=False)
    for r in body.results:
        if r.error_code:
            raise AdminError(f"{error_name(r.error_code)}: {r.error_message or r.name}", r.error_code)


def _delete(c, names: list[str]) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    internal = [n for n in names if n in INTERNAL]
    if internal:
        raise AdminError(f"Topic {internal[0]} is a kafka internal topic and is not allowed to be marked for deletion.")
    body, _ = c.call("DeleteTopics", topic_names=names, timeout_ms=int(c.timeout * 1000))
    for r in body.responses:
        if r.error_code:
            raise AdminError(f"DeleteTopics {r.name}: {error_name(r.error_code)}", r.error_code)
