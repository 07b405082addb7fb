"""The compatibility suite's harness: targets, one row per client, the kwire gap table, the report.

Options: ``--target kwire|tansu|kafka`` (default kwire, started by the suite), ``--bootstrap HOST:PORT`` (any
running broker), ``--bootstrap-no-autocreate HOST:PORT`` (a broker with auto.create.topics.enable=false, for
that one scenario on external targets), ``--clients a,b`` (a subset), ``--compat-report PREFIX``.
"""
from __future__ import annotations

import sys
import uuid

import pytest

from compat_tests import clients as adapters
from compat_tests.clients.base import Unsupported
from compat_tests.kwire_gaps import KWIRE_GAPS
from compat_tests.report import CompatReport
from compat_tests.targets import TargetUnavailable, make_target


def pytest_addoption(parser):
    g = parser.getgroup("compat", "Kafka compatibility suite")
    g.addoption("--target", default="kwire", choices=["kwire", "tansu", "kafka"],
                help="broker the suite starts itself (default: a fresh kwire)")
    g.addoption("--bootstrap", default=None, metavar="HOST:PORT", help="run against this running broker instead")
    g.addoption("--bootstrap-no-autocreate", default=None, metavar="HOST:PORT",
                help="with --bootstrap: a broker with auto.create.topics.enable=false for the auto-create-off scenario")
    g.addoption("--clients", default=None, help="comma-separated subset of: " + ",".join(adapters.CLIENT_NAMES))
    g.addoption("--allow-skip", action="store_true",
                help="when the target cannot be started (no Docker for --target kafka ...), skip every scenario "
                     "instead of failing the run")
    g.addoption("--compat-report", default="compat-report", metavar="PREFIX",
                help="write PREFIX.md and PREFIX.json (default: compat-report in the current directory)")


class _Session:
    def __init__(self, config):
        self.config = config
        self.target = None
        self.error: str | None = None

    @property
    def kind(self) -> str:
        return "external" if self.config.getoption("bootstrap") else self.config.getoption("target")

    def name(self) -> str:
        if self.target is not None:
            return self.target.name
        b = self.config.getoption("bootstrap")
        return f"external {b}" if b else self.config.getoption("target")


def pytest_configure(config):
    config.addinivalue_line("markers", "compat: a compatibility scenario")
    state = _Session(config)
    config._compat = state
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")
    if not hasattr(config, "workerinput"):  # under xdist only the controller writes the report
        config.pluginmanager.register(CompatReport(config.getoption("compat_report"), state.name, config.rootpath),
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


def scenario_of(item) -> str:
    name = getattr(item, "originalname", item.name).removeprefix("test_")
    cs = getattr(item, "callspec", None)
    if cs is not None:
        extra = [str(v) for k, v in cs.params.items() if k != "client_name"]
        if extra:
            name += "[" + ",".join(extra) + "]"
    return name


def pytest_collection_modifyitems(config, items):
    kwire = config._compat.kind == "kwire"
    for item in items:
        cs = getattr(item, "callspec", None)
        if cs is None or "client_name" not in cs.params or not str(item.path).startswith(str(config.rootpath / "compat_tests")):
            continue
        scenario = scenario_of(item)
        client = cs.params["client_name"]
        item.user_properties.append(("compat", (scenario, client)))
        doc = (getattr(item, "function", None).__doc__ or "").strip() if getattr(item, "function", None) else ""
        if doc:
            item.user_properties.append(("compat_doc", " ".join(doc.split("\n\n")[0].split())))
        if kwire:
            base = getattr(item, "originalname", item.name).removeprefix("test_")
            for key in (f"{scenario}[{client}]", f"{base}[{client}]", scenario, base):
                if key in KWIRE_GAPS:
                    item.add_marker(pytest.mark.xfail(reason=KWIRE_GAPS[key], strict=False))
                    break


def pytest_sessionfinish(session, exitstatus):
    java = sys.modules.get("compat_tests.clients.java")
    if java is not None:  # the Java column's driver JVM, stopped by PID (atexit would do it later)
        java.stop_driver()


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    try:
        return (yield)
    except Unsupported as exc:
        pytest.skip(f"{pyfuncitem.funcargs.get('client_name', 'client')} cannot do this: {exc}")


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def target(request):
    state = request.config._compat
    if state.error:
        pytest.skip(state.error)
    if state.target is None:
        try:
            state.target = make_target(request.config.getoption("target"), request.config.getoption("bootstrap"),
                                       request.config.getoption("bootstrap_no_autocreate"))
        except TargetUnavailable as exc:
            state.error = str(exc)
            if not request.config.getoption("allow_skip"):
                pytest.exit(f"compat: the target cannot be started: {exc}. Nothing was tested; pass --allow-skip "
                            f"to skip every scenario instead of failing.", returncode=1)
            pytest.skip(state.error)
    yield state.target
    state.target.close()


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
