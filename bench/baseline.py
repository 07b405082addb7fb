"""The tree a benchmark compares this one with, measured side by side in one run.

``baseline_tree(tmp, default)`` exports ``kwire/`` at ``KWIRE_BASELINE`` (else ``default``,
else the merge-base of HEAD with main) with ``git archive`` under ``tmp``, and gives it this
tree's built C extensions where their C source is the same (an archive carries sources only,
so it would otherwise measure the pure-Python fallback instead of the code it shipped).
Returns (path, short revision), or (None, "") when there is no git history here.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def baseline_tree(tmp: str, default: str | None = None) -> tuple[str | None, str]:
    rev = os.environ.get("KWIRE_BASELINE") or default
    try:
        if not rev:
            rev = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.strip()
        data = subprocess.run(["git", "archive", rev, "kwire"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"no baseline tree ({exc}); measuring this tree only", flush=True)
        return None, ""
    out = os.path.join(tmp, "baseline")
    os.makedirs(out)
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        t.extractall(out)
    _copy_extensions(out)
    return out, rev[:10]


def _copy_extensions(baseline: str) -> None:
    for so in (ROOT / "kwire").rglob("*.so"):
        src = so.parent / (so.name.split(".", 1)[0] + ".c")
        other = Path(baseline) / so.relative_to(ROOT)
        other_src = other.parent / src.name
        if src.is_file() and other_src.is_file() and src.read_bytes() == other_src.read_bytes():
            shutil.copy2(so, other)
