"""Client quotas as ClientQuotaRecords left them (Kafka's ClientQuotasImage), the quota a
connection gets by Kafka's precedence, and DescribeClientQuotas' filter.

An entity is a set of (entity type, name) pairs: ``user`` and/or ``client-id`` (name None: the
default entity of that type); ``ip`` entities are refused by AlterClientQuotas (kwire does not
enforce connection-rate quotas). Precedence (ClientQuotaManager's DefaultQuotaCallback), most
specific first::

    /config/users/<user>/clients/<client-id>
    /config/users/<user>/clients/<default>
    /config/users/<user>
    /config/users/<default>/clients/<client-id>
    /config/users/<default>/clients/<default>
    /config/users/<default>
    /config/clients/<client-id>
    /config/clients/<default>

:meth:`ClientQuotaStore.resolve` gives, for one quota key, the metric tags (user, client-id)
that name the sensor the connection's traffic is counted on (all of a user's client ids share
one sensor when the quota is the user's) and the bound, None when no quota applies.
"""
from __future__ import annotations

import math

from kwire.errors import ErrorCode

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
# QuotaConfigs: the keys of user and client-id entities, LONG or DOUBLE (controller_mutation_rate,
# Kafka's fourth, is refused: kwire does not throttle topic creation)
KEY_TYPES = {PRODUCER_BYTE_RATE: "long", CONSUMER_BYTE_RATE: "long", REQUEST_PERCENTAGE: "double"}

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple   # ((entity type, name or None), ...) sorted by type


def entity_key(pairs) -> Entity:
    return tuple(sorted(pairs, key=lambda p: p[0]))


class QuotaRequestError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClientQuotaStore:
    def __init__(self) -> None:
        self.entities: dict[Entity, dict[str, float]] = {}
        self.version = 0   # bumped by every change (the quota managers' caches key on it)

    def copy(self) -> "ClientQuotaStore":
        """The same quotas (a metadata delta writes to its own copy: images are immutable)."""
        out = ClientQuotaStore()
        out.entities = {e: dict(v) for e, v in self.entities.items()}
        out.version = self.version
        return out

    # ---------------------------------------------------------------- records
    def apply(self, rec) -> None:
        ent = entity_key((e.entity_type, e.entity_name) for e in rec.entity)
        if rec.remove:
            values = self.entities.get(ent)
            if values is not None:
                values.pop(rec.key, None)
                if not values:
                    del self.entities[ent]
        else:
            self.entities.setdefault(ent, {})[rec.key] = rec.value
        self.version += 1

    def has_key(self, key: str) -> bool:
        return any(key in v for v in self.entities.values())

    # ---------------------------------------------------------------- enforcement
    def _get(self, key: str, *pairs) -> float | None:
        values = self.entities.get(entity_key(pairs))
        return None if values is None else values.get(key)

    def resolve(self, user: str, client_id: str, key: str) -> tuple[tuple[str, str], float | None]:
        """((user tag, client-id tag), bound or None) for a connection of ``user`` (the
        principal's name) with ``client_id``, for quota ``key``."""
        def has(*pairs) -> bool:
            return self._get(key, *pairs) is not None

        u, c, du, dc = (USER, user), (CLIENT_ID, client_id), (USER, None), (CLIENT_ID, None)
        if has(u, c) or has(u, dc):
            tags = (user, client_id)
        elif has(u):
            tags = (user, "")
        elif has(du, c) or has(du, dc):
            tags = (user, client_id)
        elif has(du):
            tags = (user, "")
        else:
            tags = ("", client_id)
        return tags, self.limit(tags, key)

    def limit(self, tags: tuple[str, str], key: str) -> float | None:
        user, client_id = tags
        g = self._get
        u, c, du, dc = (USER, user), (CLIENT_ID, client_id), (USER, None), (CLIENT_ID, None)
        if user and client_id:
            for pairs in ((u, c), (u, dc), (du, c), (du, dc)):
                q = g(key, *pairs)
                if q is not None:
                    return q
            return None
        if user:
            q = g(key, u)
            return q if q is not None else g(key, du)
        if client_id:
            q = g(key, c)
            return q if q is not None else g(key, dc)
        return None

    # ---------------------------------------------------------------- DescribeClientQuotas
    def describe(self, components, strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """The entities a DescribeClientQuotas filter matches (ClientQuotasImage.describe);
        QuotaRequestError for a malformed filter."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for c in components:
            t = c.entity_type
            if not t:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if t in exact or t in typed:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                        f"Entity type {t} cannot appear more than once in the filter.")
            if t not in (IP, USER, CLIENT_ID):
                raise QuotaRequestError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {t}")
            if c.match_type == MATCH_EXACT:
                if c.match is None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                            "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[t] = c.match
            elif c.match_type == MATCH_DEFAULT:
                if c.match is not None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[t] = None
            elif c.match_type == MATCH_SPECIFIED:
                if c.match is not None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, "
                                                                       "but also specified a match string.")
                typed.add(t)
            else:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Unknown match type {c.match_type}")
        if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP "
                                                               "filter component should not be used with user or "
                                                               "clientId filter component.")
        out = []
        for ent, values in sorted(self.entities.items(), key=lambda kv: [(t, n or "") for t, n in kv[0]]):
            d = dict(ent)
            if strict and len(d) != len(exact) + len(typed):
                continue
            if any(t not in d or d[t] != name for t, name in exact.items()):
                continue
            if any(t not in d for t in typed):
                continue
            out.append((ent, dict(values)))
        return out


def validate_alteration(pairs: list[tuple[str, str | None]], ops: list[tuple[str, float | None]]
                        ) -> tuple[Entity | None, int, str | None]:
    """(entity, error code, message) for one AlterClientQuotas entry, checked as Kafka's
    ClientQuotaControlManager does (entity types, names, keys, LONG values); the entity is
    None when the entry is refused."""
    seen: dict[str, str | None] = {}
    if not pairs:
        return None, ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity"
    for t, name in pairs:
        if t in seen:
            return None, ErrorCode.INVALID_REQUEST, f"Invalid empty client quota entity, duplicate entity entry {t}"
        if t not in (USER, CLIENT_ID, IP):
            return None, ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {t}"
        if name is not None and name == "":
            return None, ErrorCode.INVALID_REQUEST, f"Empty {t} not supported"
        seen[t] = name
    if IP in seen:
        return None, ErrorCode.INVALID_REQUEST, "kwire does not enforce ip (connection rate) quotas"
    keys: set[str] = set()
    for key, value in ops:
        if key in keys:
            return None, ErrorCode.INVALID_REQUEST, f"Duplicate quota key {key} not updating quota for this entity"
        keys.add(key)
        if value is None:
            continue
        kind = KEY_TYPES.get(key)
        if kind is None:
            return None, ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}"
        if not math.isfinite(value):
            return None, ErrorCode.INVALID_REQUEST, f"Configuration {key} must be a finite number"
        if kind == "long":
            eps = 1e-6
            if abs(int(value + eps) - value) > eps:
                return None, ErrorCode.INVALID_REQUEST, f"Configuration {key} must be a Long value"
    return entity_key(seen.items()), ErrorCode.NONE, None
