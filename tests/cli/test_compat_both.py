"""make test's slice of `make compat TARGET=both`: a subset of the compat scenarios, for the fastest stock
client (confluent-kafka) and the reference one (the Java client), against kwire and against a real Apache
Kafka 4.3.1 (make kafka's jars) in one pytest run, in a subprocess as a user runs it. The report has to
carry both targets, every chosen row on each, and no difference that docs/differences.md does not
explain; the run's exit status says the same. A listed difference makes the listed failing side an xfail:
the run reads a copy of docs/differences.md with one line more (headers[java], kafka listed as failing),
so that row has to come back as an xpass carrying the listed reason, and the line as listed but not seen.

One Apache Kafka for the run (the subset leaves out auto_create_off, which would start a second), on the
worker that hosts the other Apache Kafka tests (xdist_group "apache-kafka").
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("apache-kafka")]

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLIENTS = ("confluent-kafka", "java")
# one scenario or more from each module of the suite (records, positioning, admin, groups, exactly-once), chosen
# for cost: produce_consume with one codec of five; transactions left out (each row waits 5 s on purpose, to
# see that no aborted record arrives)
SCENARIOS = ("produce_consume[zstd]", "headers", "message_too_large", "seek_to_timestamp", "admin_configs",
             "group_commit_and_resume", "idempotent_producer")
FILES = ("test_produce_consume.py", "test_records.py", "test_topics_seek.py", "test_admin.py", "test_groups.py",
         "test_exactly_once.py")


def _keyword(scenario: str) -> str:
    name, _, param = scenario.partition("[")
    return f"(test_{name} and {param.rstrip(']')})" if param else f"test_{name}"


def test_subset_side_by_side_with_apache_kafka(tmp_path):
    prefix = tmp_path / "both"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
           *(f"compat_tests/{f}" for f in FILES), "-k", " or ".join(map(_keyword, SCENARIOS)),
           "--target", "both", "--kafka-via", "process", "--clients", ",".join(CLIENTS), "--compat-report", str(prefix)]
    table = (ROOT / "docs" / "differences.md").read_text()
    probe = "| `headers[java]` | pass | fail | a probe of this test: the kafka row is marked xfail |\n"
    at = table.index("\n", table.index("|---|", table.index("## Compat suite"))) + 1
    (tmp_path / "differences.md").write_text(table[:at] + probe + table[at:])
    env = dict(os.environ, KWIRE_COMPAT_DIFFERENCES=str(tmp_path / "differences.md"))
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, env=env)
    out = proc.stdout[-3000:] + proc.stderr[-1000:]
    assert (tmp_path / "both.json").exists(), out
    data = json.loads((tmp_path / "both.json").read_text())
    rows = data["rows"]
    assert data["meta"]["target"] == "kwire+kafka"
    assert data["meta"]["kafka"].startswith("Apache Kafka 4.3.1, a local KRaft process"), data["meta"]
    seen = {(r["target"], r["scenario"], r["client"]) for r in rows}
    assert seen == {(t, s, c) for t in ("kwire", "kafka") for s in SCENARIOS for c in CLIENTS}, out
    assert data["unexplained"] == [], out
    failed = [(r["target"], r["scenario"], r["client"], r["reason"]) for r in rows
              if r["outcome"] in ("fail", "error", "skip")]
    assert not failed, failed
    probed = {r["target"]: r for r in rows if (r["scenario"], r["client"]) == ("headers", "java")}
    assert probed["kwire"]["outcome"] == "pass" and probed["kafka"]["outcome"] == "xpass", probed
    assert "a probe of this test" in probed["kafka"]["reason"]
    assert "headers[java]" in data["listed_not_seen"]
    assert {r["outcome"] for r in rows if r is not probed["kafka"]} == {"pass"}
    assert proc.returncode == 0, out
    assert "compat report (kwire)" in proc.stdout and "compat report (kafka)" in proc.stdout
