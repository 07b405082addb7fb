"""sasl.jaas.config read as Kafka's JaasConfig (a StreamTokenizer: quotes, escapes, comments)
and refused where Kafka's JaasConfig / JaasContext refuse it (kwire.security.jaas)."""
from __future__ import annotations

import pytest

from kwire.security.jaas import PLAIN_MODULE, SCRAM_MODULE, JaasError, LoginModule, login_module, parse_jaas

P = PLAIN_MODULE


@pytest.mark.parametrize("text,options", [
    (f'{P} required user_alice="alice-secret";', {"user_alice": "alice-secret"}),
    (f"{P}   REQUIRED\n  username='admin'\tpassword=\"a b;c=d\"  ;", {"username": "admin", "password": "a b;c=d"}),
    (f'{P} required user_bob=plain user_x="a\\"b\\\\c\\tq\\101";', {"user_bob": "plain", "user_x": 'a"b\\c\tqA'}),
    (f'/* the users */ {P} optional // a comment\n user_a="1"; // trailing', {"user_a": "1"}),
    (f'{P} sufficient user_a=x/y;\n;', {"user_a": "x"}),    # '/' starts a comment, as in Kafka's tokenizer
    (f'{P} requisite;', {}),
])
def test_kafkas_syntax(text, options):
    [m] = parse_jaas(text)
    assert m.class_name == P and m.options == options


def test_several_entries_parse_but_a_broker_context_takes_one():
    two = f'{P} required user_a="1"; {SCRAM_MODULE} required user_b="2";'
    assert [m.class_name for m in parse_jaas(two)] == [P, SCRAM_MODULE]
    with pytest.raises(JaasError, match="^JAAS config property contains 2 login modules, should be 1 module$"):
        login_module(two)


@pytest.mark.parametrize("text,message", [
    (f'{P} user_alice="a";', "Invalid login module control flag 'user_alice' in JAAS config"),
    (f'{P} required user_alice="a"', "JAAS config entry not terminated by semi-colon"),
    (f"{P}", "Login module control flag not specified in JAAS config"),
    (f'{P} required user_alice;', "Value not specified for key 'user_alice' in JAAS config"),
    (f'{P} required user_alice=;', "Value not specified for key 'user_alice' in JAAS config"),
    (f"{P} ;", "Login module control flag is not available in the JAAS config"),
    ("", "Login module not specified in JAAS config"),
    ("// only a comment", "Login module not specified in JAAS config"),
    (f'{P[:-1]} required user_alice="a";', f"No LoginModule found for {P[:-1]}; did you mean {P}?"),
    ("com.sun.security.auth.module.Krb5LoginModule required;", "login module com.sun.security.auth.module.Krb5Login"
                                                               "Module is not one kwire serves"),
    ('com.example.MyLoginModule required a="b";', "No LoginModule found for com.example.MyLoginModule (kwire's are "),
])
def test_what_kafka_refuses(text, message):
    with pytest.raises(JaasError) as e:
        login_module(text)
    assert str(e.value).startswith(message) and "\n" not in str(e.value), str(e.value)


def test_a_good_module():
    assert login_module(f'{SCRAM_MODULE} required username="b" password="pw";') == \
        LoginModule(SCRAM_MODULE, "REQUIRED", {"username": "b", "password": "pw"})
