"""The reasoned differences of docs/differences.md, section "## Wire (differential conformance)".

The section holds one markdown table the harness reads::

    | id | where | kafka | kwire | reason |
    | --- | --- | --- | --- | --- |
    | W1 | `CreateTopics.v*.topics[].error_message` | `.*` | `.*` | why kwire keeps it |

``where`` is a glob over ``<case family>/<Api>.v<version>.<path>`` with list indices dropped
(``topics[].error_code``); ``kafka`` and ``kwire`` are regular expressions that must match the whole
rendered value (JSON, error codes as ``"3 UNKNOWN_TOPIC_OR_PARTITION"``); an empty cell matches
anything. A difference is listed when some row matches it."""
from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path

SECTION = "## Wire (differential conformance)"
DOC = Path(__file__).resolve().parent.parent / "docs" / "differences.md"


@dataclass(frozen=True)
class Listed:
    id: str
    where: str
    kafka: re.Pattern | None
    kwire: re.Pattern | None
    reason: str

    def matches(self, where: str, kafka, kwire) -> bool:
        # "[]" in a path is literal, not a glob character class
        return (fnmatch.fnmatchcase(where, self.where.replace("[]", "[[]]"))
                and (self.kafka is None or self.kafka.fullmatch(render(kafka)) is not None)
                and (self.kwire is None or self.kwire.fullmatch(render(kwire)) is not None))


def render(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [p.strip().replace("\\|", "|") for p in parts]


def _unquote(cell: str) -> str:
    return cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == "`" else cell


def load(path: Path = DOC) -> list[Listed]:
    text = path.read_text()
    start = text.find(SECTION)
    if start < 0:
        raise ValueError(f"{path} has no section {SECTION!r}")
    body = text[start + len(SECTION):]
    nxt = body.find("\n## ")
    body = body if nxt < 0 else body[:nxt]
    rows = []
    header = None
    for line in body.splitlines():
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if header is None:
            header = [c.lower() for c in cells]
            if header[:4] != ["id", "where", "kafka", "kwire"]:
                raise ValueError(f"{path}: the wire table's columns are id | where | kafka | kwire | reason")
            continue
        if set(cells[0]) <= set("-: "):
            continue
        ident, where, kafka, kwire = (_unquote(c) for c in cells[:4])
        reason = cells[4] if len(cells) > 4 else ""
        if not reason:
            raise ValueError(f"{path}: difference {ident} gives no reason")
        rows.append(Listed(ident, where, re.compile(kafka, re.S) if kafka else None,
                           re.compile(kwire, re.S) if kwire else None, reason))
    ids = [r.id for r in rows]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path}: duplicate difference ids")
    return rows


def match(rows: list[Listed], where: str, kafka, kwire) -> Listed | None:
    for row in rows:
        if row.matches(where, kafka, kwire):
            return row
    return None
