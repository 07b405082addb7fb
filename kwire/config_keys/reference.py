"""docs/config.md from the config table: ``python -m kwire.config_keys.reference > docs/config.md``
(``make docs``).

Each key: type, default, dynamic update mode, and whether kwire acts on it. "Honoured" is
decided mechanically: the key's name appears as a string in kwire's code outside the table
(``config.get("num.partitions")``, a topic config the log reads ...), or it is one whose effect
is a named kwire feature listed in ``_EFFECT_ELSEWHERE``. Every other key is accepted, checked
against Kafka's type and validator, stored and described by DescribeConfigs, and changes
nothing.
"""
from __future__ import annotations

import os
import re
import sys

from kwire.config_keys import BROKER, GROUP, TOPIC
from kwire.configdef import ConfigKey

# Keys read through a name built at run time or through a synonym, not a literal.
_EFFECT_ELSEWHERE = {
    "log.retention.hours": "through retention.ms", "log.retention.minutes": "through retention.ms",
    "log.roll.hours": "through segment.ms", "log.dir": "the data dir when log.dirs is not set",
    "broker.id": "older name of node.id",
}
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Files that name keys to describe or map them, not to act on them.
_NOT_EFFECTS = {os.path.join("handlers", "configs.py"), os.path.join("handlers", "config_entries.py"),
                os.path.join("testing", "container.py"), os.path.join("testing", "apache_kafka.py")}


def _used_names() -> set[str]:
    """Key names (dotted, or one word such as listeners) that appear as string literals in kwire's code
    outside the table."""
    names: set[str] = set()
    pat = re.compile(r"""["']([a-z][a-z0-9]*(?:\.[a-z0-9]+)*)["']""")   # dotted, or one word (listeners)
    for dirpath, dirnames, filenames in os.walk(_ROOT):
        dirnames[:] = [d for d in dirnames if d not in ("config_keys", "__pycache__")]
        for fn in filenames:
            if fn.endswith(".py") and os.path.relpath(os.path.join(dirpath, fn), _ROOT) not in _NOT_EFFECTS:
                with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                    names.update(pat.findall(f.read()))
    return names


def _fmt_default(k: ConfigKey) -> str:
    d = k.default_string
    if d is None:
        return "null"
    if d == "":
        return '""'
    return d if len(d) <= 40 else d[:37] + "..."


def _row(k: ConfigKey, used: set[str], topic: bool = False) -> str:
    if k.name in used or k.name in _EFFECT_ELSEWHERE:
        how = "honoured" + (f" ({_EFFECT_ELSEWHERE[k.name]})" if k.name in _EFFECT_ELSEWHERE else "")
    else:
        how = "accepted, ignored"
    if topic:
        dyn = "per topic"
    else:
        dyn = {"read-only": "no", "per-broker": "per broker", "cluster-wide": "cluster-wide"}[k.mode]
    name = f"`{k.name}`" + (" (kwire)" if k.kwire else "")
    doc = k.doc.replace("|", "\\|")
    return f"| {name} | {k.type.name.lower()} | `{_fmt_default(k)}` | {how} | {dyn} | {doc} |"


def render() -> str:
    used = _used_names()
    for k in TOPIC.values():      # a broker key that gives an honoured topic config its default acts too
        if k.name in used:
            for syn in k.synonyms:
                _EFFECT_ELSEWHERE.setdefault(syn, f"the default of the topic config {k.name}")
    out = ["# Configuration reference", "",
           "Generated from kwire's config table (`kwire/config_keys/`) by `make docs`; do not edit by hand.", "",
           "Every key Kafka 4 knows is accepted with Kafka's name, type, default and validator (a bad value stops "
           "`kwire serve` with one line naming it) and is described by DescribeConfigs. *honoured*: kwire acts "
           "on the key; *accepted, ignored*: it is checked and stored but changes nothing (threads, quotas, "
           "security and tiered storage kwire does not have). *dynamic*: whether AlterConfigs / "
           "IncrementalAlterConfigs may change it at run time (per broker or cluster-wide), as in Kafka. "
           "Keys marked (kwire) are kwire's own.", ""]
    for title, table, topic in (("Broker configs", BROKER, False), ("Topic configs", TOPIC, True),
                                ("Group configs", GROUP, True)):
        keys = sorted((k for k in table.values() if not k.hidden), key=lambda k: k.name)
        honoured = sum(1 for k in keys if k.name in used or k.name in _EFFECT_ELSEWHERE)
        out += [f"## {title}", "", f"{len(keys)} keys, {honoured} honoured.", "",
                "| key | type | default | kwire | dynamic | description |", "| --- | --- | --- | --- | --- | --- |"]
        out += [_row(k, used, topic) for k in keys]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(render())
