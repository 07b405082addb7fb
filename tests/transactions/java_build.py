"""Compiling the Java programs in tests/transactions/java against the stock Java client
(kafka-clients 4.x): Apache Kafka's own kafka-clients and slf4j-api jars, resolved from Maven by
``make kafka`` (kwire.testing.apache_kafka.kafka_libs()). Without a JDK or the jars the tests fail,
with a message naming what to run; they never skip.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

from kwire.testing.apache_kafka import KafkaUnavailable, kafka_client_jars

HERE = pathlib.Path(__file__).resolve().parent / "java"
# Short-lived JVMs (the test programs, javac): the C1 compiler only and the serial collector
# cost a fifth to a half less CPU than C2 and G1's threads, on a machine the tests share (the
# EOS tests and the compat Java driver already run so); the clients' behaviour is the same.
JAVA_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
JAVAC_FLAGS = tuple(f"-J{f}" for f in JAVA_FLAGS)


def kafka_clients_classpath() -> str:
    """kafka-clients and slf4j-api (the programs use no compression codec) as a class path; fails the
    calling test, naming make kafka, when the jars are missing."""
    try:
        jars = kafka_client_jars(("kafka-clients-", "slf4j-api-"))
    except KafkaUnavailable as exc:
        raise AssertionError(str(exc)) from None
    return os.pathsep.join(map(str, jars))


def compile_java(out: pathlib.Path, *sources: str) -> str:
    """javac ``sources`` (file names under tests/transactions/java) into ``out``; the class path
    to run them with."""
    assert shutil.which("javac") and shutil.which("java"), "needs a JDK 17 (javac, java): make deps installs it"
    cp = kafka_clients_classpath()
    subprocess.run(["javac", *JAVAC_FLAGS, "-d", str(out), "-cp", cp, *(str(HERE / s) for s in sources)], check=True,
                   timeout=120)
    return f"{cp}{os.pathsep}{out}"
