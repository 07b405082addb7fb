"""``kwire groups --describe`` of KIP-848 consumer groups, through ConsumerGroupDescribe (key
69), as kafka-consumer-groups.sh 4.x prints them:

- ``--state [--verbose]``: GROUP, COORDINATOR (ID), ASSIGNMENT-STRATEGY (the server-side
  assignor), STATE, [GROUP-EPOCH, TARGET-ASSIGNMENT-EPOCH,] #MEMBERS;
- ``--members [--verbose]``: GROUP, CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS, [CURRENT-EPOCH
  (the member epoch), CURRENT-ASSIGNMENT, TARGET-EPOCH (the group's assignment epoch),
  TARGET-ASSIGNMENT]; assignments as ``topic(0,1)``, one topic after another (``,``);
- the offsets view (the default) with the members' current assignments as owners.

Kafka's admin client asks ConsumerGroupDescribe first and falls back to DescribeGroups when the
answer is GROUP_ID_NOT_FOUND (a classic group) or the broker does not speak it: so does
``describe_consumer_group`` (None: describe it the classic way).
"""
from __future__ import annotations

from kwire.admin.common import java_fmt

GROUP_ID_NOT_FOUND = 69


def describe_consumer_group(c, group: str):
    """(the ConsumerGroupDescribe group, coordinator id), or (None, coordinator id) for a
    group that is not a consumer group or a broker that does not know the API."""
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    coord = c.coordinator(group)
    try:
        c.version(c.broker(coord), "ConsumerGroupDescribe")
    except AdminError:
        return None, coord
    body, _ = c.call("ConsumerGroupDescribe", node=coord, group_ids=[group], include_authorized_operations=False)
    g = body.groups[0]
    if g.error_code == GROUP_ID_NOT_FOUND:
        return None, coord
    if g.error_code:
        raise AdminError(f"ConsumerGroupDescribe {group}: {error_name(g.error_code)}"
                         + (f": {g.error_message}" if g.error_message else ""), g.error_code)
    return g, coord


def partitions(assignment) -> list[tuple[str, int]]:
    return sorted((tp.topic_name, p) for tp in assignment.topic_partitions for p in tp.partitions)


def _fmt(tps: list[tuple[str, int]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return ",".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items())) or "-"


def print_state(c, group: str, g, coordinator: int, verbose: bool) -> None:
    host, port = c.brokers.get(coordinator, ("?", -1))
    w = [max(15, len(group)), 25, 20, 20]
    head = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    row = [group, f"{host}:{port}  ({coordinator})", g.assignor_name, g.group_state]
    if verbose:
        w += [15, 25]
        head += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        row += [g.group_epoch, g.assignment_epoch]
    w.append(0)
    head.append("#MEMBERS")
    row.append(len(g.members))
    print("\n" + java_fmt(w, head))
    print(java_fmt(w, row))


def print_members(group: str, g, verbose: bool) -> None:
    ms = g.members
    w = [max(15, len(group)), max([15] + [len(m.member_id) for m in ms]),
         max([15] + [len(m.client_host) for m in ms]), max([15] + [len(m.client_id) for m in ms])]
    head = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        current = [_fmt(partitions(m.assignment)) for m in ms]
        w += [12, 15, max([20] + [len(x) for x in current]), 15, 0]
        head += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    else:
        w.append(0)
    print("\n" + java_fmt(w, head))
    for m in ms:
        row = [group, m.member_id, m.client_host, m.client_id, len(partitions(m.assignment))]
        if verbose:
            row += [m.member_epoch, _fmt(partitions(m.assignment)), g.assignment_epoch,
                    _fmt(partitions(m.target_assignment))]
        print(java_fmt(w, row))
