"""``kwire leader-election``: kafka-leader-election.sh, from ElectLeaders (key 43).

``--election-type preferred|unclean`` with ``--all-topic-partitions``, ``--topic T
--partition P`` or ``--path-to-json-file F`` (``{"partitions": [{"topic": ..., "partition":
...}]}``), and Kafka's lines: "Successfully completed leader election (PREFERRED) for
partitions t-0, t-1", "Valid replica already elected for partitions ...", "Error completing
leader election (PREFERRED) for partition: t-0: ..." (then exit 1, "N replica(s) could not be
elected"). After a full restart every leader may sit on the node that came back first: a
preferred election moves them home at once (the controller also does it every
leader.imbalance.check.interval.seconds when auto.leader.rebalance.enable is on, as Kafka)."""
from __future__ import annotations

import json

from kwire.admin.common import add_common, client, run
from kwire.cmdline import RuntimeFailure, UsageError

ELECTION_NOT_NEEDED = 84
_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}


def add_parser(sub) -> None:
    p = sub.add_parser("leader-election", help="elect preferred (or unclean) leaders (kafka-leader-election.sh)",
                       description="Move partition leadership to the preferred replica, or elect an out-of-sync "
                                   "one, as kafka-leader-election.sh does.")
    add_common(p)
    p.add_argument("--election-type", required=True, metavar="preferred|unclean",
                   help="preferred: the first replica in the assignment, when in sync; unclean: any live replica")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    which.add_argument("--topic", metavar="TOPIC", help="one partition of TOPIC (with --partition)")
    which.add_argument("--path-to-json-file", metavar="FILE",
                       help='{"partitions": [{"topic": "orders", "partition": 0}, ...]}')
    p.add_argument("--partition", type=int, metavar="P", help="with --topic")
    p.set_defaults(run=lambda args: run("leader-election", _main, args))


def _selection(args) -> dict[str, list[int]] | None:
    """topic -> partitions, or None for every partition."""
    if args.all_topic_partitions:
        if args.partition is not None:
            raise UsageError("kwire leader-election: --partition goes with --topic, not --all-topic-partitions")
        return None
    if args.topic is not None:
        if args.partition is None:
            raise UsageError("kwire leader-election: --topic needs --partition")
        return {args.topic: [args.partition]}
    try:
        with open(args.path_to_json_file) as f:
            doc = json.load(f)
        out: dict[str, list[int]] = {}
        for item in doc["partitions"]:
            out.setdefault(str(item["topic"]), []).append(int(item["partition"]))
    except OSError as exc:
        raise UsageError(f"kwire leader-election: --path-to-json-file {args.path_to_json_file}: "
                         f"{exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"kwire leader-election: --path-to-json-file {args.path_to_json_file}: not "
                         f'{{"partitions": [{{"topic": ..., "partition": ...}}]}} ({exc})') from None
    return out


def _main(args) -> int:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    kind = args.election_type.strip().upper()
    if kind not in _TYPES:
        raise UsageError(f"kwire leader-election: --election-type {args.election_type!r}: write preferred or unclean")
    selection = _selection(args)
    with client(args, "leader-election") as c:
        T = c.struct("ElectLeaders", "TopicPartitions")
        body, _ = c.call("ElectLeaders", election_type=_TYPES[kind], timeout_ms=int(args.timeout * 1000),
                         topic_partitions=None if selection is None else
                         [T(topic=t, partitions=sorted(set(ps))) for t, ps in sorted(selection.items())])
    if body.error_code:
        raise AdminError(f"ElectLeaders: {error_name(body.error_code)}", body.error_code)
    done, noop, failed = [], [], []
    for t in body.replica_election_results:
        for p in t.partition_result:
            name = f"{t.topic}-{p.partition_id}"
            if p.error_code == 0:
                done.append(name)
            elif p.error_code == ELECTION_NOT_NEEDED:
                noop.append(name)
            else:
                failed.append((name, p.error_message or error_name(p.error_code)))
    if done:
        print(f"Successfully completed leader election ({kind}) for partitions {', '.join(done)}")
    if noop:
        print(f"Valid replica already elected for partitions {', '.join(noop)}")
    for name, message in failed:
        print(f"Error completing leader election ({kind}) for partition: {name}: {message}")
    if failed:
        raise RuntimeFailure(f"kwire leader-election: {len(failed)} replica(s) could not be elected")
    return 0
