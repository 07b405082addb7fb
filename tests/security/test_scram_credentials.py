"""SCRAM credentials in the metadata image, without sockets: Kafka's ScramControlManager
validations (kwire.security.scram_credentials.alter), ScramImage.describe, replay and
snapshots of the records, and the SASL server's rule (the quorum's credential wins over the
JAAS-derived one; a quorum-only user authenticates; a deleted one is refused)."""
from __future__ import annotations

import os
from types import SimpleNamespace as NS

import pytest

from kwire.metadata.delta import replay_bytes
from kwire.config import BrokerConfig
from kwire.errors import ErrorCode as E
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot
from kwire.security.sasl import (SaslAuthenticationFailed, SaslAuthenticator, SaslConfigError, salted_password,
                                 scram_credential, server_config)
from kwire.security.scram_credentials import ScramCredentialStore, alter, credential_from_salted_password
from tests.security.test_sasl_unit import _client_final

SHA256, SHA512 = 1, 2


def _up(name, mech=SHA256, iterations=4096, password="pw", salt=b"salt-salt"):
    mname = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}.get(mech, "SCRAM-SHA-256")
    return NS(name=name, mechanism=mech, iterations=iterations, salt=salt,
              salted_password=salted_password(mname, password, salt, iterations))


def _apply(image, plan):
    for m, o in plan.records:
        image = replay_bytes(image, [R.encode_record(m, o)])    # through the record encoding, as the quorum does
    return image


def test_alter_validations_follow_kafka():
    image = MetadataImage()
    plan = alter(image.scram, [], [_up("alice"), _up("bob", SHA512, 16384), _up("", SHA256), _up("carl", 0),
                                   _up("dan", SHA256, 4095), _up("eve", SHA512, 16385), _up("fay"), _up("fay", SHA512)])
    got = {u: (c, m) for u, c, m in plan.results}
    assert got["alice"] == (E.NONE, None) and got["bob"] == (E.NONE, None)
    assert got[""] == (E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    assert got["carl"] == (E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    assert got["dan"] == (E.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    assert got["eve"] == (E.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    assert got["fay"][0] == E.DUPLICATE_RESOURCE    # a user twice in one request, even for two mechanisms
    assert len(plan.results) == 7 and len(plan.records) == 2
    image = _apply(image, plan)
    assert image.scram.users() == ["alice", "bob"]
    assert image.scram.get("SCRAM-SHA-512", "bob").iterations == 16384
    # deletions: unknown credential, unknown mechanism, deleted and upserted in one request
    plan = alter(image.scram, [NS(name="alice", mechanism=SHA512), NS(name="bob", mechanism=3),
                               NS(name="bob", mechanism=SHA512), NS(name="zed", mechanism=SHA256)], [])
    got = {u: (c, m) for u, c, m in plan.results}
    assert got["alice"] == (E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
    assert got["bob"][0] == E.UNSUPPORTED_SASL_MECHANISM      # the first error of a user stands
    assert got["zed"][0] == E.RESOURCE_NOT_FOUND and not plan.records
    plan = alter(image.scram, [NS(name="alice", mechanism=SHA256)], [_up("alice", SHA512)])
    assert plan.results == [("alice", E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same "
                                                            "request")] and not plan.records
    plan = alter(image.scram, [NS(name="alice", mechanism=SHA256)], [])
    assert plan.results == [("alice", E.NONE, None)]
    image = _apply(image, plan)
    assert image.scram.users() == ["bob"]


def test_records_keep_keys_not_passwords():
    image = MetadataImage()
    salt = os.urandom(24)
    plan = alter(image.scram, [], [NS(name="alice", mechanism=SHA512, iterations=8192, salt=salt,
                                      salted_password=salted_password("SCRAM-SHA-512", "secret", salt, 8192))])
    (msg, rec), = plan.records
    assert msg is R.USER_SCRAM_CREDENTIAL and rec.salt == salt and rec.iterations == 8192
    assert rec.stored_key == scram_credential("SCRAM-SHA-512", "secret", salt=salt, iterations=8192).stored_key
    assert b"secret" not in R.encode_record(msg, rec)
    assert R.encode_record(msg, rec)[:3] == bytes([1, 11, 0])    # frame version 1, record type 11, version 0
    assert R.encode_record(R.REMOVE_USER_SCRAM_CREDENTIAL, R.REMOVE_USER_SCRAM_CREDENTIAL.cls(
        name="alice", mechanism=SHA512))[:3] == bytes([1, 22, 0])


def test_describe_as_scram_image():
    store = ScramCredentialStore()
    store.put("alice", SHA256, credential_from_salted_password("SCRAM-SHA-256", b"s", b"k", 4096))
    store.put("alice", SHA512, credential_from_salted_password("SCRAM-SHA-512", b"s", b"k", 8192))
    store.put("bob", SHA512, credential_from_salted_password("SCRAM-SHA-512", b"s", b"k", 4096))
    assert store.describe(None) == [("alice", 0, None, [(1, 4096), (2, 8192)]), ("bob", 0, None, [(2, 4096)])]
    assert store.describe([]) == store.describe(None)
    got = store.describe(["bob", "nobody", "bob"])
    assert got[0][:2] == ("bob", E.DUPLICATE_RESOURCE)
    assert got[0][2] == "Cannot describe SCRAM credentials for the same user twice in a single request: bob"
    assert got[1] == ("nobody", E.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: "
                                                      "nobody", [])


def test_snapshot_keeps_credentials():
    image = MetadataImage()
    image = _apply(image, alter(image.scram, [], [_up("alice", SHA256, 4096), _up("alice=,x", SHA512, 10000)]))
    again = decode_snapshot(encode_snapshot(image))
    assert again.scram.users() == ["alice", "alice=,x"]
    assert again.scram.get("SCRAM-SHA-512", "alice=,x") == image.scram.get("SCRAM-SHA-512", "alice=,x")


def _login(auth: SaslAuthenticator, mech: str, user: str, password: str) -> None:
    assert auth.handshake(mech, 1)
    bare = f"n={user},r=nonce".encode()
    sf = auth.authenticate(b"n,," + bare)
    auth.authenticate(_client_final(mech, password, bare, sf))
    assert auth.complete and auth.principal == f"User:{user}"


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_server_uses_the_quorum_first(mech):
    mtype = {"SCRAM-SHA-256": SHA256, "SCRAM-SHA-512": SHA512}[mech]
    cfg = server_config(BrokerConfig.from_properties("", {"sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="jaas-pw";'}))
    image = MetadataImage()
    stored = lambda: image.scram   # noqa: E731 - the server passes the current image's store
    _login(SaslAuthenticator(cfg, stored), mech, "alice", "jaas-pw")           # JAAS-derived: kwire's convenience
    image = _apply(image, alter(image.scram, [], [_up("alice", mtype, 4096, "quorum-pw"), _up("carol", mtype, 8192, "c-pw")]))
    _login(SaslAuthenticator(cfg, stored), mech, "carol", "c-pw")              # quorum-only user
    _login(SaslAuthenticator(cfg, stored), mech, "alice", "quorum-pw")         # the quorum's credential wins
    with pytest.raises(SaslAuthenticationFailed, match="Invalid user credentials"):
        _login(SaslAuthenticator(cfg, stored), mech, "alice", "jaas-pw")
    image = _apply(image, alter(image.scram, [NS(name="carol", mechanism=mtype), NS(name="alice", mechanism=mtype)], []))
    with pytest.raises(SaslAuthenticationFailed, match="Invalid user credentials"):
        _login(SaslAuthenticator(cfg, stored), mech, "carol", "c-pw")          # deleted: refused
    _login(SaslAuthenticator(cfg, stored), mech, "alice", "jaas-pw")           # back to the JAAS password


def test_scram_listener_needs_no_jaas_users():
    cfg = server_config(BrokerConfig.from_properties("", {"sasl.enabled.mechanisms": "SCRAM-SHA-512"}))
    assert cfg.scram == {"SCRAM-SHA-512": {}}     # users come from the quorum
    with pytest.raises(SaslConfigError, match="no SASL users"):
        server_config(BrokerConfig.from_properties("", {"sasl.enabled.mechanisms": "PLAIN"}))
