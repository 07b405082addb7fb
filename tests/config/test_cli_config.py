"""How ``kwire serve`` builds its config: server.properties, --override and flags are static
broker configs; bad values stop it with a one-line ValueError."""
from __future__ import annotations

import pytest

from kwire.cli import build_parser, config_from_args


def _cfg(tmp_path, props: str, *argv: str):
    path = tmp_path / "server.properties"
    path.write_text(props, encoding="latin-1")
    return config_from_args(build_parser().parse_args(["serve", "--config", str(path), *argv]))


def test_properties_overrides_and_flags_are_static(tmp_path):
    cfg, listen = _cfg(tmp_path, "num.partitions=2\nlog.retention.hours : 12\nbroker.rack=r\\u00e9\n",
                       "--override", "num.partitions=4", "--listen", "127.0.0.1:0",
                       "--advertised-listener", "localhost:9999", "--data-dir", str(tmp_path / "d"))
    assert listen == "PLAINTEXT://127.0.0.1:0"
    assert cfg.get("num.partitions") == 4 and cfg.get("broker.rack") == "r\u00e9"
    assert cfg.topic_default("retention.ms") == 12 * 3600000
    assert cfg.is_static("advertised.listeners") and cfg.get("advertised.listeners") == ["PLAINTEXT://localhost:9999"]
    assert cfg.is_static("listeners") and cfg.data_dir == str(tmp_path / "d")
    assert not cfg.is_static("auto.create.topics.enable")


def test_voters_flag_is_a_list(tmp_path):
    cfg, _ = _cfg(tmp_path, "", "--controller-quorum-voters", "1@127.0.0.1:9093,2@127.0.0.1:9193")
    assert cfg.get("controller.quorum.voters") == ["1@127.0.0.1:9093", "2@127.0.0.1:9193"]


@pytest.mark.parametrize("props,argv,key,value", [
    ("num.partitions=lots\n", (), "num.partitions", "lots"),
    ("", ("--override", "message.max.bytes=-1"), "message.max.bytes", "-1"),
    ("log.segment.bytes=1000\n", (), "log.segment.bytes", "1000"),
])
def test_bad_values_stop_the_start(tmp_path, props, argv, key, value):
    with pytest.raises(ValueError) as ei:
        _cfg(tmp_path, props, *argv)
    msg = str(ei.value)
    assert msg.startswith(f"Invalid value {value} for configuration {key}") and "\n" not in msg
