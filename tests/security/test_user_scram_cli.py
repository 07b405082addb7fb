"""``kwire configs --entity-type users``: SCRAM credentials as kafka-configs.sh manages them,
against a SASL_PLAINTEXT broker (the admin command talks to its PLAINTEXT harness listener);
the user it creates then authenticates with a stock client, and is refused once deleted."""
from __future__ import annotations

import pytest

from kwire.testing.broker import Broker
from tests.security.clients import login_error

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker():
    with Broker(security="SASL_PLAINTEXT", users={"admin": "admin-secret"}) as b:
        yield b


def _authenticates(port: int, user: str, password: str, mech: str) -> str | None:
    return login_error({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password})


def _kw(capsys, b, *argv: str) -> tuple[int, str, str]:
    from kwire.cli import main

    capsys.readouterr()
    rc = main(["configs", "--bootstrap-server", f"127.0.0.1:{b.harness_port}", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_configs_users_add_describe_delete(broker, capsys):
    b = broker
    users = ("--entity-type", "users")
    assert _kw(capsys, b, "--describe", *users) == (0, "", "")       # no credentials in the quorum yet
    rc, out, err = _kw(capsys, b, "--alter", *users, "--entity-name", "alice", "--add-config",
                       "SCRAM-SHA-256=[iterations=8192,password=alice,secret],SCRAM-SHA-512=[password=alice,secret]")
    assert (rc, err) == (1, "kwire configs: DUPLICATE_RESOURCE: A user credential cannot be altered twice in the "
                            "same request\n")      # Kafka's controller: one alteration per user per request
    rc, out, err = _kw(capsys, b, "--alter", *users, "--entity-name", "alice", "--add-config",
                       "SCRAM-SHA-256=[iterations=8192,password=alice,secret]")
    assert (rc, out, err) == (0, "Completed updating config for user alice.\n", "")
    assert _kw(capsys, b, "--alter", *users, "--entity-name", "alice", "--add-config",
               "SCRAM-SHA-512=[password=alice,secret]")[0] == 0
    assert _kw(capsys, b, "--alter", *users, "--entity-name", "bob", "--add-config",
               "SCRAM-SHA-512=[iterations=4096,password=bob-pw]")[0] == 0
    assert _kw(capsys, b, "--describe", *users, "--entity-name", "alice")[1] == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096\n")
    assert _kw(capsys, b, "--describe", *users)[1] == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096\n"
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096\n")
    assert _kw(capsys, b, "--describe", *users, "--entity-name", "nobody") == (0, "", "")
    assert _authenticates(b.port, "alice", "alice,secret", "SCRAM-SHA-256") is None
    assert _authenticates(b.port, "alice", "alice,secret", "SCRAM-SHA-512") is None

    assert _kw(capsys, b, "--alter", *users, "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256") == (
        0, "Completed updating config for user alice.\n", "")
    assert _kw(capsys, b, "--describe", *users, "--entity-name", "alice")[1] == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096\n")
    assert "Invalid user credentials" in _authenticates(b.port, "alice", "alice,secret", "SCRAM-SHA-256")

    rc, out, err = _kw(capsys, b, "--alter", *users, "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256")
    assert rc == 1 and err == ("kwire configs: RESOURCE_NOT_FOUND: Attempt to delete a user credential that does "
                               "not exist\n")
    rc, out, err = _kw(capsys, b, "--alter", *users, "--entity-name", "carl", "--add-config",
                       "SCRAM-SHA-256=[iterations=20000,password=x]")
    assert rc == 1 and err == "kwire configs: UNACCEPTABLE_CREDENTIAL: Too many iterations\n"


@pytest.mark.parametrize("argv, words", [
    (("--add-config", "SCRAM-SHA-256=[iterations=100,password=x]"),
     "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256"),
    (("--add-config", "SCRAM-SHA-256=[pass=x]"), "Invalid credential property SCRAM-SHA-256=pass=x"),
    (("--delete-config", "SCRAM-SHA-1"), "Invalid config(s): SCRAM-SHA-1"),   # not a quota the user has either
])
def test_configs_users_usage_errors(broker, capsys, argv, words):
    rc, out, err = _kw(capsys, broker, "--alter", "--entity-type", "users", "--entity-name", "x", *argv)
    assert rc == 2 and out == "" and words in err and err.count("\n") == 1
