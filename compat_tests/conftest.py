"""The compatibility suite's harness: targets, one row per client, the kwire gap table, the report.

Options: ``--target kwire|tansu|kafka|both`` (default kwire, started by the suite; ``both``: every row against
kwire and against Apache Kafka, the row ids and report rows carrying the target), ``--kafka-via
auto|process|docker``, ``--bootstrap HOST:PORT`` (any running broker), ``--bootstrap-no-autocreate HOST:PORT``
(a broker with auto.create.topics.enable=false, for that one scenario on external targets), ``--clients a,b``
(a subset), ``--compat-report PREFIX``.
"""
from __future__ import annotations

import sys
import threading
import uuid

import pytest

from compat_tests import clients as adapters
from compat_tests.clients.base import Unsupported
from compat_tests.differences import listed_differences, lookup
from compat_tests.kwire_gaps import KWIRE_GAPS
from compat_tests.report import CompatReport
from compat_tests.targets import KafkaProcessTarget, TargetUnavailable, kafka_as_process, make_target


def pytest_addoption(parser):
    g = parser.getgroup("compat", "Kafka compatibility suite")
    g.addoption("--target", default="kwire", choices=["kwire", "tansu", "kafka", "both"],
                help="broker the suite starts itself (default: a fresh kwire); both: kwire and Apache Kafka, "
                     "every row against each, differences checked against docs/differences.md")
    g.addoption("--kafka-via", default="auto", choices=["auto", "process", "docker"],
                help="how the kafka target runs Apache Kafka: process (make kafka's jars), docker "
                     "(testcontainers), auto (docker when an engine answers, else process; the default)")
    g.addoption("--bootstrap", default=None, metavar="HOST:PORT", help="run against this running broker instead")
    g.addoption("--bootstrap-no-autocreate", default=None, metavar="HOST:PORT",
                help="with --bootstrap: a broker with auto.create.topics.enable=false for the auto-create-off scenario")
    g.addoption("--clients", default=None, help="comma-separated subset of: " + ",".join(adapters.CLIENT_NAMES))
    g.addoption("--allow-skip", action="store_true",
                help="when the target cannot be started (no Docker for --target kafka ...), skip every scenario "
                     "instead of failing the run")
    g.addoption("--compat-report", default="compat-report", metavar="PREFIX",
                help="write PREFIX.md and PREFIX.json (default: compat-report in the current directory)")


BOTH = ("kwire", "kafka")


class _Session:
    """The targets of the run, started at first use (under --target both, Apache Kafka in a thread as soon as
    the collection is done) and stopped at the session's end; both are kept up while the session runs."""

    def __init__(self, config):
        self.config = config
        self.targets: dict[str, object] = {}
        self.errors: dict[str, str] = {}
        self._starting: dict[str, threading.Thread] = {}
        self._failed: dict[str, BaseException] = {}
        self._described: dict[str, str] = {}

    @property
    def both(self) -> bool:
        return not self.config.getoption("bootstrap") and self.config.getoption("target") == "both"

    @property
    def kind(self) -> str:
        return "external" if self.config.getoption("bootstrap") else self.config.getoption("target")

    def name(self) -> str:
        if self.both:
            return "+".join(BOTH)
        for t in self.targets.values():
            return t.name
        b = self.config.getoption("bootstrap")
        return f"external {b}" if b else self.config.getoption("target")

    def descriptions(self) -> dict[str, str]:
        """What ran as each target (kept after close(): the report is written at the session's end)."""
        return dict(self._described)

    def prestart_kafka(self) -> None:
        """Start Apache Kafka (the process target) in a thread while the kwire rows run: its ~5-10 s start
        overlaps them. Everything that imports runs here, on the main thread; the thread only waits for
        the JVM (CPython 3.11's compiler is not safe against a concurrent import that pytest's assertion
        rewriting compiles: "AST constructor recursion depth mismatch")."""
        if "kafka" in self.targets or "kafka" in self._starting or not kafka_as_process(self.config.getoption("kafka_via")):
            return
        try:
            target = KafkaProcessTarget(start=False)
        except TargetUnavailable as exc:   # no JDK or no jars: the run stops before any row (unless --allow-skip)
            self._failed["kafka"] = exc
            self.unavailable("kafka", exc)
            return

        def run():
            try:
                target.start()
                self.targets["kafka"] = target
            except BaseException as exc:  # noqa: BLE001 - handed to the first row that needs the target
                self._failed["kafka"] = exc
                target.close()

        t = threading.Thread(target=run, name="compat-start-kafka", daemon=True)
        self._starting["kafka"] = t
        t.start()

    def unavailable(self, kind: str, exc: TargetUnavailable) -> None:
        """A target that cannot run here stops the run at once, unless --allow-skip (then its rows skip)."""
        self.errors[kind] = str(exc)
        if not self.config.getoption("allow_skip"):
            pytest.exit(f"compat: the target cannot be started: {exc}. Nothing was tested; pass --allow-skip "
                        f"to skip every scenario instead of failing.", returncode=1)

    def get(self, kind: str):
        """The started target ``kind`` (kwire, kafka, ...; ``external`` for --bootstrap)."""
        if kind in self.errors:
            pytest.skip(self.errors[kind])
        if kind in self._starting:
            self._starting[kind].join()
        if kind not in self.targets:
            exc = self._failed.pop(kind, None)
            if exc is None:
                opt = self.config.getoption
                try:
                    self.targets[kind] = make_target(kind, opt("bootstrap"), opt("bootstrap_no_autocreate"),
                                                     opt("kafka_via"))
                except BaseException as e:  # noqa: BLE001 - handled as a failed head start is
                    exc = e
            if isinstance(exc, TargetUnavailable):
                self.unavailable(kind, exc)
                pytest.skip(self.errors[kind])
            if exc is not None:
                self.errors[kind] = f"{kind} did not start: {type(exc).__name__}: {exc}"
                raise exc
        target = self.targets[kind]
        if target.description:
            self._described[kind] = target.description
        return target

    def close(self) -> None:
        for t in self._starting.values():
            t.join()   # a start still under way finishes, and is then stopped
        while self.targets:
            _, t = self.targets.popitem()
            t.close()


def pytest_configure(config):
    config.addinivalue_line("markers", "compat: a compatibility scenario")
    state = _Session(config)
    config._compat = state
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")
    if config.getoption("target") == "both" and config.getoption("bootstrap"):
        raise pytest.UsageError("--target both starts kwire and Apache Kafka itself; it takes no --bootstrap")
    if not hasattr(config, "workerinput"):  # under xdist only the controller writes the report
        config.pluginmanager.register(CompatReport(config.getoption("compat_report"), state.name, config.rootpath,
                                                   compare=BOTH if state.both else None,
                                                   descriptions=state.descriptions),
                                      "compat-report")


def _client_names(config) -> list[str]:
    chosen = config.getoption("clients")
    if not chosen:
        return list(adapters.CLIENT_NAMES)
    names = [c.strip() for c in chosen.split(",") if c.strip()]
    unknown = set(names) - set(adapters.CLIENT_NAMES)
    if unknown:
        raise pytest.UsageError(f"unknown clients {sorted(unknown)}; known: {adapters.CLIENT_NAMES}")
    return names


def pytest_generate_tests(metafunc):
    if "client" in metafunc.fixturenames:
        metafunc.parametrize("client_name", _client_names(metafunc.config), ids=lambda n: n)
    if "target" in metafunc.fixturenames and metafunc.config._compat.both:
        # session scope: a session fixture (target, helper) may depend on it; pytest groups the rows by target
        metafunc.parametrize("target_name", BOTH, ids=lambda n: n, scope="session")


def scenario_of(item) -> str:
    name = getattr(item, "originalname", item.name).removeprefix("test_")
    cs = getattr(item, "callspec", None)
    if cs is not None:
        extra = [str(v) for k, v in cs.params.items() if k not in ("client_name", "target_name")]
        if extra:
            name += "[" + ",".join(extra) + "]"
    return name


def row_target(config, item) -> str | None:
    """The target a row runs against: its ``target_name`` parameter under --target both, else the run's one
    target (None for --bootstrap: the report names it once the session knows it)."""
    cs = getattr(item, "callspec", None)
    if cs is not None and "target_name" in cs.params:
        return cs.params["target_name"]
    kind = config._compat.kind
    return None if kind == "external" else kind


def pytest_collection_modifyitems(config, items):
    listed = listed_differences() if config._compat.both else {}
    for item in items:
        cs = getattr(item, "callspec", None)
        if cs is None or "client_name" not in cs.params or not str(item.path).startswith(str(config.rootpath / "compat_tests")):
            continue
        scenario = scenario_of(item)
        client = cs.params["client_name"]
        target = row_target(config, item)
        item.user_properties.append(("compat", (scenario, client, target)))
        doc = (getattr(item, "function", None).__doc__ or "").strip() if getattr(item, "function", None) else ""
        if doc:
            item.user_properties.append(("compat_doc", " ".join(doc.split("\n\n")[0].split())))
        base = getattr(item, "originalname", item.name).removeprefix("test_")
        if target == "kwire":  # declared gaps are kwire's, never another target's
            for key in (f"{scenario}[{client}]", f"{base}[{client}]", scenario, base):
                if key in KWIRE_GAPS:
                    item.add_marker(pytest.mark.xfail(reason=KWIRE_GAPS[key], strict=False))
                    break
        # a difference docs/differences.md lists as a failure on one target: that side's row is an xfail
        # with the listed reason (the report still flags the difference, as explained)
        entry = lookup(listed, scenario, base, client)
        if entry is not None and target in entry.outcomes and entry.outcomes[target] == "fail" \
                and not item.get_closest_marker("xfail"):
            item.add_marker(pytest.mark.xfail(reason=f"docs/differences.md: {entry.reason}", strict=False))


def pytest_collection_finish(session):
    state = session.config._compat
    if state.both and any("target" in getattr(item, "fixturenames", ()) for item in session.items):
        state.prestart_kafka()


def pytest_sessionfinish(session, exitstatus):
    java = sys.modules.get("compat_tests.clients.java")
    if java is not None:  # the Java column's driver JVM, stopped by PID (atexit would do it later)
        java.stop_driver()
    session.config._compat.close()


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    try:
        return (yield)
    except Unsupported as exc:
        pytest.skip(f"{pyfuncitem.funcargs.get('client_name', 'client')} cannot do this: {exc}")


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def target_name(request):
    """The run's one target (under --target both the rows are parametrized by it instead)."""
    return request.config._compat.kind


@pytest.fixture(scope="session")
def target(request, target_name):
    return request.config._compat.get(target_name)


@pytest.fixture
def client(target, client_name):
    f = adapters.factory(client_name)
    if isinstance(f, str):
        pytest.skip(f)
    c = f(target.bootstrap)
    yield c
    c.close()


@pytest.fixture(scope="session")
def helper(target):
    """A harness-side client (confluent-kafka) for setup steps that are not what the scenario checks,
    so that clients without admin APIs (kcat) still run the scenario."""
    import gc

    from compat_tests.clients.confluent import ConfluentClient

    h = ConfluentClient(target.bootstrap)
    yield h
    h._admin = None  # librdkafka handles end when collected: before the broker stops, not after
    gc.collect()


@pytest.fixture
def topic():
    return f"compat-{uuid.uuid4().hex[:12]}"
