"""The compat report says what was tested with what (client versions, kwire commit, target,
date, what each scenario checks), groups failure reasons, and a target that cannot start fails
the run unless --allow-skip. Under --target both it puts kwire and Apache Kafka side by side, flags
every scenario[client] whose outcome differs, and fails the run on a difference docs/differences.md
does not explain."""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from compat_tests.differences import compare, listed_differences, parse, unseen
from compat_tests.report import CompatReport, normalise, render_markdown

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_reasons_are_normalised_and_grouped():
    a = "AssertionError: consumed 3 of 5 records from compat-0123456789ab within 10.5 s"
    b = "AssertionError: consumed 3 of 5 records from compat-ba9876543210 within 12.25 s"
    assert normalise(a) == normalise(b) == "consumed 3 of 5 records from <topic> within N s"
    assert normalise("timed out after 30123 ms at 127.0.0.1:40123") == "timed out after N ms at HOST:PORT"
    rows = [{"target": "kwire", "client": c, "scenario": "seek", "outcome": "fail", "reason": r}
            for c, r in (("kcat", a), ("aiokafka", b))]
    meta = {"target": "kwire", "date": "2026-01-01 00:00 UTC", "kwire": "0.1.0 (commit abc1234)",
            "clients": {"kcat": "kcat 1.7.1", "aiokafka": "0.12.0"}}
    md = render_markdown(rows, meta, {"seek": "Seeking moves the position."})
    assert "- kwire: 0.1.0 (commit abc1234)" in md and "- date: 2026-01-01 00:00 UTC" in md
    assert "kcat kcat 1.7.1" in md
    assert md.count("[1]") == 2 and "[2]" not in md
    assert "1. consumed 3 of 5 records from <topic> within N s (2: seek / kcat, seek / aiokafka)" in md
    assert "- **seek**: Seeking moves the position." in md


# compat_tests use no hypothesis: its pytest plugin would import it (~1 s) in every run
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]


@pytest.mark.slow
def test_a_real_run_writes_versions_and_scenario_docs(tmp_path):
    prefix = tmp_path / "report"
    proc = subprocess.run([*PYTEST, "compat_tests/test_records.py",
                           "-k", "headers", "--clients", "kafka-python", "--compat-report", str(prefix)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["meta"]["kwire"].startswith(__import__("kwire").__version__)
    assert data["meta"]["clients"]["kafka-python"] == __import__("kafka").__version__
    import confluent_kafka
    assert data["meta"]["clients"]["confluent-kafka"].startswith(confluent_kafka.__version__ + " (librdkafka ")
    assert re.match(r"\d+\.\d+\.\d+ \(librdkafka \d", data["meta"]["clients"]["kcat"]), data["meta"]["clients"]
    assert data["rows"][0]["outcome"] == "pass"
    assert data["meta"]["pytest"] == {"pass": len(data["rows"])} and data["meta"]["outside_matrix"] == {}
    assert "headers" in data["scenarios"] and "KIP-82" in data["scenarios"]["headers"]
    assert "What each scenario checks:" in (tmp_path / "report.md").read_text()


@pytest.mark.slow
def test_target_kafka_via_docker_without_docker_fails_unless_allowed(tmp_path):
    env = dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:1")      # no engine there
    base = [*PYTEST, "compat_tests/test_records.py", "-k", "headers", "--clients", "kafka-python",
            "--target", "kafka", "--kafka-via", "docker", "--compat-report", str(tmp_path / "r")]
    proc = subprocess.run(base, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "the target cannot be started" in proc.stdout and "--allow-skip" in proc.stdout
    assert "no Docker engine" in proc.stdout
    proc = subprocess.run(base + ["--allow-skip"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and "skipped" in proc.stdout


@pytest.mark.slow
def test_target_kafka_as_a_process_without_jars_names_make_kafka(tmp_path):
    """No Docker engine: --target kafka runs Apache Kafka from make kafka's jars; without them the run
    fails at once saying what to run (nothing is skipped silently)."""
    env = dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:1", KWIRE_KAFKA_LIBS=str(tmp_path))
    proc = subprocess.run([*PYTEST, "compat_tests/test_records.py", "-k", "headers", "--clients", "kafka-python",
                           "--target", "kafka", "--compat-report", str(tmp_path / "r")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "the target cannot be started" in proc.stdout and "make kafka" in proc.stdout
    # side by side: stopped before any kwire row runs, not after them
    proc = subprocess.run([*PYTEST, "compat_tests/test_records.py", "-k", "headers", "--clients", "kafka-python",
                           "--target", "both", "--compat-report", str(tmp_path / "r2")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1 and "make kafka" in proc.stdout, proc.stdout[-2000:]
    assert "passed" not in proc.stdout
    stale = json.loads((tmp_path / "r2.json").read_text())     # a report that says so, never an older run's
    assert stale["rows"] == [] and stale["meta"]["note"].startswith("No scenario ran")


# ---------------------------------------------------------------- --target both: the comparison
TABLE = """# Where kwire and Apache Kafka 4.3 answer differently

## Compat suite (client x scenario outcomes)

Some prose that is not the table.

| row | kwire | kafka | reason |
|---|---|---|---|
| `old_protocol_requests[3.9]` | pass | skip | kwire emulates 3.9 for this row |
| `seek[kcat]` | fail | pass | kcat reads past the end |

## Wire (differential conformance)

| row | kwire | kafka | reason |
|---|---|---|---|
| `not_compat` | pass | fail | another section's table |
"""


def _row(target, scenario, client, outcome, reason=""):
    return {"target": target, "client": client, "scenario": scenario, "outcome": outcome, "reason": reason}


def test_the_differences_table_is_read_from_its_section_only():
    listed = parse(TABLE)
    assert set(listed) == {"old_protocol_requests[3.9]", "seek[kcat]"}
    assert listed["seek[kcat]"].outcomes == {"kwire": "fail", "kafka": "pass"}
    with pytest.raises(ValueError, match="outcomes must be"):
        parse(TABLE.replace("| fail | pass |", "| broken | pass |"))
    with pytest.raises(ValueError, match="cells"):
        parse(TABLE.replace("| fail | pass |", "| fail |"))
    parse(pathlib.Path(ROOT / "docs" / "differences.md").read_text())   # the real file parses
    assert listed_differences() == parse((ROOT / "docs" / "differences.md").read_text())


def test_differences_are_flagged_and_explained_only_as_listed():
    rows = [_row("kwire", "seek", "kcat", "fail", "consumed 3 of 5"), _row("kafka", "seek", "kcat", "pass"),
            _row("kwire", "seek", "java", "pass"), _row("kafka", "seek", "java", "fail", "timed out"),
            _row("kwire", "headers", "java", "pass"), _row("kafka", "headers", "java", "xpass"),   # same class
            _row("kwire", "old_protocol_requests[3.9]", "classic-classes", "pass"),
            _row("kafka", "old_protocol_requests[3.9]", "classic-classes", "skip", "4.x broker"),
            _row("kwire", "old_protocol_requests[3.9]", "sarama", "pass"),
            _row("kafka", "old_protocol_requests[3.9]", "sarama", "fail", "EOF"),   # listed as skip: not explained
            _row("kwire", "transactions", "java", "xfail", "gap")]                    # ran on kwire only
    diffs = {d["row"]: d for d in compare(rows, ("kwire", "kafka"), parse(TABLE))}
    assert set(diffs) == {"seek[kcat]", "seek[java]", "old_protocol_requests[3.9][classic-classes]",
                          "old_protocol_requests[3.9][sarama]", "transactions[java]"}
    assert diffs["seek[kcat]"]["explained"] == "kcat reads past the end"
    assert diffs["old_protocol_requests[3.9][classic-classes]"]["explained"] == "kwire emulates 3.9 for this row"
    assert diffs["old_protocol_requests[3.9][sarama]"]["explained"] is None
    assert diffs["seek[java]"]["explained"] is None and diffs["seek[java]"]["kafka"]["reason"] == "timed out"
    assert diffs["transactions[java]"]["kafka"]["outcome"] == "absent"
    assert unseen(parse(TABLE) | parse(TABLE.replace("seek[kcat]", "fixed[java]")), list(diffs.values())) \
        == ["fixed[java]"]
    md = render_markdown(rows, None, None, list(diffs.values()), ["fixed[java]"])
    assert "not seen in this run" in md and "`fixed[java]`" in md
    assert "| seek | **≠ FAIL [1] / pass** *explained* | **≠ pass / FAIL [2]** **UNEXPLAINED** |" in md
    assert "| headers |" in md and "≠ pass / XPASS" not in md
    assert "Differences between kwire and kafka (outcome classes pass / fail / skip): 5, 3 not explained." in md


@pytest.mark.slow
def test_an_unexplained_difference_fails_the_run(tmp_path):
    rep = CompatReport(str(tmp_path / "r"), lambda: "?", ROOT, compare=("kwire", "kafka"))
    for i, r in enumerate([_row("kwire", "headers", "java", "pass"), _row("kafka", "headers", "java", "pass"),
                           _row("kwire", "seek", "java", "pass"), _row("kafka", "seek", "java", "fail", "boom")]):
        rep.rows[f"n{i}"] = r
        rep.order.append(f"n{i}")
    session = SimpleNamespace(exitstatus=0)
    rep.pytest_sessionfinish(session, 0)
    assert session.exitstatus == 1
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["unexplained"] == ["seek[java]"] and {r["target"] for r in data["rows"]} == {"kwire", "kafka"}
    assert "**UNEXPLAINED**" in (tmp_path / "r.md").read_text()
    rep.rows["n3"] = _row("kafka", "seek", "java", "pass")   # agreeing targets: the run's status is left alone
    session = SimpleNamespace(exitstatus=0)
    rep.pytest_sessionfinish(session, 0)
    assert session.exitstatus == 0 and json.loads((tmp_path / "r.json").read_text())["unexplained"] == []
