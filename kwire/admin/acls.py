"""``kwire acls --list``: kafka-acls.sh's listing, from DescribeAcls. A cluster without an
authorizer (``authorizer.class.name`` unset) says so in one line, as kafka-acls.sh's
SecurityDisabledException does. Left out: --add and --remove (use a stock admin client)."""
from __future__ import annotations

from kwire.admin.common import add_common, client, run

RESOURCE_TYPES = {"any": 1, "topic": 2, "group": 3, "cluster": 4, "transactional-id": 5, "delegation-token": 6,
                  "user": 7}
_TYPE_NAMES = {1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN",
               7: "USER"}
_PATTERNS = {1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
_OPS = {1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
        9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS",
        14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
_PERMS = {1: "ANY", 2: "DENY", 3: "ALLOW"}


def add_parser(sub) -> None:
    p = sub.add_parser("acls", help="list ACLs (kafka-acls.sh --list)",
                       description="List the ACLs of a cluster, as kafka-acls.sh --list does.")
    add_common(p)
    p.add_argument("--list", action="store_true", required=True, help="list ACLs (the only action)")
    p.add_argument("--topic", metavar="TOPIC", help="only the ACLs of this topic")
    p.add_argument("--group", metavar="GROUP", help="only the ACLs of this group")
    p.add_argument("--cluster", action="store_true", help="only the cluster's ACLs")
    p.add_argument("--principal", metavar="User:NAME", help="only the ACLs of this principal")
    p.set_defaults(run=lambda args: run("acls", _main, args))


def _main(args) -> int:
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415
    from kwire.errors import ErrorCode  # noqa: PLC0415

    rtype, name = 1, None
    if args.topic:
        rtype, name = 2, args.topic
    elif args.group:
        rtype, name = 3, args.group
    elif args.cluster:
        rtype, name = 4, "kafka-cluster"
    with client(args, "acls") as c:
        b = c.any_broker()
        from kwire.codec.apis import api  # noqa: PLC0415

        if api("DescribeAcls").key not in b.versions:
            raise AdminError(f"No Authorizer is configured on the broker at {b.address} (it does not serve "
                             f"DescribeAcls): there are no ACLs", ErrorCode.SECURITY_DISABLED)
        body, _ = c.call("DescribeAcls", resource_type_filter=rtype, resource_name_filter=name,
                         pattern_type_filter=1 if name else 1, principal_filter=args.principal, host_filter=None,
                         operation=1, permission_type=1)
        if body.error_code == ErrorCode.SECURITY_DISABLED:
            raise AdminError("No Authorizer is configured on the broker", body.error_code)
        if body.error_code:
            raise AdminError(f"DescribeAcls: {error_name(body.error_code)}: {body.error_message or ''}".rstrip(": "),
                             body.error_code)
        for r in body.resources:
            print(f"Current ACLs for resource `ResourcePattern(resourceType={_TYPE_NAMES.get(r.resource_type)}, "
                  f"name={r.resource_name}, patternType={_PATTERNS.get(r.pattern_type)})`: ")
            for a in r.acls:
                print(f" \t(principal={a.principal}, host={a.host}, operation={_OPS.get(a.operation)}, "
                      f"permissionType={_PERMS.get(a.permission_type)})")
            print()
    return 0
