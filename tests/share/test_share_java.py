"""Share groups (KIP-932) with the stock Java client: kafka-clients 4.3's KafkaShareConsumer and
Admin against a kwire broker emulating Kafka 4.3 (scenarios in java/ShareCheck.java, several in
one JVM): 3 share consumers on one partition with every record delivered once; explicit
ACCEPT / RELEASE / REJECT; a poison record archived at the delivery count limit; a consumer
killed (SIGKILL) mid-batch whose records come back, delivery count 2, once their acquisition
locks expire; the share-group offsets admin APIs (list / alter / delete share group offsets).

confluent-kafka 2.16's ShareConsumer (librdkafka's KIP-932 consumer) is tested in
test_share_confluent.py.

Needs a JDK (javac, java) and Apache Kafka's kafka-clients jar (make kafka;
tests/transactions/java_build.py), as the transaction tests.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import uuid

import pytest

from kwire.testing import Broker
from tests.transactions.java_build import JAVA_FLAGS, JAVAC_FLAGS, kafka_clients_classpath

pytestmark = pytest.mark.slow

HERE = pathlib.Path(__file__).resolve().parent / "java"
LOCK_MS = 1500


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    assert shutil.which("javac") and shutil.which("java"), "needs a JDK 17 (javac, java): make deps installs it"
    CP = kafka_clients_classpath()
    out = tmp_path_factory.mktemp("sharejava")
    subprocess.run(["javac", *JAVAC_FLAGS, "-d", str(out), "-cp", CP, str(HERE / "ShareCheck.java")], check=True,
                   timeout=120)
    return f"{CP}{os.pathsep}{out}"


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"kwire.emulate.kafka.version": "4.3", "offsets.topic.num.partitions": 1,
                           "group.share.record.lock.duration.ms": LOCK_MS,
                           "group.share.min.record.lock.duration.ms": 1000,
                           "group.share.delivery.count.limit": 3,
                           "group.share.heartbeat.interval.ms": 500,
                           "group.share.min.heartbeat.interval.ms": 500}) as b:
        yield b


def _java(classes: str, *args: str, **kw):
    return subprocess.Popen(["java", *JAVA_FLAGS, "-cp", classes, "ShareCheck", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_java_share_consumers(classes, broker):
    prefix = f"sj-{uuid.uuid4().hex[:6]}"
    # the victim runs beside the other scenarios: killed once it holds records
    vt, vg = f"{prefix}-crash", f"{prefix}-g-crash"
    victim = _java(classes, broker.bootstrap_servers, "victim", vt, vg)
    main = _java(classes, broker.bootstrap_servers, "share3,acks,poison,offsets", prefix)
    try:
        line = ""
        for line in victim.stdout:
            if line.startswith("ACQUIRED"):
                break
        victim.kill()
        victim.wait(10)
        held = line.split()[1] if line.startswith("ACQUIRED ") else ""
        assert held, "the victim acquired nothing: " + victim.stderr.read()[-3000:]
        after = subprocess.run(["java", *JAVA_FLAGS, "-cp", classes, "ShareCheck", broker.bootstrap_servers, "after",
                                vt, vg, held],
                               capture_output=True, text=True, timeout=120)
        assert after.returncode == 0, (after.stdout + after.stderr)[-4000:]
        assert "OK after" in after.stdout
        out, err = main.communicate(timeout=120)
        assert main.returncode == 0, (out + err)[-4000:]
        for s in ("share3", "acks", "poison", "offsets"):
            assert f"OK {s}" in out, out
    finally:
        for p in (victim, main):
            if p.poll() is None:
                p.kill()
                p.wait(10)
