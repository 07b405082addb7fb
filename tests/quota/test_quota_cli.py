"""``kwire configs --entity-type users|clients``: kafka-configs.sh's quota flags and lines, checked
with kafka-python's DescribeClientQuotas request and by the quota being enforced."""
from __future__ import annotations

import subprocess

import pytest

from kwire.testing import Broker

from .test_quota_clients import describe

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    b = Broker(mode="thread", data_dir=str(tmp_path_factory.mktemp("quotacli") / "data"))
    b.start()
    yield b
    b.stop()


@pytest.fixture
def kw(capsys):
    from kwire.cli import main  # noqa: PLC0415

    def run(kafka, *argv: str, ok: bool = True) -> subprocess.CompletedProcess:
        capsys.readouterr()
        rc = main(["configs", "--bootstrap-server", kafka.bootstrap_servers, *argv])
        out, err = capsys.readouterr()
        proc = subprocess.CompletedProcess(argv, rc, out, err)
        if ok:
            assert proc.returncode == 0, proc.stderr
        return proc
    return run


def test_alter_and_describe_users_and_clients(kafka, kw):
    out = kw(kafka, "--alter", "--entity-type", "users", "--entity-name", "alice",
             "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048").stdout
    assert out == "Completed updating config for user alice.\n"
    out = kw(kafka, "--alter", "--entity-type", "clients", "--entity-default",
             "--add-config", "request_percentage=50").stdout
    assert out == "Completed updating default config for clients in the cluster.\n"
    kw(kafka, "--alter", "--entity-type", "clients", "--entity-name", "c1", "--add-config", "producer_byte_rate=1e7")
    assert describe(kafka) == {(("user", "alice"),): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
                               (("client-id", None),): {"request_percentage": 50.0},
                               (("client-id", "c1"),): {"producer_byte_rate": 1e7}}
    out = kw(kafka, "--describe", "--entity-type", "users", "--entity-name", "alice").stdout
    assert out == "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0\n"
    out = kw(kafka, "--describe", "--entity-type", "clients").stdout.splitlines()
    assert sorted(out) == ["Quota configs for client-id 'c1' are producer_byte_rate=1.0E7",
                           "Quota configs for the default client-id are request_percentage=50.0"]
    out = kw(kafka, "--describe", "--entity-type", "clients", "--entity-default").stdout
    assert out == "Quota configs for the default client-id are request_percentage=50.0\n"
    assert kw(kafka, "--describe", "--entity-type", "users", "--entity-name", "nobody").stdout == ""
    kw(kafka, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "consumer_byte_rate")
    out = kw(kafka, "--describe", "--entity-type", "users", "--entity-name", "alice").stdout
    assert out == "Quota configs for user-principal 'alice' are producer_byte_rate=1024.0\n"


def test_errors(kafka, kw):
    bad = kw(kafka, "--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "bogus=1", ok=False)
    assert bad.returncode != 0 and "INVALID_REQUEST" in bad.stderr and "bogus" in bad.stderr
    bad = kw(kafka, "--alter", "--entity-type", "users", "--entity-name", "bob",
             "--add-config", "producer_byte_rate=fast", ok=False)
    assert bad.returncode != 0 and "not a number" in bad.stderr
    bad = kw(kafka, "--alter", "--entity-type", "clients", "--entity-name", "zed", "--delete-config",
             "producer_byte_rate", ok=False)
    assert bad.returncode == 2 and "Invalid config(s): producer_byte_rate" in bad.stderr


def test_users_take_quotas_and_scram_credentials_in_one_command(kafka, kw):
    out = kw(kafka, "--alter", "--entity-type", "users", "--entity-name", "carol", "--add-config",
             "SCRAM-SHA-256=[iterations=4096,password=pw],consumer_byte_rate=4096").stdout
    assert out == "Completed updating config for user carol.\n"
    out = kw(kafka, "--describe", "--entity-type", "users", "--entity-name", "carol").stdout
    assert out == ("Quota configs for user-principal 'carol' are consumer_byte_rate=4096.0\n"
                   "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=4096\n")
