"""The compat suite's side of docs/differences.md: the client x scenario outcomes that are known to differ
between kwire and Apache Kafka, each with its reason, and the comparison of a ``--target both`` run.

The section "## Compat suite (client x scenario outcomes)" of docs/differences.md holds one table:

    | row | kwire | kafka | reason |
    |---|---|---|---|
    | `old_protocol_requests[3.9]` | pass | skip | kwire emulates 3.9 for this row; ... |

``row`` is ``scenario[client]`` (one client) or ``scenario`` (every client), as in kwire_gaps.py;
``kwire`` and ``kafka`` are the outcome each target has, as a class: ``pass`` (pass, xpass), ``fail``
(fail, error, xfail) or ``skip``. A row whose classes differ between the targets is a difference; it is
explained when a line of the table matches its key and lists the classes observed. A listed ``fail`` makes
that target's row an xfail with the reason (conftest.py), so that a known difference does not fail the run
by itself; an unexplained difference does (report.py).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "differences.md"
SECTION = "## Compat suite (client x scenario outcomes)"
CLASSES = ("pass", "fail", "skip")


def outcome_class(outcome: str) -> str:
    return {"pass": "pass", "xpass": "pass", "fail": "fail", "error": "fail", "xfail": "fail"}.get(outcome, "skip")


@dataclass(frozen=True)
class Listed:
    key: str
    outcomes: dict        # target -> class
    reason: str


def parse(text: str) -> dict[str, Listed]:
    """The table of the compat section (rows until the next ``## `` heading); a malformed line raises."""
    out: dict[str, Listed] = {}
    inside = False
    header: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line.strip() == SECTION
            continue
        if not inside or not line.lstrip().startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            if header[0] != "row" or header[-1] != "reason":
                raise ValueError(f"{DOC.name}: the compat table's columns must be row, <targets>, reason: {line!r}")
            continue
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        if len(cells) != len(header):
            raise ValueError(f"{DOC.name}: a compat table line has {len(cells)} cells, not {len(header)}: {line!r}")
        key = cells[0].strip("`")
        outcomes = dict(zip(header[1:-1], (c.lower() for c in cells[1:-1])))
        bad = [c for c in outcomes.values() if c not in CLASSES]
        if bad or not cells[-1]:
            raise ValueError(f"{DOC.name}: outcomes must be one of {CLASSES} and a reason given: {line!r}")
        out[key] = Listed(key, outcomes, cells[-1])
    return out


def listed_differences(path: Path | None = None) -> dict[str, Listed]:
    """The table of docs/differences.md, or of the file ``$KWIRE_COMPAT_DIFFERENCES`` names (a test's)."""
    path = path or Path(os.environ.get("KWIRE_COMPAT_DIFFERENCES") or DOC)
    return parse(path.read_text()) if path.exists() else {}


def lookup(listed: dict[str, Listed], scenario: str, base: str, client: str) -> Listed | None:
    """The line for a row: ``scenario[client]`` first, then the scenario for every client (``base`` is the
    scenario without its parameters)."""
    for key in (f"{scenario}[{client}]", f"{base}[{client}]", scenario, base):
        if key in listed:
            return listed[key]
    return None


def compare(rows: list[dict], targets: tuple[str, str], listed: dict[str, Listed]) -> list[dict]:
    """Every scenario[client] whose outcome class differs between the two targets (or that ran on one
    only), each with ``explained``: the listed reason, or None."""
    by_key: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        by_key.setdefault((r["scenario"], r["client"]), {})[r["target"]] = r
    out = []
    for (scenario, client), per in by_key.items():
        classes = {t: outcome_class(per[t]["outcome"]) if t in per else "absent" for t in targets}
        if len(set(classes.values())) == 1:
            continue
        base = scenario.split("[")[0]
        entry = lookup(listed, scenario, base, client)
        explained = entry.reason if entry is not None and all(entry.outcomes.get(t) == classes[t]
                                                                for t in targets) else None
        out.append({"row": f"{scenario}[{client}]", "scenario": scenario, "client": client,
                    **{t: {"outcome": per[t]["outcome"] if t in per else "absent",
                           "reason": per[t]["reason"] if t in per else ""} for t in targets},
                    "explained": explained, "listed_key": entry.key if entry is not None else None,
                    "listed_as": ({t: entry.outcomes.get(t) for t in targets} if entry is not None else None)})
    return out


def unseen(listed: dict[str, Listed], differences: list[dict]) -> list[str]:
    """Listed rows no difference of this run matched: fixed since (delete the line) or not run (-k, --clients)."""
    seen = {d["listed_key"] for d in differences if d["explained"] is not None}
    return [k for k in listed if k not in seen]
