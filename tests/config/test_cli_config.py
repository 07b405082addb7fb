"""How ``kwire serve`` builds its config: server.properties, --override and flags are static
broker configs; bad values stop it with a one-line UsageError."""
from __future__ import annotations

import pytest

from kwire.cli import build_parser, config_from_args, plan_from_config
from kwire.cmdline import UsageError


def _cfg(tmp_path, props: str, *argv: str):
    path = tmp_path / "server.properties"
    path.write_text(props, encoding="latin-1")
    return config_from_args(build_parser().parse_args(["serve", "--config", str(path), *argv]))


def test_properties_overrides_and_flags_are_static(tmp_path):
    cfg = _cfg(tmp_path, "num.partitions=2\nlog.retention.hours : 12\nbroker.rack=r\\u00e9\n",
                       "--override", "num.partitions=4", "--listen", "127.0.0.1:0",
                       "--advertised-listener", "localhost:9999", "--data-dir", str(tmp_path / "d"))
    assert cfg.get("listeners") == ["PLAINTEXT://127.0.0.1:0"]
    assert cfg.get("num.partitions") == 4 and cfg.get("broker.rack") == "r\u00e9"
    assert cfg.topic_default("retention.ms") == 12 * 3600000
    assert cfg.is_static("advertised.listeners") and cfg.get("advertised.listeners") == ["PLAINTEXT://localhost:9999"]
    assert cfg.is_static("listeners") and cfg.data_dir == str(tmp_path / "d")
    assert not cfg.is_static("auto.create.topics.enable")


def test_voters_flag_is_a_list(tmp_path):
    cfg = _cfg(tmp_path, "", "--controller-quorum-voters", "1@127.0.0.1:9093,2@127.0.0.1:9193")
    assert cfg.get("controller.quorum.voters") == ["1@127.0.0.1:9093", "2@127.0.0.1:9193"]


@pytest.mark.parametrize("props,argv,key,value", [
    ("num.partitions=lots\n", (), "num.partitions", "lots"),
    ("", ("--override", "message.max.bytes=-1"), "message.max.bytes", "-1"),
    ("log.segment.bytes=1000\n", (), "log.segment.bytes", "1000"),
])
def test_bad_values_stop_the_start(tmp_path, props, argv, key, value):
    with pytest.raises(UsageError) as ei:
        _cfg(tmp_path, props, *argv)
    msg = str(ei.value)
    assert msg.startswith(f"kwire serve: Invalid value {value} for configuration {key}") and "\n" not in msg


def test_hostless_listener_binds_every_interface(tmp_path):
    plan = plan_from_config(_cfg(tmp_path, "listeners=PLAINTEXT://:19092\n"))
    assert (plan.client.name, plan.client.host, plan.client.port) == ("PLAINTEXT", "", 19092)
    assert plan.client.bind_host is None          # every interface, IPv4 and IPv6


@pytest.mark.slow
def test_command_line_keys_are_static_broker_configs():
    """A broker started by ``kwire serve`` (process mode) reports what was given on its command
    line as STATIC_BROKER_CONFIG, as kafka-python's admin tests expect of advertised.listeners."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    from kwire.testing import Broker, free_port

    port = free_port()
    with Broker(mode="process", port=port, overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                                                       "num.partitions": 3}) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers, request_timeout_ms=10000)
        try:
            got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")],
                                         config_filter="static")["broker"]["1"]
        finally:
            admin.close()
    assert got["advertised.listeners"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert got["advertised.listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{port}"
    assert got["listeners"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert got["num.partitions"]["value"] == "3" and got["num.partitions"]["read_only"] is True
    assert "auto.create.topics.enable" not in got      # a default, not static
