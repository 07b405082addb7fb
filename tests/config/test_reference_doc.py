"""docs/config.md, generated from the config table (make docs), lists every key."""
from __future__ import annotations

import pathlib

from kwire.config_keys import BROKER, GROUP, TOPIC
from kwire.config_keys.reference import render

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "config.md"


def test_every_key_is_in_the_reference():
    text = DOC.read_text()
    for table in (BROKER, TOPIC, GROUP):
        for k in table.values():
            if not k.hidden:
                assert f"| `{k.name}`" in text, k.name


def test_generated_reference_says_what_is_honoured():
    text = render()
    rows = {line.split("|")[1].strip().split()[0].strip("`"): line for line in text.splitlines()
            if line.startswith("| `")}
    assert "| honoured |" in rows["num.partitions"] and "| honoured |" in rows["retention.ms"]
    assert "accepted, ignored" in rows["num.io.threads"]
    assert "the default of the topic config retention.ms" in rows["log.retention.ms"]


def test_the_committed_reference_is_up_to_date():
    assert DOC.read_text() == render(), "docs/config.md is stale: run `make docs`"


def test_listeners_is_honoured():
    """A one-word key read by the code (listeners) is not described as ignored."""
    row = next(line for line in DOC.read_text().splitlines() if line.startswith("| `listeners` |"))
    assert "| honoured |" in row, row
