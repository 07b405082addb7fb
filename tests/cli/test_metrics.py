"""The Prometheus endpoint (metrics.listen), scraped during a produce/consume workload and
parsed with prometheus_client's own parser."""
from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kwire.testing import Broker


def scrape(port: int) -> dict[str, dict[tuple, float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=")
        text = r.read().decode()
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


@pytest.mark.slow
def test_metrics_during_produce_and_consume():
    from confluent_kafka import Consumer, Producer, TopicPartition

    with Broker(overrides={"metrics.listen": "127.0.0.1:0", "group.initial.rebalance.delay.ms": 0}) as kafka:
        port = kafka.server.metrics_port
        assert port
        kafka.create_topic("orders", 2)
        p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0})
        for i in range(10):
            p.produce("orders", b"x" * 100, partition=i % 2)
        assert p.flush(10) == 0
        c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "billing",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            c.assign([TopicPartition("orders", 0, 0), TopicPartition("orders", 1, 0)])
            got = 0
            while got < 10:
                m = c.poll(1)
                if m is not None and not m.error():
                    got += 1
            c.commit(offsets=[TopicPartition("orders", 0, 2), TopicPartition("orders", 1, 5)], asynchronous=False)
        finally:
            c.close()
        m = scrape(port)
    t = (("topic", "orders"),)
    assert m["kafka_server_brokertopicmetrics_messagesin_total"][t] == 10
    assert m["kafka_server_brokertopicmetrics_bytesin_total"][t] >= 10 * 100
    assert m["kafka_server_brokertopicmetrics_bytesout_total"][t] >= 10 * 100
    produce = sum(v for k, v in m["kafka_network_requestmetrics_requests_total"].items()
                  if dict(k)["request"] == "Produce")
    assert produce >= 1
    count = m["kafka_network_requestmetrics_totaltimems_count"][(("request", "Fetch"),)]
    assert count >= 1 and m["kafka_network_requestmetrics_totaltimems_bucket"][
        (("le", "+Inf"), ("request", "Fetch"))] == count
    assert m["kafka_server_replicamanager_leadercount"][()] == 2 + 50      # orders and __consumer_offsets
    assert m["kafka_server_replicamanager_underreplicatedpartitions"][()] == 0
    assert m["kafka_controller_kafkacontroller_activecontrollercount"][()] == 1
    assert m["kafka_log_log_logendoffset"][(("partition", "0"), ("topic", "orders"))] == 5
    assert m["kafka_log_log_size"][(("partition", "1"), ("topic", "orders"))] > 500
    lag = m["kafka_consumergroup_lag"]
    assert lag[(("consumergroup", "billing"), ("partition", "0"), ("topic", "orders"))] == 3
    assert lag[(("consumergroup", "billing"), ("partition", "1"), ("topic", "orders"))] == 0
    assert m["kafka_server_raft_metrics_current_leader"][()] == 1
    assert m["kafka_server_raft_metrics_commit_latency_max"][()] > 0     # the topic creations just committed
    assert ("version", __import__("kwire").__version__) in next(iter(m["kwire_build_info"]))


@pytest.mark.slow
def test_metrics_are_off_in_the_test_broker():
    with Broker() as kafka:
        assert kafka.server.metrics_port is None and kafka.server.metrics is None


@pytest.mark.slow
def test_other_paths_and_methods():
    with Broker(overrides={"metrics.listen": "127.0.0.1:0"}) as kafka:
        port = kafka.server.metrics_port
        for path, code in (("/nothing", 404), ("/", 200)):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
                    got = r.status
            except urllib.error.HTTPError as exc:
                got = exc.code
            assert got == code
        with socket.create_connection(("127.0.0.1", port)) as s:   # garbage: closed, the broker lives
            s.sendall(b"\x00\x01garbage\r\n\r\n")
            s.recv(100)
        assert scrape(port)["kafka_controller_kafkacontroller_activecontrollercount"][()] == 1


@pytest.mark.slow
def test_configured_metrics_port_in_use_stops_the_start(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                               str(tmp_path / "d"), "--override", f"metrics.listen=127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert f"kwire: cannot listen on 127.0.0.1:{port} (metrics listener (metrics.listen)): the address is already " \
           f"in use" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("value", ["127.0.0.1:x", "host-without-port"])
def test_bad_metrics_listen_is_named(tmp_path, value):
    proc = subprocess.run([sys.executable, "-m", "kwire", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                           str(tmp_path / "d"), "--override", f"metrics.listen={value}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "metrics.listen" in proc.stderr and "Traceback" not in proc.stderr   # usage
    assert proc.stderr.count("\n") == 1 and "(set by --override)" in proc.stderr


def test_grafana_dashboard_charts_metrics_we_serve():
    """Every metric the dashboard queries is one kwire serves."""
    import json
    import pathlib
    import re

    import kwire.metrics as M

    dash = json.loads((pathlib.Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json").read_text())
    names = {n for p in dash["panels"] for t in p["targets"] for n in re.findall(r"\b(kafka_[a-z_]+|kwire_[a-z_]+)", t["expr"])}
    source = pathlib.Path(M.__file__).read_text()
    for n in names:
        base = re.sub(r"_(total|bucket|count|sum)$", "", n)
        assert base in source or base.rsplit("_", 1)[0] in source, n
