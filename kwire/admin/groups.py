"""``kwire groups``: kafka-consumer-groups.sh's flags and output.

--list; --describe (offsets with lag, or --members / --state) for --group or --all-groups;
KIP-848 consumer groups through ConsumerGroupDescribe (kwire.admin.consumer_groups: group and
assignment epochs, member epochs, current and target assignments with --verbose);
--reset-offsets (--to-earliest, --to-latest, --to-current, --to-offset, --shift-by,
--to-datetime, --by-duration) with --dry-run or --execute, for an inactive group only, as
Kafka requires (a target past the log's end or before its start is moved inside it with Kafka's
WARN line); --delete; --delete-offsets (OffsetDelete, key 47); --list with --state [STATES] and
--type [TYPES] prints Kafka's GROUP / TYPE / STATE table. Offsets are committed the way Kafka's
admin client alters them: OffsetCommit to the group's coordinator with generation -1 and no
member. Left out: --from-file/--export (CSV plans) and share/streams groups.
"""
from __future__ import annotations

import argparse
import datetime as dt
import re
import sys

from kwire.admin.common import add_common, client, java_fmt, parse_topic_partitions, run
from kwire.cmdline import UsageError

EPILOG = """\
examples:
  kwire groups --list
  kwire groups --describe --group billing                 offsets, log end offsets, lag, owners
  kwire groups --describe --group billing --members --verbose
  kwire groups --describe --group billing --state --verbose   (consumer groups: epochs)
  kwire groups --reset-offsets --group billing --topic orders --to-earliest --dry-run
  kwire groups --reset-offsets --group billing --all-topics --shift-by -10 --execute
  kwire groups --delete --group billing
  kwire groups --delete-offsets --group billing --topic orders:0,1
  kwire groups --list --state --type                      GROUP, TYPE, STATE
"""

ACTIVE_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Assigning", "Reconciling")


def add_parser(sub) -> None:
    p = sub.add_parser("groups", help="list, describe (lag), reset offsets, delete consumer groups "
                                      "(kafka-consumer-groups.sh)",
                       description="Describe consumer groups, their offsets and lag; reset or delete them, as "
                                   "kafka-consumer-groups.sh does.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(p)
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--list", action="store_true", help="list group ids")
    act.add_argument("--describe", action="store_true", help="offsets and lag (default), --members or --state")
    act.add_argument("--reset-offsets", action="store_true", help="move the committed offsets of an inactive group")
    act.add_argument("--delete", action="store_true", help="delete groups (empty ones only)")
    act.add_argument("--delete-offsets", action="store_true",
                     help="delete the group's committed offsets of --topic TOPIC[:P,P] (repeatable)")
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="the group (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="every group")
    p.add_argument("--members", action="store_true", help="--describe: the members")
    p.add_argument("--verbose", action="store_true", help="--describe --members: also each member's partitions "
                   "(consumer groups: member epochs, current and target assignments); --state: the epochs")
    p.add_argument("--state", nargs="?", const=True, default=None, metavar="STATE",
                   help="--describe: the group's state; --list: a STATE column, only groups in STATE if given "
                        "(comma-separated, e.g. Stable,Empty)")
    p.add_argument("--type", nargs="?", const=True, default=None, metavar="TYPE",
                   help="--list: a TYPE column, only groups of TYPE if given (classic, consumer)")
    p.add_argument("--offsets", action="store_true", help="--describe: offsets and lag (the default)")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P]",
                   help="--reset-offsets: a topic, or some of its partitions (repeatable)")
    p.add_argument("--all-topics", action="store_true", help="--reset-offsets: every topic the group has offsets for")
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="reset to each partition's log start offset")
    to.add_argument("--to-latest", action="store_true", help="reset to each partition's log end offset")
    to.add_argument("--to-current", action="store_true", help="reset to the committed offset (fills in missing ones)")
    to.add_argument("--to-offset", type=int, metavar="OFFSET", help="reset to OFFSET (within each partition's range)")
    to.add_argument("--shift-by", type=int, metavar="N", help="move each committed offset by N (may be negative)")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="reset to the first offset at or after "
                    "that time (UTC unless the value carries an offset, e.g. +02:00)")
    to.add_argument("--by-duration", metavar="PnDTnHnMnS", help="reset to the first offset at or after now minus "
                    "the duration (ISO 8601, e.g. PT1H)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="--reset-offsets: show the new offsets only (the default)")
    mode.add_argument("--execute", action="store_true", help="--reset-offsets: commit the new offsets")
    p.set_defaults(run=lambda args: run("groups", _main, args))


def _main(args) -> int:
    if args.list:
        if args.state is not None or args.type is not None:
            states = _filter("state", args.state, _STATES)
            types = _filter("type", args.type, _TYPES)
            with client(args, "groups") as c:
                _print_listing(_listings(c, states, types), args.type is not None, args.state is not None)
            return 0
        with client(args, "groups") as c:
            for g in _list(c, None):
                print(g)
        return 0
    if args.delete_offsets:
        if len(args.group) != 1 or not args.topic:
            raise UsageError("kwire groups: --delete-offsets needs one --group GROUP and --topic TOPIC[:P,P]")
        with client(args, "groups") as c:
            return _delete_offsets(c, args.group[0], args.topic)
    if not args.group and not args.all_groups:
        raise UsageError("kwire groups: --describe, --reset-offsets and --delete need --group GROUP or --all-groups")
    with client(args, "groups") as c:
        groups = _list(c, None) if args.all_groups else args.group
        if args.describe:
            for g in groups:
                _describe(c, args, g)
        elif args.reset_offsets:
            _reset(c, args, groups)
        elif args.delete:
            _delete(c, groups)
    return 0


# ---------------------------------------------------------------------------- list
def _list(c, state: str | None) -> list[str]:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    c.metadata([])
    out = set()
    for node in sorted(c.brokers):
        body, v = c.call("ListGroups", node=node, states_filter=[])
        if body.error_code:
            raise AdminError(f"ListGroups on broker {node}: {error_name(body.error_code)}", body.error_code)
        for g in body.groups:
            if g.protocol_type not in ("consumer", ""):
                continue
            if state and v >= 4 and g.group_state.lower() != state.lower():
                continue
            out.add(g.group_id)
    if state and c.version(c.any_broker(), "ListGroups") < 4:
        out = {g for g in out if _group(c, g)[0].group_state.lower() == state.lower()}
    return sorted(out)


# Kafka's GroupState (consumer groups) and GroupType names, as the tool prints them
_STATES = ["PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"]
_TYPES = ["Classic", "Consumer"]


def _filter(what: str, value, names: list[str]) -> set[str]:
    """--state/--type's comma-separated values in Kafka's spelling (any case); empty: all."""
    if value is None or value is True:
        return set()
    by_lower = {n.lower(): n for n in names}
    out = set()
    for item in str(value).split(","):
        name = by_lower.get(item.strip().lower())
        if name is None:
            raise UsageError(f"kwire groups: Invalid {what} list '{value}'. Valid {what}s are: {', '.join(names)}")
        out.add(name)
    return out


def _listings(c, states: set[str], types: set[str]) -> list[tuple[str, str, str]]:
    """(group, type, state) of consumer groups (classic groups of the consumer protocol and
    KIP-848 groups), from every broker's ListGroups."""
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    c.metadata([])
    out = {}
    for node in sorted(c.brokers):
        body, v = c.call("ListGroups", node=node, states_filter=sorted(states), types_filter=[t.lower() for t in types])
        if body.error_code:
            raise AdminError(f"ListGroups on broker {node}: {error_name(body.error_code)}", body.error_code)
        for g in body.groups:
            gtype = (g.group_type or "classic").capitalize() if v >= 5 else "Classic"
            if gtype not in _TYPES or (gtype == "Classic" and g.protocol_type not in ("consumer", "")):
                continue
            state = g.group_state if v >= 4 else _group(c, g.group_id)[0].group_state
            if (states and state not in states) or (types and gtype not in types):
                continue
            out[g.group_id] = (g.group_id, gtype, state)
    return [out[k] for k in sorted(out)]


def _print_listing(rows: list[tuple[str, str, str]], with_type: bool, with_state: bool) -> None:
    """kafka-consumer-groups.sh's printGroupInfo: GROUP padded to the longest id + 10, then
    TYPE and STATE columns of 20."""
    width = max([15] + [len(g) for g, _, _ in rows]) + 10
    def line(g, t, s):
        out = g.ljust(width)
        if with_type:
            out += " " + t.ljust(20)
        if with_state:
            out += " " + s.ljust(20)
        return out
    print(line("GROUP", "TYPE", "STATE"))
    for g, t, s in rows:
        print(line(g, t, s))


def _delete_offsets(c, group: str, specs: list[str]) -> int:
    """OffsetDelete (key 47) of a group's committed offsets; Kafka's lines and table."""
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)
    from kwire.errors import ErrorCode  # noqa: PLC0415 - start-up time (kwire.admin)

    results: dict[tuple[str, int], str | None] = {}
    wanted: dict[str, list[int]] = {}
    for spec in specs:
        topic, parts = parse_topic_partitions(spec)
        if parts is None:
            md = c.metadata([topic])
            t = next((t for t in md.topics if t.name == topic), None)
            if t is None or t.error_code:
                code = t.error_code if t is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                results[(topic, -1)] = f"Error: {_message(code, True)}"
                continue
            parts = [p.partition_index for p in t.partitions]
        wanted.setdefault(topic, []).extend(parts)
    top = 0
    if wanted:
        T = c.struct("OffsetDelete", "OffsetDeleteRequestTopic")
        P = c.struct("OffsetDelete", "OffsetDeleteRequestPartition")
        body, _ = c.call("OffsetDelete", node=c.coordinator(group), group_id=group,
                         topics=[T(name=t, partitions=[P(partition_index=p) for p in sorted(set(ps))])
                                 for t, ps in sorted(wanted.items())])
        top = body.error_code
        for t in body.topics:
            for p in t.partitions:
                results[(t.name, p.partition_index)] = f"Error: {_message(p.error_code, True)}" if p.error_code \
                    else None
                if p.error_code and not top:
                    top = p.error_code
        if body.error_code:
            for t, ps in wanted.items():
                for p in ps:
                    results[(t, p)] = f"Error: {_message(body.error_code, True)}"
    if any(v is not None for k, v in results.items() if k[1] < 0) and not top:
        top = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if top == 0:
        print(f"Request succeeded for deleting offsets from group {group}.")
    elif top in (ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                 ErrorCode.NON_EMPTY_GROUP):
        print(f"\nError: {_message(top)}")
    elif top in (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        print("\nError: Encountered some partition-level error, see the follow-up details.")
    else:
        print(f"\nError: Encountered some unknown error: {error_name(top)}")
    width = max([15] + [len(t) for t, _ in results])
    print("\n" + f"{'TOPIC'.ljust(width)} {'PARTITION'.ljust(10)} {'STATUS'.ljust(15)}", end="")
    for (t, p), status in sorted(results.items(), key=lambda kv: kv[0][0] + str(kv[0][1])):
        print("\n" + f"{t.ljust(width)} {(str(p) if p >= 0 else '-').ljust(10)} {(status or 'Successful').ljust(15)}",
              end="")
    print()
    if top:
        raise AdminError(f"OffsetDelete {group}: {error_name(top)}", top)
    return 0


# Kafka's Errors: (exception class, message) of the codes OffsetDelete answers
_ERRORS = {
    15: ("CoordinatorNotAvailableException", "The coordinator is not available."),
    16: ("NotCoordinatorException", "This is not the correct coordinator."),
    3: ("UnknownTopicOrPartitionException", "This server does not host this topic-partition."),
    24: ("InvalidGroupIdException", "The configured groupId is invalid."),
    29: ("TopicAuthorizationException", "Topic authorization failed."),
    30: ("GroupAuthorizationException", "Group authorization failed."),
    68: ("GroupNotEmptyException", "The group is not empty."),
    69: ("GroupIdNotFoundException", "The group id does not exist."),
    86: ("GroupSubscribedToTopicException", "The consumer group is actively subscribed to the topic"),
}


def _message(code: int, partition_level: bool = False) -> str:
    """Kafka's message for an error code (Errors.message()); a partition's error as the tool
    prints the exception (class name first)."""
    from kwire.admin.client import error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    cls, text = _ERRORS.get(code, (None, error_name(code)))
    return f"org.apache.kafka.common.errors.{cls}: {text}" if partition_level and cls else text


# ---------------------------------------------------------------------------- describe
def _group(c, group: str):
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    coord = c.coordinator(group)
    body, _ = c.call("DescribeGroups", node=coord, groups=[group], include_authorized_operations=False)
    g = body.groups[0]
    if g.error_code:
        raise AdminError(f"DescribeGroups {group}: {error_name(g.error_code)}", g.error_code)
    return g, coord


def _assignments(g) -> dict[str, list[tuple[str, int]]]:
    """member id -> partitions it owns (consumer protocol assignments)."""
    from kwire.codec.consumer_protocol import decode_assignment  # noqa: PLC0415 - start-up time (kwire.admin)

    out = {}
    for m in g.members:
        tps = []
        if g.protocol_type == "consumer" and m.member_assignment:
            try:
                a = decode_assignment(bytes(m.member_assignment))
                tps = [(tp.topic, p) for tp in a.assigned_partitions for p in tp.partitions]
            except Exception:  # noqa: BLE001 - a member's bytes we cannot read: no partitions shown
                tps = []
        out[m.member_id] = tps
    return out


def _committed(c, coord: int, group: str) -> dict[tuple[str, int], int]:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    body, _ = c.call("OffsetFetch", node=coord, group_id=group, topics=None, require_stable=False)
    if getattr(body, "error_code", 0):
        raise AdminError(f"OffsetFetch {group}: {error_name(body.error_code)}", body.error_code)
    return {(t.name, p.partition_index): p.committed_offset for t in body.topics for p in t.partitions
            if p.error_code == 0 and p.committed_offset >= 0}


def _state_note(group: str, state: str) -> bool:
    """Kafka's shouldPrintMemberState: a note for Dead, Empty and rebalancing groups."""
    if state == "Dead":
        print(f"\nConsumer group '{group}' does not exist.")
        return False
    if state == "Empty":
        print(f"\nConsumer group '{group}' has no active members.")
    elif state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        print(f"\nWarning: Consumer group '{group}' is rebalancing.")
    return True


def _describe(c, args, group: str) -> None:
    from kwire.admin import consumer_groups as CG  # noqa: PLC0415 - start-up time (kwire.admin)

    cg, coordinator = CG.describe_consumer_group(c, group)
    if cg is not None:   # a KIP-848 consumer group
        if args.state is True:
            CG.print_state(c, group, cg, coordinator, args.verbose)
        elif _state_note(group, cg.group_state):
            if args.members:
                CG.print_members(group, cg, args.verbose)
            else:
                _print_offsets(c, group, coordinator, {m.member_id: m for m in cg.members},
                               {m.member_id: CG.partitions(m.assignment) for m in cg.members})
        return
    g, coordinator = _group(c, group)
    if args.state is True:
        host, port = c.brokers.get(coordinator, ("?", -1))
        coord = f"{host}:{port}  ({coordinator})"
        members = len(g.members)
        if g.group_state == "Dead":
            print(f"\nConsumer group '{group}' does not exist.")
            return
        w = [max(15, len(group)), 25, 20, 15, 0]
        print("\n" + java_fmt(w, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]))
        print(java_fmt(w, [group, coord, g.protocol_data or "", g.group_state, members]))
        return
    if args.members:
        if not _state_note(group, g.group_state):
            return
        owned = _assignments(g)
        w = [max(15, len(group)), max([15] + [len(m.member_id) for m in g.members]),
             max([15] + [len(m.client_host) for m in g.members]), max([15] + [len(m.client_id) for m in g.members]),
             12 if args.verbose else 0]
        head = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        if args.verbose:
            w.append(0)
            head.append("ASSIGNMENT")
        print("\n" + java_fmt(w, head))
        for m in g.members:
            row = [group, m.member_id, m.client_host, m.client_id, len(owned.get(m.member_id, []))]
            if args.verbose:
                by_topic: dict[str, list[int]] = {}
                for t, p in owned.get(m.member_id, []):
                    by_topic.setdefault(t, []).append(p)
                row.append(",".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items()))
                           or "-")
            print(java_fmt(w, row))
        return
    # offsets (the default)
    if not _state_note(group, g.group_state):
        return
    _print_offsets(c, group, coordinator, {m.member_id: m for m in g.members}, _assignments(g))


def _print_offsets(c, group: str, coordinator: int, members: dict, owned: dict[str, list[tuple[str, int]]]) -> None:
    """GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID;
    ``members``: member id -> an object with client_host and client_id."""
    committed = _committed(c, coordinator, group)
    owners = {}
    for mid, tps in owned.items():
        for tp in tps:
            owners[tp] = members[mid]
    tps = sorted(set(committed) | set(owners))
    ends = c.list_offsets({tp: -1 for tp in tps}) if tps else {}
    rows = []
    for tp in tps:
        cur = committed.get(tp)
        end = ends.get(tp)
        lag = end - cur if cur is not None and end is not None else None
        m = owners.get(tp)
        rows.append([group, tp[0], tp[1], cur, end, lag, m.member_id if m else None, m.client_host if m else None,
                     m.client_id if m else None])
    for mid, m in members.items():   # members without partitions get a row of their own, as in Kafka
        if not any(owners.get(tp) is m for tp in tps):
            rows.append([group, None, None, None, None, None, mid, m.client_host, m.client_id])
    w = [max([15, len(group)]), max([15] + [len(r[1] or "-") for r in rows]), 10, 15, 15, 15,
         max([15] + [len(r[6] or "-") for r in rows]), max([15] + [len(r[7] or "-") for r in rows]), 0]
    print("\n" + java_fmt(w, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                              "CONSUMER-ID", "HOST", "CLIENT-ID"]))
    for r in rows:
        print(java_fmt(w, r))


# ---------------------------------------------------------------------------- reset
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def _parse_when(args) -> int | None:
    """--to-datetime / --by-duration -> a timestamp in ms, or None."""
    if args.to_datetime:
        text = args.to_datetime
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            raise UsageError(f"kwire groups: --to-datetime {text!r} is not YYYY-MM-DDTHH:mm:SS.sss "
                             f"(optionally with +HH:MM)") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        return int(when.timestamp() * 1000)
    if args.by_duration:
        m = _DURATION.match(args.by_duration)
        if not m or args.by_duration in ("P", "PT"):
            raise UsageError(f"kwire groups: --by-duration {args.by_duration!r} is not an ISO 8601 duration "
                             f"(e.g. PT1H, P1DT2H30M)")
        d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
        ms = int(((d * 24 + h) * 60 + mi) * 60_000 + s * 1000)
        return int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000) - ms
    return None


def _reset(c, args, groups: list[str]) -> None:
    from kwire.admin.client import AdminError  # noqa: PLC0415 - start-up time (kwire.admin)

    if not (args.to_earliest or args.to_latest or args.to_current or args.to_offset is not None
            or args.shift_by is not None or args.to_datetime or args.by_duration):
        raise UsageError("kwire groups: --reset-offsets needs one of --to-earliest, --to-latest, --to-current, "
                         "--to-offset, --shift-by, --to-datetime, --by-duration")
    if not args.topic and not args.all_topics:
        raise UsageError("kwire groups: --reset-offsets needs --topic TOPIC or --all-topics")
    when = _parse_when(args)
    if not args.dry_run and not args.execute:
        print("WARN: No action will be performed as the --execute option is missing. Add --dry-run to keep "
              "this behaviour without the warning, or --execute to commit the offsets.", file=sys.stderr)
    plans = {}
    from kwire.admin.consumer_groups import describe_consumer_group  # noqa: PLC0415 - start-up time (kwire.admin)

    for group in groups:
        cg, coordinator = describe_consumer_group(c, group)
        state = cg.group_state if cg is not None else _group(c, group)[0].group_state
        if state not in ("Empty", "Dead"):
            raise AdminError(f"Assignments can only be reset if the group '{group}' is inactive, but the current "
                             f"state is {state}.")
        committed = _committed(c, coordinator, group)
        tps: list[tuple[str, int]] = []
        if args.all_topics:
            tps = sorted(committed)
        for spec in args.topic:
            topic, parts = parse_topic_partitions(spec)
            if parts is None:
                md = c.metadata([topic])
                t = next((t for t in md.topics if t.name == topic), None)
                if t is None or t.error_code:
                    raise AdminError(f"topic '{topic}' does not exist")
                parts = sorted(p.partition_index for p in t.partitions)
            tps.extend((topic, p) for p in parts)
        tps = sorted(set(tps))
        earliest = c.list_offsets({tp: -2 for tp in tps}) if tps else {}
        latest = c.list_offsets({tp: -1 for tp in tps}) if tps else {}
        at_time = c.list_offsets({tp: when for tp in tps}) if tps and when is not None else {}
        new = {}
        for tp in tps:
            lo, hi = earliest[tp], latest[tp]
            if args.to_earliest:
                off = lo
            elif args.to_latest:
                off = hi
            elif args.to_current:
                off = committed.get(tp, hi)
            elif args.to_offset is not None:
                off = args.to_offset
            elif args.shift_by is not None:
                if tp not in committed:
                    raise AdminError(f"group '{group}' has no committed offset for {tp[0]}-{tp[1]} to shift")
                off = committed[tp] + args.shift_by
            else:
                off = at_time.get(tp, -1)
                off = hi if off < 0 else off
            if off > hi:      # Kafka's GroupOffsetsResetter.checkOffsetsRange
                print(f"WARN New offset ({off}) is higher than latest offset for topic partition {tp[0]}-{tp[1]}. "
                      f"Value will be set to {hi}", file=sys.stderr)
            elif off < lo:
                print(f"WARN New offset ({off}) is lower than earliest offset for topic partition {tp[0]}-{tp[1]}. "
                      f"Value will be set to {lo}", file=sys.stderr)
            new[tp] = min(max(off, lo), hi)
        plans[(group, coordinator)] = new
    w = [30, 30, 10, 15]
    if any(plans.values()):
        print("\n" + java_fmt(w, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for (group, _), new in plans.items():
        for (t, p), off in sorted(new.items()):
            print(java_fmt(w, [group, t, p, off]))
    if args.execute:
        for (group, coord), new in plans.items():
            _commit(c, coord, group, new)


def _commit(c, coord: int, group: str, offsets: dict[tuple[str, int], int]) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    T = c.struct("OffsetCommit", "OffsetCommitRequestTopic")
    P = c.struct("OffsetCommit", "OffsetCommitRequestPartition")
    topics: dict[str, list] = {}
    for (t, p), off in sorted(offsets.items()):
        topics.setdefault(t, []).append(P(partition_index=p, committed_offset=off, committed_metadata=""))
    body, _ = c.call("OffsetCommit", node=coord, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                     group_instance_id=None, topics=[T(name=t, partitions=ps) for t, ps in topics.items()])
    for t in body.topics:
        for p in t.partitions:
            if p.error_code:
                raise AdminError(f"OffsetCommit {group} {t.name}-{p.partition_index}: {error_name(p.error_code)}",
                                 p.error_code)


# ---------------------------------------------------------------------------- delete
def _delete(c, groups: list[str]) -> None:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    failed = []
    for group in groups:
        coord = c.coordinator(group)
        body, _ = c.call("DeleteGroups", node=coord, groups_names=[group])
        for r in body.results:
            if r.error_code:
                failed.append(f"* Group '{r.group_id}' could not be deleted due to: {error_name(r.error_code)}")
    if failed:
        raise AdminError("Deletion of some consumer groups failed: " + "; ".join(f[2:] for f in failed))
    print("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in groups) + ") was successful.")
