"""pytest plugin (entry point ``pytest11``: ``kwire``): a kwire broker for your tests.

Fixtures
- ``kafka_broker`` (session): a started :class:`kwire.testing.Broker`; under pytest-xdist each
  worker is its own session, so each worker gets its own broker on its own port.
- ``kafka_bootstrap``: its ``"host:port"``.
- ``kafka_topic``: a fresh topic per test (unique name, created before the test);
  ``@pytest.mark.kafka_topic(partitions=3, config={"cleanup.policy": "compact"})`` shapes it.
- ``kafka_faults``: the broker's fault-injection hooks, cleared after the test.
- ``kafka_client_config``: ready client settings for ``kafka_broker``, secured or not:
  ``kafka_client_config()`` (confluent-kafka keys), ``kafka_client_config("kafka-python")``,
  ``kafka_client_config("aiokafka", mechanism="SCRAM-SHA-512")``.

Options (command line, or ini keys ``kwire_mode`` / ``kwire_storage``):
``--kwire-mode thread|process``, ``--kwire-storage memory|disk``,
``--kwire-override KEY=VALUE`` (repeatable; Kafka config names),
``--kwire-security PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL`` (ini ``kwire_security``: a secured
broker with a throwaway CA), ``--kwire-user NAME=PASSWORD`` (repeatable; SASL users, default
``kwire=kwire-secret``), ``--kwire-client-auth none|requested|required`` (mutual TLS).

Only the standard library is imported when pytest loads this plugin; the broker starts the
first time a test asks for it.
"""
from __future__ import annotations

import re
import uuid

import pytest

from kwire.testing.broker import Broker

TEST_DEFAULTS = {"group.initial.rebalance.delay.ms": 0}


def pytest_addoption(parser):
    group = parser.getgroup("kwire", "kwire Kafka broker for tests")
    group.addoption("--kwire-mode", choices=("thread", "process"), default=None,
                    help="run the broker in this process (thread, default) or as a subprocess")
    group.addoption("--kwire-storage", choices=("memory", "disk"), default=None,
                    help="log on tmpfs (memory, default) or in a temporary directory on disk")
    group.addoption("--kwire-override", action="append", default=[], metavar="KEY=VALUE",
                    help="broker config (Kafka names), e.g. --kwire-override num.partitions=3")
    group.addoption("--kwire-security", choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), default=None,
                    help="the broker's client listener: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL")
    group.addoption("--kwire-user", action="append", default=[], metavar="NAME=PASSWORD",
                    help="a SASL user (repeatable; default kwire=kwire-secret)")
    group.addoption("--kwire-client-auth", choices=("none", "requested", "required"), default="none",
                    help="mutual TLS on SSL / SASL_SSL brokers")
    parser.addini("kwire_security", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", default="PLAINTEXT")
    parser.addini("kwire_mode", "thread or process", default="thread")
    parser.addini("kwire_storage", "memory or disk", default="memory")


def pytest_configure(config):
    config.addinivalue_line("markers", "kafka_topic(partitions=1, config=None): shape the kafka_topic fixture's topic")


def _option(config, name: str) -> str:
    value = config.getoption(f"--kwire-{name}")
    return value if value is not None else config.getini(f"kwire_{name}")


@pytest.fixture(scope="session")
def kafka_broker(pytestconfig):
    overrides = dict(TEST_DEFAULTS)
    for item in pytestconfig.getoption("--kwire-override"):
        key, sep, value = item.partition("=")
        if not sep:
            raise pytest.UsageError(f"--kwire-override needs KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value.strip()
    users = {}
    for item in pytestconfig.getoption("--kwire-user"):
        name, sep, password = item.partition("=")
        if not sep or not name:
            raise pytest.UsageError(f"--kwire-user needs NAME=PASSWORD, got {item!r}")
        users[name] = password
    security = _option(pytestconfig, "security").upper()
    if security.startswith("SASL") and not users:
        users = {"kwire": "kwire-secret"}
    broker = Broker(mode=_option(pytestconfig, "mode"), storage=_option(pytestconfig, "storage"),
                    overrides=overrides, security=security, users=users,
                    client_auth=pytestconfig.getoption("--kwire-client-auth"))
    with broker:
        yield broker


@pytest.fixture
def kafka_bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture
def kafka_client_config(kafka_broker):
    """``(client="confluent", user=None, mechanism="PLAIN") -> dict`` of ready client settings."""
    return kafka_broker.client_config


@pytest.fixture
def kafka_topic(request, kafka_broker) -> str:
    marker = request.node.get_closest_marker("kafka_topic")
    kw = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        kw.setdefault("partitions", marker.args[0])
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:120].strip("-.") or "t"
    name = f"{stem}-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(name, kw.get("partitions", 1), kw.get("config"))
    return name


@pytest.fixture
def kafka_faults(kafka_broker):
    faults = kafka_broker.faults
    faults.clear()
    yield faults
    faults.clear()


@pytest.fixture(scope="session")
def kwire_spark(kafka_broker):
    """A local SparkSession (local[2], workers on this interpreter) with ``format("kwire")``
    registered and pointed at the session's broker. Needs ``kwire[spark]`` (pyspark, pyarrow)."""
    try:
        import pyspark  # noqa: F401, PLC0415 - optional dependency: pyspark
    except ImportError as exc:
        raise pytest.UsageError("the kwire_spark fixture needs PySpark: pip install 'kwire[spark]'") from exc
    from kwire.spark import register  # noqa: PLC0415 - optional dependency: pyspark
    from kwire.testing.spark import local_session  # noqa: PLC0415 - optional dependency: pyspark
    spark = local_session()
    register(spark, bootstrap_servers=kafka_broker.bootstrap_servers)
    yield spark
    spark.stop()
