"""``kwire configs --entity-type users|clients``: client quotas, as kafka-configs.sh.

--describe sends DescribeClientQuotas with kafka-configs' filter (strict: the entity has only
the given type; --entity-name NAME an exact match, --entity-default the default entity, neither
any name) and prints ``Quota configs for user-principal 'alice' are producer_byte_rate=1024.0``
(``client-id 'c1'``, ``the default user-principal``, ...), one line per entity;
--alter --add-config producer_byte_rate=1024,consumer_byte_rate=2048 --delete-config
request_percentage sends AlterClientQuotas and prints ``Completed updating config for user
alice.`` (``Completed updating default config for users in the cluster.``). Left out: the
user + client-id pair entities on the command line (AlterClientQuotas takes them; pass two
--entity-type to kafka-configs.sh) and ip entities (kwire does not enforce them).
"""
from __future__ import annotations

from kwire.admin.common import parse_add_config
from kwire.cmdline import UsageError

ENTITY_TYPES = {"users": "user", "clients": "client-id"}
_NAMES = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def java_double(x: float) -> str:
    """A double as Java's Double.toString prints it (kafka-configs prints values so)."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        s = repr(float(x))
        return s if "." in s or "e" in s else s + ".0"
    mant, _, exp = f"{x:.17e}".partition("e")
    # shortest mantissa that round-trips, as Java's algorithm does
    for digits in range(1, 18):
        m = f"{x:.{digits - 1}e}"
        if float(m) == x:
            mant, _, exp = m.partition("e")
            break
    if "." not in mant:
        mant += ".0"
    return f"{mant}E{int(exp)}"


def entity_text(pairs) -> str:
    d = dict(pairs)
    parts = []
    for t in ("user", "client-id", "ip"):
        if t in d:
            parts.append(f"{_NAMES[t]} '{d[t]}'" if d[t] is not None else f"the default {_NAMES[t]}")
    return ", ".join(parts)


def main(c, args, etype: str, name: str | None, scram=None) -> int:
    """``scram``: kwire.admin.user_scram for users (their SCRAM credentials are described after
    the quotas, and SCRAM-SHA-* keys of --add-config / --delete-config go to it), as
    kafka-configs.sh handles both for ``--entity-type users``."""
    from kwire.admin.client import AdminError, error_name  # noqa: PLC0415 - start-up time (kwire.admin)

    qtype = ENTITY_TYPES[etype]
    if args.describe:
        C = c.struct("DescribeClientQuotas", "ComponentData")
        if name is None:
            comp = C(entity_type=qtype, match_type=MATCH_SPECIFIED, match=None)
        elif name == "":
            comp = C(entity_type=qtype, match_type=MATCH_DEFAULT, match=None)
        else:
            comp = C(entity_type=qtype, match_type=MATCH_EXACT, match=name)
        body, _ = c.call("DescribeClientQuotas", components=[comp], strict=True)
        if body.error_code:
            raise AdminError(f"{error_name(body.error_code)}: {body.error_message or ''}", body.error_code)
        for e in body.entries or ():
            values = ", ".join(f"{v.key}={java_double(v.value)}" for v in e.values)
            print(f"Quota configs for {entity_text((x.entity_type, x.entity_name) for x in e.entity)} are {values}")
        if scram is not None:
            scram.describe(c, name)    # named users only, as kafka-configs.sh
        return 0

    if name is None:
        raise UsageError(f"kwire configs: --alter --entity-type {etype} needs --entity-name or --entity-default")
    raw: dict[str, str] = {}
    for a in args.add_config:
        raw.update(parse_add_config(a))
    deletes = [k.strip() for d in args.delete_config for k in d.split(",") if k.strip()]
    if not raw and not deletes:
        raise UsageError("kwire configs: --alter needs --add-config or --delete-config")
    done = False    # the completion line already printed
    if scram is not None:
        s_adds = {k: v for k, v in raw.items() if k in scram.MECHANISMS}
        s_dels = [k for k in deletes if k in scram.MECHANISMS]
        if s_adds or s_dels:
            scram.alter(c, name, s_adds, s_dels)     # prints kafka-configs' completion line
            done = True
            raw = {k: v for k, v in raw.items() if k not in s_adds}
            deletes = [k for k in deletes if k not in s_dels]
            if not raw and not deletes:
                return 0
    if deletes:   # kafka-configs.sh: only keys the entity has may be deleted
        C = c.struct("DescribeClientQuotas", "ComponentData")
        comp = C(entity_type=qtype, match_type=MATCH_EXACT, match=name) if name else \
            C(entity_type=qtype, match_type=MATCH_DEFAULT, match=None)
        body, _ = c.call("DescribeClientQuotas", components=[comp], strict=True)
        have = {v.key for e in (body.entries or ()) for v in e.values}
        missing = [k for k in deletes if k not in have]
        if missing:
            raise UsageError(f"kwire configs: Invalid config(s): {','.join(missing)}")
    adds: dict[str, float] = {}
    for k, v in raw.items():
        try:
            adds[k] = float(v)
        except ValueError:
            raise UsageError(f"kwire configs: quota {k}={v!r} is not a number") from None
    E, Ent, Op = (c.struct("AlterClientQuotas", s) for s in ("EntryData", "EntityData", "OpData"))
    ops = [Op(key=k, value=v, remove=False) for k, v in adds.items()]
    ops += [Op(key=k, value=0.0, remove=True) for k in deletes]
    body, _ = c.call("AlterClientQuotas", validate_only=False, entries=[E(
        entity=[Ent(entity_type=qtype, entity_name=name or None)], ops=ops)])
    r = body.entries[0]
    if r.error_code:
        raise AdminError(f"{error_name(r.error_code)}: {r.error_message or ''}", r.error_code)
    if done:
        return 0
    if name == "":
        print(f"Completed updating default config for {etype} in the cluster.")
    else:
        print(f"Completed updating config for {etype[:-1]} {name}.")
    return 0
