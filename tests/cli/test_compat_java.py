"""The Java column of compat_tests: without a JDK or Apache Kafka's jars (make kafka) its rows fail (never a silent
skip), the driver JVM answers unknown requests with an error instead of hanging, and a dead driver fails
the calls waiting on it at once."""
from __future__ import annotations

import time

import pytest

from compat_tests.clients import KafkaOpError, factory
from compat_tests.clients import java as jv


@pytest.fixture
def fresh(monkeypatch):
    """The module's driver singleton and cached start failure, isolated from the session's."""
    monkeypatch.setattr(jv, "_driver", None)
    monkeypatch.setattr(jv, "_driver_error", None)
    return jv


def test_missing_javac_fails_the_rows(fresh, monkeypatch):
    monkeypatch.setattr(jv.shutil, "which", lambda name: None if name == "javac" else "/usr/bin/" + name)
    cls = factory("java")
    assert not isinstance(cls, str), "the Java column must not turn into a skip"
    with pytest.raises(jv.JavaUnavailable, match="javac"):
        cls("127.0.0.1:9")
    with pytest.raises(jv.JavaUnavailable, match="javac"):  # later rows fail at once with the same reason
        cls("127.0.0.1:9")


def test_missing_jars_fail_the_rows(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv("KWIRE_KAFKA_LIBS", str(tmp_path))   # an empty directory: make kafka never ran
    with pytest.raises(jv.JavaUnavailable, match="make kafka"):
        factory("java")("127.0.0.1:9")
    with pytest.raises(jv.JavaUnavailable, match="make kafka"):  # later rows fail at once with the same reason
        factory("java")("127.0.0.1:9")


def test_client_jars_only():
    """The driver JVM gets kafka-clients and its runtime jars, not the broker's ~90."""
    names = [j.name for j in jv.classpath_jars()]
    assert names[0].startswith("kafka-clients-4.") and len(names) == 8
    assert not any(n.startswith(("kafka_2.13-", "kafka-server-", "scala-")) for n in names)


@pytest.mark.slow
def test_driver_answers_errors_and_dies_cleanly():
    d = jv.Driver(log_name="driver-selftest")  # not the session driver's log file
    try:
        assert d.versions["kafka_clients"].startswith("4.")
        with pytest.raises(KafkaOpError) as ei:
            d.call("no_such_op", 5)
        assert ei.value.name == "IllegalArgumentException" and "unknown op" in ei.value.detail
        d.proc.kill()
        t0 = time.monotonic()
        with pytest.raises(KafkaOpError) as ei:
            d.call("versions", 30)
        assert ei.value.name == "JAVA_DRIVER_DIED"
        assert time.monotonic() - t0 < 5
    finally:
        d.stop()
