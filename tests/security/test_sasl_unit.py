"""kwire.security.sasl without sockets: RFC 7677's SCRAM-SHA-256 example, PLAIN, the JAAS
user lists, and the connection's state machine."""
from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from kwire.config import BrokerConfig
from kwire.security.sasl import (SaslAuthenticationFailed, SaslAuthenticator, SaslConfigError, ScramServer,
                                 parse_jaas_users, scram_credential, server_config)


def test_rfc7677_scram_sha_256_example():
    cred = scram_credential("SCRAM-SHA-256", "pencil", salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    s = ScramServer("SCRAM-SHA-256", {"user": cred}, nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    first = s.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = s.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                       b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert s.complete and s.authorization_id == "user"


def _client_final(mech, password, client_first_bare, server_first, gs2=b"n,,"):
    h = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}[mech]
    attrs = dict(x.split("=", 1) for x in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(h().name, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", h).digest()
    without = b"c=" + base64.b64encode(gs2) + b",r=" + attrs["r"].encode()
    auth = client_first_bare + b"," + server_first + b"," + without
    sig = hmac.new(h(client_key).digest(), auth, h).digest()
    return without + b",p=" + base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig)))


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_wrong_password_and_nonce(mech):
    creds = {"alice": scram_credential(mech, "secret")}
    s = ScramServer(mech, creds)
    sf = s.evaluate(b"n,,n=alice,r=abc")
    assert b",i=4096" in sf and sf.startswith(b"r=abc") and len(sf.split(b",")[0]) > 20   # nonce appended
    with pytest.raises(SaslAuthenticationFailed, match="Invalid user credentials"):
        s.evaluate(_client_final(mech, "wrong", b"n=alice,r=abc", sf))
    s = ScramServer(mech, creds)
    sf = s.evaluate(b"n,,n=alice,r=abc")
    assert s.evaluate(_client_final(mech, "secret", b"n=alice,r=abc", sf)).startswith(b"v=")
    s = ScramServer(mech, creds)
    sf = s.evaluate(b"n,,n=alice,r=abc")
    cf = _client_final(mech, "secret", b"n=alice,r=abc", sf)
    with pytest.raises(SaslAuthenticationFailed, match="nonce"):
        s.evaluate(cf.replace(b",r=abc", b",r=abX"))     # a nonce that does not end with the server's
    s = ScramServer(mech, creds)
    with pytest.raises(SaslAuthenticationFailed):
        s.evaluate(b"n,,n=bob,r=abc")           # unknown user
    for bad in [b"", b"garbage", b"p=tls-unique,,n=alice,r=x", b"n,,n=alice", b"n,,n=alice,r=x,tokenauth=true",
                b"\xff\xfe", b"n,a=bob,n=alice,r=x", b"n,,n=al=ce,r=x"]:
        with pytest.raises(SaslAuthenticationFailed):
            ScramServer(mech, creds).evaluate(bad)


def test_jaas_users_and_config():
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="admin-secret" user_admin="admin-secret" user_alice="a\\"b" user_bob=plain;')
    assert parse_jaas_users(jaas) == {"admin": "admin-secret", "alice": 'a"b', "bob": "plain"}
    cfg = BrokerConfig.from_properties("", {"sasl.jaas.config": jaas})
    sc = server_config(cfg, "SASL_SSL")
    assert sc.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert set(sc.scram["SCRAM-SHA-512"]) == {"admin", "alice", "bob"}
    with pytest.raises(SaslConfigError, match="GSSAPI"):
        server_config(BrokerConfig.from_properties("", {"sasl.jaas.config": jaas,
                                                         "sasl.enabled.mechanisms": "GSSAPI"}))
    with pytest.raises(SaslConfigError, match="no SASL users"):   # SCRAM users may come from the quorum, PLAIN's not
        server_config(BrokerConfig.from_properties("", {"sasl.enabled.mechanisms": "PLAIN"}))


def test_connection_state_machine():
    cfg = server_config(BrokerConfig.from_properties("", {"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"pw\";",
                                                          "sasl.enabled.mechanisms": "PLAIN"}))
    a = SaslAuthenticator(cfg)
    assert a.allowed(18) and a.allowed(17) and not a.allowed(3) and not a.allowed(36)
    assert not SaslAuthenticator(cfg).handshake("SCRAM-SHA-256", 1)
    assert a.handshake("PLAIN", 1) and a.allowed(36) and not a.allowed(17)
    with pytest.raises(SaslAuthenticationFailed):
        SaslAuthenticator(cfg).authenticate(b"\x00alice\x00pw")     # no handshake yet
    assert a.authenticate(b"\x00alice\x00pw") == b"" and a.complete and a.principal == "User:alice"
    b = SaslAuthenticator(cfg)
    b.handshake("PLAIN", 1)
    with pytest.raises(SaslAuthenticationFailed, match="Invalid username or password"):
        b.authenticate(b"\x00alice\x00nope")
    assert b.state == "failed" and not b.allowed(3)
    c = SaslAuthenticator(cfg)
    c.handshake("PLAIN", 1)
    with pytest.raises(SaslAuthenticationFailed, match="max.receive.size"):
        c.authenticate(b"\x00" * (cfg.max_receive_size + 1))


def test_reauthentication_state_machine():
    """KIP-368: a session lasts connections.max.reauth.ms; re-authentication keeps the
    mechanism and the principal; after expiry only SaslHandshake is allowed."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw" user_bob="pw2";'
    cfg = server_config(BrokerConfig.from_properties("", {"sasl.jaas.config": jaas, "connections.max.reauth.ms": "1000"}))
    a = SaslAuthenticator(cfg)
    a.handshake("PLAIN", 1)
    a.authenticate(b"\x00alice\x00pw", now_ms=10_000)
    assert a.session_lifetime_ms == 1000 and a.allowed(3, 10_999) and not a.allowed(3, 11_000)
    assert a.allowed(17, 11_000)
    assert a.handshake("PLAIN", 1) and a.reauthenticating
    a.authenticate(b"\x00alice\x00pw", now_ms=11_500)
    assert a.complete and a.allowed(3, 12_000) and a.authentications == 2
    a.handshake("PLAIN", 1)
    with pytest.raises(SaslAuthenticationFailed, match="Cannot change principals"):
        a.authenticate(b"\x00bob\x00pw2", now_ms=12_000)
    b = SaslAuthenticator(cfg)
    b.handshake("PLAIN", 1)
    b.authenticate(b"\x00alice\x00pw")
    assert not b.handshake("SCRAM-SHA-256", 1)     # re-authentication must keep the mechanism
    no_reauth = SaslAuthenticator(server_config(BrokerConfig.from_properties("", {"sasl.jaas.config": jaas})))
    no_reauth.handshake("PLAIN", 1)
    no_reauth.authenticate(b"\x00alice\x00pw")
    assert no_reauth.session_lifetime_ms == 0 and no_reauth.allowed(3, 10**15)
    assert not no_reauth.handshake("PLAIN", 1)
