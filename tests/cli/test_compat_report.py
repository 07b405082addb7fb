"""The compat report says what was tested with what (client versions, kwire commit, target,
date, what each scenario checks), groups failure reasons, and a target that cannot start fails
the run unless --allow-skip."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from compat_tests.report import normalise, render_markdown

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


def test_a_real_run_writes_versions_and_scenario_docs(tmp_path):
    prefix = tmp_path / "report"
    proc = subprocess.run([*PYTEST, "compat_tests/test_records.py",
                           "-k", "headers", "--clients", "kafka-python", "--compat-report", str(prefix)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["meta"]["kwire"].startswith(__import__("kwire").__version__)
    assert data["meta"]["clients"]["kafka-python"] == __import__("kafka").__version__
    assert data["rows"][0]["outcome"] == "pass"
    assert "headers" in data["scenarios"] and "KIP-82" in data["scenarios"]["headers"]
    assert "What each scenario checks:" in (tmp_path / "report.md").read_text()


def test_target_kafka_without_docker_fails_unless_allowed(tmp_path):
    env = dict(os.environ, DOCKER_HOST="tcp://127.0.0.1:1")      # no engine there
    base = [*PYTEST, "compat_tests/test_records.py", "-k",
            "headers", "--clients", "kafka-python", "--target", "kafka", "--compat-report", str(tmp_path / "r")]
    proc = subprocess.run(base, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "the target cannot be started" in proc.stdout and "--allow-skip" in proc.stdout
    proc = subprocess.run(base + ["--allow-skip"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and "skipped" in proc.stdout
