"""Build and run the Go client drivers in compat_tests/go/ (our own programs over stock Go Kafka
clients: Sarama 1.22 and segmentio/kafka-go 0.2 as Debian packages them).

The drivers are built with ``go build`` in GOPATH mode against Debian's Go sources in
/usr/share/gocode (``apt-get install golang-go golang-github-shopify-sarama-dev
golang-github-segmentio-kafka-go-dev``: .ci/run and ``make deps`` do it); no Go module proxy
is needed or asked. A build is kept under the temp dir by a hash of the driver's sources, the Go
version and the client package's version, so a test session builds each driver once (about
7 s cold; later sessions reuse it). A missing ``go`` or client package raises
:class:`GoUnavailable`, which the tests turn into a failure that says what to install, never a
skip.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

GO_DIR = Path(__file__).resolve().parent / "go"
GOCODE = Path(os.environ.get("KWIRE_GOCODE", "/usr/share/gocode"))
INSTALL = "apt-get install golang-go gcc golang-github-shopify-sarama-dev golang-github-segmentio-kafka-go-dev"
# driver -> the Go package it drives (a directory under GOCODE/src)
PACKAGES = {"sarama_driver": "github.com/Shopify/sarama", "kafkago_driver": "github.com/segmentio/kafka-go"}

_lock = threading.Lock()
_built: dict[str, Path] = {}


class GoUnavailable(RuntimeError):
    pass


def _go() -> str:
    go = shutil.which("go") or next((p for p in ("/usr/lib/go/bin/go", "/usr/local/go/bin/go") if os.access(p, os.X_OK)), None)
    if go is None:
        raise GoUnavailable(f"the Go client tests need the go tool and Debian's Go client sources: {INSTALL}")
    return go


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GO")}
    env.update(GO111MODULE="off", GOPATH=str(GOCODE), GOCACHE=str(cache), GOFLAGS="", GOPROXY="off",
               CGO_ENABLED="1")   # Sarama 1.22 imports DataDog/zstd, a cgo package
    return env


def build(name: str) -> Path:
    """The driver's binary, built once per source/toolchain/package version."""
    with _lock:
        if name in _built:
            return _built[name]
        go = _go()
        src = GO_DIR / name
        pkg = GOCODE / "src" / PACKAGES[name]
        if not pkg.is_dir():
            raise GoUnavailable(f"{PACKAGES[name]} is not in {GOCODE}/src: {INSTALL}")
        h = hashlib.sha256()
        for f in sorted(src.glob("*.go")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        version = subprocess.run([go, "version"], capture_output=True, text=True, timeout=60).stdout
        h.update(version.encode())
        for f in sorted(pkg.glob("*.go")):   # the package's version (Debian may update it)
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
        root = Path(tempfile.gettempdir()) / "kwire-go-driver"
        out = root / f"{name}-{h.hexdigest()[:16]}"
        if not out.exists():
            root.mkdir(parents=True, exist_ok=True)
            with open(root / ".build.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)   # one build at a time across xdist workers (2 cores)
                if not out.exists():
                    tmp = root / f".{out.name}.{os.getpid()}.{threading.get_ident()}"
                    proc = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=src, env=_env(root / "cache"),
                                          capture_output=True, text=True, timeout=600)
                    if proc.returncode != 0 or not tmp.exists():
                        raise GoUnavailable(f"go build of compat_tests/go/{name} failed ({INSTALL}?): "
                                            f"{proc.stderr.strip()[-2000:]}")
                    os.replace(tmp, out)   # atomic
        _built[name] = out
        return out


def run(name: str, *args: str, timeout: float = 15.0) -> dict:
    """Run one driver operation: its JSON answer ({"error": ...} when the operation failed)."""
    exe = build(name)
    proc = subprocess.run([str(exe), "-timeout", f"{timeout}s", *args], capture_output=True, text=True,
                          timeout=timeout + 30)
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{name} {' '.join(args)}: no answer (exit {proc.returncode}): {proc.stderr[-2000:]}")
    out = json.loads(lines[-1])
    out["stderr"] = proc.stderr[-4000:]
    return out
