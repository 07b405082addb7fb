"""make deps (scripts/deps.sh) installs tool by tool: what is there is left alone, a package
that fails to install (Debian's npm against NodeSource's nodejs) stops nothing else, and every
line says what happened. Run with a fake apt-get on a PATH of its own."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.slow
ROOT = pathlib.Path(__file__).resolve().parents[2]

FAKE_APT = """#!/bin/sh
# apt-get update | install -y -qq PKG: "installs" PKG by making its tool; npm conflicts
[ "$1" = update ] && exit 0
for last; do :; done
echo "$last" >> "$LOG"
case "$last" in
  npm) echo "npm : Depends: node-gyp but it is not going to be installed" >&2; exit 100 ;;
  golang-github-shopify-sarama-dev) mkdir -p "$KWIRE_GOCODE/src/github.com/Shopify/sarama" ;;
  golang-github-segmentio-kafka-go-dev) mkdir -p "$KWIRE_GOCODE/src/github.com/segmentio/kafka-go" ;;
  openjdk-17-jdk-headless) printf '#!/bin/sh\\necho "javac 17.0.9"\\n' > "$BIN/javac"; chmod +x "$BIN/javac" ;;
  *) tool=$(echo "$last" | sed -e 's/^nodejs$/node/' -e 's/^maven$/mvn/' -e 's/^golang-go$/go/')
     printf '#!/bin/sh\\n' > "$BIN/$tool"; chmod +x "$BIN/$tool" ;;
esac
"""


def test_make_deps_installs_what_is_missing_one_package_at_a_time(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "sed", "env", "id", "mkdir", "chmod", "printf", "echo", "cat"):
        real = shutil.which(tool)
        if real:
            os.symlink(real, bin_dir / tool)
    (bin_dir / "apt-get").write_text(FAKE_APT)
    (bin_dir / "apt-get").chmod(0o755)
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (bin_dir / "sudo").chmod(0o755)
    (bin_dir / "kcat").write_text("#!/bin/sh\n")      # already there: left alone
    (bin_dir / "kcat").chmod(0o755)
    log = tmp_path / "apt.log"
    env = {"PATH": str(bin_dir), "LOG": str(log), "BIN": str(bin_dir), "KWIRE_GOCODE": str(tmp_path / "gocode")}
    proc = subprocess.run(["sh", str(ROOT / "scripts" / "deps.sh")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "make deps: kcat: found" in lines
    assert "make deps: node: installed (nodejs)" in lines and "make deps: javac: installed (openjdk-17-jdk-headless)" \
        in lines
    assert any(line.startswith("make deps: npm: apt-get install npm failed") for line in lines)
    for tool in ("mvn", "go", "gcc", "sarama", "kafka-go"):       # after npm's failure, the rest went on
        assert any(line.startswith(f"make deps: {tool}: installed") for line in lines), lines
    assert lines[-1] == "make deps: still missing: npm (the tests that need them fail, naming what is missing)"
    assert "kcat" not in log.read_text().split()                  # one install per missing package only
    assert len(log.read_text().split()) == 8


def test_make_compat_makes_its_own_prerequisites():
    """make compat on a fresh clone: kafka-node (npm ci in tests/js) and Kafka's jars are made
    by the target itself, not left to an earlier make test."""
    # run as from a shell: under make test, the outer make's MAKEFLAGS would reach this one
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}

    def dry(*argv: str) -> str:
        proc = subprocess.run(["make", "-n", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    out = dry("compat")
    first = ".venv tests/js/node_modules/.installed kafka"      # its prerequisites, made first
    assert first in out and out.index(first) < out.index("compat_tests --target kwire"), out
    assert "cd tests/js && npm ci" in dry("-B", "tests/js/node_modules/.installed")
