"""kwire.security.sasl_client without sockets: RFC 7677's SCRAM-SHA-256 example from the
client's side, the client against kwire's own ScramServer / PlainServer, and what the client
refuses (a server that does not know the password, a nonce it did not extend, too few
iterations)."""
from __future__ import annotations

import base64

import pytest

from kwire.security.sasl import PlainServer, SaslAuthenticationFailed, ScramServer, scram_credential
from kwire.security.sasl_client import PlainClient, SaslClientFailed, ScramClient, jaas_options

SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"


def test_rfc7677_scram_sha_256_example_client_side():
    c = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert c.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = c.evaluate(SERVER_FIRST)
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert not c.complete
    assert c.evaluate(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    assert c.complete


def test_rfc7677_server_signature_is_checked():
    c = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    c.first_message()
    c.evaluate(SERVER_FIRST)
    forged = base64.b64encode(b"\x00" * 32)
    with pytest.raises(SaslClientFailed, match="server signature"):
        c.evaluate(b"v=" + forged)
    assert not c.complete


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_client_against_kwire_scram_server(mech):
    creds = {"bro,ker=1": scram_credential(mech, "s3cret")}    # a saslname with ',' and '='
    server, client = ScramServer(mech, creds), ScramClient(mech, "bro,ker=1", "s3cret")
    final = client.evaluate(server.evaluate(client.first_message()))
    assert client.evaluate(server.evaluate(final)) is None
    assert client.complete and server.complete and server.authorization_id == "bro,ker=1"


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_is_refused_by_the_server(mech):
    server = ScramServer(mech, {"broker": scram_credential(mech, "right")})
    client = ScramClient(mech, "broker", "wrong")
    final = client.evaluate(server.evaluate(client.first_message()))
    with pytest.raises(SaslAuthenticationFailed, match="Invalid user credentials"):
        server.evaluate(final)


def test_client_refuses_bad_server_first_messages():
    for bad, why in [(b"r=other-nonce,s=QUJD,i=4096", "nonce"),
                     (b"r=abc,s=QUJD,i=4096", "nonce"),                  # not extended
                     (b"r=abcdef,s=QUJD,i=1000", "iterations"),
                     (b"r=abcdef,s=%%%,i=4096", "base64"),
                     (b"e=unknown-user", "refused"),
                     (b"garbage", "invalid"),
                     (b"\xff", "UTF-8")]:
        c = ScramClient("SCRAM-SHA-512", "u", "p", nonce="abc")
        c.first_message()
        with pytest.raises(SaslClientFailed, match=why):
            c.evaluate(bad)


def test_plain_client_against_kwire_plain_server():
    c = PlainClient("broker", "pw")
    s = PlainServer({"broker": "pw"})
    assert c.evaluate(s.evaluate(c.first_message())) is None
    assert c.complete and s.authorization_id == "broker"
    with pytest.raises(SaslAuthenticationFailed):
        PlainServer({"broker": "other"}).evaluate(PlainClient("broker", "pw").first_message())


def test_jaas_options_take_the_client_credentials():
    text = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
            'password="a \\"quoted\\" secret" user_broker="x";')
    opts = jaas_options(text)
    assert opts["username"] == "broker" and opts["password"] == 'a "quoted" secret' and opts["user_broker"] == "x"
