"""kafka-python's own integration tests against kwire and against Apache Kafka, side by side.

    python scripts/kafka_python_suite.py [--target kwire|kafka|both] [-- PYTEST-ARGS...]

The installed kafka-python's source distribution (from PyPI, cached in
~/.cache/kwire/kafka-python-suite) carries its test/integration folder; its fixture runs against
an external broker when KAFKA_URI is set (KafkaFixture(..., external=True)). Each broker gets the
settings of kafka-python's own broker template (servers/resources/default/kafka.properties:
4 partitions per topic, 2 offsets partitions, a 1 s minimum session timeout, no initial
rebalance delay, an authorizer that allows everyone where no ACL is found) and node id 0, as the
fixture's spawned broker has (test_create_partitions assigns replicas to broker 0), and
advertised.listeners written in its configuration (Kafka's ApacheKafka always writes it; its
config source is what test_describe_configs_broker_resource_returns_configs checks).

The sdist leaves out test/service.py, which the fixture module imports for ExternalService and
SpawnedService; this script writes a small module of its own in its place (an external service
that only holds host and port, and a spawned service that refuses to start: tests that spawn a
broker of their own, test_ssl_integration's, cannot run against an external one and error at
setup on both brokers). test_sasl_integration skips itself on an external broker.

It prints each test whose outcome is not a pass, per broker, and with --target both every test
whose outcome differs; exit 1 when a test fails on kwire that passes on Kafka (or, for
--target kwire, that fails at all, setup errors of the spawning tests aside).
Needs make .venv (and make kafka for the Kafka side); minutes, so not part of make test.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections import Counter
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kwire.testing import Broker  # noqa: E402
from kwire.testing.apache_kafka import ApacheKafka  # noqa: E402
from kwire.testing.ports import free_port  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kwire" / "kafka-python-suite"

# kafka-python's broker template, in the keys a KRaft broker takes (its SimpleAclAuthorizer is
# ZooKeeper's; StandardAuthorizer is the KRaft one)
SETTINGS = {
    "num.partitions": 4,
    "default.replication.factor": 1,
    "offsets.topic.num.partitions": 2,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "group.min.session.timeout.ms": 1000,
    "group.initial.rebalance.delay.ms": 0,
    "replica.lag.time.max.ms": 1000,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}

SERVICE_SHIM = '''"""Written by kwire's scripts/kafka_python_suite.py: the sdist has no test/service.py."""
class ExternalService:
    def __init__(self, host, port):
        self.host, self.port = host, port

    def open(self):
        pass

    def close(self):
        pass


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("this run uses an external broker; a test that spawns its own cannot run")
'''

SPAWNING = ("test_ssl_integration",)  # tests that start a broker of their own (error at setup on both)


def suite_dir() -> Path:
    """The installed kafka-python's sdist, unpacked once (pip download from PyPI)."""
    v = version("kafka-python")
    root = CACHE / f"kafka_python-{v}"
    if not (root / "test" / "integration").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        f"kafka-python=={v}", "-d", str(CACHE)], check=True)
        with tarfile.open(CACHE / f"kafka_python-{v}.tar.gz") as tar:
            tar.extractall(CACHE, filter="data")
    (root / "test" / "__init__.py").touch()
    (root / "test" / "service.py").write_text(SERVICE_SHIM)
    (root / "servers" / "4.3.0" / "kafka-bin").mkdir(parents=True, exist_ok=True)  # the fixture checks it exists
    return root


def outcomes(junit: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        state = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                first_line = (child.get("message") or "").partition("\n")[0]
                state = f"{child.tag}: {first_line[:100]}"
        out[name] = state
    return out


def run(target: str, root: Path, pytest_args: list[str]) -> dict[str, str]:
    if target == "kwire":
        port = free_port("127.0.0.1")   # advertised.listeners set in the file, as on the Kafka side
        broker = Broker(mode="process", port=port, overrides={
            **SETTINGS, "node.id": 0, "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}"})
        broker.start()
        bootstrap, stop = broker.bootstrap_servers, broker.stop
    else:
        kafka = ApacheKafka(1, overrides={k: str(v) for k, v in SETTINGS.items()})
        kafka.nodes[0].node_id = 0
        kafka.start()
        bootstrap, stop = kafka.bootstrap_servers, kafka.close
    junit = CACHE / f"junit-{target}.xml"
    try:
        env = dict(os.environ, KAFKA_URI=f"PLAINTEXT://{bootstrap}", KAFKA_VERSION="4.3.0", PYTHONPATH=str(root))
        subprocess.run([sys.executable, "-m", "pytest", "test/integration", "-q", "-p", "no:cacheprovider",
                        "-p", "no:logging", "-o", "addopts=", f"--rootdir={root}", "--timeout", "120",
                        "-W", "ignore", f"--junitxml={junit}", *pytest_args],
                       cwd=root, env=env, stdout=subprocess.DEVNULL, check=False)
    finally:
        stop()
    return outcomes(junit)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=("kwire", "kafka", "both"), default="both")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args()
    root = suite_dir()
    targets = ("kwire", "kafka") if args.target == "both" else (args.target,)
    results = {t: run(t, root, args.pytest_args) for t in targets}
    for t, res in results.items():
        counts = Counter(state.partition(":")[0] for state in res.values())
        print(f"{t}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        for name, state in sorted(res.items()):
            if state != "passed":
                print(f"  {name}: {state}")
    bad = []
    kw = results.get("kwire", {})
    if len(results) == 2:
        differ = [n for n in sorted(set(kw) | set(results["kafka"])) if kw.get(n) != results["kafka"].get(n)]
        print(f"outcomes that differ: {len(differ)}")
        for n in differ:
            print(f"  {n}: kwire {kw.get(n)} / kafka {results['kafka'].get(n)}")
        bad = [n for n in differ if results["kafka"].get(n) == "passed"]
    elif kw:
        bad = [n for n, s in kw.items() if s.startswith(("failure", "error")) and not any(x in n for x in SPAWNING)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
