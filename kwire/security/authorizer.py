"""ACLs and their authorizer: Kafka's StandardAuthorizer as a pure module (no I/O, no clock).

An ACL binding is a resource pattern (type, name, pattern LITERAL or PREFIXED) and an entry
(principal, host, operation, ALLOW or DENY). A request is allowed when the principal is a
super user, or some ALLOW ACL matches and no DENY ACL does (deny wins); a resource no ACL
names at all follows ``allow.everyone.if.no.acl.found`` (default false, as in Kafka).
Matching is Kafka's: the principal or ``User:*``, the host or ``*``, a LITERAL name or ``*``
or a PREFIXED name the resource starts with; ALL matches every operation, and an ALLOW of
READ, WRITE, DELETE or ALTER implies DESCRIBE, one of ALTER_CONFIGS implies DESCRIBE_CONFIGS.

Filters (DescribeAcls, DeleteAcls) match bindings as Kafka's AclBindingFilter: ANY matches
every value, a null name / principal / host too, and pattern MATCH matches every pattern
that would apply to the named resource.

The ACLs themselves live in the metadata image (AccessControlEntryRecord /
RemoveAccessControlEntryRecord), so every broker of a cluster has them: :class:`AclStore`.
The authorizer is on when ``authorizer.class.name`` is set (Kafka's class names accepted);
without one, kwire allows everything, as Kafka does.
"""
from __future__ import annotations

import logging
import uuid

from kwire.security.operations import NOT_REQUESTED, SUPPORTED, authorized_operations, bitfield
from kwire.security.operations import AclOperation as Op
from kwire.value import Value

# Kafka's audit logger (StandardAuthorizerData.auditLogger): each denial of an operation a
# request asked for at INFO, each grant at DEBUG, with the rule that decided; users route it
# by this name as they route Kafka's (log4j's kafka.authorizer.logger -> kafka-authorizer.log).
audit_log = logging.getLogger("kafka.authorizer.logger")

# Kafka's ResourceType, PatternType and AclPermissionType codes
UNKNOWN, ANY = 0, 1
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 2, 3, 4, 5, 6, 7
MATCH, LITERAL, PREFIXED = 2, 3, 4
DENY, ALLOW = 2, 3

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
ANONYMOUS = "User:ANONYMOUS"
AUTHORIZER_CLASSES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                      "kwire.security.authorizer.StandardAuthorizer")

_IMPLIES_DESCRIBE = frozenset((Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))
_VALID_TYPES = (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER)


class AclBinding(Value):   # frozen (kwire.value: no generated code at import)
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class AclBindingFilter(Value):   # frozen (kwire.value: no generated code at import)
    resource_type: int = ANY
    resource_name: str | None = None
    pattern_type: int = ANY
    principal: str | None = None
    host: str | None = None
    operation: int = ANY
    permission_type: int = ANY

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ANY and self.resource_type != b.resource_type:
            return False
        if self.pattern_type not in (ANY, MATCH) and self.pattern_type != b.pattern_type:
            return False
        if self.resource_name is not None:
            if self.pattern_type in (ANY, b.pattern_type):
                if self.resource_name != b.resource_name:
                    return False
            elif b.pattern_type == LITERAL:   # MATCH
                if b.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif b.pattern_type == PREFIXED:
                if not self.resource_name.startswith(b.resource_name):
                    return False
            else:
                return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != ANY and self.operation != b.operation:
            return False
        return self.permission_type == ANY or self.permission_type == b.permission_type

    def invalid(self) -> str | None:
        """Why Kafka refuses this filter (INVALID_REQUEST), or None."""
        if UNKNOWN in (self.resource_type, self.pattern_type, self.operation, self.permission_type):
            return "The filter has an UNKNOWN element"
        return None


def validate_binding(b: AclBinding) -> str | None:
    """Why Kafka refuses to create this ACL (INVALID_REQUEST), or None."""
    if b.resource_type not in _VALID_TYPES:
        return f"Invalid resourceType {b.resource_type}"
    if b.pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {b.pattern_type}"
    if b.operation in (UNKNOWN, ANY) or b.operation not in Op.__members__.values():
        return f"Invalid operation {b.operation}"
    if b.permission_type not in (ALLOW, DENY):
        return f"Invalid permissionType {b.permission_type}"
    if not b.resource_name:
        return "Resource name should not be empty"
    if b.resource_type == CLUSTER and b.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if ":" not in b.principal or not b.principal.partition(":")[0] or b.principal.endswith(":"):
        return f"Could not parse principal from `{b.principal}` (no colon is found between principalType and name)"
    if not b.host:
        return "Host should not be empty"
    return None


class AclStore:
    """The cluster's ACLs by id, indexed by resource for :meth:`Authorizer.authorize`."""

    def __init__(self) -> None:
        self.by_id: dict[uuid.UUID, AclBinding] = {}
        self._literal: dict[tuple[int, str], dict[uuid.UUID, AclBinding]] = {}
        self._prefixed: dict[int, dict[uuid.UUID, AclBinding]] = {}

    def __len__(self) -> int:
        return len(self.by_id)

    def copy(self) -> "AclStore":
        """A store of the same ACLs (a metadata delta writes to its own copy: images are immutable)."""
        out = AclStore()
        out.by_id = dict(self.by_id)
        out._literal = {k: dict(v) for k, v in self._literal.items()}
        out._prefixed = {k: dict(v) for k, v in self._prefixed.items()}
        return out

    def add(self, acl_id: uuid.UUID, b: AclBinding) -> None:
        self.remove(acl_id)
        self.by_id[acl_id] = b
        if b.pattern_type == PREFIXED:
            self._prefixed.setdefault(b.resource_type, {})[acl_id] = b
        else:
            self._literal.setdefault((b.resource_type, b.resource_name), {})[acl_id] = b

    def remove(self, acl_id: uuid.UUID) -> AclBinding | None:
        b = self.by_id.pop(acl_id, None)
        if b is None:
            return None
        if b.pattern_type == PREFIXED:
            d = self._prefixed.get(b.resource_type, {})
        else:
            d = self._literal.get((b.resource_type, b.resource_name), {})
        d.pop(acl_id, None)
        return b

    def find(self, flt: AclBindingFilter) -> list[tuple[uuid.UUID, AclBinding]]:
        return [(i, b) for i, b in self.by_id.items() if flt.matches(b)]

    def id_of(self, b: AclBinding) -> uuid.UUID | None:
        for i, x in self._for_binding(b):
            if x == b:
                return i
        return None

    def _for_binding(self, b: AclBinding):
        if b.pattern_type == PREFIXED:
            return self._prefixed.get(b.resource_type, {}).items()
        return self._literal.get((b.resource_type, b.resource_name), {}).items()

    def applicable(self, resource_type: int, name: str):
        """Every ACL whose pattern covers the resource (any principal)."""
        for key in ((resource_type, name), (resource_type, WILDCARD)):
            d = self._literal.get(key)
            if d:
                yield from d.values()
        for b in self._prefixed.get(resource_type, {}).values():
            if name.startswith(b.resource_name):
                yield b


def _result(b: AclBinding, principals: tuple[str, str], host: str, op: int) -> int | None:
    """Kafka's StandardAuthorizerData.findResult: ALLOW, DENY or None (does not apply)."""
    if b.principal not in principals:
        return None
    if b.host != WILDCARD and b.host != host:
        return None
    if b.operation != Op.ALL:
        if b.permission_type == ALLOW:
            if op == Op.DESCRIBE:
                if b.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif op == Op.DESCRIBE_CONFIGS:
                if b.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif b.operation != op:
                return None
        elif b.operation != op:
            return None
    return b.permission_type


# Kafka's SecurityUtils.resourceTypeName (the audit line's "Topic:LITERAL:t")
_RESOURCE_TYPE_NAMES = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster", TRANSACTIONAL_ID: "TransactionalId",
                        DELEGATION_TOKEN: "DelegationToken", USER: "User"}
_RESOURCE_TYPE_ENUM = {TOPIC: "TOPIC", GROUP: "GROUP", CLUSTER: "CLUSTER", TRANSACTIONAL_ID: "TRANSACTIONAL_ID",
                       DELEGATION_TOKEN: "DELEGATION_TOKEN", USER: "USER"}
_PATTERN_NAMES = {LITERAL: "LITERAL", PREFIXED: "PREFIXED"}


def rule_text(rule) -> str:
    """A deciding rule as Kafka's MatchingRule.toString: ``SuperUser``, ``DefaultAllow``,
    ``DefaultDeny`` or ``MatchingAcl(acl=StandardAcl(...))``."""
    if isinstance(rule, str):
        return rule
    b = rule
    return (f"MatchingAcl(acl=StandardAcl(resourceType={_RESOURCE_TYPE_ENUM.get(b.resource_type, 'UNKNOWN')}, "
            f"resourceName={b.resource_name}, patternType={_PATTERN_NAMES.get(b.pattern_type, 'UNKNOWN')}, "
            f"principal={b.principal}, host={b.host}, operation={Op(b.operation).name}, "
            f"permissionType={'ALLOW' if b.permission_type == ALLOW else 'DENY'}))")


def audit_message(principal: str, allowed: bool, op: int, host: str, resource_type: int, name: str,
                  request: str, rule, ref_count: int = 1) -> str:
    """The line of Kafka's StandardAuthorizerData.buildAuditMessage."""
    return (f"Principal = {principal} is {'Allowed' if allowed else 'Denied'} operation = {Op(op).name} "
            f"from host = {host} on resource = {_RESOURCE_TYPE_NAMES.get(resource_type, 'Unknown')}:LITERAL:{name} "
            f"for request = {request} with resourceRefCount = {ref_count} based on rule {rule_text(rule)}")


def parse_super_users(value) -> frozenset[str]:
    if not value:
        return frozenset()
    if isinstance(value, str):
        value = value.split(";")
    return frozenset(s.strip() for s in value if s and s.strip())


def parse_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    return str(value or "").strip().lower() == "true"


class Authorizer:
    """Decides a principal's requests from the ACLs in ``store`` (the metadata image's).

    On a broker it is a metadata publisher (Kafka's AclPublisher feeding StandardAuthorizer):
    each new image whose batch changed the ACLs hands it that image's store."""
    name = "Authorizer"

    def __init__(self, store, super_users=(), allow_everyone_if_no_acl_found: bool = False):
        # an AclStore, or a callable giving the current one
        self._store = store if callable(store) else (lambda: store)
        self.super_users = parse_super_users(super_users)
        self.allow_everyone = allow_everyone_if_no_acl_found

    def on_metadata_update(self, delta, image) -> None:
        if delta.acls_changed:
            acls = image.acls
            self._store = lambda: acls

    @classmethod
    def from_config(cls, cfg, store) -> "Authorizer | None":
        """The authorizer ``authorizer.class.name`` asks for, or None (no authorization)."""
        name = (cfg.get("authorizer.class.name") or "").strip()
        if not name:
            return None
        if name not in AUTHORIZER_CLASSES:
            raise ValueError(f"authorizer.class.name: unknown authorizer {name!r} (kwire has "
                             f"{AUTHORIZER_CLASSES[0]})")
        return cls(store, cfg.get("super.users"), parse_bool(cfg.get("allow.everyone.if.no.acl.found")))

    def authorize(self, principal: str, host: str, op: int, resource_type: int, name: str,
                  request: str | None = None, *, log_denied: bool = True, log_allowed: bool = True) -> bool:
        """Kafka's StandardAuthorizerData.authorize. With ``request`` (the API's name, e.g.
        Fetch) the decision goes to the audit log as Kafka's: a denial at INFO when
        ``log_denied`` (Kafka's logIfDenied: the request asked for this resource, not a filter
        over many), a grant at DEBUG when ``log_allowed``; nothing is built when the level is off."""
        allowed, rule = self.decide(principal, host, op, resource_type, name)
        if request is not None:
            if allowed:
                if log_allowed and audit_log.isEnabledFor(logging.DEBUG):
                    audit_log.debug("%s", audit_message(principal, True, op, host, resource_type, name, request, rule))
            elif log_denied and audit_log.isEnabledFor(logging.INFO):
                audit_log.info("%s", audit_message(principal, False, op, host, resource_type, name, request, rule))
        return allowed

    def decide(self, principal: str, host: str, op: int, resource_type: int, name: str):
        """(allowed, the rule that decided: an AclBinding or SuperUser / DefaultAllow / DefaultDeny)."""
        if principal in self.super_users:
            return True, "SuperUser"
        principals = (principal, WILDCARD_PRINCIPAL)
        found = False
        allow = None
        for b in self._store().applicable(resource_type, name):
            found = True
            r = _result(b, principals, host, op)
            if r == DENY:
                return False, b
            if r == ALLOW:
                allow = b
        if allow is not None:
            return True, allow
        if not found and self.allow_everyone:
            return True, "DefaultAllow"
        return False, "DefaultDeny"

    def authorize_any(self, principal: str, host: str, op: int, resource_type: int) -> bool:
        """Kafka's authorizeByResourceType: may the principal do ``op`` on some resource of the type?
        (used for idempotent producers' IDEMPOTENT_WRITE fallback and similar checks)."""
        if principal in self.super_users:
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        denied_literal: set[str] = set()
        denied_prefix: list[str] = []
        allows: list[AclBinding] = []
        for b in self._store().by_id.values():
            if b.resource_type != resource_type:
                continue
            r = _result(b, principals, host, op)
            if r == DENY:
                if b.resource_name == WILDCARD and b.pattern_type == LITERAL:
                    return False
                (denied_prefix.append if b.pattern_type == PREFIXED else denied_literal.add)(b.resource_name)
            elif r == ALLOW:
                allows.append(b)
        for b in allows:
            if b.pattern_type == LITERAL and b.resource_name not in denied_literal \
                    and not any(b.resource_name.startswith(p) for p in denied_prefix):
                return True
            if b.pattern_type == PREFIXED and not any(b.resource_name.startswith(p) for p in denied_prefix):
                return True
        return False

    def operations(self, principal: str, host: str, resource_type: int, name: str, supported) -> list[int]:
        """The operations of ``supported`` the principal may perform (authorized operations fields)."""
        return [op for op in supported if self.authorize(principal, host, op, resource_type, name)]


# ------------------------------------------------------------------ the handlers' side


def principal_of(ctx) -> str:
    """The request's principal: ``User:ANONYMOUS`` on a PLAINTEXT listener (until SASL/TLS set one)."""
    return getattr(ctx, "principal", None) or ANONYMOUS


def host_of(ctx) -> str:
    """The client's address, as ACL hosts name it (no port)."""
    peer = ctx.peer or ""
    host = peer.rpartition(":")[0] if ":" in peer else peer
    return host.strip("[]")


def allowed(ctx, op: int, resource_type: int, name: str, *, log_denied: bool = True) -> bool:
    """May the request's principal do ``op`` on the resource? Always without an authorizer, and
    for the broker's own in-process requests (a context without a connection: the transaction
    coordinator's WriteTxnMarkers to partitions it leads). The decision is audit-logged as
    Kafka's; ``log_denied=False`` where the check only filters (Metadata of all topics,
    ListGroups), as Kafka's logIfDenied=false."""
    a = ctx.broker.authorizer
    if a is None or getattr(ctx, "connection", True) is None:
        return True
    api = getattr(ctx, "api", None)
    return a.authorize(principal_of(ctx), host_of(ctx), op, resource_type, name,
                       api.name if api is not None else "Unknown", log_denied=log_denied)


_TYPE_CODES = {"topic": TOPIC, "group": GROUP, "cluster": CLUSTER}


def operations_field(ctx, resource_type: str, name: str, requested: bool) -> int:
    """The authorized operations field of a response (Metadata, DescribeCluster, DescribeGroups):
    every supported operation without an authorizer, else those the principal may perform."""
    a = ctx.broker.authorizer
    if a is None or not requested:
        return authorized_operations(resource_type, requested) if requested else NOT_REQUESTED
    return bitfield(a.operations(principal_of(ctx), host_of(ctx), _TYPE_CODES[resource_type], name,
                                 SUPPORTED[resource_type]))


#: the default messages of Kafka's authorization errors (Errors.X.message()), which Kafka answers
#: where a request carries a message field and nothing more precise is said
DENIED_MESSAGES = {29: "Topic authorization failed.", 30: "Group authorization failed.",
                   31: "Cluster authorization failed.", 53: "Transactional Id authorization failed."}


def denied_message(code: int) -> str | None:
    return DENIED_MESSAGES.get(int(code))


def config_resource_error(ctx, config_resource_type: int, name: str, op: int) -> int:
    """0, or Kafka's error for a Describe/AlterConfigs resource the principal may not ``op``:
    a topic (2) TOPIC_AUTHORIZATION_FAILED, a broker (4: the cluster) CLUSTER_AUTHORIZATION_FAILED,
    a group (32) GROUP_AUTHORIZATION_FAILED."""
    if ctx.broker.authorizer is None:
        return 0
    rtype, err = {2: (TOPIC, 29), 4: (CLUSTER, 31), 8: (CLUSTER, 31), 32: (GROUP, 30)}.get(
        config_resource_type, (None, 0))
    if rtype is None:
        return 0
    return 0 if allowed(ctx, op, rtype, CLUSTER_NAME if rtype == CLUSTER else name) else err
