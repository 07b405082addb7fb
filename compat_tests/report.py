"""The compat report: one row per (target, client, scenario) with outcome and reason, written as
compat-report.json (list of rows) and compat-report.md (matrix scenario x client) when the session ends.
Registered as a pytest plugin by compat_tests/conftest.py."""
from __future__ import annotations

import json
from pathlib import Path

# scenario files in the order the report lists them (pytest collects them alphabetically)
MODULE_ORDER = ["test_produce_consume", "test_records", "test_topics_seek", "test_admin", "test_groups",
                "test_exactly_once"]
ORDER = {"pass": 0, "fail": 1, "error": 2, "xpass": 3, "xfail": 4, "skip": 5}


def _crash(report) -> str:
    lr = report.longrepr
    if lr is None:
        return ""
    if isinstance(lr, tuple):  # skip: (path, line, reason)
        return str(lr[2]).removeprefix("Skipped: ")
    crash = getattr(lr, "reprcrash", None)
    if crash is not None:
        return crash.message.strip().splitlines()[0][:300] if crash.message.strip() else ""
    return str(lr).strip().splitlines()[-1][:300]


class CompatReport:
    def __init__(self, path_prefix: str, target_name):
        self.prefix = path_prefix
        self.target_name = target_name  # callable: the target's name is known once the session starts
        self.rows: dict[str, dict] = {}
        self.order: list[str] = []

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        if "compat" not in props:
            return
        scenario, client = props["compat"]
        row = self.rows.get(report.nodeid)
        if row is None:
            row = {"target": self.target_name(), "client": client, "scenario": scenario,
                   "outcome": None, "reason": ""}
            self.rows[report.nodeid] = row
            self.order.append(report.nodeid)
        wasxfail = getattr(report, "wasxfail", None)
        if report.when in ("setup", "call"):
            if report.passed:
                if report.when == "call":
                    row["outcome"] = "xpass" if wasxfail is not None else "pass"
                    row["reason"] = f"declared gap passed: {wasxfail}" if wasxfail else ""
            elif report.skipped:
                if wasxfail is not None:
                    row["outcome"] = "xfail"
                    crash = _crash(report)
                    row["reason"] = wasxfail + (f" ({crash})" if crash and crash != wasxfail else "")
                else:
                    row["outcome"] = "skip"
                    row["reason"] = _crash(report)
            else:
                row["outcome"] = "fail" if report.when == "call" else "error"
                row["reason"] = _crash(report)
        elif report.failed and row["outcome"] in (None, "pass"):
            row["outcome"] = "error"
            row["reason"] = "teardown: " + _crash(report)

    def _sorted(self) -> list[dict]:
        def rank(nodeid: str) -> int:
            module = nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")
            return MODULE_ORDER.index(module) if module in MODULE_ORDER else len(MODULE_ORDER)

        ids = sorted(self.order, key=lambda n: (rank(n), self.order.index(n)))
        return [self.rows[n] for n in ids if self.rows[n]["outcome"] is not None]

    def pytest_sessionfinish(self, session, exitstatus):
        rows = self._sorted()
        if not rows:
            return
        Path(f"{self.prefix}.json").write_text(json.dumps(rows, indent=1) + "\n")
        Path(f"{self.prefix}.md").write_text(render_markdown(rows))

    def pytest_terminal_summary(self, terminalreporter):
        rows = [r for r in self.rows.values() if r["outcome"] is not None]
        if rows:
            counts = _counts(rows)
            terminalreporter.write_line(f"compat report ({rows[0]['target']}): " + ", ".join(
                f"{n} {k}" for k, n in counts.items()) + f" -> {self.prefix}.md, {self.prefix}.json")


def _counts(rows) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["outcome"]] = out.get(r["outcome"], 0) + 1
    return dict(sorted(out.items(), key=lambda kv: ORDER.get(kv[0], 9)))


def render_markdown(rows: list[dict]) -> str:
    targets = sorted({r["target"] for r in rows})
    clients = []
    scenarios = []
    for r in rows:
        if r["client"] not in clients:
            clients.append(r["client"])
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    cell = {(r["scenario"], r["client"]): r for r in rows}
    notes: list[str] = []

    def note(reason: str) -> str:
        if not reason:
            return ""
        if reason not in notes:
            notes.append(reason)
        return f" [{notes.index(reason) + 1}]"

    lines = [f"# Compatibility report: {', '.join(targets)}", ""]
    lines.append("Totals: " + ", ".join(f"{n} {k}" for k, n in _counts(rows).items()) + ".")
    lines += ["", "| scenario | " + " | ".join(clients) + " |", "|---|" + "---|" * len(clients)]
    for s in scenarios:
        cells = []
        for c in clients:
            r = cell.get((s, c))
            if r is None:
                cells.append("")
                continue
            word = r["outcome"].upper() if r["outcome"] in ("fail", "error", "xpass") else r["outcome"]
            cells.append(word + note(r["reason"]))
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Reasons:", ""]
        lines += [f"{i}. {n.replace('|', '/')}" for i, n in enumerate(notes, 1)]
    return "\n".join(lines) + "\n"
