"""kcat (Debian's, an older librdkafka) produces and consumes over SASL_SSL with SCRAM-SHA-512
and over mutual TLS."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from kwire.testing.broker import Broker

pytestmark = pytest.mark.slow

KCAT = shutil.which("kcat")


def _kcat_args(conf: dict) -> list[str]:
    out = ["-b", conf["bootstrap.servers"]]
    for k, v in conf.items():
        if k != "bootstrap.servers":
            out += ["-X", f"{k}={v}"]
    return out


@pytest.mark.parametrize("security,client_auth,mech", [("SASL_SSL", "none", "SCRAM-SHA-512"),
                                                       ("SSL", "required", None)])
def test_kcat_produce_consume(security, client_auth, mech):
    assert KCAT, "kcat is not installed (make deps installs it)"
    users = {"kc": "kc-pw"} if security.startswith("SASL") else None
    with Broker(security=security, users=users, client_auth=client_auth) as b:
        b.create_topic("kc", 1)
        conf = b.client_config("confluent", mechanism=mech or "PLAIN")
        args = _kcat_args(conf)
        p = subprocess.run([KCAT, *args, "-P", "-t", "kc"], input="one\ntwo\nthree\n", capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        c = subprocess.run([KCAT, *args, "-C", "-t", "kc", "-o", "beginning", "-e", "-c", "3"],
                           capture_output=True, text=True, timeout=30)
        assert c.returncode == 0, c.stderr
        assert c.stdout.split() == ["one", "two", "three"]
