"""The compat report: one row per (target, client, scenario) with outcome and reason, written as
compat-report.json (meta, scenario docs, rows; under --target both also the differences between the
targets) and compat-report.md (matrix scenario x client, both targets side by side under --target both
with every differing cell flagged, grouped reasons, what each scenario checks) when the session ends.
Under --target both a difference that docs/differences.md does not explain fails the run.
Registered as a pytest plugin by compat_tests/conftest.py."""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path

from compat_tests.differences import DOC, compare, listed_differences, unseen

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


_NORMALISE = [
    (re.compile(r"127\.0\.0\.1:\d+|localhost:\d+"), "HOST:PORT"),
    (re.compile(r"compat-[0-9a-f]{12}"), "<topic>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\b0x[0-9a-f]+\b"), "0x..."),
    (re.compile(r"\b\d+(?:\.\d+)?(\s*(?:ms|s|seconds|secs|milliseconds))\b"), r"N\1"),
    (re.compile(r"(?<![\w.])\d{3,}(?![\w.])"), "N"),
]


def normalise(reason: str) -> str:
    """One reason for every cell failing the same way: topic names, ids, durations, ports and
    long numbers replaced by placeholders; pytest's assertion rewriting left out."""
    text = reason.strip()
    if text.startswith("AssertionError: "):
        text = text[len("AssertionError: "):]
    for pat, repl in _NORMALISE:
        text = pat.sub(repl, text)
    return text[:200]


def client_versions() -> dict[str, str]:
    """The stock clients and the libraries under them, as installed here."""
    out: dict[str, str] = {}
    try:
        import confluent_kafka

        # version() is a (str, int) pair in older releases and a plain string in newer ones
        version = getattr(confluent_kafka, "__version__", None) or confluent_kafka.version()
        version = version[0] if isinstance(version, tuple) else version
        out["confluent-kafka"] = f"{version} (librdkafka {confluent_kafka.libversion()[0]})"
    except ImportError:
        out["confluent-kafka"] = "not installed"
    for name, mod in (("kafka-python", "kafka"), ("aiokafka", "aiokafka")):
        try:
            out[name] = __import__(mod).__version__
        except ImportError:
            out[name] = "not installed"
    try:
        from compat_tests.clients.kcat import KCAT

        if KCAT:
            proc = subprocess.run([KCAT, "-V"], capture_output=True, text=True, timeout=10)
            text = proc.stdout or proc.stderr
            m = re.search(r"^Version (\S+).*?(librdkafka \S+)?", text, re.M)
            lib = re.search(r"librdkafka (\d[\w.]*)", text)
            out["kcat"] = (f"{m.group(1)}" + (f" (librdkafka {lib.group(1)})" if lib else "")) if m else \
                (text.strip().splitlines() or ["installed"])[0]
        else:
            out["kcat"] = "not installed"
    except Exception as exc:  # noqa: BLE001 - a version we cannot read is reported as such
        out["kcat"] = f"unknown ({exc})"
    out["java"] = java_version()
    return out


def java_version() -> str:
    """kafka-clients as the driver JVM reported it (or as its jar is named when no Java row ran), the JVM, and
    where the jars come from (Maven, by make kafka)."""
    import sys

    java_mod = sys.modules.get("compat_tests.clients.java")
    v = getattr(java_mod, "versions_seen", None)
    if v:
        return f"kafka-clients {v['kafka_clients']} (Java {v['java']}; jars from Maven, make kafka)"
    from compat_tests.clients.java import kafka_clients_version

    jar = kafka_clients_version()
    if jar is None:
        return "not available (its jars are missing: make kafka)"
    jdk = ""
    try:
        proc = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=20)
        m = re.search(r'version "([^"]+)"', proc.stderr)
        jdk = f"Java {m.group(1)}; " if m else ""
    except (OSError, subprocess.SubprocessError):
        jdk = "no java on PATH; "
    return f"kafka-clients {jar} ({jdk}jars from Maven, make kafka)"


def kwire_version(root: Path | None = None) -> str:
    import kwire

    commit = ""
    try:
        proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=root)
        if proc.returncode == 0:
            commit = proc.stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                   text=True, timeout=10, cwd=root)
            if dirty.stdout.strip():
                commit += "+changes"
    except (OSError, subprocess.SubprocessError):
        pass
    return f"{kwire.__version__}" + (f" (commit {commit})" if commit else "")


class CompatReport:
    def __init__(self, path_prefix: str, target_name, root: Path | None = None, compare: tuple | None = None,
                 descriptions=None):
        self.prefix = path_prefix
        self.descriptions = descriptions   # callable: {target: what exactly ran}, once the targets started
        self.target_name = target_name  # callable: the target's name is known once the session starts
        self.root = root
        self.compare = compare          # (target, target) under --target both
        self.differences: list[dict] | None = None
        self.rows: dict[str, dict] = {}
        self.order: list[str] = []
        self.docs: dict[str, str] = {}   # scenario -> what it checks (its test's docstring)
        self.others: dict[str, str] = {}  # nodeid -> outcome of the tests outside the matrix

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        if "compat" not in props:      # a test outside the client x scenario matrix: counted on its own
            if report.when == "call" or (report.when == "setup" and not report.passed):
                self.others[report.nodeid] = "pass" if report.passed else ("skip" if report.skipped else "fail")
            elif report.when == "teardown" and report.failed:
                self.others[report.nodeid] = "error"
            return
        scenario, client, target = props["compat"]
        if props.get("compat_doc"):
            self.docs.setdefault(scenario.split("[")[0], props["compat_doc"])
        row = self.rows.get(report.nodeid)
        if row is None:
            row = {"target": target or self.target_name(), "client": client, "scenario": scenario,
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
        if not rows:        # nothing of the matrix ran: say so, never leave an older run's report in place
            note = (f"No scenario ran (pytest exit status {int(exitstatus)}): the target could not be started "
                    f"or every row was deselected; see the pytest output.")
            meta = {"target": "+".join(self.compare) if self.compare else self.target_name(),
                    "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    "kwire": kwire_version(self.root), "note": note}
            Path(f"{self.prefix}.json").write_text(json.dumps({"meta": meta, "scenarios": {}, "rows": []},
                                                              indent=1) + "\n")
            Path(f"{self.prefix}.md").write_text(f"# Compatibility report: {meta['target']}\n\n- date: "
                                                 f"{meta['date']}\n- kwire: {meta['kwire']}\n\n{note}\n")
            return
        targets = list(dict.fromkeys(r["target"] for r in rows))
        meta = {"target": "+".join(self.compare) if self.compare else rows[0]["target"],
                "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "kwire": kwire_version(self.root), "clients": client_versions()}
        described = self.descriptions() if self.descriptions else {}
        if "kafka" in targets:
            meta["kafka"] = described.get("kafka") or apache_kafka_version()
        # pytest's own count: the matrix's rows plus the tests outside it (so the totals agree)
        meta["pytest"] = _counts([{"outcome": r["outcome"]} for r in rows] +
                                 [{"outcome": o} for o in self.others.values()])
        meta["outside_matrix"] = dict(sorted(self.others.items()))
        doc = {"meta": meta, "scenarios": self.docs, "rows": rows}
        if self.compare:
            listed = listed_differences()
            self.differences = compare(rows, self.compare, listed)
            doc["differences"] = self.differences
            doc["unexplained"] = [d["row"] for d in self.differences if d["explained"] is None]
            doc["listed_not_seen"] = unseen(listed, self.differences)
            if doc["unexplained"] and session.exitstatus == 0:
                session.exitstatus = 1   # an unexplained difference fails the run, even when every row passed
        Path(f"{self.prefix}.json").write_text(json.dumps(doc, indent=1) + "\n")
        Path(f"{self.prefix}.md").write_text(render_markdown(rows, meta, self.docs, self.differences,
                                                             doc.get("listed_not_seen")))

    def pytest_terminal_summary(self, terminalreporter):
        rows = [r for r in self.rows.values() if r["outcome"] is not None]
        if not rows:
            return
        for t in dict.fromkeys(r["target"] for r in rows):
            counts = _counts([r for r in rows if r["target"] == t])
            terminalreporter.write_line(f"compat report ({t}): " + ", ".join(f"{n} {k}" for k, n in counts.items())
                                        + f" -> {self.prefix}.md, {self.prefix}.json")
        if self.differences is not None:
            unexplained = [d for d in self.differences if d["explained"] is None]
            terminalreporter.write_line(f"compat: {len(self.differences)} differences between "
                                        f"{' and '.join(self.compare)}, {len(unexplained)} not explained in {DOC.name}")
            for d in unexplained:
                terminalreporter.write_line("  UNEXPLAINED " + _difference_line(d, self.compare), red=True)


def _difference_line(d: dict, targets) -> str:
    parts = []
    for t in targets:
        o = d[t]
        parts.append(f"{t} {o['outcome']}" + (f" ({normalise(o['reason'])[:140]})" if o["reason"] else ""))
    return f"{d['row']}: " + "; ".join(parts)


def apache_kafka_version() -> str:
    from kwire.testing.apache_kafka import KAFKA_VERSION

    return f"Apache Kafka {KAFKA_VERSION}"


def _counts(rows) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r["outcome"]] = out.get(r["outcome"], 0) + 1
    return dict(sorted(out.items(), key=lambda kv: ORDER.get(kv[0], 9)))


def render_markdown(rows: list[dict], meta: dict | None = None, docs: dict[str, str] | None = None,
                    differences: list[dict] | None = None, listed_not_seen: list[str] | None = None) -> str:
    targets = list(dict.fromkeys(r["target"] for r in rows))
    clients = []
    scenarios = []
    for r in rows:
        if r["client"] not in clients:
            clients.append(r["client"])
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    cell = {(r["scenario"], r["client"], r["target"]): r for r in rows}
    notes: list[str] = []
    where: dict[str, list[str]] = {}
    side_by_side = len(targets) > 1

    def note(reason: str, s: str, c: str, t: str) -> str:
        if not reason:
            return ""
        reason = normalise(reason)
        if reason not in notes:
            notes.append(reason)
        where.setdefault(reason, []).append(f"{s} / {c}" + (f" / {t}" if side_by_side else ""))
        return f" [{notes.index(reason) + 1}]"

    def word(r: dict) -> str:
        return r["outcome"].upper() if r["outcome"] in ("fail", "error", "xpass") else r["outcome"]

    lines = [f"# Compatibility report: {', '.join(targets)}", ""]
    if meta:
        lines += [f"- target: {meta['target']}", f"- date: {meta['date']}", f"- kwire: {meta['kwire']}"]
        if meta.get("kafka"):
            lines.append(f"- kafka: {meta['kafka']}")
        lines += ["- clients: " + "; ".join(f"{k} {v}" for k, v in meta["clients"].items()), ""]
    if side_by_side:
        for t in targets:
            lines.append(f"Totals {t}: " + ", ".join(f"{n} {k}" for k, n in
                                                     _counts([r for r in rows if r["target"] == t]).items()) + ".")
        lines += ["", "Each cell: " + " / ".join(targets) + " when the outcomes differ (flagged **≠**, and "
                  "*explained* when docs/differences.md lists the difference), one word when they agree."]
    else:
        lines.append("Totals: " + ", ".join(f"{n} {k}" for k, n in _counts(rows).items()) + ".")
    if meta and meta.get("outside_matrix"):
        lines.append(f"pytest ran {sum(meta['pytest'].values())} tests ("
                     + ", ".join(f"{n} {k}" for k, n in meta["pytest"].items()) + "): the rows of the table and "
                     f"{len(meta['outside_matrix'])} outside it (" + ", ".join(
                         f"{n.split('::')[-1]} {o}" for n, o in meta["outside_matrix"].items()) + ").")
    lines += ["", "| scenario | " + " | ".join(clients) + " |", "|---|" + "---|" * len(clients)]
    flagged = {(d["scenario"], d["client"]): d for d in differences or []}
    for s in scenarios:
        cells = []
        for c in clients:
            here = [(t, cell.get((s, c, t))) for t in targets]
            if all(r is None for _, r in here):
                cells.append("")
                continue
            d = flagged.get((s, c))
            same = (len({(r["outcome"], normalise(r["reason"])) if r else None for _, r in here}) == 1)
            if same:
                r = here[0][1]
                cells.append(word(r) + note(r["reason"], s, c, "+".join(targets)))
                continue
            parts = [(word(r) + note(r["reason"], s, c, t)) if r else "-" for t, r in here]
            text = " / ".join(parts)
            if d is not None:
                text = f"**≠ {text}**" + (" *explained*" if d["explained"] else " **UNEXPLAINED**")
            cells.append(text)
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    if differences is not None:
        lines += ["", f"Differences between {' and '.join(targets)} (outcome classes pass / fail / skip): "
                  f"{len(differences)}, {sum(1 for d in differences if d['explained'] is None)} not explained."]
        if differences:
            lines.append("")
        for d in differences:
            why = (f"explained in docs/differences.md: {d['explained']}" if d["explained"]
                   else "**not explained** (list it in docs/differences.md with the reason, or fix it)"
                   + (f"; listed there as {d['listed_as']}" if d["listed_as"] else ""))
            lines.append(f"- `{d['row']}`: " + "; ".join(f"{t} {d[t]['outcome']}" for t in targets) + f" — {why}")
        if listed_not_seen:
            lines += ["", "Listed in docs/differences.md but not seen in this run (fixed since, then delete the "
                      "line; or its rows did not run): " + ", ".join(f"`{k}`" for k in listed_not_seen) + "."]
    if notes:
        lines += ["", "Reasons (numbers, ids and durations normalised; where each applies):", ""]
        for i, n in enumerate(notes, 1):
            cells = where[n]
            shown = ", ".join(cells[:6]) + (f" and {len(cells) - 6} more" if len(cells) > 6 else "")
            lines.append(f"{i}. {n.replace('|', '/')} ({len(cells)}: {shown})")
    if docs:
        lines += ["", "What each scenario checks:", ""]
        for s in dict.fromkeys(x.split("[")[0] for x in scenarios):
            if s in docs:
                lines.append(f"- **{s}**: {docs[s]}")
    return "\n".join(lines) + "\n"
