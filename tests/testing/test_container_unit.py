"""The testcontainers drop-in's checks that need no broker: misspelt settings, the extra a
secured broker needs, the container's files and its shell, inspect before start."""
from __future__ import annotations

import logging
import sys

import pytest

from kwire.testing import Broker, KafkaContainer


def test_a_misspelt_kafka_env_var_is_refused_as_kwire_serve_refuses_it():
    c = KafkaContainer().with_env("KAFKA_NUM_PARTITONS", "3")
    with pytest.raises(ValueError, match=r"KAFKA_NUM_PARTITONS .*'num.partitons'; did you mean "
                                         r"KAFKA_NUM_PARTITIONS \(num.partitions\)"):
        c.start()
    assert c.status == "exited"
    assert KafkaContainer().with_env("KAFKA_NUM_PARTITIONS", "3").overrides()["num.partitions"] == "3"


def test_a_misspelt_override_is_refused_by_the_test_broker():
    with pytest.raises(ValueError, match=r"unknown config key 'log.retention.hour'; did you mean log.retention.hours"):
        Broker(overrides={"log.retention.hour": 1})


def test_a_secured_broker_without_cryptography_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "cryptography", None)     # as if not installed
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'kwire\[testing\]'"):
        Broker(security="SASL_SSL", users={"u": "p"})
    assert list(tmp_path.iterdir()) == []                      # its data dir is not left behind


def test_env_file_and_bind_ports(tmp_path, caplog):
    env = tmp_path / "kafka.env"
    env.write_text("# a comment\nexport KAFKA_NUM_PARTITIONS=4\nKAFKA_LOG_RETENTION_MS='60000'\nOTHER=x\n")
    c = KafkaContainer().with_env_file(env)
    assert c.overrides()["num.partitions"] == "4" and c.overrides()["log.retention.ms"] == "60000"
    with caplog.at_level(logging.INFO, logger="kwire.testing"):
        c.with_bind_ports("9093/tcp", 25777).with_bind_ports(9092, 19092).with_command("sleep 1")
    assert c._host_port == 25777
    said = [r.getMessage() for r in caplog.records]
    assert any("with_bind_ports(9092, 19092)" in m and "does not apply" in m for m in said), said
    assert any("with_command()" in m for m in said), said
    assert c.get_container_info() is None                      # not started: as testcontainers answers


@pytest.mark.slow      # runs cat, wc and grep
def test_files_and_the_shell_of_the_container(tmp_path):
    c = KafkaContainer()
    host_dir = tmp_path / "conf"
    host_dir.mkdir()
    (host_dir / "a.properties").write_text("x=1\n")
    c.with_volume_mapping(str(host_dir), "/etc/kafka/conf")
    c.create_file(b"one\ntwo\nthree\n", "/tmp/words.txt")
    assert c.exec(["sh", "-c", "cat /tmp/words.txt | wc -l"]) == (0, b"3\n")
    assert c.exec(["sh", "-c", "grep -c two < /tmp/words.txt"]) == (0, b"1\n")
    assert c.exec(["sh", "-c", "cat /etc/kafka/conf/a.properties"]) == (0, b"x=1\n")   # the volume
    assert c.exec(["sh", "-c", "false && echo no; echo yes"]) == (0, b"yes\n")
    assert c.exec(["sh", "-c", "nosuchcommand || echo fallback"]) == (0, b"sh: nosuchcommand: not found\nfallback\n")
    assert c.exec(["sh", "-c", "cat /tmp/missing 2>/dev/null"]).exit_code == 1
    c.exec(["sh", "-c", "echo -n four > /tmp/out.txt && echo ' five' >> /tmp/out.txt"])
    c.copy_from_container("/tmp/out.txt", tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text() == "four five\n"
    c.copy_into_container(b"payload", "/data/blob.bin")
    assert c.exec("cat /data/blob.bin") == (0, b"payload")
    with pytest.raises(FileNotFoundError, match="/nope: no such file in the container"):
        c.copy_from_container("/nope", tmp_path / "x")
    root = c._root
    c.stop()
    assert root is not None and not (tmp_path / root).exists()
    assert (host_dir / "a.properties").exists()                # a volume outlives the container
