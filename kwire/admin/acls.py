"""``kwire acls``: kafka-acls.sh's --list, --add and --remove, from DescribeAcls, CreateAcls and
DeleteAcls. A cluster without an authorizer (``authorizer.class.name`` unset) says so in one
line, as kafka-acls.sh's SecurityDisabledException does. --producer and --consumer add the
operations kafka-acls.sh's shortcuts add (WRITE, DESCRIBE, CREATE on topics; READ, DESCRIBE on
topics and READ on groups), and --idempotent adds IDEMPOTENT_WRITE on the cluster.
--force is accepted (kwire never asks before removing, so there is nothing to confirm).
Mistakes in the flags (an unknown --operation, --add without a principal) are usage errors
(exit 2) found before the cluster is asked. Left out: --user-principal (KIP-373 delegation
tokens), --delegation-token resources."""
from __future__ import annotations

from kwire.admin.common import add_common, client, run
from kwire.cmdline import UsageError, suggest

RESOURCE_TYPES = {"any": 1, "topic": 2, "group": 3, "cluster": 4, "transactional-id": 5, "delegation-token": 6,
                  "user": 7}
_TYPE_NAMES = {1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN",
               7: "USER"}
_PATTERNS = {1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
_OPS = {1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
        9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS",
        14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
_OP_CODES = {name.lower().replace("_", ""): code for code, name in _OPS.items()}
_PERMS = {1: "ANY", 2: "DENY", 3: "ALLOW"}


def add_parser(sub) -> None:
    p = sub.add_parser("acls", help="list, add and remove ACLs (kafka-acls.sh)",
                       description="List, add and remove the ACLs of a cluster, as kafka-acls.sh does.")
    add_common(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list ACLs")
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    p.add_argument("--topic", metavar="TOPIC", action="append", help="ACLs of this topic (repeatable; * for all)")
    p.add_argument("--group", metavar="GROUP", action="append", help="ACLs of this group (repeatable)")
    p.add_argument("--cluster", action="store_true", help="the cluster's ACLs")
    p.add_argument("--transactional-id", metavar="ID", action="append", help="ACLs of this transactional id")
    p.add_argument("--resource-pattern-type", default=None, metavar="TYPE",
                   choices=["literal", "prefixed", "any", "match"],
                   help="literal (default for --add), prefixed; for --list/--remove also any, match")
    p.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    p.add_argument("--operation", action="append", default=[], metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                        "AlterConfigs, IdempotentWrite, All (repeatable)")
    p.add_argument("--producer", action="store_true", help="the ACLs of a producer of --topic")
    p.add_argument("--consumer", action="store_true", help="the ACLs of a consumer of --topic in --group")
    p.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    p.add_argument("--principal", metavar="User:NAME", help="--list: only the ACLs of this principal")
    p.add_argument("--force", action="store_true", help="--remove without asking (kwire never asks)")
    p.set_defaults(run=lambda args: run("acls", _main, args))


def _resources(args, pattern: int) -> list[tuple[int, str, int]]:
    out = [(2, t, pattern) for t in args.topic or ()]
    out += [(3, g, pattern) for g in args.group or ()]
    out += [(5, t, pattern) for t in args.transactional_id or ()]
    if args.cluster:
        out.append((4, "kafka-cluster", 3))
    return out


def _ops(args) -> list[int]:
    ops = []
    for o in args.operation:
        code = _OP_CODES.get(o.lower().replace("_", "").replace("-", ""))
        if code is None or code == 1:
            names = ["Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction", "DescribeConfigs",
                     "AlterConfigs", "IdempotentWrite", "CreateTokens", "DescribeTokens", "TwoPhaseCommit", "All"]
            near = suggest(o, names, 0.6)
            raise ValueError(f"--operation {o!r} is not an operation ({', '.join(names)})"
                             + (f"; did you mean {near}?" if near else ""))
        ops.append(code)
    return ops


def _bindings(args, pattern: int) -> list[tuple]:
    """(rtype, name, pattern, principal, host, op, permission) for --add / --remove."""
    entries = []
    for perm, principals, hosts in ((3, args.allow_principal, args.allow_host or ["*"]),
                                    (2, args.deny_principal, args.deny_host or ["*"])):
        for pr in principals:
            for h in hosts:
                entries.append((pr, h, perm))
    per_resource: list[tuple[tuple, list[int]]] = []
    if args.producer or args.consumer:
        topics = [(2, t, pattern) for t in args.topic or ()]
        if args.producer:
            per_resource += [(r, [4, 8, 5]) for r in topics]
            per_resource += [((5, t, pattern), [4, 8]) for t in args.transactional_id or ()]
            if args.idempotent:
                per_resource.append(((4, "kafka-cluster", 3), [12]))
        if args.consumer:
            per_resource += [(r, [3, 8]) for r in topics]
            per_resource += [((3, g, pattern), [3]) for g in args.group or ()]
    else:
        ops = _ops(args) or ([2] if args.remove else [])
        if not ops:
            raise ValueError("--add needs --operation (or --producer / --consumer)")
        per_resource = [(r, ops) for r in _resources(args, pattern)]
    return [(rt, name, pat, pr, h, op, perm) for (rt, name, pat), ops in per_resource for op in ops
            for pr, h, perm in entries]


def _main(args) -> int:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)
    from kwire.errors import ErrorCode  # noqa: PLC0415 - start-up time (kwire.admin)

    patterns = {"literal": 3, "prefixed": 4, "any": 1, "match": 2}
    try:       # the flags' mistakes before the cluster is asked
        _ops(args)
        if args.add:
            if (args.resource_pattern_type or "literal") not in ("literal", "prefixed"):
                raise ValueError("--add takes --resource-pattern-type literal or prefixed")
            if not _bindings(args, patterns[args.resource_pattern_type or "literal"]):
                raise ValueError("--add needs a resource and --allow-principal or --deny-principal")
        if args.remove and not (_resources(args, 3) or args.producer or args.consumer):
            raise ValueError("--remove needs a resource (--topic, --group, --cluster, --transactional-id)")
    except ValueError as exc:
        raise UsageError(f"kwire acls: {exc}") from None
    with client(args, "acls") as c:
        b = c.any_broker()
        from kwire.codec.apis import api  # noqa: PLC0415 - start-up time (kwire.admin)

        if api("DescribeAcls").key not in b.versions:
            raise AdminError(f"No Authorizer is configured on the broker at {b.address} (it does not serve "
                             f"DescribeAcls): there are no ACLs", ErrorCode.SECURITY_DISABLED)

        def check(code, msg, what):
            if code == ErrorCode.SECURITY_DISABLED:
                raise AdminError("No Authorizer is configured on the broker", code)
            if code:
                raise AdminError(f"{what}: {error_name(code)}: {msg or ''}".rstrip(": "), code)

        if args.add:
            pattern = patterns[args.resource_pattern_type or "literal"]
            if pattern not in (3, 4):
                raise AdminError("--add takes --resource-pattern-type literal or prefixed", ErrorCode.INVALID_REQUEST)
            try:
                bindings = _bindings(args, pattern)
            except ValueError as exc:
                raise AdminError(str(exc), ErrorCode.INVALID_REQUEST) from None
            if not bindings:
                raise AdminError("--add needs a resource and --allow-principal or --deny-principal",
                                 ErrorCode.INVALID_REQUEST)
            C = api("CreateAcls").request.struct("AclCreation")
            body, _ = c.call("CreateAcls", creations=[C(
                resource_type=rt, resource_name=n, resource_pattern_type=pat, principal=pr, host=h, operation=op,
                permission_type=perm) for rt, n, pat, pr, h, op, perm in bindings])
            for r in body.results:
                check(r.error_code, r.error_message, "CreateAcls")
            _print_added(bindings)
            return 0
        if args.remove:
            pattern = patterns[args.resource_pattern_type or "literal"]
            try:
                if args.allow_principal or args.deny_principal:
                    bindings = _bindings(args, pattern)
                    filters = [(rt, n, pat, pr, h, op, perm) for rt, n, pat, pr, h, op, perm in bindings]
                else:   # every ACL of the resources
                    ops = _ops(args) or [1]
                    filters = [(rt, n, pat, None, None, op, 1) for rt, n, pat in _resources(args, pattern) for op in ops]
            except ValueError as exc:
                raise AdminError(str(exc), ErrorCode.INVALID_REQUEST) from None
            if not filters:
                raise AdminError("--remove needs a resource (--topic, --group, --cluster, --transactional-id)",
                                 ErrorCode.INVALID_REQUEST)
            F = api("DeleteAcls").request.struct("DeleteAclsFilter")
            body, _ = c.call("DeleteAcls", filters=[F(
                resource_type_filter=rt, resource_name_filter=n, pattern_type_filter=pat, principal_filter=pr,
                host_filter=h, operation=op, permission_type=perm) for rt, n, pat, pr, h, op, perm in filters])
            removed = 0
            for r in body.filter_results:
                check(r.error_code, r.error_message, "DeleteAcls")
                removed += len(r.matching_acls)
            print(f"Removed {removed} ACL(s).")
            return 0
        rtype, name = 1, None
        if args.topic:
            rtype, name = 2, args.topic[0]
        elif args.group:
            rtype, name = 3, args.group[0]
        elif args.transactional_id:
            rtype, name = 5, args.transactional_id[0]
        elif args.cluster:
            rtype, name = 4, "kafka-cluster"
        pattern = patterns[args.resource_pattern_type] if args.resource_pattern_type else 1
        body, _ = c.call("DescribeAcls", resource_type_filter=rtype, resource_name_filter=name,
                         pattern_type_filter=pattern, principal_filter=args.principal, host_filter=None,
                         operation=1, permission_type=1)
        check(body.error_code, body.error_message, "DescribeAcls")
        for r in body.resources:
            print(f"Current ACLs for resource `ResourcePattern(resourceType={_TYPE_NAMES.get(r.resource_type)}, "
                  f"name={r.resource_name}, patternType={_PATTERNS.get(r.pattern_type)})`: ")
            for a in r.acls:
                print(f" \t(principal={a.principal}, host={a.host}, operation={_OPS.get(a.operation)}, "
                      f"permissionType={_PERMS.get(a.permission_type)})")
            print()
    return 0


def _print_added(bindings) -> None:
    by_res: dict[tuple, list] = {}
    for rt, n, pat, pr, h, op, perm in bindings:
        by_res.setdefault((rt, n, pat), []).append((pr, h, op, perm))
    for (rt, n, pat), entries in by_res.items():
        print(f"Adding ACLs for resource `ResourcePattern(resourceType={_TYPE_NAMES.get(rt)}, name={n}, "
              f"patternType={_PATTERNS.get(pat)})`: ")
        for pr, h, op, perm in entries:
            print(f" \t(principal={pr}, host={h}, operation={_OPS.get(op)}, permissionType={_PERMS.get(perm)})")
        print()
