"""KafkaJS (an independent pure-JavaScript client) produces and consumes over SASL_SSL with
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; a wrong password is refused with KafkaJS's
authentication error (the broker's SASL_AUTHENTICATION_FAILED)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from kwire.testing.broker import Broker

pytestmark = pytest.mark.slow

JS_DIR = os.path.join(os.path.dirname(__file__), "..", "js")


@pytest.fixture(scope="module")
def broker():
    with Broker(security="SASL_SSL", users={"alice": "alice-secret"}, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def _run(b, topic: str, n: int, mech: str, user: str, password: str) -> dict:
    node = shutil.which("node")
    assert node, "node is not installed"
    assert os.path.isdir(os.path.join(JS_DIR, "node_modules", "kafkajs")), \
        "kafkajs is not installed: `make test` runs npm ci in tests/js"
    out = subprocess.run([node, os.path.join(JS_DIR, "sasl.js"), f"localhost:{b.port}", topic, str(n), mech, user,
                          password, b.tls.ca_file], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafkajs_over_sasl_ssl(broker, mech):
    topic = f"js-{mech.lower()}"
    broker.create_topic(topic, 1)
    res = _run(broker, topic, 20, mech, "alice", "alice-secret")
    assert sorted(res["got"], key=lambda v: int(v.rsplit("-", 1)[1])) == [f"{mech}-{i}" for i in range(20)]


def test_kafkajs_wrong_password_is_refused(broker):
    res = _run(broker, "js-refused", 1, "SCRAM-SHA-512", "alice", "wrong")
    assert res["error"] == "KafkaJSSASLAuthenticationError", res
    assert "Invalid user credentials" in res["message"], res


def test_kafkajs_with_a_user_from_the_quorum(broker):
    """A SCRAM-SHA-256 user created with AlterUserScramCredentials (no JAAS entry) logs in."""
    from kwire.codec.apis import api
    from kwire.security.sasl import salted_password
    from kwire.testing.client import WireClient

    U = api("AlterUserScramCredentials").request.struct("ScramCredentialUpsertion")
    salt = os.urandom(24)
    c = WireClient(f"127.0.0.1:{broker.harness_port}", 10.0)
    try:
        r = c.request("AlterUserScramCredentials", 0, deletions=[], upsertions=[U(
            name="kim", mechanism=1, iterations=4096, salt=salt,
            salted_password=salted_password("SCRAM-SHA-256", "kim-pw", salt, 4096))])
    finally:
        c.close()
    assert [(x.user, x.error_code) for x in r.results] == [("kim", 0)]
    broker.create_topic("js-kim", 1)
    assert len(_run(broker, "js-kim", 5, "SCRAM-SHA-256", "kim", "kim-pw")["got"]) == 5
