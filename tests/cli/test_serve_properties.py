"""A stock KRaft server.properties (Kafka 4's quickstart) starts ``kwire serve``; a bare
``--listen PORT`` binds every interface; a stock client produces and consumes through it."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from kwire.testing.broker import free_port, wait_for_port

pytestmark = pytest.mark.slow

STOCK = pathlib.Path(__file__).with_name("kraft_server.properties")


def test_stock_server_properties_serves_a_client(tmp_path):
    from confluent_kafka import Consumer, Producer

    port = free_port()
    log = tmp_path / "kwire.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kwire", "serve", "--config", str(STOCK), "--listen", str(port),
             "--override", f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
             "--override", "confluent.support.metrics.enable=false",   # a plug-in's key: warned, not refused
             "--data-dir", str(tmp_path / "d")], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_for_port("127.0.0.1", port, timeout=30, proc=proc)
            p = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
            p.produce("orders", b"v1", key=b"k")
            assert p.flush(20) == 0
            c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "g",
                          "auto.offset.reset": "earliest"})
            try:
                c.subscribe(["orders"])
                msg = None
                for _ in range(40):
                    msg = c.poll(0.5)
                    if msg is not None and not msg.error():
                        break
                assert msg is not None and msg.value() == b"v1"
            finally:
                c.close()
        finally:
            proc.terminate()
            assert proc.wait(20) == 0
    text = log.read_text()
    assert "The configuration 'confluent.support.metrics.enable' was supplied but isn't a known config." in text
    assert "controller listener CONTROLLER://:9093 not opened: this node is a quorum of one" in text
    assert f"serving clients on every interface, port {port} (advertised 127.0.0.1:{port})" in text
    assert "Traceback" not in text
