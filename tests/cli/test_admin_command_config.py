"""--command-config as Kafka's tools read it: what cannot be used is one line (exit 2)."""
from __future__ import annotations

import pytest

from kwire.admin.security import from_properties
from kwire.cmdline import UsageError

W = "kwire topics: --command-config c.properties"
PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'


def test_plaintext_and_sasl_plaintext():
    assert from_properties({}, W).protocol == "PLAINTEXT"
    s = from_properties({"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN},
                        W)
    assert (s.protocol, s.mechanism, s.username, s.password, s.tls, s.sasl) == \
        ("SASL_PLAINTEXT", "PLAIN", "u", "p", False, True)


@pytest.mark.parametrize("props, message", [
    ({"security.protocol": "TLS"}, "security.protocol=TLS is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": PLAIN},
     "sasl.mechanism=GSSAPI (Kafka's default) is not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": PLAIN},
     "sasl.mechanism=OAUTHBEARER is not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.jaas.config"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule username="u" password="p";'},
     "sasl.jaas.config: "),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u";'},
     'needs username="..." and password="..."'),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/x/t.jks"}, "ssl.truststore.type=JKS cannot be read"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PKCS12", "ssl.truststore.location": "/x/t.p12"},
     "ssl.truststore.type=PKCS12 cannot be read"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/nonexistent.pem"},
     "ssl.truststore: "),
    ({"security.protocol": "SSL", "ssl.keystore.location": "/x/k.jks"}, "ssl.keystore.type=JKS cannot be read"),
])
def test_what_cannot_be_used_is_one_line(props, message):
    with pytest.raises(UsageError) as e:
        from_properties(props, W)
    assert str(e.value).startswith(W + ": ") and message in str(e.value) and "\n" not in str(e.value)


def test_hostname_check_follows_the_endpoint_identification_algorithm():
    assert from_properties({"security.protocol": "SSL"}, W).ssl_context.check_hostname
    assert not from_properties({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""},
                               W).ssl_context.check_hostname
