"""Every tool this directory drives starts from make kafka's jars (its main class exists and
prints its usage), so a renamed class in a later Kafka fails here by name."""
from __future__ import annotations

import pytest

from tests.ecosystem.conftest import TOOLS, run_tool


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_the_tool_starts_and_prints_its_usage(tool):
    res = run_tool(tool, "--help", timeout=60)
    out = res.stdout + res.stderr
    assert "ClassNotFoundException" not in out and "Could not find or load main class" not in out, out[-2000:]
    assert "--bootstrap-server" in out or "--broker-list" in out or "--topic" in out or "usage" in out.lower(), \
        out[-2000:]
