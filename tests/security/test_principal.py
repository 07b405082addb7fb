"""ctx.principal: User:ANONYMOUS unless TLS or SASL says otherwise."""
from kwire.connection import KafkaConnection
from kwire.handlers import RequestContext
from kwire.security.principal import ANONYMOUS, user


def test_anonymous_by_default():
    conn = KafkaConnection()
    ctx = RequestContext(None, None, None, "?", conn)
    assert ctx.principal == ANONYMOUS == "User:ANONYMOUS"
    assert RequestContext(None, None, None, "?").principal == ANONYMOUS
    conn.principal = user("alice")
    conn.listener = "SASL_SSL"
    assert ctx.principal == "User:alice" and ctx.listener == "SASL_SSL"
