"""Our schema modules against Kafka's own JSON message definitions (as shipped in kafka-python).

For every request and response of every API in ``APIS``, field by field and recursively,
restricted to the versions our message declares valid: order, snake_case name, type (with
struct type names), versions present, nullable versions, tag and tagged versions, defaults and
flexible versions. Every difference is collected, so one failure lists them all.
"""
from __future__ import annotations

import uuid

import pytest

from kwire.codec.apis import APIS
from kwire.codec.schema import _NO_DEFAULT, MAX_VERSION, Versions, default_value, snake

MESSAGES = [m for api in APIS.values() for m in (api.request, api.response)]


def _vset(vers: Versions, within: frozenset) -> frozenset:
    if vers.empty:
        return frozenset()
    return frozenset(v for v in within if vers.lo <= v <= vers.hi)


def _kafka_versions(text, within: frozenset) -> frozenset:
    return _vset(Versions.parse(text), within)


def _fmt(vs: frozenset) -> str:
    if not vs:
        return "none"
    s = sorted(vs)
    runs, start, prev = [], s[0], s[0]
    for v in s[1:]:
        if v != prev + 1:
            runs.append((start, prev))
            start = v
        prev = v
    runs.append((start, prev))
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def kafka_default(kf: dict):
    """Kafka's default of a JSON field as the Python value our classes hold."""
    t = kf["type"]
    d = kf.get("default")
    if t.startswith("[]"):
        if d in (None, ""):
            return []
        if d == "null":
            return None
        raise AssertionError(f"array default {d!r}")
    if "fields" in kf:  # a struct
        if d == "null":
            return None
        return "<struct instance>"
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if d in (None, ""):
            return 0
        if isinstance(d, str):
            return int(d, 16) if d.lower().startswith(("0x", "-0x")) else int(d)
        return int(d)
    if t == "float64":
        return 0.0 if d in (None, "") else float(d)
    if t == "bool":
        if d in (None, ""):
            return False
        if isinstance(d, bool):
            return d
        return {"true": True, "false": False}[str(d).lower()]
    if t == "string":
        if d is None:
            return ""
        return None if d == "null" else d
    if t == "bytes":
        if d in (None, ""):
            return b""
        return None if d == "null" else AssertionError(d)
    if t == "records":
        return None if d in (None, "", "null") else AssertionError(d)
    if t == "uuid":
        return uuid.UUID(int=0) if d in (None, "") else uuid.UUID(d)
    raise AssertionError(f"unknown Kafka type {t}")


def _our_default(f):
    if f.is_struct and not f.is_array:
        d = default_value(f)
        return "<struct instance>" if d is None and f.default is _NO_DEFAULT else d
    return default_value(f)


# kwire's own tagged fields in Kafka's messages, far from Kafka's tags (a Kafka peer skips an unknown
# tag): (message, field) -> why. Named here so that none is added unnoticed.
KWIRE_EXTENSIONS = {
    ("BrokerHeartbeatRequest", "kwire_offline_partitions"):
        "the partitions in the offline log dirs: kwire's controller keeps no directory assignments (KIP-858)",
}


def _kwire_extension(f) -> bool:
    return f.name.startswith("kwire_") and f.tag is not None and f.tag >= 10000


def test_kwire_extensions_are_the_listed_ones():
    found = set()

    def walk(msg_name, fields):
        for f in fields:
            if _kwire_extension(f):
                found.add((msg_name, f.name))
            if f.fields:
                walk(msg_name, f.fields)
    for m in MESSAGES:
        walk(m.name, m.fields)
    assert found == set(KWIRE_EXTENSIONS)


def compare_fields(path: str, ours: list, theirs: list, within: frozenset, flexible: frozenset,
                   problems: list[str]) -> None:
    """Compare two field lists in the versions ``within`` (where their parent is present)."""
    our_live = [f for f in ours if _vset(f.versions, within) and not _kwire_extension(f)]
    their_live = [k for k in theirs if _kafka_versions(k.get("versions"), within)]
    our_names = [f.name for f in our_live]
    their_names = [snake(k["name"]) for k in their_live]
    for name in their_names:
        if name not in our_names:
            k = their_live[their_names.index(name)]
            problems.append(f"{path}.{name}: missing (Kafka has it in versions "
                            f"{_fmt(_kafka_versions(k.get('versions'), within))})")
    for name in our_names:
        if name not in their_names:
            problems.append(f"{path}.{name}: not in Kafka's definition in versions {_fmt(within)}")
    common_ours = [n for n in our_names if n in their_names]
    common_theirs = [n for n in their_names if n in our_names]
    if common_ours != common_theirs:
        problems.append(f"{path}: field order {common_ours} != Kafka's {common_theirs}")
    for f in our_live:
        if f.name not in their_names:
            continue
        k = their_live[their_names.index(f.name)]
        here = f"{path}.{f.name}"
        if f.type != k["type"]:
            problems.append(f"{here}: type {f.type!r} != Kafka's {k['type']!r}")
        present = _vset(f.versions, within)
        k_present = _kafka_versions(k.get("versions"), within)
        if present != k_present:
            problems.append(f"{here}: versions {_fmt(present)} != Kafka's {_fmt(k_present)}")
        live = present & k_present
        nul = _vset(f.nullable, live)
        k_nul = _kafka_versions(k.get("nullableVersions"), live)
        if nul != k_nul:
            problems.append(f"{here}: nullable versions {_fmt(nul)} != Kafka's {_fmt(k_nul)}")
        tagged = _vset(f.tagged, live & flexible) if f.tag is not None else frozenset()
        k_tagged = (_kafka_versions(k.get("taggedVersions"), live & flexible)
                    if k.get("tag") is not None else frozenset())
        if tagged != k_tagged:
            problems.append(f"{here}: tagged versions {_fmt(tagged)} != Kafka's {_fmt(k_tagged)}")
        if (tagged or k_tagged) and f.tag != k.get("tag"):
            problems.append(f"{here}: tag {f.tag} != Kafka's {k.get('tag')}")
        try:
            k_def = kafka_default(k)
        except (KeyError, ValueError) as exc:
            problems.append(f"{here}: cannot read Kafka's default {k.get('default')!r}: {exc}")
        else:
            ours_def = _our_default(f)
            if isinstance(k_def, AssertionError):
                problems.append(f"{here}: unexpected Kafka default {k.get('default')!r}")
            elif ours_def != k_def or type(ours_def) is not type(k_def):
                problems.append(f"{here}: default {ours_def!r} != Kafka's {k_def!r} "
                                f"(from {k.get('default')!r})")
        if f.is_struct != ("fields" in k):
            problems.append(f"{here}: struct-ness differs from Kafka's")
        elif f.is_struct and live:
            compare_fields(f"{path}.{f.elem}", f.fields, k["fields"], live, flexible, problems)


def compare_message(msg, kjson) -> list[str]:
    problems: list[str] = []
    valid = frozenset(range(msg.valid.lo, msg.valid.hi + 1))
    k_valid = _kafka_versions(kjson["validVersions"], frozenset(range(0, MAX_VERSION + 1)))
    # Kafka 4 dropped some old versions from its JSON (Produce v0-2, ...) that clients still
    # send and we still serve; those cannot be checked here. Versions above Kafka's are errors.
    if any(v > max(k_valid) for v in valid):
        problems.append(f"{msg.name}: valid versions {msg.valid} go past Kafka's {kjson['validVersions']}")
    valid = valid & k_valid
    if msg.api_key != kjson.get("apiKey"):
        problems.append(f"{msg.name}: api key {msg.api_key} != Kafka's {kjson.get('apiKey')}")
    if msg.kind != kjson.get("type"):
        problems.append(f"{msg.name}: kind {msg.kind!r} != Kafka's {kjson.get('type')!r}")
    flexible = _vset(msg.flexible, valid)
    k_flexible = _kafka_versions(kjson.get("flexibleVersions"), valid)
    if flexible != k_flexible:
        problems.append(f"{msg.name}: flexible versions {_fmt(flexible)} != Kafka's {_fmt(k_flexible)}")
    compare_fields(msg.name, msg.fields, kjson.get("fields", []), valid, k_flexible, problems)
    return problems


def test_apis_discovered():
    assert APIS, "no schema modules discovered in kwire.codec.apis"
    for key, api in APIS.items():
        assert api.request.api_key == api.response.api_key == key
        assert api.request.kind == "request" and api.response.kind == "response"
        assert api.request.name == api.name + "Request"
        assert api.response.name == api.name + "Response"
        assert api.request.valid == api.response.valid, f"{api.name}: request/response versions differ"


@pytest.mark.parametrize("msg", MESSAGES, ids=[m.name for m in MESSAGES])
def test_message_matches_kafka_json(msg, codec_kit):
    kjson = codec_kit.kafka_json(msg.name)
    if kjson is None:
        pytest.skip(f"kafka-python ships no Kafka JSON definition of {msg.name}")
    problems = compare_message(msg, kjson)
    assert not problems, f"{msg.name} differs from Kafka's JSON:\n  " + "\n  ".join(problems)


# --- the comparison itself must catch what it claims to catch -----------------------------
def _metadata_json(codec_kit):
    kjson = codec_kit.kafka_json("MetadataResponse")
    assert kjson is not None
    return kjson


def _mutated(msg, mutate):
    from kwire.codec.schema import F, Message

    def copy_fields(fields):
        out = []
        for f in fields:
            kw = dict(nullable=str(f.nullable) if not f.nullable.empty else None,
                      tag=f.tag, tagged=str(f.tagged) if f.tag is not None else None,
                      fields=copy_fields(f.fields) if f.fields is not None else None)
            if f.default is not _NO_DEFAULT:
                kw["default"] = f.default
            out.append(F(f.name, f.type, str(f.versions), **kw))
        return out

    fields = copy_fields(msg.fields)
    mutate(fields)
    return Message(msg.name, api_key=msg.api_key, kind=msg.kind, valid=str(msg.valid),
                   flexible=str(msg.flexible), fields=fields)


def test_comparison_detects_differences(codec_kit):
    from kwire.codec.schema import F

    kjson = _metadata_json(codec_kit)
    msg = APIS[3].response
    assert compare_message(_mutated(msg, lambda fs: None), kjson) == compare_message(msg, kjson)

    def drop_controller(fs):
        del fs[[f.name for f in fs].index("controller_id")]

    def swap(fs):
        fs[0], fs[1] = fs[1], fs[0]

    def retype(fs):
        fs[0] = F("throttle_time_ms", "int64", "3+")

    def reversion(fs):
        fs[0] = F("throttle_time_ms", "int32", "2+")

    def renull(fs):
        i = [f.name for f in fs].index("cluster_id")
        fs[i] = F("cluster_id", "string", "2+", default=None, nullable="3+")

    def redefault(fs):
        i = [f.name for f in fs].index("controller_id")
        fs[i] = F("controller_id", "int32", "1+", default=0)

    def extra(fs):
        fs.append(F("bogus", "int8", "0+"))

    for mutate, needle in [(drop_controller, "controller_id: missing"), (swap, "field order"),
                           (retype, "type 'int64'"), (reversion, "versions 2-"),
                           (renull, "nullable versions"), (redefault, "default 0"),
                           (extra, "bogus: not in Kafka")]:
        problems = compare_message(_mutated(msg, mutate), kjson)
        assert any(needle in p for p in problems), (mutate.__name__, problems)


def test_kafka_default_conversion():
    assert kafka_default({"type": "int32", "default": "-1"}) == -1
    assert kafka_default({"type": "int64", "default": "0x7fffffffffffffff"}) == 2**63 - 1
    assert kafka_default({"type": "int32"}) == 0
    assert kafka_default({"type": "bool", "default": "true"}) is True
    assert kafka_default({"type": "bool", "default": False}) is False
    assert kafka_default({"type": "string", "default": "null"}) is None
    assert kafka_default({"type": "string"}) == ""
    assert kafka_default({"type": "[]int32"}) == []
    assert kafka_default({"type": "uuid"}) == uuid.UUID(int=0)
    assert kafka_default({"type": "records"}) is None
    assert kafka_default({"type": "Foo", "fields": [], "default": "null"}) is None
