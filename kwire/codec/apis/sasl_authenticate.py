"""SaslAuthenticate (key 36), versions 0-2."""
from kwire.codec.schema import F, Message

REQUEST = Message("SaslAuthenticateRequest", api_key=36, kind="request", valid="0-2", flexible="2+", fields=[
    F("auth_bytes", "bytes", "0+"),
])

RESPONSE = Message("SaslAuthenticateResponse", api_key=36, kind="response", valid="0-2", flexible="2+", fields=[
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+"),
    F("auth_bytes", "bytes", "0+"),
    F("session_lifetime_ms", "int64", "1+", default=0, ignorable=True),
])
