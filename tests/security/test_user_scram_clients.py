"""SCRAM users managed by stock admin clients (AlterUserScramCredentials /
DescribeUserScramCredentials) on a SASL broker, then used by stock producers and consumers:
confluent-kafka's and kafka-python's admin; SCRAM-SHA-256 and -512; a wrong password and a
deleted user are refused with SASL_AUTHENTICATION_FAILED; with an authorizer only a principal
with ALTER / DESCRIBE on the cluster may manage them; credentials survive a restart."""
from __future__ import annotations

import pytest

from kwire.testing.broker import Broker
from tests.security.clients import confluent_roundtrip, kafka_python_roundtrip, login_error

pytestmark = pytest.mark.slow

ADMIN = {"admin": "admin-secret"}


@pytest.fixture(scope="module")
def broker():
    with Broker(security="SASL_SSL", users=ADMIN, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def _as(conf: dict, user: str, password: str, mech: str | None = None) -> dict:
    out = {**conf, "sasl.username": user, "sasl.password": password}
    if mech:
        out["sasl.mechanism"] = mech
    return out


def _auth_error(conf: dict) -> str:
    err = login_error(conf)
    assert err is not None and "code=_AUTHENTICATION" in err, err     # librdkafka's name for a refused login
    return err


def test_confluent_admin_creates_users_that_authenticate(broker):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion, UserScramCredentialUpsertion)

    b = broker
    conf = b.client_config("confluent", "admin", "SCRAM-SHA-512")
    admin = AdminClient(conf)
    fs = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"carol-pw"),
        UserScramCredentialUpsertion("dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"dave-pw"),
        UserScramCredentialUpsertion("erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 1000), b"e-pw"),
    ])
    assert fs["carol"].result(10) is None and fs["dave"].result(10) is None
    with pytest.raises(KafkaException, match="Too few iterations") as err:
        fs["erin"].result(10)
    assert err.value.args[0].code() == 93     # UNACCEPTABLE_CREDENTIAL
    described = admin.describe_user_scram_credentials(["carol", "dave"])
    infos = {u: [(i.mechanism, i.iterations) for i in f.result(10).scram_credential_infos]
             for u, f in described.items()}
    assert infos == {"carol": [(ScramMechanism.SCRAM_SHA_256, 8192)], "dave": [(ScramMechanism.SCRAM_SHA_512, 4096)]}
    everyone = admin.describe_user_scram_credentials().result(10)
    assert set(everyone) == {"carol", "dave"}      # the quorum's users (JAAS-derived ones are not stored)
    with pytest.raises(KafkaException, match="does not exist"):
        admin.describe_user_scram_credentials(["nobody"])["nobody"].result(10)

    for user, password, mech in (("carol", "carol-pw", "SCRAM-SHA-256"), ("dave", "dave-pw", "SCRAM-SHA-512")):
        b.create_topic(f"scram-{user}", 1)
        got = confluent_roundtrip(_as(conf, user, password, mech), f"scram-{user}", 5)
        assert sorted(v[:4] for v in got) == [f"{i:04d}".encode() for i in range(5)]
    assert "Invalid user credentials" in _auth_error(_as(conf, "carol", "wrong", "SCRAM-SHA-256"))
    assert "Invalid user credentials" in _auth_error(_as(conf, "dave", "dave-pw", "SCRAM-SHA-256"))  # not for 256

    fs = admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)])
    assert fs["carol"].result(10) is None
    assert "Invalid user credentials" in _auth_error(_as(conf, "carol", "carol-pw", "SCRAM-SHA-256"))
    fs = admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)])
    with pytest.raises(KafkaException, match="does not exist"):
        fs["carol"].result(10)


def test_kafka_python_admin_and_clients(broker):
    from kafka.admin import (KafkaAdminClient, ScramMechanism, UserScramCredentialDeletion,
                             UserScramCredentialUpsertion)

    b = broker
    conf = b.client_config("kafka-python", "admin", "SCRAM-SHA-256")
    admin = KafkaAdminClient(**conf)
    try:
        out = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("frank", ScramMechanism.SCRAM_SHA_512, "frank-pw", iterations=16384),
            UserScramCredentialUpsertion("gina", ScramMechanism.SCRAM_SHA_256, "g-pw", iterations=20000),
            UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_256),
        ])
        assert out["frank"] is None
        assert out["gina"] == "Too many iterations"
        assert out["nobody"] == "Attempt to delete a user credential that does not exist"
        desc = admin.describe_user_scram_credentials(["frank", "frank"])
        assert desc["frank"]["error"].startswith("Cannot describe SCRAM credentials for the same user twice")
        desc = admin.describe_user_scram_credentials(["frank"])
        assert desc["frank"]["credential_infos"] == [{"mechanism": ScramMechanism.SCRAM_SHA_512, "iterations": 16384}]
        b.create_topic("scram-kp", 1)
        user = {**b.client_config("kafka-python", "admin", "SCRAM-SHA-512"),
                "sasl_plain_username": "frank", "sasl_plain_password": "frank-pw"}
        assert len(kafka_python_roundtrip(user, "scram-kp", 3)) == 3
        assert admin.alter_user_scram_credentials([UserScramCredentialDeletion("frank", "SCRAM-SHA-512")]) == \
            {"frank": None}
    finally:
        admin.close()


def test_authorization_and_restart(tmp_path):
    """With StandardAuthorizer: bob (no ACLs) may neither alter nor describe; the super user
    may. The credential admin created is in the metadata log: it authenticates after a restart."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    overrides = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:admin", "group.initial.rebalance.delay.ms": 0}
    with Broker(security="SASL_PLAINTEXT", users={**ADMIN, "bob": "bob-pw"}, overrides=overrides,
                data_dir=str(tmp_path / "data")) as b:
        up = [UserScramCredentialUpsertion("hank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"h-pw")]
        bob = AdminClient(b.client_config("confluent", "bob", "SCRAM-SHA-256"))
        with pytest.raises(KafkaException) as err:
            bob.alter_user_scram_credentials(up)["hank"].result(10)
        assert err.value.args[0].code() == 31     # CLUSTER_AUTHORIZATION_FAILED
        # (librdkafka 2.16 crashes on a DescribeUserScramCredentials answer with a top-level error:
        # kafka-python checks that one)
        from kafka.admin import KafkaAdminClient
        from kafka.errors import ClusterAuthorizationFailedError

        kp = KafkaAdminClient(**b.client_config("kafka-python", "bob", "SCRAM-SHA-512"))
        try:
            with pytest.raises(ClusterAuthorizationFailedError):
                kp.describe_user_scram_credentials()
        finally:
            kp.close()
        admin = AdminClient(b.client_config("confluent", "admin", "SCRAM-SHA-256"))
        assert admin.alter_user_scram_credentials(up)["hank"].result(10) is None
        b.restart()
        hank = {**b.client_config("confluent", "admin", "SCRAM-SHA-256"), "sasl.username": "hank",
                "sasl.password": "h-pw"}
        md = AdminClient(hank).list_topics(timeout=10)
        assert md.brokers
        admin = AdminClient(b.client_config("confluent", "admin"))
        desc = admin.describe_user_scram_credentials(["hank"])
        assert [i.iterations for i in desc["hank"].result(10).scram_credential_infos] == [4096]
