"""KafkaJS, an independent pure-JavaScript Kafka client (a client kwire was not written
against), produces, administers and consumes in a group against kwire."""
import json
import os
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.slow

JS_DIR = os.path.join(os.path.dirname(__file__), "..", "js")


def test_kafkajs_roundtrip(bootstrap, topic):
    node = shutil.which("node")
    assert node, "node is not installed"
    assert os.path.isdir(os.path.join(JS_DIR, "node_modules", "kafkajs")), \
        "kafkajs is not installed: `make test` runs npm ci in tests/js"
    n = 200
    out = subprocess.run([node, os.path.join(JS_DIR, "roundtrip.js"), bootstrap, topic, str(n)],
                         capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["partitions"] == 3
    assert res["total"] == n
    got = res["got"]
    assert sorted(int(m["idx"]) for m in got) == list(range(n))
    for m in got:
        i = int(m["idx"])
        assert m["key"] == f"k{i % 10}"
        assert m["value"] == (None if i % 17 == 0 else f"value-{i}")
    # same key, same partition; per-partition order kept
    by_key = {}
    for m in got:
        by_key.setdefault(m["key"], set()).add(m["partition"])
    assert all(len(s) == 1 for s in by_key.values())
    for p in range(3):
        idxs = [int(m["idx"]) for m in got if m["partition"] == p]
        assert idxs == sorted(idxs)
    committed = {p["partition"]: int(p["offset"]) for t in res["groupOffsets"] for p in t["partitions"]}
    assert sum(committed.values()) == n
